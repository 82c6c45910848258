/**
 * A registered TaskExecutor as the SlotManager sees it (Flink's FineGrainedTaskManagerRegistration)
 * and the slot records it holds: plain, mutable records on the hot path, changed only through the
 * TaskManagerTracker so that its index stays in step.
 *
 * Capacity: `used` is the sum of every pending, allocated or reserved slot's profile; `available`
 * is total − used (never below zero: a slot report may show more than the SlotManager planned).
 * Static slots are records 0..n-1 that live as long as the executor (free ⇄ pending ⇄ allocated);
 * dynamic slots exist only while pending or allocated. A static slot is used when a requirement's
 * effective profile is the executor's default slot profile and one is free; anything else gets a
 * dynamic slot carved from what is available, as in Flink's fine-grained resource management.
 */
import type { AllocationID, JobID, ResourceID } from '../../core/ids.js';
import { ResourceProfile } from '../../core/ResourceProfile.js';
import type { ResourceSlotState } from '../../../machines/resourceSlot.machine.js';
import type { TaskExecutorSlotGateway } from '../../rpc/TaskExecutorSlotGateway.js';

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
  /** Counted in its job's ResourceTracker (declared requirements); false for seed 000's imperative requests. */
  tracked: boolean;
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
  used: ResourceProfile = ResourceProfile.ZERO;
  available: ResourceProfile;
  /** max over CPU and memory of used/total (Flink's utilisation score); 0 for a zero total. */
  utilization = 0;
  /** Free static slot records. */
  freeStaticSlots: number;
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

  constructor(info: TaskManagerInfo, seq: number, now: number) {
    this.resourceId = info.resourceId;
    this.host = info.host;
    this.totalResourceProfile = info.totalResourceProfile;
    this.defaultSlotResourceProfile = info.defaultSlotResourceProfile;
    this.numberOfStaticSlots = info.numberOfStaticSlots;
    this.gateway = info.gateway;
    this.seq = seq;
    this.available = info.totalResourceProfile;
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
    }));
  }

  /** The profile a requirement takes here: UNKNOWN means this executor's default slot. */
  effectiveProfile(requirement: ResourceProfile): ResourceProfile {
    return requirement.isUnknown() ? this.defaultSlotResourceProfile : requirement;
  }

  canFit(requirement: ResourceProfile): boolean {
    return !this.blocked && this.available.allFieldsNoLessThan(this.effectiveProfile(requirement));
  }

  /** A free static slot this requirement may take (its effective profile is the default), if any. */
  freeStaticSlotFor(requirement: ResourceProfile): ResourceSlotRecord | undefined {
    if (this.freeStaticSlots === 0 || !this.effectiveProfile(requirement).equals(this.defaultSlotResourceProfile)) return undefined;
    return this.staticSlots.find((slot) => slot.state === 'free' && !slot.reserved);
  }

  /** Adds `profile` to what is used (a slot was reserved, became pending, or was adopted). */
  take(profile: ResourceProfile): void {
    this.used = this.used.merge(profile);
    this.#recompute();
  }

  /** Gives `profile` back (a slot was freed or a reservation dropped). */
  giveBack(profile: ResourceProfile): void {
    this.used = saturatingSubtract(this.used, profile);
    this.#recompute();
  }

  #recompute(): void {
    const total = this.totalResourceProfile;
    this.available = saturatingSubtract(total, this.used);
    const cpu = total.cpuCores > 0 ? this.used.cpuCores / total.cpuCores : 0;
    const memory = total.totalMemory > 0 ? this.used.totalMemory / total.totalMemory : 0;
    this.utilization = Math.max(cpu, memory);
    this.version++;
  }
}

/** a − b field by field, stopping at zero: for a view that a slot report has overtaken. */
export function saturatingSubtract(a: ResourceProfile, b: ResourceProfile): ResourceProfile {
  if (a.allFieldsNoLessThan(b)) return a.subtract(b);
  const builder = ResourceProfile.newBuilder()
    .setCpuCores(Math.max(0, a.cpuCores - b.cpuCores))
    .setTaskHeapMemory(Math.max(0, a.taskHeapMemory - b.taskHeapMemory))
    .setTaskOffHeapMemory(Math.max(0, a.taskOffHeapMemory - b.taskOffHeapMemory))
    .setManagedMemory(Math.max(0, a.managedMemory - b.managedMemory))
    .setNetworkMemory(Math.max(0, a.networkMemory - b.networkMemory));
  const theirs = b.extendedResources;
  for (const [name, amount] of Object.entries(a.extendedResources)) builder.setExtendedResource(name, Math.max(0, amount - (theirs[name] ?? 0)));
  return builder.build();
}
