/**
 * ResourceAllocationStrategy (Flink's DefaultResourceAllocationStrategy): given what the
 * jobs miss, decide where it goes — first on free registered resources (through the tracker's
 * index, under the cluster's slot matching policy), then on pending workers, then on new workers
 * of the configured shape, bounded by the cluster's maxima; and top the free resources up to the
 * redundant workers. And which resources are no longer needed (tryReconcileClusterResources:
 * pending workers that carry nothing, idle executors), the redundant workers kept.
 *
 * It reads a read-only view (TaskManagerResourceInfoProvider) and returns plans; the SlotManager
 * applies them. What a plan sets aside on registered executors it keeps to itself
 * (RegisteredResourcePlan), so the next demand sees what is left and nothing changes until the
 * plan is applied. Pending workers are re-planned from scratch on every call, as in Flink. Demands
 * are served in the order given, each to the end, so the plan is deterministic.
 */
import type { AllocationID, JobID, ResourceID } from '../../core/ids.js';
import type { ResolvedOptions } from '../../core/options.js';
import { ResourceCounter } from '../../core/ResourceCounter.js';
import { ResourceProfile } from '../../core/ResourceProfile.js';
import type { PendingTaskManagerID } from './PendingTaskManager.js';
import { RegisteredResourcePlan, type PlannedTaskManager } from './RegisteredResourcePlan.js';
import type {
  InsufficientResources,
  RegisteredTaskManagerInfo,
  TaskManagerResourceInfoProvider,
} from './TaskManagerResourceInfoProvider.js';
import type { PlacementPreference } from './TaskManagerTracker.js';
import type { WaitReason } from './WaitReason.js';
import type { WorkerResourceSpec } from './WorkerResourceSpec.js';

/** `count` slots of `profile` for a job (UNKNOWN: each executor's default slot). */
export interface ResourceDemand {
  readonly jobId: JobID;
  readonly profile: ResourceProfile;
  readonly count: number;
  readonly preference?: PlacementPreference;
  /** Set for an imperative request (requestSlot, Flink's SlotRequest): the allocation to use. */
  readonly allocationId?: AllocationID;
}

/** A slot the plan puts on a registered executor. */
export interface PlannedSlot<T extends RegisteredTaskManagerInfo = RegisteredTaskManagerInfo> {
  readonly demand: ResourceDemand;
  readonly taskManager: T;
  /** The effective profile (UNKNOWN resolved to the executor's default slot). */
  readonly profile: ResourceProfile;
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
  /** Slots planned on registered executors. */
  readonly placed: number;
  /** Slots that will go to pending or new workers when they register. */
  readonly onWorkers: number;
  /** Slots the plan could not place anywhere. */
  readonly unfulfilled: number;
  /** Why `onWorkers + unfulfilled` slots wait; absent when everything was placed. */
  readonly reason?: WaitReason;
}

/** `T`: the executors as the view typed them. */
export interface ResourceAllocationResult<T extends RegisteredTaskManagerInfo = RegisteredTaskManagerInfo> {
  readonly slotsOnRegistered: readonly PlannedSlot<T>[];
  /** The new plan of every existing pending worker (empty maps for those that carry nothing). */
  readonly slotsOnPending: ReadonlyMap<PendingTaskManagerID, ReadonlyMap<JobID, ResourceCounter>>;
  readonly newWorkers: readonly PlannedWorker[];
  readonly outcomes: readonly DemandOutcome[];
}

/** What is no longer needed (Flink's ResourceReconcileResult); the SlotManager cancels and releases it. */
export interface ResourceReconcileResult {
  /** Pending workers that carry no slot and are not needed as redundant workers. */
  readonly pendingTaskManagersToRelease: readonly PendingTaskManagerID[];
  /** Idle executors (of those offered) that are not needed as redundant workers. */
  readonly taskManagersToRelease: readonly ResourceID[];
  /** Idle executors (of those offered) kept as redundant workers: asked again after another idle timeout. */
  readonly taskManagersToKeep: readonly ResourceID[];
}

export interface ResourceAllocationStrategy {
  tryFulfillRequirements<T extends RegisteredTaskManagerInfo>(
    demands: readonly ResourceDemand[],
    view: TaskManagerResourceInfoProvider<T>,
  ): ResourceAllocationResult<T>;
  /** Which pending workers, and which of `idleTaskManagers` (idle past resourcemanager.taskmanager-timeout), can go. */
  tryReconcileClusterResources(
    view: TaskManagerResourceInfoProvider,
    idleTaskManagers: readonly RegisteredTaskManagerInfo[],
  ): ResourceReconcileResult;
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

/** slotsOnPending when there is no pending worker (most checks): read only, so one for all. */
const NO_PENDING_PLANS: ReadonlyMap<PendingTaskManagerID, ReadonlyMap<JobID, ResourceCounter>> = new Map();

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

  constructor(private readonly view: TaskManagerResourceInfoProvider) {}

  get totals(): Totals {
    return (this.#totals ??= {
      slots: this.view.numberOfRegisteredSlots + this.view.numberOfPendingSlots,
      resource: this.view.registeredResource.merge(this.view.pendingResource),
    });
  }
}

