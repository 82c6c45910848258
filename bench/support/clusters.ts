/**
 * Cluster builders for bench/matching.bench.ts: a TaskManagerTracker with many registered
 * executors of mixed shapes, filled to a given occupancy through the tracker's own slot path
 * (reserve → assignPending → completeAllocation), with the free slots either at the end of the
 * registration order (what a first-fit allocator leaves behind: the worst case for a scan) or
 * spread at random (seeded, so every run builds the same cluster).
 *
 * Executor shapes (every one cut into `slotsPerExecutor` equal static slots; the totals scale with
 * the slot count, so a default slot is always the same size):
 * - `standard` (50 %): 1 core, 1 GiB heap, 512 MiB managed, 128 MiB network per slot;
 * - `large` (30 %): twice that per slot;
 * - `gpu` (20 %): a standard slot plus 1 `gpu` per slot (the extended resource only they have).
 * Registration order interleaves them: executor i is standard for i % 10 in 0..4, large for 5..7,
 * gpu for 8..9.
 */
import { SimulatedClock } from '../../lib/core/clock.js';
import { AllocationID, JobID, ResourceID } from '../../lib/core/ids.js';
import { ResourceProfile } from '../../lib/core/ResourceProfile.js';
import { defaultSlotResourceProfile } from '../../lib/core/TaskExecutorResourceUtils.js';
import type { SlotMatchingPolicy } from '../../lib/resourcemanager/slotmanager/SlotMatchingStrategy.js';
import type { TaskManagerRegistration } from '../../lib/resourcemanager/slotmanager/TaskManagerRegistration.js';
import { TaskManagerTracker } from '../../lib/resourcemanager/slotmanager/TaskManagerTracker.js';
import type { TaskExecutorSlotGateway } from '../../lib/rpc/TaskExecutorSlotGateway.js';
import { seededRandom } from '../../test/support/random.js';

export type ShapeName = 'standard' | 'large' | 'gpu';
export const SHAPE_NAMES: readonly ShapeName[] = ['standard', 'large', 'gpu'];

export interface ExecutorShape {
  readonly name: ShapeName;
  readonly total: ResourceProfile;
  readonly defaultSlot: ResourceProfile;
  readonly slots: number;
}

function perSlot(cores: number, heapMB: number, managedMB: number, networkMB: number, gpus = 0) {
  return (n: number) =>
    ResourceProfile.newBuilder()
      .setCpuCores(cores * n)
      .setTaskHeapMemoryMB(heapMB * n)
      .setManagedMemoryMB(managedMB * n)
      .setNetworkMemoryMB(networkMB * n)
      .setExtendedResources(gpus > 0 ? { gpu: gpus * n } : {})
      .build();
}

const TOTALS: Record<ShapeName, (slots: number) => ResourceProfile> = {
  standard: perSlot(1, 1024, 512, 128),
  large: perSlot(2, 2048, 1024, 256),
  gpu: perSlot(1, 1024, 512, 128, 1),
};

const shapeCache = new Map<number, Record<ShapeName, ExecutorShape>>();

/** The three shapes cut into `slots` static slots each (cached: the profiles are shared by every executor). */
export function shapes(slots: number): Record<ShapeName, ExecutorShape> {
  let cached = shapeCache.get(slots);
  if (cached === undefined) {
    const make = (name: ShapeName): ExecutorShape => {
      const total = TOTALS[name](slots);
      return { name, total, defaultSlot: defaultSlotResourceProfile(total, slots), slots };
    };
    cached = { standard: make('standard'), large: make('large'), gpu: make('gpu') };
    shapeCache.set(slots, cached);
  }
  return cached;
}

/** The shape of the i-th registered executor (0-based): 50 % standard, 30 % large, 20 % gpu, interleaved. */
export function shapeOfIndex(i: number): ShapeName {
  const r = i % 10;
  return r < 5 ? 'standard' : r < 8 ? 'large' : 'gpu';
}

/** The requirement profiles the benchmark asks for. */
export const REQUIREMENTS = {
  /** Each executor's own default slot (a static slot). */
  unknown: ResourceProfile.UNKNOWN,
  /** Exactly a standard default slot: static on standard executors, a dynamic slot on the others. */
  standardSlot: perSlot(1, 1024, 512, 128)(1),
  /** Half a standard slot: a dynamic slot anywhere. */
  small: perSlot(0.5, 256, 128, 32)(1),
  /** Needs a GPU: a dynamic slot on gpu executors only. */
  gpu: perSlot(1, 512, 256, 64, 1)(1),
  /** More than any executor has: nothing fits. */
  impossible: ResourceProfile.newBuilder().setCpuCores(64).setTaskHeapMemoryMB(1024).build(),
} as const;

