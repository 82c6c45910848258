/**
 * A registered TaskExecutor as the SlotManager sees it (Flink's FineGrainedTaskManagerRegistration)
 * and the slot records it holds: plain, mutable records on the hot path, changed only through the
 * TaskManagerTracker so that its index stays in step.
 *
 * Capacity: `used` is the sum of every pending, allocated or reserved slot's profile; `available`
 * is total − used (never below zero: a slot report may show more than the SlotManager planned).
 * Both are kept as plain mutable numbers (the profiles' raw amounts) and turned into immutable
 * ResourceProfiles only when read: every reserve and free changes them, and a new profile per
 * step was most of the matching hot path's cost. The numbers give the same results as the profile
 * arithmetic they replace; whatever they do not cover (a total or profile that is UNKNOWN or ANY,
 * an overflow, a step that would go below zero) is done by that profile arithmetic itself.
 * Static slots are records 0..n-1 that live as long as the executor (free ⇄ pending ⇄ allocated);
 * dynamic slots exist only while pending or allocated. A static slot is used when a requirement's
 * effective profile is the executor's default slot profile and one is free; anything else gets a
 * dynamic slot carved from what is available, as in Flink's fine-grained resource management.
 */
import { runningAmounts } from '../../core/resourceAmounts.js';
import type { AllocationID, JobID, ResourceID } from '../../core/ids.js';
import { ResourceProfile, UNITS_PER_CORE } from '../../core/ResourceProfile.js';
import type { ResourceSlotState } from '../../../machines/resourceSlot.machine.js';
import type { TaskExecutorSlotGateway } from '../../rpc/TaskExecutorSlotGateway.js';
import { shortfallScore } from './WaitReason.js';

export interface ResourceSlotRecord {
  readonly taskManager: TaskManagerRegistration;
  /** The static index, or -1 for a dynamic slot (its index on the TaskExecutor is its own business). */
  readonly index: number;
  state: ResourceSlotState;
  allocationId: AllocationID | null;
  jobId: JobID | null;
  /** Static: the executor's default slot profile. Dynamic: the effective profile it was carved for. */
  readonly profile: ResourceProfile;
  /** A free static slot held by a plan's reservation that has not been turned into a request yet. */
  reserved: boolean;
  /**
   * Counted in its job's ResourceTracker (declared requirements); false for imperative requests
   * (Flink's SlotManagerImpl.registerSlotRequest).
   */
  tracked: boolean;
  /**
   * The SlotStatusSyncer's request to the executor for this pending slot while it is unanswered (its own, opaque here);
   * null otherwise.
   */
  inFlight: object | null;
}

/**
 * Capacity as running totals: raw amounts (ResourceProfile.amounts order and units), extended resources without zeros.
 */
export interface CapacityAmounts {
  readonly used: number[];
  readonly usedExtended: Map<string, number>;
  /** total − used, at least zero. */
  readonly available: number[];
  readonly availableExtended: Map<string, number>;
}

export interface TaskManagerInfo {
  readonly resourceId: ResourceID;
  readonly host: string;
  readonly totalResourceProfile: ResourceProfile;
  readonly defaultSlotResourceProfile: ResourceProfile;
  readonly numberOfStaticSlots: number;
  readonly gateway: TaskExecutorSlotGateway;
}

