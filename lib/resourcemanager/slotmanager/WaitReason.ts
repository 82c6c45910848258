/**
 * Why a slot request waits or cannot be fulfilled — Flink answers with a bare timeout five minutes
 * later; a slotwise request says which dimension is short, on which executors, and whether a worker
 * of the configured shape could ever hold it.
 */
import type { ResourceID } from '../../core/ids.js';
import { formatShortfall, type ResourceProfile, type ResourceShortfall } from '../../core/ResourceProfile.js';

export type WaitReason =
  /** New or pending workers will hold it once they register. */
  | { readonly kind: 'waiting-for-workers'; readonly workers: number }
  /** No registered executor has room now, and no worker can be started for it. */
  | {
      readonly kind: 'insufficient-resources';
      readonly closest: readonly ExecutorShortfall[];
      readonly couldFitWhenFree: readonly ResourceID[];
      /** Executors with room that take no new slots now (one refused a request, or is being released). */
      readonly passedOver: readonly ResourceID[];
    }
  /**
   * The ResourceAllocator refused to start the workers it was planned on (allocateWorker answered false); the next
   * check plans it again.
   */
  | { readonly kind: 'worker-start-refused'; readonly workers: number }
  /** It is larger than a worker of the configured shape, and no registered executor is big enough. */
  | { readonly kind: 'exceeds-worker-shape'; readonly shortfall: readonly ResourceShortfall[] }
  /** Starting the workers it needs would pass `slotmanager.number-of-slots.max`. */
  | { readonly kind: 'max-slots-reached'; readonly limit: number; readonly wouldBe: number }
  /** Starting the workers it needs would pass `slotmanager.max-total-resource.cpu` / `.memory`. */
  | {
      readonly kind: 'max-resources-reached';
      readonly dimension: 'cpu' | 'memory';
      readonly limit: number;
      readonly wouldBe: number;
    };

export interface ExecutorShortfall {
  readonly resourceId: ResourceID;
  readonly shortfall: readonly ResourceShortfall[];
}

/** One line a person can read. */
export function describeWaitReason(reason: WaitReason): string {
  switch (reason.kind) {
    case 'waiting-for-workers':
      return `waiting for ${reason.workers} worker${reason.workers === 1 ? '' : 's'} to start and register`;
    case 'insufficient-resources': {
      const closest = reason.closest.map((c) => `${c.resourceId} (${formatShortfall(c.shortfall)})`).join('; ');
      const later =
        reason.couldFitWhenFree.length > 0
          ? `; it fits ${reason.couldFitWhenFree.join(', ')} once slots there are freed`
          : '';
      const passed =
        reason.passedOver.length > 0
          ? `; ${reason.passedOver.join(', ')} ${reason.passedOver.length === 1 ? 'has' : 'have'} ` +
            `room but take no new slots for now (a refused request, or being released)`
          : '';
      if (reason.closest.length === 0 && reason.passedOver.length === 0)
        return 'no TaskExecutor is registered and none can be started';
      return `no TaskExecutor has room${closest ? `: closest ${closest}` : ''}${later}${passed}`;
    }
    case 'worker-start-refused':
      return (
        `the ResourceAllocator refused to start the ${reason.workers === 1 ? 'worker' : `${reason.workers} workers`} ` +
        `it was planned on (allocateWorker answered false); a later requirement check tries again`
      );
    case 'exceeds-worker-shape':
      return `larger than any worker can ever be (${formatShortfall(reason.shortfall, ['worker has', 'needs'])})`;
    case 'max-slots-reached':
      return (
        `starting a worker would make ${reason.wouldBe} slots, ` +
        `over slotmanager.number-of-slots.max = ${reason.limit}`
      );
    case 'max-resources-reached':
      return (
        `starting a worker would make ${reason.wouldBe} ${reason.dimension === 'cpu' ? 'cores' : 'bytes'}, ` +
        `over slotmanager.max-total-resource.${reason.dimension} = ${reason.limit}`
      );
  }
}