/**
 * The profiles no registered executor took in this plan, and why. A plan only sets resources aside, so a profile
 * that found no executor finds none for the rest of the plan (whatever a later demand prefers: find looks everywhere
 * after the preferred places), and its explanation stands until the next claim. A check with many jobs waiting for
 * the same profile then costs a lookup and an explanation, not one per job; and each waiting job holds the very same
 * reason, which WaitingJobs compares in one step.
 */
class UntakenProfiles {
  readonly #keys = new Set<string>();
  readonly #explained = new Map<string, { readonly claims: number; readonly reason: InsufficientResources }>();

  has(profile: ResourceProfile): boolean {
    return this.#keys.size > 0 && this.#keys.has(profile.key);
  }

  add(profile: ResourceProfile): void {
    this.#keys.add(profile.key);
  }

  explain(profile: ResourceProfile, registered: RegisteredResourcePlan): InsufficientResources {
    const known = this.#explained.get(profile.key);
    if (known !== undefined && known.claims === registered.claims) return known.reason;
    const reason = registered.explainShortage(profile);
    this.#explained.set(profile.key, { claims: registered.claims, reason });
    return reason;
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
  /** With the limits of the slotmanager.* options. */
  static fromOptions(
    workerSpec: WorkerResourceSpec | null,
    options: ResolvedOptions,
  ): DefaultResourceAllocationStrategy {
    return new DefaultResourceAllocationStrategy(workerSpec, {
      maxSlots: options['slotmanager.number-of-slots.max'],
      maxTotalCpu: options['slotmanager.max-total-resource.cpu'],
      maxTotalMemory: options['slotmanager.max-total-resource.memory'],
      redundantTaskManagers: options['slotmanager.redundant-taskmanager-num'],
    });
  }

  constructor(
    /** The shape of the workers that may be started; null when the cluster cannot start workers. */
    private readonly workerSpec: WorkerResourceSpec | null,
    private readonly limits: ResourceAllocationLimits,
  ) {}

  tryFulfillRequirements<T extends RegisteredTaskManagerInfo>(
    demands: readonly ResourceDemand[],
    view: TaskManagerResourceInfoProvider<T>,
  ): ResourceAllocationResult<T> {
    const slotsOnRegistered: PlannedSlot<T>[] = [];
    const outcomes: DemandOutcome[] = [];
    const pending: WorkerPlan[] =
      view.numberOfPendingTaskManagers === 0
        ? []
        : [...view.pendingTaskManagers].map((p) => ({
            id: p.id,
            spec: p.spec,
            available: p.totalResourceProfile,
            allocations: new Map(),
          }));
    const fresh: Array<WorkerPlan & { purpose: PlannedWorker['purpose'] }> = [];
    const planned = new PlannedTotals(view);
    let registered: RegisteredResourcePlan<T> | undefined; // made for the first demand (a check may have none)
    const untaken = new UntakenProfiles();

    for (const demand of demands) {
      let left = demand.count;
      registered ??= new RegisteredResourcePlan<T>(view);
      // 1. Free resources on registered executors, best first under the policy (none, for a profile no executor took).
      let taskManager: PlannedTaskManager<T> | undefined;
      while (left > 0 && !untaken.has(demand.profile)) {
        let profile = taskManager === undefined ? undefined : registered.claimAgain(taskManager, demand.profile);
        if (profile === undefined) {
          taskManager = registered.find(demand.profile, demand.preference);
          if (taskManager === undefined) {
            untaken.add(demand.profile);
            break;
          }
          profile = registered.claim(taskManager, demand.profile);
        }
        slotsOnRegistered.push({ demand, taskManager: taskManager!.info, profile });
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
          refusal = untaken.explain(demand.profile, registered);
        } else if (
          !this.workerSpec.totalResourceProfile.allFieldsNoLessThan(effectiveOn(this.workerSpec, demand.profile))
        ) {
          const shortage = untaken.explain(demand.profile, registered);
          refusal =
            shortage.couldFitWhenFree.length > 0
              ? shortage
              : {
                  kind: 'exceeds-worker-shape',
                  shortfall: this.workerSpec.totalResourceProfile.shortfall(
                    effectiveOn(this.workerSpec, demand.profile),
                  ),
                };
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
      const reason: WaitReason | undefined =
        left > 0 ? refusal : onWorkers > 0 ? { kind: 'waiting-for-workers', workers: touched.size } : undefined;
      outcomes.push({ demand, placed, onWorkers, unfulfilled: left, ...(reason === undefined ? {} : { reason }) });
    }

    this.#topUpRedundancy(view, registered, pending, fresh, planned);
    return {
      slotsOnRegistered,
      slotsOnPending: pending.length === 0 ? NO_PENDING_PLANS : new Map(pending.map((p) => [p.id!, p.allocations])),
      newWorkers: fresh.map(({ spec, allocations, purpose }) => ({ spec, allocations, purpose })),
      outcomes,
    };
  }

  /**
   * Flink's tryReconcileClusterResources: pending workers that carry no slot are canceled, newest
   * first, and idle executors released, as long as what stays free still covers the redundant workers.
   */
  tryReconcileClusterResources(
    view: TaskManagerResourceInfoProvider,
    idleTaskManagers: readonly RegisteredTaskManagerInfo[],
  ): ResourceReconcileResult {
    const pendingTaskManagersToRelease: PendingTaskManagerID[] = [];
    const taskManagersToRelease: ResourceID[] = [];
    const taskManagersToKeep: ResourceID[] = [];
    const empty =
      view.numberOfPendingTaskManagers === 0
        ? []
        : [...view.pendingTaskManagers].filter((p) => !p.hasPendingAllocations);
    if (empty.length === 0 && idleTaskManagers.length === 0)
      return { pendingTaskManagersToRelease, taskManagersToRelease, taskManagersToKeep };
    let free = [...view.pendingTaskManagers].reduce(
      (sum, p) => sum.merge(p.unusedResource),
      view.freeRegisteredResource,
    );
    for (const pending of empty.reverse()) {
      const without = this.#withoutKeepingRedundancy(free, pending.totalResourceProfile);
      if (without === undefined) continue;
      free = without;
      pendingTaskManagersToRelease.push(pending.id);
    }
    for (const taskManager of idleTaskManagers) {
      const without = this.#withoutKeepingRedundancy(free, taskManager.available);
      if (without === undefined) {
        taskManagersToKeep.push(taskManager.resourceId);
        continue;
      }
      free = without;
      taskManagersToRelease.push(taskManager.resourceId);
    }
    return { pendingTaskManagersToRelease, taskManagersToRelease, taskManagersToKeep };
  }

  /** Places up to `count` slots of the demand on `workers`, first fit; returns how many are left. */
  #fill(workers: WorkerPlan[], demand: ResourceDemand, count: number, touched: Set<WorkerPlan>): number {
    let left = count;
    for (const worker of workers) {
      const effective = effectiveOn(worker.spec, demand.profile);
      while (left > 0 && worker.available.allFieldsNoLessThan(effective)) {
        worker.available = worker.available.subtract(effective);
        worker.allocations.set(
          demand.jobId,
          (worker.allocations.get(demand.jobId) ?? ResourceCounter.empty()).add(effective, 1),
        );
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
    return {
      id: null,
      spec,
      available: spec.totalResourceProfile,
      allocations: new Map<JobID, ResourceCounter>(),
      purpose,
    };
  }

  /** Why one more worker may not be started, or undefined when it may. */
  #limitReason(totals: Totals, spec: WorkerResourceSpec): WaitReason | undefined {
    const slots = totals.slots + spec.numberOfSlots;
    if (slots > this.limits.maxSlots) return { kind: 'max-slots-reached', limit: this.limits.maxSlots, wouldBe: slots };
    const after = totals.resource.merge(spec.totalResourceProfile);
    if (after.cpuCores > this.limits.maxTotalCpu)
      return {
        kind: 'max-resources-reached',
        dimension: 'cpu',
        limit: this.limits.maxTotalCpu,
        wouldBe: after.cpuCores,
      };
    if (after.totalMemory > this.limits.maxTotalMemory)
      return {
        kind: 'max-resources-reached',
        dimension: 'memory',
        limit: this.limits.maxTotalMemory,
        wouldBe: after.totalMemory,
      };
    return undefined;
  }

  /**
   * Flink's redundancy rule, the one place it is written: the free resources of registered
   * executors and of every pending or planned worker must cover `redundant` whole workers.
   */
  #coversRedundancy(free: ResourceProfile): boolean {
    const spec = this.workerSpec;
    if (spec === null || this.limits.redundantTaskManagers === 0) return true;
    return free.allFieldsNoLessThan(spec.totalResourceProfile.multiply(this.limits.redundantTaskManagers));
  }

  /** What stays free once `removed` goes, or undefined when the redundant workers need it. */
  #withoutKeepingRedundancy(free: ResourceProfile, removed: ResourceProfile): ResourceProfile | undefined {
    const without = free.allFieldsNoLessThan(removed) ? free.subtract(removed) : ResourceProfile.ZERO;
    return this.#coversRedundancy(without) ? without : undefined;
  }

  /** Starts empty workers until the redundancy rule holds (or a limit says no). */
  #topUpRedundancy<T extends RegisteredTaskManagerInfo>(
    view: TaskManagerResourceInfoProvider<T>,
    registered: RegisteredResourcePlan<T> | undefined,
    pending: WorkerPlan[],
    fresh: Array<WorkerPlan & { purpose: PlannedWorker['purpose'] }>,
    planned: PlannedTotals,
  ): void {
    const spec = this.workerSpec;
    if (spec === null || this.limits.redundantTaskManagers === 0) return;
    const totals = planned.totals;
    const registeredFree = registered === undefined ? view.freeRegisteredResource : registered.freeRegisteredResource;
    let free = [...pending, ...fresh].reduce((sum, w) => sum.merge(w.available), registeredFree);
    while (!this.#coversRedundancy(free) && this.#limitReason(totals, spec) === undefined) {
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
