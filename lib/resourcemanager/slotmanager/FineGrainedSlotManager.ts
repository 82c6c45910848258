/**
 * FineGrainedSlotManager (Flink's FineGrainedSlotManager, with SlotManagerImpl's imperative
 * requests): the coordinator. It validates every call, keeps the ResourceTracker (what jobs need),
 * the TaskManagerTracker (what executors have) and the SlotStatusSyncer (what executors are asked)
 * in step; on every change the statechart (through RequirementCheckScheduler) schedules one
 * coalesced RequirementCheck: the strategy's plan, applied, then its reconcile step. Collaborators,
 * each owning its timers: SlotRequests (imperative requests, timeouts), WaitingJobs (declared
 * requirements that wait, why, deadlines), BlockedTaskManagers (in doubt, or being released),
 * IdleTaskManagerTimeouts.
 *
 * Beyond Flink: a waiting request says why it waits (WaitReason); a declared requirement waiting
 * longer than slot.request.timeout is reported with that reason; an executor that refuses or misses
 * a slot request takes no new slots until its next slot report, so the retry goes elsewhere.
 *
 * Single-threaded like Flink's: call it from the ResourceManager's mailbox only. Listener and
 * allocator callbacks must not call back into it synchronously: a call made while a requirement
 * check runs throws IllegalStateError. A listener that throws is logged and ignored.
 */
import { systemClock, type Clock } from '../../core/clock.js';
import { describeValue, IllegalArgumentError } from '../../core/errors.js';
import type { AllocationID, JobID, ResourceID as ResourceIDType } from '../../core/ids.js';
import { resolveOptions, type ResolvedOptions } from '../../core/options.js';
import type { ResourceProfile } from '../../core/ResourceProfile.js';
import type { SlotReport } from '../../core/SlotReport.js';
import { BlockedTaskManagers } from './BlockedTaskManagers.js';
import { summarizeCheck, weighedDemands, type CheckResult } from './CheckResult.js';
import { IdleTaskManagerTimeouts } from './IdleTaskManagerTimeouts.js';
import type { PendingTaskManagerID } from './PendingTaskManager.js';
import { DefaultResourceAllocationStrategy } from './ResourceAllocationStrategy.js';
import { NO_RESOURCE_ALLOCATOR, type ResourceAllocator } from './ResourceAllocator.js';
import { ResourceEventNotifier } from './ResourceEventNotifier.js';
import { ResourceRequirements } from './ResourceRequirement.js';
import { DefaultResourceTracker } from './ResourceTracker.js';
import { RequirementCheckScheduler } from './RequirementCheckScheduler.js';
import {
  checkRegistration,
  checkSlotReport,
  describeOverview,
  type SlotManagerOverview,
} from './SlotManagerOverview.js';
import type {
  PendingRequestInfo,
  RegistrationResult,
  SlotManagerOptions,
  TaskManagerRegistrationRequest,
} from './SlotManagerOptions.js';
import { admitTaskManager, refuseNeverSatisfiable } from './SlotManagerLimits.js';
import { RequirementCheck } from './RequirementCheck.js';
import { policyForLoadBalanceMode } from './SlotMatchingStrategy.js';
import { checkJobId, checkSlotRequest, SlotRequests } from './SlotRequests.js';
import { SlotStatusSyncer, type AllocationOutcome } from './SlotStatusSyncer.js';
import type { TaskManagerRegistration } from './TaskManagerRegistration.js';
import { TaskManagerTracker, type PlacementPreference } from './TaskManagerTracker.js';
import { WaitingJobs } from './WaitingJobs.js';
import { WorkerResourceSpec } from './WorkerResourceSpec.js';

/** An executor to block for new slots (what a JobMaster's BlockedTaskManagerWire asks). */
export interface BlockedTaskManager {
  readonly resourceId: ResourceIDType;
  readonly durationMs: number;
  readonly cause?: string;
}

/**
 * Demands a requirement check may weigh before the delay-0 changes that follow are checked together, on the clock's
 * next turn, rather than one by one inside each change (slotManager.machine's crowdedAbove).
 */
const CROWDED_CHECK = 64;

export class FineGrainedSlotManager {
  readonly options: ResolvedOptions;
  readonly workerSpec: WorkerResourceSpec | null;
  readonly tracker: TaskManagerTracker;
  readonly resourceTracker = new DefaultResourceTracker();
  readonly #syncer: SlotStatusSyncer;
  readonly #events: ResourceEventNotifier;
  readonly #log: (message: string) => void;
  readonly #checks: RequirementCheckScheduler<CheckResult>;
  readonly #requests: SlotRequests;
  readonly #waiting: WaitingJobs;
  readonly #blocked: BlockedTaskManagers;
  readonly #idle: IdleTaskManagerTimeouts;
  readonly #targets = new Map<JobID, string>();
  readonly #check: RequirementCheck;
  /** Whether the ResourceAllocator starts workers on demand (not for a fixed or standalone cluster). */
  readonly #canStartWorkers: boolean;

