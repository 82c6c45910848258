/**
 * FineGrainedSlotManager clusters for bench/matching.bench.ts (sections d–f): the same executor
 * shapes as `clusters.ts` (50 % standard, 30 % large, 20 % gpu, interleaved), registered through
 * `registerTaskManager` with their first slot report, on a SimulatedClock (no real timer), with
 * requirement checks at once (`slotmanager.requirement-check.delay: 0`: every change runs its own
 * check, the worst case for the check's fixed costs) and no ResourceAllocator (a fixed cluster, so
 * a demand that fits nowhere is explained by the executors that are there).
 *
 * Every executor shares one gateway whose `requestSlot` acknowledges at once (a resolved promise)
 * and records the time of each call, so a benchmark can read when the n-th request left.
 */
import { SimulatedClock } from '../../lib/core/clock.js';
import { AllocationID, JobID, ResourceID, SlotID } from '../../lib/core/ids.js';
import type { SlotStatus } from '../../lib/core/SlotReport.js';
import { FineGrainedSlotManager } from '../../lib/resourcemanager/slotmanager/FineGrainedSlotManager.js';
import type { ResourceEventListener } from '../../lib/resourcemanager/slotmanager/ResourceEventListener.js';
import type { SlotMatchingPolicy } from '../../lib/resourcemanager/slotmanager/SlotMatchingStrategy.js';
import type { TaskExecutorSlotGateway } from '../../lib/rpc/TaskExecutorSlotGateway.js';
import { shapeOfIndex, shapes } from './clusters.js';
import { cpuMicros } from './procStat.js';

/**
 * Counts the slot requests the SlotManager sends, and notes when a chosen one left (the clock is read for that one
 * only).
 */
export class CountingGateway implements TaskExecutorSlotGateway {
  requests = 0;
  /**
   * When the `watchFor`-th request (counted from the last reset) left, on performance.now() and on cpuMicros(); NaN
   * until then.
   */
  watchedAt = NaN;
  watchedAtCpu = NaN;
  watchFor = Infinity;

  reset(watchFor = Infinity): void {
    this.requests = 0;
    this.watchedAt = NaN;
    this.watchedAtCpu = NaN;
    this.watchFor = watchFor;
  }

  readonly requestSlot = (): Promise<void> => {
    if (++this.requests === this.watchFor) {
      this.watchedAt = performance.now();
      this.watchedAtCpu = cpuMicros();
    }
    return Promise.resolve();
  };

  readonly freeInactiveSlots = (): Promise<void> => Promise.resolve();
}

export interface SlotManagerClusterOptions {
  readonly executors: number;
  readonly slotsPerExecutor: number;
  readonly policy: SlotMatchingPolicy;
  /**
   * The first `allocatedExecutors` executors (registration order) report every static slot
   * allocated to `fillJob` (adopted, as after a ResourceManager failover): a cluster that is that
   * full without running a requirement check per slot. Default 0.
   */
  readonly allocatedExecutors?: number;
  readonly listener?: ResourceEventListener;
}

export interface SlotManagerCluster {
  readonly sm: FineGrainedSlotManager;
  readonly clock: SimulatedClock;
  readonly gateway: CountingGateway;
  /** The job holding the slots reported allocated. */
  readonly fillJob: JobID;
  /** Per executor (registration order), the AllocationIDs it reported. */
  readonly reported: ReadonlyArray<readonly AllocationID[]>;
  /** ResourceIDs in registration order (`te-000000`, …). */
  readonly resourceIds: readonly ResourceID[];
}

export function buildSlotManagerCluster(options: SlotManagerClusterOptions): SlotManagerCluster {
  const { executors, slotsPerExecutor, policy } = options;
  const clock = new SimulatedClock();
  const gateway = new CountingGateway();
  const sm = new FineGrainedSlotManager({
    configuration: {
      'slotmanager.requirement-check.delay': 0,
      'slotmanager.placement-policy': policy,
      'taskmanager.numberOfTaskSlots': slotsPerExecutor,
    },
    clock,
    ...(options.listener === undefined ? {} : { listener: options.listener }),
  });
  sm.start();
  const fillJob = JobID.generate();
  const byName = shapes(slotsPerExecutor);
  const reported: AllocationID[][] = [];
  const resourceIds: ResourceID[] = [];
  const allocatedExecutors = options.allocatedExecutors ?? 0;
  for (let i = 0; i < executors; i++) {
    const shape = byName[shapeOfIndex(i)];
    const resourceId = ResourceID.parse(`te-${String(i).padStart(6, '0')}`);
    const allocations: AllocationID[] = [];
    const slots: SlotStatus[] = [];
    for (let s = 0; s < slotsPerExecutor; s++) {
      const allocationId = i < allocatedExecutors ? AllocationID.generate() : null;
      if (allocationId !== null) allocations.push(allocationId);
      slots.push({
        slotId: SlotID.of(resourceId, s),
        resourceProfile: shape.defaultSlot,
        allocationId,
        jobId: allocationId === null ? null : fillJob,
        state: allocationId === null ? 'free' : 'allocated',
      });
    }
    const result = sm.registerTaskManager(
      {
        resourceId,
        host: `host-${Math.floor(i / 8)}`,
        totalResourceProfile: shape.total,
        defaultSlotResourceProfile: shape.defaultSlot,
        numberOfStaticSlots: slotsPerExecutor,
        gateway,
      },
      { resourceId, slots },
    );
    if (result.kind !== 'registered')
      throw new Error(`executor ${resourceId} was not registered: ${JSON.stringify(result)}`);
    reported.push(allocations);
    resourceIds.push(resourceId);
  }
  return { sm, clock, gateway, fillJob, reported, resourceIds };
}