/**
 * Whether two reasons are the same, as their JSON would be (the plain data a reason is made of:
 * objects in key order, arrays, strings, booleans, numbers, a non-finite number counting as null),
 * without building the strings: a check compares a waiting job's reasons with the last check's.
 */
export function sameWaitReason(a: WaitReason, b: WaitReason): boolean {
  return sameAsJson(a, b);
}

function sameAsJson(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a === 'number' || typeof b === 'number') return numberAsJson(a) === numberAsJson(b);
  if (
    typeof a !== 'object' ||
    typeof b !== 'object' ||
    a === null ||
    b === null ||
    Array.isArray(a) !== Array.isArray(b)
  )
    return false;
  if (Array.isArray(a)) {
    const other = b as unknown[];
    if (a.length !== other.length) return false;
    for (let i = 0; i < a.length; i++) if (!sameAsJson(a[i] ?? null, other[i] ?? null)) return false;
    return true;
  }
  const ka = jsonKeys(a);
  const kb = jsonKeys(b);
  if (ka.length !== kb.length) return false;
  for (let i = 0; i < ka.length; i++) {
    if (ka[i] !== kb[i] || !sameAsJson((a as Record<string, unknown>)[ka[i]!], (b as Record<string, unknown>)[kb[i]!]))
      return false;
  }
  return true;
}

function numberAsJson(value: unknown): unknown {
  return typeof value === 'number' && !Number.isFinite(value) ? null : value;
}

/** The keys JSON writes, in its order: it leaves out those whose value is undefined. */
function jsonKeys(o: object): string[] {
  return Object.keys(o).filter((k) => (o as Record<string, unknown>)[k] !== undefined);
}

/**
 * How far an executor is from holding a requirement, from what it falls short in (non-empty):
 * ten per short dimension, plus the relative deficit of each (lower is closer).
 */
export function shortfallScore(shortfall: readonly ResourceShortfall[]): number {
  return (
    shortfall.length * 10 +
    shortfall.reduce((sum, s) => sum + (s.required - s.available) / Math.max(s.required, 1e-9), 0)
  );
}

/** What explainShortage reads of an executor (a TaskManagerRegistration, or a plain object in tests). */
export interface ShortageCandidate {
  readonly resourceId: ResourceID;
  readonly seq: number;
  readonly blocked: boolean;
  readonly available: ResourceProfile;
  readonly totalResourceProfile: ResourceProfile;
  effectiveProfile(requirement: ResourceProfile): ResourceProfile;
}

/**
 * The executors closest to holding `requirement` (fewest short dimensions, then smallest relative
 * deficit), and those whose total could hold it once their slots are freed. One pass over the
 * executors: the reference answer; the SlotManager asks the tracker's ShortageIndex, which keeps
 * the same answer up incrementally instead of recomputing it on every requirement check.
 */
export function explainShortage(
  requirement: ResourceProfile,
  taskManagers: Iterable<ShortageCandidate>,
  limit = 3,
): Extract<WaitReason, { kind: 'insufficient-resources' }> {
  const scored: Array<{ resourceId: ResourceID; shortfall: ResourceShortfall[]; score: number; seq: number }> = [];
  const couldFitWhenFree: ResourceID[] = [];
  const passedOver: ResourceID[] = [];
  for (const taskManager of taskManagers) {
    const effective = taskManager.effectiveProfile(requirement);
    const shortfall = taskManager.available.shortfall(effective);
    if (shortfall.length === 0) {
      if (taskManager.blocked && passedOver.length < limit) passedOver.push(taskManager.resourceId);
      continue;
    }
    scored.push({
      resourceId: taskManager.resourceId,
      shortfall,
      score: shortfallScore(shortfall),
      seq: taskManager.seq,
    });
    if (couldFitWhenFree.length < limit && taskManager.totalResourceProfile.allFieldsNoLessThan(effective))
      couldFitWhenFree.push(taskManager.resourceId);
  }
  scored.sort((a, b) => a.score - b.score || a.seq - b.seq);
  return {
    kind: 'insufficient-resources',
    closest: scored.slice(0, limit).map(({ resourceId, shortfall }) => ({ resourceId, shortfall })),
    couldFitWhenFree,
    passedOver,
  };
}
