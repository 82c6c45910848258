/**
 * FineGrainedSlotManager (seeds 000 and 003): the coordinator. It validates every call, keeps the
 * ResourceTracker (what jobs need), the TaskManagerTracker (what executors have) and the
 * SlotStatusSyncer (what executors are asked) in step, and on every change lets the statechart
 * (`slotManager.machine.ts`, through the RequirementCheckScheduler) schedule one coalesced
 * requirement check, which runs the ResourceAllocationStrategy and applies its plan, then its
 * reconcile step (pending workers no longer needed). Its collaborators, each with its own timers:
 * SlotRequests (seed 000's imperative requests and their timeouts), WaitingJobs (the declared
 * requirements that wait, why, and their deadlines), BlockedTaskManagers (executors in doubt or
 * being released) and IdleTaskManagerTimeouts (idle executors, released through the strategy's
 * reconcile step).
 *
 * Beyond Flink: a waiting request says why it waits (WaitReason); a declared requirement waiting
 * longer than slot.request.timeout is reported with that reason; an executor that refuses or misses
 * a slot request takes no new slots until its next slot report, so the retry goes elsewhere.
 *
 * Single-threaded like Flink's: call it from the ResourceManager's mailbox only. Listener and
 * allocator callbacks must not call back into it synchronously: a call made while a requirement
 * check runs throws IllegalStateError. A listener that throws is logged and ignored.
 */
import type { InspectionEvent } from 'xstate';
import { systemClock, type Clock } from '../../core/clock.js';
import { IllegalArgumentError, IllegalStateError, UnknownTaskExecutorError } from '../../core/errors.js';
import { AllocationID, JobID, type ResourceID as ResourceIDType } from '../../core/ids.js';
import { resolveOptions, type ResolvedOptions, type SlotwiseOptions } from '../../core/options.js';
import { ResourceProfile } from '../../core/ResourceProfile.js';
import type { SlotReport } from '../../core/SlotReport.js';
import type { RequirementCheckSummary } from '../../../machines/slotManager.machine.js';
import { BlockedTaskManagers } from './BlockedTaskManagers.js';
import { IdleTaskManagerTimeouts } from './IdleTaskManagerTimeouts.js';
import type { PendingTaskManagerID } from './PendingTaskManager.js';
import { DefaultResourceAllocationStrategy, type DemandOutcome, type PlannedWorker, type ResourceAllocationStrategy, type ResourceDemand } from './ResourceAllocationStrategy.js';
import { withRefusedWorkers } from './refusedWorkers.js';
import { NO_RESOURCE_ALLOCATOR, type ResourceAllocator } from './ResourceAllocator.js';
import type { ResourceEventListener } from './ResourceEventListener.js';
import { ResourceRequirements } from './ResourceRequirement.js';
import { DefaultResourceTracker } from './ResourceTracker.js';
import { RequirementCheckScheduler } from './RequirementCheckScheduler.js';
import { checkRegistration, describeOverview, type SlotManagerOverview } from './SlotManagerOverview.js';
import { exceedsMaxima, refuseNeverSatisfiable } from './SlotManagerLimits.js';
import { policyForLoadBalanceMode } from './SlotMatchingStrategy.js';
import { SlotRequests, type SlotRequestFailure, type SlotRequestInfo, type SlotRequestRecord } from './SlotRequests.js';
import { SlotStatusSyncer, type AllocationOutcome } from './SlotStatusSyncer.js';
import type { TaskManagerInfo, TaskManagerRegistration } from './TaskManagerRegistration.js';
import { TaskManagerTracker, type PlacementPreference } from './TaskManagerTracker.js';
import { WaitingJobs, type RequirementInfo } from './WaitingJobs.js';
import { describeWaitReason } from './WaitReason.js';
import { WorkerResourceSpec } from './WorkerResourceSpec.js';

export interface SlotManagerOptions {
  /** Flink-named options; see the README. */
  readonly configuration?: SlotwiseOptions | ResolvedOptions;
  /** The shape of workers that can be started; default: the TaskExecutor options. null: unknown. */
  readonly workerSpec?: WorkerResourceSpec | null;
  /** Default NO_RESOURCE_ALLOCATOR: a fixed set of TaskExecutors. */
  readonly allocator?: ResourceAllocator;
  readonly listener?: ResourceEventListener;
  readonly clock?: Clock;
  /** Where listener calls and RPC completions run (the ResourceManager's mailbox); default queueMicrotask. */
  readonly execute?: (task: () => void) => void;
  readonly inspect?: (event: InspectionEvent) => void;
  readonly log?: (message: string) => void;
}

