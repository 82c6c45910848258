/** Where a profile falls short of a requirement, field by field, and how it prints. */
import { formatMemorySize } from './MemorySize.js';
import { IS_MEMORY, SCALE, STANDARD } from './resourceAmounts.js';

/** One field where a profile has less than a requirement needs. */
export interface ResourceShortfall {
  readonly field: string;
  readonly available: number;
  readonly required: number;
}

/** Prints shortfalls as `cpuCores available 1, required 2; managedMemory available 64 mb, required 128 mb`. */
export function formatShortfall(
  shortfall: readonly ResourceShortfall[],
  [have, need] = ['available', 'required'],
): string {
  const show = (field: string, n: number) =>
    IS_MEMORY.has(field) ? formatMemorySize(n) : n === Infinity ? '∞' : String(n);
  return shortfall
    .map((s) => `${s.field} ${have} ${show(s.field, s.available)}, ${need} ${show(s.field, s.required)}`)
    .join('; ');
}

/**
 * Where raw available amounts (ResourceProfile.amounts order and units) fall short of raw needed
 * ones: `available.shortfall(required)` for two specified profiles, and for a running total that is
 * not a profile (a plan's copy of an executor) without making one of it first.
 */
export function shortfallOf(
  need: ArrayLike<number>,
  needExtended: ReadonlyMap<string, number>,
  have: ArrayLike<number>,
  haveExtended: ReadonlyMap<string, number>,
): ResourceShortfall[] {
  const out: ResourceShortfall[] = [];
  for (let i = 0; i < 5; i++) {
    const scale = i === 0 ? SCALE : 1;
    if (have[i]! < need[i]!) out.push({ field: STANDARD[i]!, available: have[i]! / scale, required: need[i]! / scale });
  }
  for (const [n, units] of needExtended) {
    const left = haveExtended.get(n) ?? 0;
    if (left < units) out.push({ field: n, available: left / SCALE, required: units / SCALE });
  }
  return out;
}
