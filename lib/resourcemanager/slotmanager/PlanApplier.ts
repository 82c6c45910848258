/**
 * Applies the strategy's plans (ResourceAllocationResult, ResourceReconcileResult) to the cluster:
 * the slots planned on registered executors are reserved and asked of them (SlotStatusSyncer),
 * pending workers get their new plans, new workers are asked of the ResourceAllocator; pending
 * workers no longer needed are canceled, idle executors released (blocked until they are gone) or
 * kept for another idle timeout.
 */
import type { JobID } from '../../core/ids.js';
import type { ResourceAllocationResult, PlannedWorker, ResourceReconcileResult } from './ResourceAllocationStrategy.js';
import type { ResourceAllocator } from './ResourceAllocator.js';
import type { BlockedTaskManagers } from './BlockedTaskManagers.js';
import type { IdleTaskManagerTimeouts } from './IdleTaskManagerTimeouts.js';
import type { SlotRequests } from './SlotRequests.js';
import type { SlotStatusSyncer } from './SlotStatusSyncer.js';
import type { TaskManagerRegistration } from './TaskManagerRegistration.js';
import type { TaskManagerTracker } from './TaskManagerTracker.js';

export interface PlanApplierOptions {
  readonly tracker: TaskManagerTracker;
  readonly syncer: SlotStatusSyncer;
  readonly allocator: ResourceAllocator;
  readonly requests: SlotRequests;
  readonly blocked: BlockedTaskManagers;
  readonly idle: IdleTaskManagerTimeouts;
  /** Where each job's JobMaster is reached (its declared target address). */
  readonly targets: ReadonlyMap<JobID, string>;
  /** resourcemanager.taskmanager-timeout (ms), for the release's reason. */
  readonly idleTimeoutMs: number;
  readonly log: (message: string) => void;
}

export class PlanApplier {
  readonly #o: PlanApplierOptions;

  constructor(options: PlanApplierOptions) {
    this.#o = options;
  }

  /** Applies an allocation plan; returns the new workers the ResourceAllocator refused, and how many it started. */
  applyAllocation(result: ResourceAllocationResult<TaskManagerRegistration>): {
    readonly refused: readonly PlannedWorker[];
    readonly workersRequested: number;
  } {
    const { tracker, syncer, allocator, requests, targets } = this.#o;
    syncer.beginAllocations();
    const slots = result.slotsOnRegistered;
    // Each demand's slots are reserved per executor at once, in the order the plan first put one
    // there (as Flink applies allocations: per job, per executor, a count): under spread a demand's
    // slots alternate between executors, and reserving them one by one was most of applying it.
    let perExecutor: Map<TaskManagerRegistration, number> | undefined;
    for (let i = 0; i < slots.length; ) {
      const { demand, taskManager: first } = slots[i]!;
      let end = i + 1;
      let oneExecutor = true;
      for (; end < slots.length && slots[end]!.demand === demand; end++)
        if (slots[end]!.taskManager !== first) oneExecutor = false;
      const request = demand.allocationId === undefined ? undefined : requests.get(demand.allocationId);
      if (request !== undefined) request.state = 'allocating';
      const ask = {
        allocationId: demand.allocationId,
        targetAddress: request?.targetAddress ?? targets.get(demand.jobId) ?? '',
        tracked: request === undefined,
      };
      if (oneExecutor) {
        for (const reservation of tracker.reserveRun(first, demand.profile, demand.jobId, end - i))
          syncer.allocateSlot(reservation, ask);
      } else {
        perExecutor ??= new Map();
        for (let k = i; k < end; k++) {
          const { taskManager } = slots[k]!;
          perExecutor.set(taskManager, (perExecutor.get(taskManager) ?? 0) + 1);
        }
        for (const [taskManager, count] of perExecutor)
          for (const reservation of tracker.reserveRun(taskManager, demand.profile, demand.jobId, count))
            syncer.allocateSlot(reservation, ask);
        perExecutor.clear();
      }
      i = end;
    }
    syncer.endAllocations();
    for (const pending of tracker.pendingTaskManagers)
      pending.replaceAllPendingAllocations(result.slotsOnPending.get(pending.id) ?? new Map());
    let workersRequested = 0;
    const refused: PlannedWorker[] = [];
    for (const worker of result.newWorkers) {
      const pending = tracker.addPendingTaskManager(worker.spec);
      if (allocator.allocateWorker(pending.id, worker.spec)) {
        pending.replaceAllPendingAllocations(worker.allocations);
        workersRequested++;
      } else {
        tracker.removePendingTaskManager(pending.id);
        refused.push(worker);
        this.#o.log(`the ResourceAllocator refused to start a worker (${worker.purpose})`);
      }
    }
    return { refused, workersRequested };
  }

  /** Applies a reconcile plan. */
  applyReconcile(result: ResourceReconcileResult): void {
    const { tracker, allocator, blocked, idle } = this.#o;
    for (const id of result.pendingTaskManagersToRelease) {
      tracker.removePendingTaskManager(id);
      allocator.cancelWorker(id);
    }
    for (const resourceId of result.taskManagersToKeep) idle.restart(resourceId);
    for (const resourceId of result.taskManagersToRelease) {
      const taskManager = tracker.getTaskManager(resourceId)!;
      blocked.releasing(taskManager);
      this.#o.log(`releasing TaskExecutor ${resourceId}: idle since ${taskManager.idleSince}`);
      allocator.releaseWorker(resourceId, `idle for ${this.#o.idleTimeoutMs} ms`);
    }
  }
}