  constructor(options: SlotManagerOptions = {}) {
    this.options = resolveOptions(options.configuration ?? {});
    const o = this.options;
    this.workerSpec = options.workerSpec === undefined ? WorkerResourceSpec.fromOptions(o) : options.workerSpec;
    const allocator: ResourceAllocator = options.allocator ?? NO_RESOURCE_ALLOCATOR;
    this.#canStartWorkers = allocator.isSupported;
    const clock: Clock = options.clock ?? systemClock;
    this.#log = options.log ?? (() => {});
    this.#events = new ResourceEventNotifier(
      options.listener ?? {},
      options.execute ?? queueMicrotask,
      this.resourceTracker,
      this.#log,
    );
    const policy = o['slotmanager.placement-policy'] ?? policyForLoadBalanceMode(o['taskmanager.load-balance.mode']);
    this.tracker = new TaskManagerTracker({ policy, clock, onIdleChanged: (tm) => this.#idle.idleChanged(tm) });
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
      events: this.#events,
      freeSlot: (allocationId) => this.#syncer.freeSlot(allocationId),
      onTimedOut: () => this.#checks.requirementsChanged(),
    });
    this.#waiting = new WaitingJobs({
      clock,
      timeoutMs: o['slot.request.timeout'],
      notEnoughResources: (jobId, requirements) => this.#events.notEnoughResourcesAvailable(jobId, requirements),
      timedOut: (jobId, requirements) =>
        this.#events.resourceRequirementsTimedOut(jobId, requirements, o['slot.request.timeout']),
    });
    this.#blocked = new BlockedTaskManagers({
      tracker: this.tracker,
      clock,
      doubtMs: o['heartbeat.interval'],
      onUnblocked: () => this.#checks.requirementsChanged(),
    });
    this.#idle = new IdleTaskManagerTimeouts({
      clock,
      timeoutMs: o['resourcemanager.taskmanager-timeout'],
      enabled: allocator.isSupported,
      tracker: this.tracker,
      onTimedOut: (taskManager) => {
        if (!this.#blocked.isReleasing(taskManager.resourceId)) this.#check.reconcile([taskManager]);
      },
    });
    this.#check = new RequirementCheck({
      strategy: DefaultResourceAllocationStrategy.fromOptions(allocator.isSupported ? this.workerSpec : null, o),
      tracker: this.tracker,
      resourceTracker: this.resourceTracker,
      syncer: this.#syncer,
      allocator,
      requests: this.#requests,
      waiting: this.#waiting,
      blocked: this.#blocked,
      idle: this.#idle,
      targets: this.#targets,
      idleTimeoutMs: o['resourcemanager.taskmanager-timeout'],
      log: this.#log,
    });
    this.#checks = new RequirementCheckScheduler<CheckResult>({
      requirementCheckDelay: o['slotmanager.requirement-check.delay'],
      clock,
      ...(options.inspect ? { inspect: options.inspect } : {}),
      // While many jobs wait, the changes of one event-loop turn are checked together on the clock's next turn.
      crowdedAbove: CROWDED_CHECK,
      runCheck: () => this.#check.run(),
      demands: weighedDemands,
      summarize: summarizeCheck,
      afterChecks: () => this.#syncer.endAllocations(), // after a throw too: never leave acquisitions uncounted
      clearState: () => this.#clear(),
    });
  }

  /** The running statechart (for inspection; do not send to it), its record of the checks brought up to date first. */
  get actor() {
    return this.#checks.actor;
  }

  get state(): 'suspended' | 'started' {
    return this.#checks.started ? 'started' : 'suspended';
  }

  /** Starts, with a first check right away: spare workers (redundant-taskmanager-num) are wanted before any job. */
  start(): void {
    if (this.state === 'started') throw this.#checks.wrongState('start', ['suspended']);
    this.#checks.start();
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
    this.#checks.requireStarted('registerTaskManager');
    checkRegistration(request, initialSlotReport);
    if (this.tracker.getTaskManager(request.resourceId) !== undefined) {
      this.reportSlotStatus(request.resourceId, initialSlotReport);
      return { kind: 'ignored' };
    }
    const admission = admitTaskManager(request, initialSlotReport, this.tracker, this.options);
    if (admission.rejected !== undefined) {
      this.#log(`rejected TaskExecutor ${request.resourceId}: ${admission.rejected}`);
      return { kind: 'rejected', reason: admission.rejected };
    }
    const taskManager = this.tracker.addTaskManager(request);
    this.#blocked.registered(taskManager);
    if (admission.hasAllocations) this.#applyReport(taskManager, initialSlotReport);
    if (admission.matched !== undefined) this.tracker.removePendingTaskManager(admission.matched.id);
    this.#checks.requirementsChanged();
    return admission.matched === undefined
      ? { kind: 'registered' }
      : { kind: 'registered', replacedPendingWorker: admission.matched.id };
  }

  /** A TaskExecutor is gone: its slots are freed, their jobs told, and the requirements re-planned. */
  unregisterTaskManager(resourceId: ResourceIDType, cause: string): boolean {
    this.#checks.requireStarted('unregisterTaskManager');
    const taskManager = this.tracker.getTaskManager(resourceId);
    if (taskManager === undefined) {
      this.#log(`unregisterTaskManager: ${resourceId} is not registered (ignored)`);
      return false;
    }
    // A request's slot is asked for again; the jobs of the other slots lose them.
    const lost = this.#syncer.freeSlotsOf(taskManager, (allocationId) => this.#requests.waitAgain(allocationId));
    this.tracker.removeTaskManager(resourceId);
    this.#blocked.forget(resourceId);
    this.#idle.forget(resourceId);
    for (const [jobId, allocationIds] of lost) this.#events.slotsLost(jobId, allocationIds, resourceId, cause);
    this.#checks.requirementsChanged();
    return true;
  }

  /**
   * A worker started for a pending worker ended before it registered: the pending worker is gone,
   * and its planned slots are planned again (on a new worker, if still needed).
   */
  pendingWorkerFailed(pendingWorkerId: PendingTaskManagerID, reason: string): boolean {
    this.#checks.requireStarted('pendingWorkerFailed');
    if (this.tracker.getPendingTaskManager(pendingWorkerId) === undefined) return false;
    this.#log(`pending worker ${pendingWorkerId} ended before it registered: ${reason}`);
    this.tracker.removePendingTaskManager(pendingWorkerId);
    this.#checks.requirementsChanged();
    return true;
  }

  /** Reconciles a TaskExecutor's slot report (a heartbeat's payload). */
  reportSlotStatus(resourceId: ResourceIDType, report: SlotReport): void {
    this.#checks.requireStarted('reportSlotStatus');
    const taskManager = checkSlotReport(resourceId, report, this.tracker.getTaskManager(resourceId));
    const unblocked = this.#blocked.reported(taskManager);
    if (this.#applyReport(taskManager, report) || unblocked) this.#checks.requirementsChanged();
  }

  /**
   * Executors a JobMaster found slow take no new slots for `durationMs` (Flink's blocklist, BlockedNodeAction
   * MARK_BLOCKED: the slots they hold stay; one registering anew meanwhile is blocked too), each logged with its
   * `cause`. Refused with IllegalArgumentError, changing nothing, for a duration that is not a finite number >= 0.
   */
  blockTaskManagers(blocked: readonly BlockedTaskManager[]): void {
    this.#checks.requireStarted('blockTaskManagers');
    if (!Array.isArray(blocked))
      throw new IllegalArgumentError('invalid-value', 'blockTaskManagers: blocked must be an array', {
        argument: 'blocked',
      });
    for (const { resourceId, durationMs } of blocked)
      if (typeof durationMs !== 'number' || !Number.isFinite(durationMs) || durationMs < 0)
        throw new IllegalArgumentError(
          'invalid-value',
          `blockTaskManagers: durationMs must be a finite number >= 0, got ${describeValue(durationMs)} ` +
            `for ${resourceId}`,
          { argument: 'durationMs', value: describeValue(durationMs) },
        );
    for (const { resourceId, durationMs, cause } of blocked) {
      this.#log(`TaskExecutor ${resourceId} takes no new slots for ${durationMs} ms: ${cause ?? 'blocked'}`);
      if (durationMs > 0) this.#blocked.blocklist(resourceId, durationMs);
    }
  }

  // ------------------------------------------------------- requirements (declarative: Flink's ResourceRequirements)

  /** Declares everything a job needs now (it replaces the previous declaration). */
  declareResourceRequirements(requirements: ResourceRequirements): void {
    this.#checks.requireStarted('declareResourceRequirements');
    const declared = ResourceRequirements.create(
      requirements?.jobId,
      requirements?.targetAddress,
      requirements?.resourceRequirements,
    );
    for (const requirement of declared.resourceRequirements)
      refuseNeverSatisfiable(
        declared.jobId,
        requirement.resourceProfile,
        this.workerSpec,
        this.tracker,
        this.#canStartWorkers,
      );
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
   * (Flink's TaskExecutorGateway.freeInactiveSlots), its waiting slot requests are canceled. False
   * for a job the SlotManager never saw.
   */
  clearResourceRequirements(jobId: JobID): boolean {
    this.#checks.requireStarted('clearResourceRequirements');
    checkJobId(jobId);
    const requests = this.#requests.ofJob(jobId);
    const holdsSlots = [...this.tracker.slots].some((slot) => slot.jobId === jobId);
    if (
      !this.resourceTracker.jobs().includes(jobId) &&
      !this.#targets.has(jobId) &&
      requests.length === 0 &&
      !holdsSlots
    ) {
      this.#log(`clearResourceRequirements: job ${jobId} is unknown (ignored)`);
      return false;
    }
    if (holdsSlots) this.#syncer.freeInactiveSlots(jobId);
    this.#targets.delete(jobId);
    this.resourceTracker.notifyResourceRequirements(jobId, []);
    for (const pending of this.tracker.pendingTaskManagers) pending.clearPendingAllocationsOfJob(jobId);
    for (const request of requests) this.#requests.fail(request, 'canceled', `job ${jobId} ended`);
    this.#waiting.forget(jobId);
    this.#checks.requirementsChanged();
    return true;
  }

  /** A slot was released (by its job, or freed on its executor). False if it is not known. */
  freeSlot(allocationId: AllocationID): boolean {
    this.#checks.requireStarted('freeSlot');
    if (this.#requests.has(allocationId)) return this.cancelSlotRequest(allocationId);
    if (this.#syncer.freeSlot(allocationId) === undefined) return false;
    this.#checks.requirementsChanged();
    return true;
  }

  // ------------------------------------------------------------ slot requests (imperative: Flink's SlotRequest)

  /**
   * Flink's SlotManagerImpl.registerSlotRequest: one slot of `profile` for the job under the
   * caller's AllocationID, preferably on `preference` (a host, or an executor). A request whose
   * AllocationID is already pending or allocated is a duplicate: ignored, 'duplicate' returned. It
   * fails after slot.request.timeout with the reason it waited (listener.slotRequestFailed).
   */
  requestSlot(
    jobId: JobID,
    allocationId: AllocationID,
    profile: ResourceProfile,
    preference?: PlacementPreference | string,
    targetAddress = '',
  ): 'accepted' | 'duplicate' {
    this.#checks.requireStarted('requestSlot');
    checkSlotRequest(jobId, allocationId, profile);
    if (this.#requests.has(allocationId) || this.tracker.getSlot(allocationId) !== undefined) return 'duplicate';
    refuseNeverSatisfiable(jobId, profile, this.workerSpec, this.tracker, this.#canStartWorkers);
    this.#requests.add(
      jobId,
      allocationId,
      profile,
      typeof preference === 'string' ? { host: preference } : preference,
      targetAddress,
    );
    this.#checks.requirementsChanged();
    return 'accepted';
  }

  /** Withdraws a slot request that is not fulfilled yet. */
  cancelSlotRequest(allocationId: AllocationID): boolean {
    this.#checks.requireStarted('cancelSlotRequest');
    const request = this.#requests.get(allocationId);
    if (request === undefined) return false;
    this.#requests.fail(request, 'canceled', 'the request was canceled');
    this.#checks.requirementsChanged();
    return true;
  }

  /** Runs a requirement check soon (coalesced with any other change). */
  triggerResourceRequirementsCheck(): void {
    this.#checks.requireStarted('triggerResourceRequirementsCheck');
    this.#checks.requirementsChanged();
  }

  /** Everything that waits, and why: slot requests first (oldest first), then declared requirements by job. */
  getPendingRequests(): PendingRequestInfo[] {
    return [...this.#requests.infos(), ...this.#waiting.infos()];
  }

  overview(): SlotManagerOverview {
    return describeOverview(this.state, this.tracker, this.resourceTracker, this.#syncer.inFlight);
  }

  // ------------------------------------------------------------------ events from the syncer

  #allocationSettled(outcome: AllocationOutcome): void {
    if (outcome.ok) {
      const { slot } = outcome;
      const request = this.#requests.get(slot.allocationId!);
      if (request !== undefined) this.#requests.fulfilled(request, slot.taskManager.resourceId, slot.index);
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
      this.#requests.answeredBy([...result.completed, ...result.adopted], taskManager.resourceId);
      return result.adopted.length > 0 || result.freed.length > 0;
    });
  }

  #clear(): void {
    for (const request of this.#requests.all())
      this.#requests.fail(request, 'suspended', 'the SlotManager was suspended');
    this.#syncer.close();
    this.tracker.clear();
    this.resourceTracker.clear();
    this.#targets.clear();
    this.#requests.clear();
    this.#waiting.clear();
    this.#blocked.clear();
    this.#idle.clear();
  }
}