export class TaskManagerRegistration implements TaskManagerInfo {
  readonly resourceId: ResourceID;
  readonly host: string;
  readonly totalResourceProfile: ResourceProfile;
  readonly defaultSlotResourceProfile: ResourceProfile;
  readonly numberOfStaticSlots: number;
  readonly gateway: TaskExecutorSlotGateway;
  /** Registration order: first fit walks executors in this order; ties elsewhere break on it. */
  readonly seq: number;
  readonly staticSlots: ResourceSlotRecord[];
  readonly dynamicSlots = new Map<AllocationID, ResourceSlotRecord>();
  /** max over CPU and memory of used/total (Flink's utilisation score); 0 for a zero total. */
  utilization = 0;
  /** Free static slot records. */
  freeStaticSlots: number;
  /** No static slot below this index is free and unreserved (where the search for one starts). */
  #staticCursor = 0;
  /** Slots pending or allocated, static and dynamic. */
  occupiedSlots = 0;
  /** Reservations made by a plan and not yet turned into pending slots. */
  reservations = 0;
  /** When the executor last became empty; null while it holds or is promised a slot. */
  idleSince: number | null;
  /** Bumped on every capacity change, so stale index entries can be recognised. */
  version = 0;
  /**
   * Takes no new slots: it refused or missed a slot request (until its next slot report), or it is
   * being released. Its existing slots are unaffected.
   */
  blocked = false;

  /**
   * Capacity as running totals (raw amounts) while the total and every profile taken are specified;
   * null once UNKNOWN or ANY is involved, or an amount would pass the safe integers: from then on
   * `#usedProfile` and `#availableProfile` are the truth, kept by profile arithmetic.
   */
  #amounts: CapacityAmounts | null;
  /** The total's raw amounts, in a plain array (cheaper to read than the profile's frozen one). */
  readonly #total: number[];
  /** The total's cores and memory, as the utilisation divides by them. */
  readonly #totalCpu: number;
  readonly #totalMemory: number;
  /** The profiles, built from the running totals on first read after a change (undefined: not built yet). */
  #usedProfile: ResourceProfile | undefined = ResourceProfile.ZERO;
  #availableProfile: ResourceProfile | undefined;