/** The mix one measured operation cycles through, in this order. */
export const MIXED_REQUIREMENTS: readonly ResourceProfile[] = [
  REQUIREMENTS.unknown,
  REQUIREMENTS.standardSlot,
  REQUIREMENTS.small,
  REQUIREMENTS.gpu,
];
export const MIXED_REQUIREMENT_NAMES = [
  'UNKNOWN',
  'standard slot',
  'small (dynamic)',
  'gpu (dynamic, gpu executors only)',
];

/** Nobody is called: the tracker never touches gateways; one object serves every executor. */
export const NO_GATEWAY: TaskExecutorSlotGateway = {
  requestSlot: () => Promise.resolve(),
  freeInactiveSlots: () => Promise.resolve(),
};

export interface ClusterOptions {
  readonly executors: number;
  readonly slotsPerExecutor: number;
  readonly policy: SlotMatchingPolicy;
}

/**
 * A tracker with `executors` registered executors, all slots free; ResourceIDs `te-000000`, … in registration order.
 */
export function buildTracker({ executors, slotsPerExecutor, policy }: ClusterOptions): TaskManagerTracker {
  const tracker = new TaskManagerTracker({ policy, clock: new SimulatedClock() });
  const byName = shapes(slotsPerExecutor);
  for (let i = 0; i < executors; i++) {
    const shape = byName[shapeOfIndex(i)];
    tracker.addTaskManager({
      resourceId: ResourceID.parse(`te-${String(i).padStart(6, '0')}`),
      host: `host-${Math.floor(i / 8)}`,
      totalResourceProfile: shape.total,
      defaultSlotResourceProfile: shape.defaultSlot,
      numberOfStaticSlots: shape.slots,
      gateway: NO_GATEWAY,
    });
  }
  return tracker;
}

/**
 * - `first-fit`: the occupied slots are the first ones in registration order (what a first-fit
 *   allocator leaves): the free ones sit at the end, the worst case for a scan.
 * - `random`: the occupied slots are drawn at random, separately for each shape (so every shape
 *   has the same occupancy and every requirement of the mix still finds room).
 */
export type Layout = 'first-fit' | 'random';

/** Deterministic PRNG (mulberry32, the tests' seededRandom): the same seed builds the same cluster. */
export const mulberry32 = seededRandom;

/** The job the filling allocations belong to. */
export const FILL_JOB = JobID.generate();

/** One allocation of the executor's default slot through the tracker's own path; returns its AllocationID. */
export function allocateDefaultSlot(
  tracker: TaskManagerTracker,
  taskManager: TaskManagerRegistration,
  jobId: JobID = FILL_JOB,
): AllocationID {
  const reservation = tracker.reserve(taskManager, ResourceProfile.UNKNOWN, jobId);
  const allocationId = AllocationID.generate();
  tracker.assignPending(reservation, allocationId, true);
  tracker.completeAllocation(allocationId);
  return allocationId;
}

/**
 * Allocates `occupancy` (0..1) of the static slots with the executors' default profile, laid out as
 * `layout`; returns how many slots it allocated.
 */
export function fill(tracker: TaskManagerTracker, occupancy: number, layout: Layout, seed = 42): number {
  const taskManagers = [...tracker.taskManagers];
  const perExecutor = new Array<number>(taskManagers.length).fill(0);
  if (layout === 'first-fit') {
    let left = Math.round(occupancy * tracker.numberOfRegisteredSlots);
    for (let i = 0; i < taskManagers.length && left > 0; i++) {
      const take = Math.min(left, taskManagers[i]!.numberOfStaticSlots);
      perExecutor[i] = take;
      left -= take;
    }
  } else {
    const random = mulberry32(seed);
    for (const shape of SHAPE_NAMES) {
      // One entry per static slot of this shape: the executor's position in registration order.
      const slots: number[] = [];
      taskManagers.forEach((tm, i) => {
        if (shapeOfIndex(i) === shape) for (let s = 0; s < tm.numberOfStaticSlots; s++) slots.push(i);
      });
      const take = Math.round(occupancy * slots.length);
      // Partial Fisher–Yates: the first `take` entries become a uniform random sample.
      for (let k = 0; k < take; k++) {
        const j = k + Math.floor(random() * (slots.length - k));
        [slots[k], slots[j]] = [slots[j]!, slots[k]!];
        perExecutor[slots[k]!]!++;
      }
    }
  }
  let allocated = 0;
  taskManagers.forEach((tm, i) => {
    for (let k = 0; k < perExecutor[i]!; k++) allocateDefaultSlot(tracker, tm);
    allocated += perExecutor[i]!;
  });
  return allocated;
}