export interface TaskManagerRegistrationRequest extends TaskManagerInfo {
  /** The pending worker this executor was started for, if the driver knows it. */
  readonly pendingWorkerId?: PendingTaskManagerID;
}

export type RegistrationResult =
  | { readonly kind: 'registered'; readonly replacedPendingWorker?: PendingTaskManagerID }
  /** Already registered: the report was applied as a slot report. */
  | { readonly kind: 'ignored' }
  /** Over the cluster's maxima (Flink: REJECTED); the caller should stop the worker. */
  | { readonly kind: 'rejected'; readonly reason: string };

/** A request that waits, and why (getPendingRequests). */
export type PendingRequestInfo = SlotRequestInfo | RequirementInfo;

/** What a check leaves for its summary, built only when the statechart is told. */
interface CheckResult {
  readonly outcomes: readonly DemandOutcome[];
  readonly workersRequested: number;
}

export class FineGrainedSlotManager {
  readonly options: ResolvedOptions;
  readonly workerSpec: WorkerResourceSpec | null;
  readonly tracker: TaskManagerTracker;
  readonly resourceTracker = new DefaultResourceTracker();
  readonly #syncer: SlotStatusSyncer;
  readonly #strategy: ResourceAllocationStrategy;
  readonly #allocator: ResourceAllocator;
  readonly #listener: ResourceEventListener;
  readonly #execute: (task: () => void) => void;
  readonly #log: (message: string) => void;
  readonly #checks: RequirementCheckScheduler<CheckResult>;
  readonly #requests: SlotRequests;
  readonly #waiting: WaitingJobs;
  readonly #blocked: BlockedTaskManagers;
  readonly #idle: IdleTaskManagerTimeouts;
  readonly #targets = new Map<JobID, string>();