  constructor(info: TaskManagerInfo, seq: number, now: number) {
    this.resourceId = info.resourceId;
    this.host = info.host;
    this.totalResourceProfile = info.totalResourceProfile;
    this.defaultSlotResourceProfile = info.defaultSlotResourceProfile;
    this.numberOfStaticSlots = info.numberOfStaticSlots;
    this.gateway = info.gateway;
    this.seq = seq;
    const total = info.totalResourceProfile;
    const specified = total instanceof ResourceProfile && total.kind === 'specified';
    this.#total = specified ? runningAmounts(total.amounts) : runningAmounts();
    this.#amounts = specified
      ? {
          used: runningAmounts(),
          usedExtended: new Map(),
          available: runningAmounts(this.#total),
          availableExtended: new Map(total.extended),
        }
      : null;
    this.#totalCpu = coresOf(this.#total);
    this.#totalMemory = memoryOf(this.#total);
    this.#availableProfile = total;
    this.idleSince = now;
    this.freeStaticSlots = info.numberOfStaticSlots;
    this.staticSlots = Array.from({ length: info.numberOfStaticSlots }, (_, index) => ({
      taskManager: this,
      index,
      state: 'free' as ResourceSlotState,
      allocationId: null,
      jobId: null,
      profile: info.defaultSlotResourceProfile,
      reserved: false,
      tracked: false,
      inFlight: null,
    }));
  }

  /** The profile a requirement takes here: UNKNOWN means this executor's default slot. */
  effectiveProfile(requirement: ResourceProfile): ResourceProfile {
    return requirement.isUnknown() ? this.defaultSlotResourceProfile : requirement;
  }

  /** What the slots (pending, allocated, reserved) use: the sum of their profiles. */
  get used(): ResourceProfile {
    return (this.#usedProfile ??= ResourceProfile.fromAmounts(this.#amounts!.used, this.#amounts!.usedExtended));
  }

  /** What is left for new slots: total − used, never below zero. */
  get available(): ResourceProfile {
    return (this.#availableProfile ??= ResourceProfile.fromAmounts(
      this.#amounts!.available,
      this.#amounts!.availableExtended,
    ));
  }

  canFit(requirement: ResourceProfile): boolean {
    return !this.blocked && this.hasAvailable(this.effectiveProfile(requirement));
  }

  /** `available.allFieldsNoLessThan(profile)`, without building `available` (blocked or not). */
  /** Whether `count` slots of `profile` fit in what is available. */
  hasAvailable(profile: ResourceProfile, count = 1): boolean {
    const a = this.#amounts;
    if (count !== 1 && (a === null || profile.kind !== 'specified')) return this.hasAvailable(profile.multiply(count));
    if (a === null) return this.available.allFieldsNoLessThan(profile);
    // Against a specified `available`: UNKNOWN is covered, ANY (infinite) is not.
    if (profile.kind !== 'specified') return profile.kind === 'unknown';
    if (count === 1) return profile.fitsWithin(a.available, a.availableExtended);
    // A run of slots (PlanApplier): no multiplied profile made to ask.
    const p = profile.amounts;
    for (let i = 0; i < 5; i++) if (p[i]! * count > a.available[i]!) return false;
    for (const [n, units] of profile.extended) if (units * count > (a.availableExtended.get(n) ?? 0)) return false;
    return true;
  }

  /**
   * What `shortfallScore(available.shortfall(profile))` gives (WaitReason.ts), or -1 when nothing
   * falls short, from the running numbers: no `available` profile and no shortfall list built (a
   * ShortageIndex re-scores every executor that changed while a demand waits). The same divisions
   * and sums in the same order, so the same number.
   */
  shortfallScore(profile: ResourceProfile): number {
    const a = this.#amounts;
    if (a === null || profile.kind !== 'specified') {
      const shortfall = this.available.shortfall(profile);
      return shortfall.length === 0 ? -1 : shortfallScore(shortfall);
    }
    const need = profile.amounts;
    const have = a.available;
    let short = 0;
    let deficit = 0;
    for (let i = 0; i < 5; i++) {
      if (have[i]! < need[i]!) {
        const scale = i === CPU ? UNITS_PER_CORE : 1;
        const available = have[i]! / scale;
        const required = need[i]! / scale;
        deficit = deficit + (required - available) / Math.max(required, 1e-9);
        short++;
      }
    }
    for (const [name, units] of profile.extended) {
      const left = a.availableExtended.get(name) ?? 0;
      if (left < units) {
        const available = left / UNITS_PER_CORE;
        const required = units / UNITS_PER_CORE;
        deficit = deficit + (required - available) / Math.max(required, 1e-9);
        short++;
      }
    }
    return short === 0 ? -1 : short * 10 + deficit;
  }

  /**
   * Adds (`sign` 1) or takes away (−1) what is available here to or from a running total (in
   * ResourceProfile.amounts order and units; extended resources without zeros). False, changing
   * nothing, once capacity is kept as profiles (`available` exists only as a profile then).
   */
  addAvailableTo(amounts: number[], extended: Map<string, number>, sign: 1 | -1): boolean {
    const a = this.#amounts;
    if (a === null) return false;
    for (let i = 0; i < 5; i++) amounts[i] = amounts[i]! + sign * a.available[i]!;
    for (const [name, units] of a.availableExtended) {
      const sum = (extended.get(name) ?? 0) + sign * units;
      if (sum === 0) extended.delete(name);
      else extended.set(name, sum);
    }
    return true;
  }

  /** `used` and `available` as fresh running totals (a plan's copy), or null once capacity is kept as profiles. */
  copyAmounts(): CapacityAmounts | null {
    const a = this.#amounts;
    if (a === null) return null;
    // A plan copies one per executor it touches, a check that places one slot one: no iterator
    // protocol for five numbers, no table copied when there are no extended resources.
    return {
      used: a.used.slice(),
      usedExtended: a.usedExtended.size === 0 ? new Map() : new Map(a.usedExtended),
      available: a.available.slice(),
      availableExtended: a.availableExtended.size === 0 ? new Map() : new Map(a.availableExtended),
    };
  }

  /** A free static slot this requirement may take (its effective profile is the default), if any. */
  freeStaticSlotFor(requirement: ResourceProfile): ResourceSlotRecord | undefined {
    if (this.freeStaticSlots === 0 || !this.effectiveProfile(requirement).equals(this.defaultSlotResourceProfile))
      return undefined;
    // The lowest free index, as a scan from 0 finds it, without walking the taken ones below it again.
    const slots = this.staticSlots;
    for (let i = this.#staticCursor; i < slots.length; i++) {
      const slot = slots[i]!;
      if (slot.state === 'free' && !slot.reserved) {
        this.#staticCursor = i;
        return slot;
      }
    }
    this.#staticCursor = slots.length;
    return undefined;
  }

  /** The static slot at `index` is free and unreserved again (freed, or its reservation dropped): counted free. */
  staticSlotFreed(index: number): void {
    this.freeStaticSlots++;
    if (index < this.#staticCursor) this.#staticCursor = index;
  }

  /** `count` slots of `profile` (a run, PlanApplier's) come off what is available. */
  take(profile: ResourceProfile, count = 1): void {
    const a = this.#amounts;
    if (count !== 1) {
      if (a !== null && profile.kind === 'specified' && withinSafeIntegers(a.used, a.usedExtended, profile, count)) {
        for (let i = 0; i < count; i++) profile.addTo(a.used, a.usedExtended);
        this.#usedChanged(a);
      } else {
        this.take(profile.multiply(count));
      }
      return;
    }
    if (a !== null && profile.kind === 'specified') {
      if (profile.addTo(a.used, a.usedExtended)) {
        this.#usedChanged(a);
        return;
      }
      // Past the safe integers: the profile arithmetic reports it, and nothing changes.
      this.used.merge(profile);
    }
    this.#keepAsProfiles();
    this.#usedProfile = this.#usedProfile!.merge(profile);
    this.#recompute();
  }

  /** Gives `profile` back (a slot was freed or a reservation dropped). */
  giveBack(profile: ResourceProfile): void {
    const a = this.#amounts;
    if (a !== null && profile.kind === 'specified') {
      // Below zero somewhere (a slot report overtook the plan): what is used stops at zero.
      if (!profile.subtractFrom(a.used, a.usedExtended)) subtractStoppingAtZero(a.used, a.usedExtended, profile);
      this.#usedChanged(a);
      return;
    }
    this.#keepAsProfiles();
    this.#usedProfile = saturatingSubtract(this.#usedProfile!, profile);
    this.#recompute();
  }

  /** available = total − used (saturating) and the utilisation, from the running totals. */
  #usedChanged(a: CapacityAmounts): void {
    this.#usedProfile = undefined;
    this.#availableProfile = undefined;
    availableAmounts(
      this.#total,
      this.totalResourceProfile.extended,
      a.used,
      a.usedExtended,
      a.available,
      a.availableExtended,
    );
    this.utilization = utilizationOfAmounts(a.used, this.#totalCpu, this.#totalMemory);
    this.version++;
  }

  /**
   * From here on the profiles are the truth, kept by profile arithmetic (UNKNOWN / ANY involved, or an overflow to
   * report).
   */
  #keepAsProfiles(): void {
    if (this.#amounts === null) return;
    this.#usedProfile = this.used;
    this.#availableProfile = this.available;
    this.#amounts = null;
  }

  /** The profile-arithmetic step (capacity kept as profiles). */
  #recompute(): void {
    const total = this.totalResourceProfile;
    const used = this.#usedProfile!;
    this.#availableProfile = saturatingSubtract(total, used);
    this.utilization = utilizationOfProfiles(used, total);
    this.version++;
  }
}

// Raw amounts (ResourceProfile.amounts: CPU units, then task heap, task off-heap, managed and network bytes), by name.
const CPU = 0;
const TASK_HEAP = 1;
const TASK_OFF_HEAP = 2;
const MANAGED = 3;
const NETWORK = 4;

/** The cores of raw amounts, as ResourceProfile.cpuCores computes them. */
/** Whether adding `count` × `profile` to the running total `used` stays within the safe integers. */
function withinSafeIntegers(
  used: readonly number[],
  usedExtended: ReadonlyMap<string, number>,
  profile: ResourceProfile,
  count: number,
): boolean {
  const p = profile.amounts;
  for (let i = 0; i < 5; i++) if (used[i]! + p[i]! * count > Number.MAX_SAFE_INTEGER) return false;
  for (const [n, units] of profile.extended)
    if ((usedExtended.get(n) ?? 0) + units * count > Number.MAX_SAFE_INTEGER) return false;
  return true;
}

export function coresOf(amounts: ArrayLike<number>): number {
  return amounts[CPU]! / UNITS_PER_CORE;
}

/** The memory of raw amounts, as ResourceProfile.totalMemory sums it: ((heap + off-heap) + managed) + network. */
export function memoryOf(amounts: ArrayLike<number>): number {
  return amounts[TASK_HEAP]! + amounts[TASK_OFF_HEAP]! + amounts[MANAGED]! + amounts[NETWORK]!;
}

/** Flink's utilisation score from raw used amounts: max over CPU and memory of used / total; 0 for a zero total. */
export function utilizationOfAmounts(used: ArrayLike<number>, totalCores: number, totalMemory: number): number {
  const cpu = totalCores > 0 ? coresOf(used) / totalCores : 0;
  const memory = totalMemory > 0 ? memoryOf(used) / totalMemory : 0;
  return Math.max(cpu, memory);
}

/** The same score from profiles (outside the raw amounts: UNKNOWN or ANY involved). */
export function utilizationOfProfiles(used: ResourceProfile, total: ResourceProfile): number {
  const cpu = total.cpuCores > 0 ? used.cpuCores / total.cpuCores : 0;
  const memory = total.totalMemory > 0 ? used.totalMemory / total.totalMemory : 0;
  return Math.max(cpu, memory);
}

/**
 * available = total − used field by field, never below zero, into `available` / `availableExtended`
 * in place (only the total's extended resources can be available, and are unless all used).
 */
export function availableAmounts(
  total: ArrayLike<number>,
  totalExtended: ReadonlyMap<string, number>,
  used: ArrayLike<number>,
  usedExtended: ReadonlyMap<string, number>,
  available: number[],
  availableExtended: Map<string, number>,
): void {
  for (let i = 0; i < 5; i++) available[i] = Math.max(0, total[i]! - used[i]!);
  for (const [name, units] of totalExtended) {
    const left = units - (usedExtended.get(name) ?? 0);
    if (left > 0) availableExtended.set(name, left);
    else availableExtended.delete(name);
  }
}

/** amounts − profile field by field, stopping at zero (running totals as ResourceProfile.fitsWithin takes them). */
function subtractStoppingAtZero(amounts: number[], extended: Map<string, number>, profile: ResourceProfile): void {
  for (let i = 0; i < 5; i++) amounts[i] = Math.max(0, amounts[i]! - profile.amounts[i]!);
  for (const [name, units] of profile.extended) {
    const left = (extended.get(name) ?? 0) - units;
    if (left > 0) extended.set(name, left);
    else extended.delete(name);
  }
}

/** a − b field by field, stopping at zero: for a view that a slot report has overtaken. */
export function saturatingSubtract(a: ResourceProfile, b: ResourceProfile): ResourceProfile {
  if (a.allFieldsNoLessThan(b) || a.isUnknown()) return a.subtract(b);
  // On the raw units, not on cores: a difference of floating cores (0.3 - 0.1) would be rounded down a unit.
  const amounts = a.amounts.map((units, i) => Math.max(0, units - b.amounts[i]!));
  const extended = new Map(
    [...a.extended].map(([name, units]) => [name, Math.max(0, units - (b.extended.get(name) ?? 0))]),
  );
  return ResourceProfile.fromAmounts(amounts, extended);
}
