/**
 * Small builders shared by the slotmanager tests: profiles, a stub gateway, executors of given
 * shapes registered in a TaskManagerTracker on a simulated clock, a worker spec, and IDs.
 *
 * Shapes are written as (cores, heap MB): `shape(4, 400, 4)` is an executor of 4 cores and
 * 400 mb heap cut into 4 static slots of 1 core / 100 mb each.
 */
import { SimulatedClock } from '../../../lib/core/clock.js';
import { AllocationID, JobID, ResourceID } from '../../../lib/core/ids.js';
import { ResourceProfile } from '../../../lib/core/ResourceProfile.js';
import { defaultSlotResourceProfile } from '../../../lib/core/TaskExecutorResourceUtils.js';
import type { TaskExecutorSlotGateway } from '../../../lib/rpc/TaskExecutorSlotGateway.js';
import type {
  TaskManagerRegistration,
  TaskManagerInfo,
} from '../../../lib/resourcemanager/slotmanager/TaskManagerRegistration.js';
import { TaskManagerTracker } from '../../../lib/resourcemanager/slotmanager/TaskManagerTracker.js';
import type { SlotMatchingPolicy } from '../../../lib/resourcemanager/slotmanager/SlotMatchingStrategy.js';
import { WorkerResourceSpec } from '../../../lib/resourcemanager/slotmanager/WorkerResourceSpec.js';

/** A specified profile: cores, heap MB, managed MB and extended resources (e.g. `{ gpu: 1 }`). */
export const profile = (
  cpuCores: number,
  heapMB = 0,
  managedMB = 0,
  extended: Record<string, number> = {},
): ResourceProfile =>
  ResourceProfile.newBuilder()
    .setCpuCores(cpuCores)
    .setTaskHeapMemoryMB(heapMB)
    .setManagedMemoryMB(managedMB)
    .setExtendedResources(extended)
    .build();

/** A gateway that acknowledges everything: the tracker and strategy never call it. */
export const stubGateway: TaskExecutorSlotGateway = { requestSlot: async () => {}, freeInactiveSlots: async () => {} };

/**
 * An executor's shape: its total, how many static slots, and optionally its default slot (else total ÷ slots) and
 * host.
 */
export interface ExecutorShape {
  readonly total: ResourceProfile;
  readonly slots: number;
  readonly defaultSlot?: ResourceProfile;
  readonly host?: string;
}

/** `cores` cores and `heapMB` heap in `slots` static slots, on `host` (default 'host-a'). */
export const shape = (cores: number, heapMB: number, slots: number, host?: string): ExecutorShape => ({
  total: profile(cores, heapMB),
  slots,
  ...(host === undefined ? {} : { host }),
});

/** The TaskManagerInfo of executor `te-<n>` of `shape`. */
export function executorInfo(n: number, s: ExecutorShape): TaskManagerInfo {
  return {
    resourceId: ResourceID.parse(`te-${n}`),
    host: s.host ?? 'host-a',
    totalResourceProfile: s.total,
    defaultSlotResourceProfile: s.defaultSlot ?? defaultSlotResourceProfile(s.total, s.slots),
    numberOfStaticSlots: s.slots,
    gateway: stubGateway,
  };
}

export interface TrackerOptions {
  readonly policy?: SlotMatchingPolicy;
  readonly clock?: SimulatedClock;
  readonly onIdleChanged?: (taskManager: TaskManagerRegistration) => void;
}

/** A tracker (first-fit unless told) with executors te-1, te-2, … of `shapes`, registered in that order. */
export function trackerWith(shapes: readonly ExecutorShape[], options: TrackerOptions = {}) {
  const clock = options.clock ?? new SimulatedClock(1_000);
  const tracker = new TaskManagerTracker({
    policy: options.policy ?? 'first-fit',
    clock,
    ...(options.onIdleChanged === undefined ? {} : { onIdleChanged: options.onIdleChanged }),
  });
  const tms = shapes.map((s, i) => tracker.addTaskManager(executorInfo(i + 1, s)));
  return { tracker, clock, tms };
}

/** A worker of `cores` cores and `heapMB` heap cut into `slots` static slots. */
export const workerSpec = (cores = 4, heapMB = 400, slots = 4): WorkerResourceSpec =>
  WorkerResourceSpec.create(profile(cores, heapMB), slots);

/** Job `n` (1–15) as a readable JobID: `1111…`, `2222…`. */
export const job = (n: number): JobID => JobID.parse(n.toString(16).repeat(32));

export const allocationId = (): AllocationID => AllocationID.generate();

/** Reserves and assigns one pending slot of `requirement` for `jobId` on `tm` (the syncer's first two steps). */
export function occupy(
  tracker: TaskManagerTracker,
  tm: TaskManagerRegistration,
  requirement: ResourceProfile,
  jobId: JobID = job(1),
  id: AllocationID = allocationId(),
) {
  return tracker.assignPending(tracker.reserve(tm, requirement, jobId), id, true);
}

/** Everything observable on one executor, as plain data: to prove a refused call changed nothing. */
export function snapshot(tm: TaskManagerRegistration) {
  return JSON.stringify({
    used: tm.used.key,
    available: tm.available.key,
    utilization: tm.utilization,
    freeStaticSlots: tm.freeStaticSlots,
    occupiedSlots: tm.occupiedSlots,
    reservations: tm.reservations,
    idleSince: tm.idleSince,
    blocked: tm.blocked,
    static: tm.staticSlots.map((s) => [s.state, s.allocationId, s.jobId, s.reserved, s.tracked]),
    dynamic: [...tm.dynamicSlots].map(([id, s]) => [id, s.state, s.profile.key]),
  });
}
