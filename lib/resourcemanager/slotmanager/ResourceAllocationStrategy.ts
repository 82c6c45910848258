/**
 * ResourceAllocationStrategy (seed 003; Flink's DefaultResourceAllocationStrategy): given what the
 * jobs miss, decide where it goes — first on free registered resources (through the tracker's
 * index, under the cluster's slot matching policy), then on pending workers, then on new workers
 * of the configured shape, bounded by the cluster's maxima; and top the free resources up to the
 * redundant workers. It returns a plan; the SlotManager applies it.
 *
 * Capacity on registered executors is reserved in the tracker as it is planned (so the next demand
 * sees what is left); the SlotManager turns each reservation into a slot request or cancels it.
 * Pending workers are re-planned from scratch on every call, as in Flink. Demands are served in
 * the order given, each to the end, so the plan is deterministic.
 */
import type { AllocationID, JobID } from '../../core/ids.js';
import { ResourceCounter } from '../../core/ResourceCounter.js';
import type { ResourceProfile } from '../../core/ResourceProfile.js';
import type { PendingTaskManagerID } from './PendingTaskManager.js';
import type { TaskManagerRegistration } from './TaskManagerRegistration.js';
import type { PlacementPreference, SlotReservation, TaskManagerTracker } from './TaskManagerTracker.js';
import type { WaitReason } from './WaitReason.js';
import type { WorkerResourceSpec } from './WorkerResourceSpec.js';

/** `count` slots of `profile` for a job (UNKNOWN: each executor's default slot). */
export interface ResourceDemand {
  readonly jobId: JobID;
  readonly profile: ResourceProfile;
  readonly count: number;
  readonly preference?: PlacementPreference;
  /** Set for an imperative request (seed 000's requestSlot): the allocation to use. */
  readonly allocationId?: AllocationID;
}

export interface PlannedSlot {
  readonly demand: ResourceDemand;
  readonly reservation: SlotReservation;
}

/** A worker the plan wants started, with the slots it will carry. */
export interface PlannedWorker {
  readonly spec: WorkerResourceSpec;
  readonly allocations: ReadonlyMap<JobID, ResourceCounter>;
  /** `redundancy`: a spare kept for fast failover (slotmanager.redundant-taskmanager-num). */
  readonly purpose: 'requirements' | 'redundancy';
}

export interface DemandOutcome {
  readonly demand: ResourceDemand;
  /** Slots reserved on registered executors now. */
  readonly placed: number;
  /** Slots that will go to pending or new workers when they register. */
  readonly onWorkers: number;
  /** Slots the plan could not place anywhere. */
  readonly unfulfilled: number;
  /** Why `onWorkers + unfulfilled` slots wait; absent when everything was placed. */
  readonly reason?: WaitReason;
}

export interface ResourceAllocationResult {
  readonly slotsOnRegistered: readonly PlannedSlot[];
  /** The new plan of every existing pending worker (empty maps for those that carry nothing). */
  readonly slotsOnPending: ReadonlyMap<PendingTaskManagerID, ReadonlyMap<JobID, ResourceCounter>>;
  readonly newWorkers: readonly PlannedWorker[];
  readonly outcomes: readonly DemandOutcome[];
}

export interface ResourceAllocationStrategy {
  tryFulfillRequirements(demands: readonly ResourceDemand[], tracker: TaskManagerTracker): ResourceAllocationResult;
}

export interface ResourceAllocationLimits {
  /** slotmanager.number-of-slots.max */
  readonly maxSlots: number;
  /** slotmanager.max-total-resource.cpu */
  readonly maxTotalCpu: number;
  /** slotmanager.max-total-resource.memory (bytes) */
  readonly maxTotalMemory: number;
  /** slotmanager.redundant-taskmanager-num */
  readonly redundantTaskManagers: number;
}

/** Slots and resources of the registered executors and every pending or planned worker. */
interface Totals {
  slots: number;
  resource: ResourceProfile;
}

/**
 * What the cluster would have with every pending and planned worker, summed only when a new
 * worker is considered (a profile merge per check is a good part of a check that places one slot).
 */
class PlannedTotals {
  #totals: Totals | undefined;

  constructor(private readonly tracker: TaskManagerTracker) {}

  get totals(): Totals {
    return (this.#totals ??= { slots: this.tracker.numberOfRegisteredSlots + this.tracker.numberOfPendingSlots, resource: this.tracker.registeredResource.merge(this.tracker.pendingResource) });
  }
}

/** A worker (pending or planned) as the plan fills it. */
interface WorkerPlan {
  readonly id: PendingTaskManagerID | null;
  readonly spec: WorkerResourceSpec;
  available: ResourceProfile;
  readonly allocations: Map<JobID, ResourceCounter>;
}

export class DefaultResourceAllocationStrategy implements ResourceAllocationStrategy {
  constructor(
    /** The shape of the workers that may be started; null when the cluster cannot start workers. */
    private readonly workerSpec: WorkerResourceSpec | null,
    private readonly limits: ResourceAllocationLimits,
  ) {}

