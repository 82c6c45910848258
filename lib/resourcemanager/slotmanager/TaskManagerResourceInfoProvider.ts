/**
 * What the ResourceAllocationStrategy may read of the cluster (Flink's
 * TaskManagerResourceInfoProvider): the registered executors through the index, best first under
 * the cluster's policy; the pending workers; the totals the maxima are checked against; and why a
 * requirement fits nowhere. Read only: a strategy plans on its own copy of what it sets aside
 * (RegisteredResourcePlan) and returns a plan, which the SlotManager applies.
 *
 * The TaskManagerTracker implements it; strategy tests pass plain objects
 * (test/resourcemanager/slotmanager/planningView.ts).
 */
import type { ResourceID } from '../../core/ids.js';
import type { ResourceProfile } from '../../core/ResourceProfile.js';
import type { IndexedExecutor } from './FreeResourceIndex.js';
import type { PendingTaskManagerID } from './PendingTaskManager.js';
import type { CapacityAmounts } from './TaskManagerRegistration.js';
import type { SlotMatchingPolicy } from './SlotMatchingStrategy.js';
import type { WaitReason } from './WaitReason.js';
import type { WorkerResourceSpec } from './WorkerResourceSpec.js';

export type InsufficientResources = Extract<WaitReason, { kind: 'insufficient-resources' }>;

/** A registered executor as a plan reads it. */
export interface RegisteredTaskManagerInfo extends IndexedExecutor {
  readonly resourceId: ResourceID;
  readonly totalResourceProfile: ResourceProfile;
  readonly defaultSlotResourceProfile: ResourceProfile;
  /** What its pending and allocated slots use. */
  readonly used: ResourceProfile;
  /** total − used, never below zero. */
  readonly available: ResourceProfile;
  /** Takes no new slots now (a refused request, or being released). */
  readonly blocked: boolean;
  /** When it last became empty; null while it holds a slot. */
  readonly idleSince: number | null;
  /**
   * Optional: `used` and `available` as fresh running totals, or null outside them (a plan then reads the profiles).
   */
  copyAmounts?(): CapacityAmounts | null;
}

/** A worker asked for and not registered yet, as a plan reads it. */
export interface PendingTaskManagerInfo {
  readonly id: PendingTaskManagerID;
  readonly spec: WorkerResourceSpec;
  readonly totalResourceProfile: ResourceProfile;
  /** What the slots planned on it by the last check leave free. */
  readonly unusedResource: ResourceProfile;
  readonly hasPendingAllocations: boolean;
}

/** Registered executors best first, read lazily (FreeResourceIndex.RankedCandidates). */
export interface RankedTaskManagers<T extends RegisteredTaskManagerInfo = RegisteredTaskManagerInfo> {
  readonly current: T | undefined;
  advance(): void;
}

/**
 * `T`: how the provider's executors are typed (the tracker's are its TaskManagerRegistrations), so a plan names them as
 * given.
 */
export interface TaskManagerResourceInfoProvider<T extends RegisteredTaskManagerInfo = RegisteredTaskManagerInfo> {
  readonly policy: SlotMatchingPolicy;
  /**
   * The unblocked registered executors that can take `requirement` now (UNKNOWN: their default slot), best first; on
   * `host` only, if given.
   */
  rankedTaskManagers(requirement: ResourceProfile, host?: string): RankedTaskManagers<T>;
  getTaskManager(resourceId: ResourceID): T | undefined;
  /**
   * Why no registered executor takes `requirement` now (explainShortage in WaitReason.ts), with up to `limit` executors
   * per list.
   */
  explainShortage(requirement: ResourceProfile, limit?: number): InsufficientResources;
  /** In the order they were asked for. */
  readonly pendingTaskManagers: Iterable<PendingTaskManagerInfo>;
  readonly numberOfPendingTaskManagers: number;
  /** Static slots of the registered executors, and of the pending workers. */
  readonly numberOfRegisteredSlots: number;
  readonly numberOfPendingSlots: number;
  /** Sum of the registered executors' totals, and of the pending workers'. */
  readonly registeredResource: ResourceProfile;
  readonly pendingResource: ResourceProfile;
  /** What the unblocked registered executors can still take, summed. */
  readonly freeRegisteredResource: ResourceProfile;
}