  constructor(options: SlotManagerOptions = {}) {
    this.options = resolveOptions(options.configuration ?? {});
    const o = this.options;
    this.workerSpec = options.workerSpec === undefined ? WorkerResourceSpec.fromOptions(o) : options.workerSpec;
    this.#allocator = options.allocator ?? NO_RESOURCE_ALLOCATOR;
    this.#listener = options.listener ?? {};
    const clock: Clock = options.clock ?? systemClock;
    this.#execute = options.execute ?? queueMicrotask;
    this.#log = options.log ?? (() => {});
    const policy = o['slotmanager.placement-policy'] ?? policyForLoadBalanceMode(o['taskmanager.load-balance.mode']);
    this.tracker = new TaskManagerTracker({ policy, clock, onIdleChanged: (tm) => this.#idle.idleChanged(tm) });
    this.#strategy = new DefaultResourceAllocationStrategy(this.#allocator.isSupported ? this.workerSpec : null, {
      maxSlots: o['slotmanager.number-of-slots.max'],
      maxTotalCpu: o['slotmanager.max-total-resource.cpu'],
      maxTotalMemory: o['slotmanager.max-total-resource.memory'],
      redundantTaskManagers: o['slotmanager.redundant-taskmanager-num'],
    });
    this.#syncer = new SlotStatusSyncer({
      tracker: this.tracker,
      resourceTracker: this.resourceTracker,
      clock,
      rpcTimeout: o['rpc.ask.timeout'],
      execute: options.execute ?? ((task) => task()),
      onAllocationSettled: (outcome) => this.#allocationSettled(outcome),
      isRequested: (allocationId, jobId) => this.#requests.get(allocationId)?.jobId === jobId,
      log: this.#log,
    });
    this.#requests = new SlotRequests({
      clock,
      timeoutMs: o['slot.request.timeout'],
      onTimedOut: (request) => {
        this.#failRequest(request, 'timed-out', `not fulfilled within slot.request.timeout (${o['slot.request.timeout']} ms)`);
        this.#checks.requirementsChanged();
      },
    });
    this.#waiting = new WaitingJobs({
      clock,
      timeoutMs: o['slot.request.timeout'],
      notEnoughResources: (jobId, requirements) => {
        const acquired = this.resourceTracker.getAcquiredResources(jobId);
        this.#notify((l) => l.notEnoughResourcesAvailable?.(jobId, acquired, requirements));
      },
      timedOut: (jobId, requirements) => {
        this.#log(`job ${jobId} has waited ${o['slot.request.timeout']} ms for ${requirements.map((r) => `${r.missing} × ${r.resourceProfile}`).join(', ')}`);
        this.#notify((l) => l.resourceRequirementsTimedOut?.(jobId, requirements));
      },
    });
    this.#blocked = new BlockedTaskManagers({ tracker: this.tracker, clock, doubtMs: o['heartbeat.interval'], onUnblocked: () => this.#checks.requirementsChanged() });
    this.#idle = new IdleTaskManagerTimeouts({
      clock,
      timeoutMs: o['resourcemanager.taskmanager-timeout'],
      enabled: this.#allocator.isSupported,
      getTaskManager: (resourceId) => this.tracker.getTaskManager(resourceId),
      onTimedOut: (taskManager) => {
        if (!this.#blocked.isReleasing(taskManager.resourceId)) this.#reconcile([taskManager]);
      },
    });
    this.#checks = new RequirementCheckScheduler<CheckResult>({
      requirementCheckDelay: o['slotmanager.requirement-check.delay'],
      clock,
      ...(options.inspect ? { inspect: options.inspect } : {}),
      runCheck: () => this.#runCheck(),
      summarize: (check) => summarize(check),
      afterChecks: () => this.#syncer.endAllocations(), // after a throw too: never leave acquisitions uncounted
      clearState: () => this.#clear(),
    });
  }

  /** The running statechart (for inspection; do not send to it). Its record of the checks is brought up to date first. */
  get actor() {
    return this.#checks.actor;
  }

  get state(): 'suspended' | 'started' {
    return this.#checks.started ? 'started' : 'suspended';
  }

  start(): void {
    if (this.state === 'started') throw this.#wrongState('start', ['suspended']);
    this.#checks.start();
    // A first check right away: spare workers (redundant-taskmanager-num) are wanted before any job.
    this.#checks.requirementsChanged();
  }

  /** Forgets every executor, slot, requirement and request (Flink's suspend); waiting requests fail. */
  suspend(): void {
    this.#checks.suspend();
  }

  close(): void {
    this.suspend();
    this.#checks.stop();
  }

  // ------------------------------------------------------------------ executors

  /**
   * Registers a TaskExecutor with its first slot report (Flink's registerTaskManager). One of the
   * same shape as a pending worker takes that worker's place. Over the maxima it is rejected.
   */
  registerTaskManager(request: TaskManagerRegistrationRequest, initialSlotReport: SlotReport): RegistrationResult {
    this.#requireStarted('registerTaskManager');
    checkRegistration(request, initialSlotReport);
    if (this.tracker.getTaskManager(request.resourceId) !== undefined) {
      this.reportSlotStatus(request.resourceId, initialSlotReport);
      return { kind: 'ignored' };
    }
    const hasAllocations = initialSlotReport.slots.some((s) => s.allocationId !== null);
    const matched = hasAllocations ? undefined : this.tracker.findMatchingPendingTaskManager(request.totalResourceProfile, request.defaultSlotResourceProfile, request.pendingWorkerId);
    if (matched === undefined) {
      const over = exceedsMaxima(request, this.tracker, this.options);
      if (over !== undefined) {
        this.#log(`rejected TaskExecutor ${request.resourceId}: ${over}`);
        return { kind: 'rejected', reason: over };
      }
    }
    const taskManager = this.tracker.addTaskManager(request);
    if (hasAllocations) this.#applyReport(taskManager, initialSlotReport);
    if (matched !== undefined) this.tracker.removePendingTaskManager(matched.id);
    this.#checks.requirementsChanged();
    return matched === undefined ? { kind: 'registered' } : { kind: 'registered', replacedPendingWorker: matched.id };
  }

  /** A TaskExecutor is gone: its slots are freed, their jobs told, and the requirements re-planned. */
  unregisterTaskManager(resourceId: ResourceIDType, cause: string): boolean {
    this.#requireStarted('unregisterTaskManager');
    const taskManager = this.tracker.getTaskManager(resourceId);
    if (taskManager === undefined) {
      this.#log(`unregisterTaskManager: ${resourceId} is not registered (ignored)`);
      return false;
    }
    const lost = new Map<JobID, AllocationID[]>();
    for (const slot of this.tracker.slotsOf(taskManager)) {
      const allocationId = slot.allocationId!;
      const request = this.#requests.get(allocationId);
      if (request !== undefined) request.state = 'waiting';
      else lost.set(slot.jobId!, [...(lost.get(slot.jobId!) ?? []), allocationId]);
      this.#syncer.freeSlot(allocationId);
    }
    this.tracker.removeTaskManager(resourceId);
    this.#blocked.forget(resourceId);
    this.#idle.forget(resourceId);
    for (const [jobId, allocationIds] of lost) this.#notify((l) => l.slotsLost?.(jobId, allocationIds, resourceId, cause));
    this.#checks.requirementsChanged();
    return true;
  }

  /**
   * A worker started for a pending worker ended before it registered: the pending worker is gone,
   * and its planned slots are planned again (on a new worker, if still needed).
   */
  pendingWorkerFailed(pendingWorkerId: PendingTaskManagerID, reason: string): boolean {
    this.#requireStarted('pendingWorkerFailed');
    if (this.tracker.getPendingTaskManager(pendingWorkerId) === undefined) return false;
    this.#log(`pending worker ${pendingWorkerId} ended before it registered: ${reason}`);
    this.tracker.removePendingTaskManager(pendingWorkerId);
    this.#checks.requirementsChanged();
    return true;
  }

  /** Reconciles a TaskExecutor's slot report (a heartbeat's payload). */
  reportSlotStatus(resourceId: ResourceIDType, report: SlotReport): void {
    this.#requireStarted('reportSlotStatus');
    const taskManager = this.tracker.getTaskManager(resourceId);
    if (taskManager === undefined) {
      throw new UnknownTaskExecutorError(`slot report from TaskExecutor ${String(resourceId)}, which is not registered; register it first`, { resourceId: String(resourceId) });
    }
    if (report?.resourceId !== resourceId || !Array.isArray(report.slots)) {
      throw new IllegalArgumentError('invalid-value', `the slot report must be { resourceId: '${resourceId}', slots: [...] }`, { argument: 'report' });
    }
    const unblocked = this.#blocked.reported(taskManager);
    if (this.#applyReport(taskManager, report) || unblocked) this.#checks.requirementsChanged();
  }

  // ------------------------------------------------------------------ requirements (declarative, seed 003)

  /** Declares everything a job needs now (it replaces the previous declaration). */
  declareResourceRequirements(requirements: ResourceRequirements): void {
    this.#requireStarted('declareResourceRequirements');
    const declared = ResourceRequirements.create(requirements?.jobId, requirements?.targetAddress, requirements?.resourceRequirements);
    for (const requirement of declared.resourceRequirements) refuseNeverSatisfiable(declared.jobId, requirement.resourceProfile, this.workerSpec, this.tracker);
    const { jobId } = declared;
    if (declared.resourceRequirements.length === 0 && this.resourceTracker.isRequirementEmpty(jobId)) return;
    if (declared.resourceRequirements.length === 0) {
      this.#targets.delete(jobId);
      for (const pending of this.tracker.pendingTaskManagers) pending.clearPendingAllocationsOfJob(jobId);
    } else {
      this.#targets.set(jobId, declared.targetAddress);
    }
    this.resourceTracker.notifyResourceRequirements(jobId, declared.resourceRequirements);
    this.#checks.requirementsChanged();
  }

  /**
   * The job is over: its requirements go, its inactive slots are reclaimed from the executors
   * (seed 003), its waiting slot requests are canceled. False for a job the SlotManager never saw.
   */
  clearResourceRequirements(jobId: JobID): boolean {
    this.#requireStarted('clearResourceRequirements');
    if (!JobID.is(jobId)) throw new IllegalArgumentError('invalid-type', `jobId must be a JobID, got ${String(jobId)}`, { argument: 'jobId' });
    const requests = this.#requests.ofJob(jobId);
    const holdsSlots = [...this.tracker.slots].some((slot) => slot.jobId === jobId);
    if (!this.resourceTracker.jobs().includes(jobId) && !this.#targets.has(jobId) && requests.length === 0 && !holdsSlots) {
      this.#log(`clearResourceRequirements: job ${jobId} is unknown (ignored)`);
      return false;
    }
    if (holdsSlots) this.#syncer.freeInactiveSlots(jobId);
    this.#targets.delete(jobId);
    this.resourceTracker.notifyResourceRequirements(jobId, []);
    for (const pending of this.tracker.pendingTaskManagers) pending.clearPendingAllocationsOfJob(jobId);
    for (const request of requests) this.#failRequest(request, 'canceled', `job ${jobId} ended`);
    this.#waiting.forget(jobId);
    this.#checks.requirementsChanged();
    return true;
  }

  /** A slot was released (by its job, or freed on its executor). False if it is not known. */
  freeSlot(allocationId: AllocationID): boolean {
    this.#requireStarted('freeSlot');
    if (this.#requests.has(allocationId)) return this.cancelSlotRequest(allocationId);
    if (this.#syncer.freeSlot(allocationId) === undefined) return false;
    this.#checks.requirementsChanged();
    return true;
  }

  // ------------------------------------------------------------------ slot requests (imperative, seed 000)

  /**
   * Seed 000's requestSlot: one slot of `profile` for the job under the caller's AllocationID,
   * preferably on `preference` (a host, or an executor). A request whose AllocationID is already
   * pending or allocated is a duplicate: ignored, 'duplicate' returned. It fails after
   * slot.request.timeout with the reason it waited (listener.slotRequestFailed).
   */
  requestSlot(jobId: JobID, allocationId: AllocationID, profile: ResourceProfile, preference?: PlacementPreference | string, targetAddress = ''): 'accepted' | 'duplicate' {
    this.#requireStarted('requestSlot');
    if (!JobID.is(jobId)) throw new IllegalArgumentError('invalid-type', `jobId must be a JobID, got ${String(jobId)}`, { argument: 'jobId' });
    if (!AllocationID.is(allocationId)) throw new IllegalArgumentError('invalid-type', `allocationId must be an AllocationID, got ${String(allocationId)}`, { argument: 'allocationId' });
    if (!(profile instanceof ResourceProfile) || profile.isAny()) throw new IllegalArgumentError('invalid-value', `profile must be a ResourceProfile other than ANY, got ${String(profile)}`, { argument: 'profile' });
    if (this.#requests.has(allocationId) || this.tracker.getSlot(allocationId) !== undefined) return 'duplicate';
    refuseNeverSatisfiable(jobId, profile, this.workerSpec, this.tracker);
    this.#requests.add(jobId, allocationId, profile, typeof preference === 'string' ? { host: preference } : preference, targetAddress);
    this.#checks.requirementsChanged();
    return 'accepted';
  }

  /** Withdraws a slot request that is not fulfilled yet. */
  cancelSlotRequest(allocationId: AllocationID): boolean {
    this.#requireStarted('cancelSlotRequest');
    const request = this.#requests.get(allocationId);
    if (request === undefined) return false;
    this.#failRequest(request, 'canceled', 'the request was canceled');
    this.#checks.requirementsChanged();
    return true;
  }

  /** Runs a requirement check soon (coalesced with any other change). */
  triggerResourceRequirementsCheck(): void {
    this.#requireStarted('triggerResourceRequirementsCheck');
    this.#checks.requirementsChanged();
  }

  // ------------------------------------------------------------------ reading

  /** Everything that waits, and why: slot requests first (oldest first), then declared requirements by job. */
  getPendingRequests(): PendingRequestInfo[] {
    return [...this.#requests.infos(), ...this.#waiting.infos()];
  }

  overview(): SlotManagerOverview {
    return describeOverview(this.state, this.tracker, this.resourceTracker, this.#syncer.inFlight);
  }

  // ------------------------------------------------------------------ the requirement check

  /** One check: the strategy's plan for what is missing, applied; then what is no longer needed released. */
  #runCheck(): CheckResult {
    const demands = this.#requests.demands(
      (allocationId) => this.tracker.getSlot(allocationId),
      // A slot report showed this AllocationID held by another job meanwhile: it cannot be used again.
      (r, holder) => this.#failRequest(r, 'duplicate-request', `allocation ${AllocationID.short(r.allocationId)} is held by job ${JobID.short(holder.jobId!)} on ${holder.taskManager.resourceId}`),
    );
    for (const [jobId, requirements] of this.resourceTracker.getMissingResources()) {
      for (const r of requirements) demands.push({ jobId, profile: r.resourceProfile, count: r.numberOfRequiredSlots });
    }
    const result = this.#strategy.tryFulfillRequirements(demands, this.tracker);

    this.#syncer.beginAllocations();
    for (const { demand, taskManager } of result.slotsOnRegistered) {
      const request = demand.allocationId === undefined ? undefined : this.#requests.get(demand.allocationId);
      if (request !== undefined) request.state = 'allocating';
      this.#syncer.allocateSlot(this.tracker.reserve(taskManager, demand.profile, demand.jobId), {
        allocationId: demand.allocationId,
        targetAddress: request?.targetAddress ?? this.#targets.get(demand.jobId) ?? '',
        tracked: request === undefined,
      });
    }
    this.#syncer.endAllocations();
    for (const pending of this.tracker.pendingTaskManagers) pending.replaceAllPendingAllocations(result.slotsOnPending.get(pending.id) ?? new Map());
    let workersRequested = 0;
    const refused: PlannedWorker[] = [];
    for (const worker of result.newWorkers) {
      const pending = this.tracker.addPendingTaskManager(worker.spec);
      if (this.#allocator.allocateWorker(pending.id, worker.spec)) {
        pending.replaceAllPendingAllocations(worker.allocations);
        workersRequested++;
      } else {
        this.tracker.removePendingTaskManager(pending.id);
        refused.push(worker);
        this.#log(`the ResourceAllocator refused to start a worker (${worker.purpose})`);
      }
    }
    this.#reconcile([]);
    // What was planned on a refused worker cannot be fulfilled now (Flink: its jobs are unfulfillable).
    const outcomes = withRefusedWorkers(result.outcomes, refused);
    const declared: DemandOutcome[] = [];
    for (const outcome of outcomes) {
      if (outcome.demand.allocationId !== undefined) this.#requests.recordOutcome(outcome);
      else declared.push(outcome);
    }
    this.#waiting.record(declared);
    return { outcomes, workersRequested };
  }

  /**
   * The strategy's reconcile step applied: pending workers that carry no slot are canceled, and of
   * `idle` (executors idle past resourcemanager.taskmanager-timeout) those the redundant workers do
   * not need are released; the others are asked again after another timeout.
   */
  #reconcile(idle: readonly TaskManagerRegistration[]): void {
    const hasEmptyPending = this.tracker.numberOfPendingTaskManagers > 0 && [...this.tracker.pendingTaskManagers].some((p) => !p.hasPendingAllocations);
    if (!hasEmptyPending && idle.length === 0) return;
    const result = this.#strategy.tryReconcileClusterResources(this.tracker, idle);
    for (const id of result.pendingTaskManagersToRelease) {
      this.tracker.removePendingTaskManager(id);
      this.#allocator.cancelWorker(id);
    }
    for (const resourceId of result.taskManagersToKeep) this.#idle.restart(resourceId);
    for (const resourceId of result.taskManagersToRelease) {
      const taskManager = this.tracker.getTaskManager(resourceId)!;
      this.#blocked.releasing(taskManager);
      this.#log(`releasing TaskExecutor ${resourceId}: idle since ${taskManager.idleSince}`);
      this.#allocator.releaseWorker(resourceId, `idle for ${this.options['resourcemanager.taskmanager-timeout']} ms`);
    }
  }

  // ------------------------------------------------------------------ events from the syncer

  #allocationSettled(outcome: AllocationOutcome): void {
    if (outcome.ok) {
      const { slot } = outcome;
      const request = this.#requests.get(slot.allocationId!);
      if (request !== undefined) this.#fulfilled(request, slot.taskManager.resourceId, slot.index);
      return;
    }
    const request = this.#requests.get(outcome.allocationId);
    if (request !== undefined) request.state = 'waiting';
    const taskManager = this.tracker.getTaskManager(outcome.resourceId);
    // Until its next slot report the executor's view is in doubt: place the retry elsewhere.
    if (taskManager !== undefined && !outcome.superseded) this.#blocked.requestFailed(taskManager);
    this.#checks.requirementsChanged();
  }

  #applyReport(taskManager: TaskManagerRegistration, report: SlotReport): boolean {
    return this.#checks.defer(() => {
      const result = this.#syncer.reportSlotStatus(taskManager, report);
      // Requests the report answered are fulfilled before any check could plan them again.
      for (const slot of [...result.completed, ...result.adopted]) {
        const request = this.#requests.get(slot.allocationId!);
        if (request !== undefined && request.jobId === slot.jobId) this.#fulfilled(request, taskManager.resourceId, slot.index);
        else if (request !== undefined) this.#requests.heldByAnotherJob(request.allocationId); // the next check fails it
      }
      return result.adopted.length > 0 || result.freed.length > 0;
    });
  }

  #fulfilled(request: SlotRequestRecord, resourceId: ResourceIDType, index: number): void {
    this.#requests.fulfilled(request);
    this.#notify((l) => l.slotRequestFulfilled?.(request.jobId, request.allocationId, resourceId, index));
  }

  #failRequest(request: SlotRequestRecord, reason: SlotRequestFailure, message: string): void {
    const error = this.#requests.fail(request, reason, message);
    if (request.state === 'allocating') this.#syncer.freeSlot(request.allocationId);
    this.#notify((l) => l.slotRequestFailed?.(request.jobId, request.allocationId, error));
  }

  // ------------------------------------------------------------------ helpers

  #clear(): void {
    for (const request of this.#requests.all()) this.#failRequest(request, 'suspended', 'the SlotManager was suspended');
    this.#syncer.close();
    for (const taskManager of [...this.tracker.taskManagers]) {
      for (const slot of this.tracker.slotsOf(taskManager)) this.tracker.free(slot.allocationId!);
      this.tracker.removeTaskManager(taskManager.resourceId);
    }
    for (const pending of [...this.tracker.pendingTaskManagers]) this.tracker.removePendingTaskManager(pending.id);
    this.resourceTracker.clear();
    this.#targets.clear();
    this.#requests.clear();
    this.#waiting.clear();
    this.#blocked.clear();
    this.#idle.clear();
  }

  /** A listener that throws is logged, never allowed to break the SlotManager (or its statechart). */
  #notify(call: (listener: ResourceEventListener) => void): void {
    this.#execute(() => {
      try {
        call(this.#listener);
      } catch (error) {
        this.#log(`a ResourceEventListener callback threw: ${error instanceof Error ? `${error.name}: ${error.message}` : String(error)}`);
      }
    });
  }

  #requireStarted(operation: string): void {
    if (this.#checks.checking) {
      throw new IllegalStateError(`SlotManager.${operation} was called while a requirement check runs (from a listener or allocator callback); hand it to the mailbox instead`, {
        component: 'SlotManager',
        operation,
        state: 'checking',
        allowed: ['started'],
      });
    }
    if (this.state !== 'started') throw this.#wrongState(operation, ['started']);
  }

  #wrongState(operation: string, allowed: string[]): IllegalStateError {
    return new IllegalStateError(`SlotManager.${operation} is not allowed while the SlotManager is ${this.state} (allowed: ${allowed.join(', ')})`, {
      component: 'SlotManager',
      operation,
      state: this.state,
      allowed,
    });
  }
}

/** A check as the statechart's CHECKED shows it. */
function summarize({ outcomes, workersRequested }: CheckResult): RequirementCheckSummary {
  const waiting: Record<string, string> = {};
  let placed = 0;
  let onWorkers = 0;
  let unfulfilled = 0;
  for (const o of outcomes) {
    placed += o.placed;
    onWorkers += o.onWorkers;
    unfulfilled += o.unfulfilled;
    if (o.reason !== undefined) waiting[`${JobID.short(o.demand.jobId)} ${o.demand.profile.isUnknown() ? 'default' : o.demand.profile.toString()}`] = describeWaitReason(o.reason);
  }
  return { placed, onWorkers, unfulfilled, workersRequested, waiting };
}