  tryFulfillRequirements(demands: readonly ResourceDemand[], tracker: TaskManagerTracker): ResourceAllocationResult {
    const slotsOnRegistered: PlannedSlot[] = [];
    const outcomes: DemandOutcome[] = [];
    const pending: WorkerPlan[] = tracker.numberOfPendingTaskManagers === 0 ? [] : [...tracker.pendingTaskManagers].map((p) => ({ id: p.id, spec: p.spec, available: p.totalResourceProfile, allocations: new Map() }));
    const fresh: Array<WorkerPlan & { purpose: PlannedWorker['purpose'] }> = [];
    const planned = new PlannedTotals(tracker);

    for (const demand of demands) {
      let left = demand.count;
      // 1. Free resources on registered executors, best first under the policy.
      let taskManager: TaskManagerRegistration | undefined;
      while (left > 0) {
        if (taskManager === undefined || !tracker.remainsBest(taskManager, demand.profile)) taskManager = tracker.findTaskManager(demand.profile, demand.preference);
        if (taskManager === undefined) break;
        slotsOnRegistered.push({ demand, reservation: tracker.reserve(taskManager, demand.profile, demand.jobId) });
        left--;
      }
      const placed = demand.count - left;
      if (left === 0) {
        outcomes.push({ demand, placed, onWorkers: 0, unfulfilled: 0 });
        continue;
      }
      // 2. Pending and already planned workers, in the order they were asked for.
      const touched = new Set<WorkerPlan>();
      left = this.#fill([...pending, ...fresh], demand, left, touched);
      // 3. New workers of the configured shape, as long as the limits allow.
      let refusal: WaitReason | undefined;
      if (left > 0) {
        if (this.workerSpec === null) {
          refusal = tracker.explainShortage(demand.profile);
        } else if (!this.workerSpec.totalResourceProfile.allFieldsNoLessThan(effectiveOn(this.workerSpec, demand.profile))) {
          const shortage = tracker.explainShortage(demand.profile);
          refusal = shortage.couldFitWhenFree.length > 0 ? shortage : { kind: 'exceeds-worker-shape', shortfall: this.workerSpec.totalResourceProfile.shortfall(effectiveOn(this.workerSpec, demand.profile)) };
        } else {
          while (left > 0) {
            refusal = this.#limitReason(planned.totals, this.workerSpec);
            if (refusal !== undefined) break;
            const worker = this.#newWorker(this.workerSpec, 'requirements', planned.totals);
            fresh.push(worker);
            left = this.#fill([worker], demand, left, touched);
          }
        }
      }
      const onWorkers = demand.count - placed - left;
      const reason: WaitReason | undefined = left > 0 ? refusal : onWorkers > 0 ? { kind: 'waiting-for-workers', workers: touched.size } : undefined;
      outcomes.push({ demand, placed, onWorkers, unfulfilled: left, ...(reason === undefined ? {} : { reason }) });
    }

    this.#topUpRedundancy(tracker, pending, fresh, planned);
    return {
      slotsOnRegistered,
      slotsOnPending: new Map(pending.map((p) => [p.id!, p.allocations])),
      newWorkers: fresh.map(({ spec, allocations, purpose }) => ({ spec, allocations, purpose })),
      outcomes,
    };
  }

  /** Places up to `count` slots of the demand on `workers`, first fit; returns how many are left. */
  #fill(workers: WorkerPlan[], demand: ResourceDemand, count: number, touched: Set<WorkerPlan>): number {
    let left = count;
    for (const worker of workers) {
      const effective = effectiveOn(worker.spec, demand.profile);
      while (left > 0 && worker.available.allFieldsNoLessThan(effective)) {
        worker.available = worker.available.subtract(effective);
        worker.allocations.set(demand.jobId, (worker.allocations.get(demand.jobId) ?? ResourceCounter.empty()).add(effective, 1));
        touched.add(worker);
        left--;
      }
      if (left === 0) break;
    }
    return left;
  }

  #newWorker(spec: WorkerResourceSpec, purpose: PlannedWorker['purpose'], totals: Totals) {
    totals.slots += spec.numberOfSlots;
    totals.resource = totals.resource.merge(spec.totalResourceProfile);
    return { id: null, spec, available: spec.totalResourceProfile, allocations: new Map<JobID, ResourceCounter>(), purpose };
  }

  /** Why one more worker may not be started, or undefined when it may. */
  #limitReason(totals: Totals, spec: WorkerResourceSpec): WaitReason | undefined {
    const slots = totals.slots + spec.numberOfSlots;
    if (slots > this.limits.maxSlots) return { kind: 'max-slots-reached', limit: this.limits.maxSlots, wouldBe: slots };
    const after = totals.resource.merge(spec.totalResourceProfile);
    if (after.cpuCores > this.limits.maxTotalCpu) return { kind: 'max-resources-reached', dimension: 'cpu', limit: this.limits.maxTotalCpu, wouldBe: after.cpuCores };
    if (after.totalMemory > this.limits.maxTotalMemory) return { kind: 'max-resources-reached', dimension: 'memory', limit: this.limits.maxTotalMemory, wouldBe: after.totalMemory };
    return undefined;
  }

  /**
   * Flink's redundancy rule: the free resources of registered executors and of every planned
   * worker must cover `redundant` whole workers; start empty workers until they do (or a limit says no).
   */
  #topUpRedundancy(tracker: TaskManagerTracker, pending: WorkerPlan[], fresh: Array<WorkerPlan & { purpose: PlannedWorker['purpose'] }>, planned: PlannedTotals): void {
    const spec = this.workerSpec;
    if (spec === null || this.limits.redundantTaskManagers === 0) return;
    const totals = planned.totals;
    const needed = spec.totalResourceProfile.multiply(this.limits.redundantTaskManagers);
    let free = [...pending, ...fresh].reduce((sum, w) => sum.merge(w.available), tracker.freeRegisteredResource);
    while (!free.allFieldsNoLessThan(needed) && this.#limitReason(totals, spec) === undefined) {
      const worker = this.#newWorker(spec, 'redundancy', totals);
      fresh.push(worker);
      free = free.merge(worker.available);
    }
  }
}

/** The profile a requirement takes on a worker of `spec`: UNKNOWN means its default slot. */
function effectiveOn(spec: WorkerResourceSpec, requirement: ResourceProfile): ResourceProfile {
  return requirement.isUnknown() ? spec.defaultSlotResourceProfile : requirement;
}
