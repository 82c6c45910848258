/**
 * One requirement check (Flink's FineGrainedSlotManager.checkResourceRequirements): what the slot
 * requests wait for and what the declared requirements miss go to the ResourceAllocationStrategy as
 * demands, its plan is applied (PlanApplier), then its reconcile step releases what is no longer
 * needed; each demand's outcome is recorded with its request or its waiting job. The SlotManager
 * decides when a check runs (RequirementCheckScheduler); this decides what it does.
 */
import type { CheckResult } from './CheckResult.js';
import { PlanApplier, type PlanApplierOptions } from './PlanApplier.js';
import type { ResourceAllocationStrategy } from './ResourceAllocationStrategy.js';
import type { ReadonlyResourceTracker } from './ResourceTracker.js';
import { withRefusedWorkers } from './refusedWorkers.js';
import type { TaskManagerRegistration } from './TaskManagerRegistration.js';
import type { WaitingJobs } from './WaitingJobs.js';

export interface RequirementCheckOptions extends PlanApplierOptions {
  readonly strategy: ResourceAllocationStrategy;
  readonly resourceTracker: ReadonlyResourceTracker;
  readonly waiting: WaitingJobs;
}

export class RequirementCheck {
  readonly #o: RequirementCheckOptions;
  readonly #plans: PlanApplier;

  constructor(options: RequirementCheckOptions) {
    this.#o = options;
    this.#plans = new PlanApplier(options);
  }

  /** One check: the strategy's plan for what is missing, applied; then what is no longer needed released. */
  run(): CheckResult {
    const { requests, tracker, resourceTracker, strategy, waiting } = this.#o;
    const demands = requests.demands(tracker);
    for (const [jobId, requirements] of resourceTracker.getMissingResources()) {
      for (const r of requirements) demands.push({ jobId, profile: r.resourceProfile, count: r.numberOfRequiredSlots });
    }
    const result = strategy.tryFulfillRequirements(demands, tracker);

    const { refused, workersRequested } = this.#plans.applyAllocation(result);
    this.reconcile([]);
    // What was planned on a refused worker cannot be fulfilled now (Flink: its jobs are unfulfillable).
    const outcomes = withRefusedWorkers(result.outcomes, refused);
    waiting.record(requests.recordOutcomes(outcomes));
    return { outcomes, workersRequested };
  }

  /**
   * The strategy's reconcile step applied: pending workers that carry no slot are canceled, and of
   * `idle` (executors idle past resourcemanager.taskmanager-timeout) those the redundant workers do
   * not need are released; the others are asked again after another timeout.
   */
  reconcile(idle: readonly TaskManagerRegistration[]): void {
    const { tracker } = this.#o;
    const hasEmptyPending =
      tracker.numberOfPendingTaskManagers > 0 && [...tracker.pendingTaskManagers].some((p) => !p.hasPendingAllocations);
    if (!hasEmptyPending && idle.length === 0) return;
    this.#plans.applyReconcile(this.#o.strategy.tryReconcileClusterResources(tracker, idle));
  }
}
