/**
 * FineGrainedSlotManager (seeds 000 and 003): the coordinator. It validates every call, keeps the
 * ResourceTracker (what jobs need), the TaskManagerTracker (what executors have) and the
 * SlotStatusSyncer (what executors are asked) in step, and on every change lets the statechart
 * (`slotManager.machine.ts`) schedule one coalesced requirement check, which runs the
 * ResourceAllocationStrategy and applies its plan.
 *
 * Beyond Flink: a waiting request says why it waits (WaitReason); a declared requirement waiting
 * longer than slot.request.timeout is reported with that reason; an executor that refuses or misses
 * a slot request takes no new slots until its next slot report, so the retry goes elsewhere.
 *
 * Single-threaded like Flink's: call it from the ResourceManager's mailbox only. Listener and
 * allocator callbacks must not call back into it synchronously: a call made while a requirement
 * check runs throws IllegalStateError. A listener that throws is logged and ignored.
 */
import { createActor, type Actor, type InspectionEvent } from 'xstate';
import { systemClock, type Clock } from '../../core/clock.js';
import { DeadlineScheduler } from '../../core/DeadlineScheduler.js';
import { IllegalArgumentError, IllegalStateError, SlotRequestError, UnknownTaskExecutorError } from '../../core/errors.js';
import { AllocationID, JobID, type ResourceID as ResourceIDType } from '../../core/ids.js';
import { resolveOptions, type ResolvedOptions, type SlotwiseOptions } from '../../core/options.js';
import { formatShortfall, ResourceProfile } from '../../core/ResourceProfile.js';
import type { SlotReport } from '../../core/SlotReport.js';
import { slotManagerMachine, type RequirementCheckSummary } from '../../../machines/slotManager.machine.js';
import type { PendingTaskManagerID } from './PendingTaskManager.js';
import { DefaultResourceAllocationStrategy, type DemandOutcome, type PlannedWorker, type ResourceAllocationStrategy, type ResourceDemand } from './ResourceAllocationStrategy.js';
import { withRefusedWorkers } from './refusedWorkers.js';
import { NO_RESOURCE_ALLOCATOR, type ResourceAllocator } from './ResourceAllocator.js';
import type { ResourceEventListener, WaitingRequirement } from './ResourceEventListener.js';
import { ResourceRequirements } from './ResourceRequirement.js';
import { DefaultResourceTracker } from './ResourceTracker.js';
import { policyForLoadBalanceMode } from './SlotMatchingStrategy.js';
import { SlotStatusSyncer, type AllocationOutcome } from './SlotStatusSyncer.js';
import type { TaskManagerInfo, TaskManagerRegistration } from './TaskManagerRegistration.js';
import { TaskManagerTracker, type PlacementPreference } from './TaskManagerTracker.js';
import { describeWaitReason, sameWaitReason, type WaitReason } from './WaitReason.js';
import { WorkerResourceSpec } from './WorkerResourceSpec.js';
import { checkRegistration, describeOverview, type SlotManagerOverview } from './SlotManagerOverview.js';

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
export type PendingRequestInfo =
  | { readonly kind: 'slot-request'; readonly jobId: JobID; readonly allocationId: AllocationID; readonly resourceProfile: ResourceProfile; readonly since: number; readonly state: 'waiting' | 'allocating'; readonly reason: WaitReason | null; readonly description: string }
  | ({ readonly kind: 'requirement'; readonly jobId: JobID; readonly description: string } & WaitingRequirement);

interface SlotRequestRecord {
  readonly jobId: JobID;
  readonly allocationId: AllocationID;
  readonly profile: ResourceProfile;
  readonly preference: PlacementPreference | undefined;
  readonly targetAddress: string;
  readonly since: number;
  state: 'waiting' | 'allocating';
  reason: WaitReason | null;
  /** Its timeout's key, built once: a key built again is a new string the scheduler's Map must compare character by character. */
  readonly deadlineKey: DeadlineKey;
}

interface JobWait {
  readonly since: number;
  requirements: WaitingRequirement[];
  timedOut: boolean;
}

type DeadlineKey = `job:${string}` | `request:${string}` | `idle:${string}` | `unblock:${string}`;

export class FineGrainedSlotManager {
  readonly options: ResolvedOptions;
  readonly workerSpec: WorkerResourceSpec | null;
  readonly tracker: TaskManagerTracker;
  readonly resourceTracker = new DefaultResourceTracker();
  readonly #syncer: SlotStatusSyncer;
  readonly #strategy: ResourceAllocationStrategy;
  readonly #allocator: ResourceAllocator;
  readonly #listener: ResourceEventListener;
  readonly #clock: Clock;
  readonly #execute: (task: () => void) => void;
  readonly #log: (message: string) => void;
  readonly #actor: Actor<typeof slotManagerMachine>;
  readonly #deadlines: DeadlineScheduler<DeadlineKey>;
  readonly #targets = new Map<JobID, string>();
  readonly #requests = new Map<AllocationID, SlotRequestRecord>();
  readonly #waits = new Map<JobID, JobWait>();
  /** Executors blocked because they are being released (not merely after a failed request). */
  readonly #releasing = new Set<ResourceIDType>();
  readonly #idleKeys = new Map<ResourceIDType, DeadlineKey>();
  /**
   * Waiting slot requests whose AllocationID a slot report showed held by another job (the only
   * way a waiting request's AllocationID comes to be held): the next check fails them, and looks
   * up no other request's AllocationID in the tracker (a Map of every allocation).
   */
  readonly #heldByAnotherJob = new Set<AllocationID>();
  #checking = false;
  #recheck = false;
  #deferring = 0;
  /** An inspector watches the statechart: every event it would see is sent as it happens. */
  readonly #inspected: boolean;
  /** The statechart's started / suspended, read on every call (only START and SUSPEND change it). */
  #started = false;
  /** Checks run (requirement-check.delay 0) and not reported to the statechart yet, and the last one's outcome. */
  #unreportedChecks = 0;
  #lastCheck: { readonly outcomes: readonly DemandOutcome[]; readonly workersRequested: number } | undefined;

  constructor(options: SlotManagerOptions = {}) {
    this.options = resolveOptions(options.configuration ?? {});
    this.workerSpec = options.workerSpec === undefined ? WorkerResourceSpec.fromOptions(this.options) : options.workerSpec;
    this.#allocator = options.allocator ?? NO_RESOURCE_ALLOCATOR;
    this.#listener = options.listener ?? {};
    this.#clock = options.clock ?? systemClock;
    this.#execute = options.execute ?? queueMicrotask;
    this.#log = options.log ?? (() => {});
    this.#inspected = options.inspect !== undefined;
    const policy = this.options['slotmanager.placement-policy'] ?? policyForLoadBalanceMode(this.options['taskmanager.load-balance.mode']);
    this.tracker = new TaskManagerTracker({ policy, clock: this.#clock, onIdleChanged: (tm) => this.#idleChanged(tm) });
    this.#strategy = new DefaultResourceAllocationStrategy(this.#allocator.isSupported ? this.workerSpec : null, {
      maxSlots: this.options['slotmanager.number-of-slots.max'],
      maxTotalCpu: this.options['slotmanager.max-total-resource.cpu'],
      maxTotalMemory: this.options['slotmanager.max-total-resource.memory'],
      redundantTaskManagers: this.options['slotmanager.redundant-taskmanager-num'],
    });
    this.#syncer = new SlotStatusSyncer({
      tracker: this.tracker,
      resourceTracker: this.resourceTracker,
      clock: this.#clock,
      rpcTimeout: this.options['rpc.ask.timeout'],
      execute: options.execute ?? ((task) => task()),
      onAllocationSettled: (outcome) => this.#allocationSettled(outcome),
      isRequested: (allocationId, jobId) => this.#requests.get(allocationId)?.jobId === jobId,
      log: this.#log,
    });
    this.#deadlines = new DeadlineScheduler(this.#clock, (key) => this.#deadlineDue(key));
    this.#actor = createActor(
      slotManagerMachine.provide({
        actions: {
          checkResourceRequirements: () => this.#checkResourceRequirements(),
          clearState: () => this.#clear(),
        },
      }),
      {
        clock: this.#clock,
        input: { requirementCheckDelay: this.options['slotmanager.requirement-check.delay'] },
        ...(options.inspect ? { inspect: options.inspect } : {}),
      },
    ).start();
  }

  /** The running statechart (for inspection; do not send to it). Its record of the checks is brought up to date first. */
  get actor(): Actor<typeof slotManagerMachine> {
    this.#reportChecks();
    return this.#actor;
  }

  get state(): 'suspended' | 'started' {
    return this.#started ? 'started' : 'suspended';
  }

  start(): void {
    if (this.state === 'started') throw this.#wrongState('start', ['suspended']);
    this.#actor.send({ type: 'START' });
    this.#started = this.#actor.getSnapshot().matches('started');
    // A first check right away: spare workers (redundant-taskmanager-num) are wanted before any job.
    this.#scheduleCheck();
  }

  /** Forgets every executor, slot, requirement and request (Flink's suspend); waiting requests fail. */
  suspend(): void {
    this.#reportChecks();
    this.#actor.send({ type: 'SUSPEND' });
    this.#started = this.#actor.getSnapshot().matches('started');
  }

  close(): void {
    this.suspend();
    this.#actor.stop();
  }

  // ------------------------------------------------------------------ executors

  /**
   * Registers a TaskExecutor with its first slot report (Flink's registerTaskManager). One of the
   * same shape as a pending worker takes that worker's place. Over the maxima it is rejected.
   */
  registerTaskManager(request: TaskManagerRegistrationRequest, initialSlotReport: SlotReport): RegistrationResult {
    this.#requireStarted('registerTaskManager');
    checkRegistration(request, initialSlotReport);
    const known = this.tracker.getTaskManager(request.resourceId);
    if (known !== undefined) {
      this.reportSlotStatus(request.resourceId, initialSlotReport);
      return { kind: 'ignored' };
    }
    const hasAllocations = initialSlotReport.slots.some((s) => s.allocationId !== null);
    const matched = hasAllocations ? undefined : this.tracker.findMatchingPendingTaskManager(request.totalResourceProfile, request.defaultSlotResourceProfile, request.pendingWorkerId);
    if (matched === undefined) {
      const over = this.#exceedsMaxima(request);
      if (over !== undefined) {
        this.#log(`rejected TaskExecutor ${request.resourceId}: ${over}`);
        return { kind: 'rejected', reason: over };
      }
    }
    const taskManager = this.tracker.addTaskManager(request);
    if (hasAllocations) this.#applyReport(taskManager, initialSlotReport);
    if (matched !== undefined) this.tracker.removePendingTaskManager(matched.id);
    this.#scheduleCheck();
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
    this.#releasing.delete(resourceId);
    this.#deadlines.cancel(this.#idleKey(resourceId));
    this.#idleKeys.delete(resourceId);
    this.#deadlines.cancel(`unblock:${resourceId}`);
    for (const [jobId, allocationIds] of lost) this.#notify((l) => l.slotsLost?.(jobId, allocationIds, resourceId, cause));
    this.#scheduleCheck();
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
    this.#scheduleCheck();
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
    let changed = false;
    if (taskManager.blocked && !this.#releasing.has(resourceId)) {
      // Its report is the fresh view the block waited for: it may take slots again.
      this.tracker.setBlocked(taskManager, false);
      this.#deadlines.cancel(`unblock:${resourceId}`);
      changed = true;
    }
    if (this.#applyReport(taskManager, report) || changed) this.#scheduleCheck();
  }

  // ------------------------------------------------------------------ requirements (declarative, seed 003)

  /** Declares everything a job needs now (it replaces the previous declaration). */
  declareResourceRequirements(requirements: ResourceRequirements): void {
    this.#requireStarted('declareResourceRequirements');
    const declared = ResourceRequirements.create(requirements?.jobId, requirements?.targetAddress, requirements?.resourceRequirements);
    for (const requirement of declared.resourceRequirements) this.#refuseNeverSatisfiable(declared.jobId, requirement.resourceProfile);
    const { jobId } = declared;
    if (declared.resourceRequirements.length === 0 && this.resourceTracker.isRequirementEmpty(jobId)) return;
    if (declared.resourceRequirements.length === 0) {
      this.#targets.delete(jobId);
      for (const pending of this.tracker.pendingTaskManagers) pending.clearPendingAllocationsOfJob(jobId);
    } else {
      this.#targets.set(jobId, declared.targetAddress);
    }
    this.resourceTracker.notifyResourceRequirements(jobId, declared.resourceRequirements);
    this.#scheduleCheck();
  }

  /**
   * The job is over: its requirements go, its inactive slots are reclaimed from the executors
   * (seed 003), its waiting slot requests are canceled. False for a job the SlotManager never saw.
   */
  clearResourceRequirements(jobId: JobID): boolean {
    this.#requireStarted('clearResourceRequirements');
    if (!JobID.is(jobId)) throw new IllegalArgumentError('invalid-type', `jobId must be a JobID, got ${String(jobId)}`, { argument: 'jobId' });
    const requests = [...this.#requests.values()].filter((r) => r.jobId === jobId);
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
    this.#waits.delete(jobId);
    this.#deadlines.cancel(`job:${jobId}`);
    this.#scheduleCheck();
    return true;
  }

  /** A slot was released (by its job, or freed on its executor). False if it is not known. */
  freeSlot(allocationId: AllocationID): boolean {
    this.#requireStarted('freeSlot');
    const request = this.#requests.get(allocationId);
    if (request !== undefined) return this.cancelSlotRequest(allocationId);
    if (this.#syncer.freeSlot(allocationId) === undefined) return false;
    this.#scheduleCheck();
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
    this.#refuseNeverSatisfiable(jobId, profile);
    const place = typeof preference === 'string' ? { host: preference } : preference;
    const since = this.#clock.now();
    const deadlineKey: DeadlineKey = `request:${allocationId}`;
    this.#requests.set(allocationId, { jobId, allocationId, profile, preference: place, targetAddress, since, state: 'waiting', reason: null, deadlineKey });
    this.#deadlines.schedule(deadlineKey, since + this.options['slot.request.timeout']);
    this.#scheduleCheck();
    return 'accepted';
  }

  /** Withdraws a slot request that is not fulfilled yet. */
  cancelSlotRequest(allocationId: AllocationID): boolean {
    this.#requireStarted('cancelSlotRequest');
    const request = this.#requests.get(allocationId);
    if (request === undefined) return false;
    this.#failRequest(request, 'canceled', 'the request was canceled');
    this.#scheduleCheck();
    return true;
  }

  /** Runs a requirement check soon (coalesced with any other change). */
  triggerResourceRequirementsCheck(): void {
    this.#requireStarted('triggerResourceRequirementsCheck');
    this.#scheduleCheck();
  }

  // ------------------------------------------------------------------ reading

  /** Everything that waits, and why: slot requests first (oldest first), then declared requirements by job. */
  getPendingRequests(): PendingRequestInfo[] {
    const out: PendingRequestInfo[] = [];
    for (const r of this.#requests.values()) {
      const description = r.state === 'allocating' ? 'asking the TaskExecutor' : r.reason === null ? 'waiting for the next requirement check' : describeWaitReason(r.reason);
      out.push({ kind: 'slot-request', jobId: r.jobId, allocationId: r.allocationId, resourceProfile: r.profile, since: r.since, state: r.state, reason: r.reason, description });
    }
    for (const [jobId, wait] of this.#waits) {
      for (const requirement of wait.requirements) out.push({ kind: 'requirement', jobId, description: describeWaitReason(requirement.reason), ...requirement });
    }
    return out;
  }

  overview(): SlotManagerOverview {
    return describeOverview(this.state, this.tracker, this.resourceTracker, this.#syncer.inFlight);
  }

  // ------------------------------------------------------------------ the requirement check

  #scheduleCheck(): void {
    if (this.state !== 'started') return;
    if (this.options['slotmanager.requirement-check.delay'] > 0) {
      // While a check is scheduled the statechart absorbs the event (~5–15 µs of XState for nothing): only an inspector would see it.
      if (this.#inspected || !this.#actor.getSnapshot().matches({ started: 'checkScheduled' })) this.#actor.send({ type: 'REQUIREMENTS_CHANGED' });
    } else if (this.#checking || this.#deferring > 0) {
      this.#recheck = true;
    } else {
      this.#checkResourceRequirements();
    }
  }

  /**
   * Runs `change` with immediate checks (a delay of 0) held back until it is complete, so that a
   * check never runs in the middle of applying a slot report.
   */
  #deferChecks<T>(change: () => T): T {
    this.#deferring++;
    try {
      return change();
    } finally {
      this.#deferring--;
      if (this.#deferring === 0 && this.#recheck && !this.#checking) this.#checkResourceRequirements();
    }
  }

  #checkResourceRequirements(): void {
    if (this.state !== 'started') return;
    this.#checking = true;
    try {
      do {
        this.#recheck = false;
        this.#runCheck();
      } while (this.#recheck);
    } finally {
      this.#checking = false;
      this.#syncer.endAllocations(); // after a throw too: never leave acquisitions uncounted
    }
  }

  #runCheck(): void {
    const demands: ResourceDemand[] = [];
    for (const r of [...this.#requests.values()]) {
      const holder = r.state === 'waiting' && this.#heldByAnotherJob.has(r.allocationId) ? this.tracker.getSlot(r.allocationId) : undefined;
      if (holder !== undefined) {
        // A slot report showed this AllocationID held by another job meanwhile: it cannot be used again.
        this.#failRequest(r, 'duplicate-request', `allocation ${AllocationID.short(r.allocationId)} is held by job ${JobID.short(holder.jobId!)} on ${holder.taskManager.resourceId}`);
        continue;
      }
      // One shape for every demand (no conditional spread): the strategy reads these on every step.
      if (r.state === 'waiting') demands.push({ jobId: r.jobId, profile: r.profile, count: 1, allocationId: r.allocationId, preference: r.preference });
    }
    for (const [jobId, requirements] of this.resourceTracker.getMissingResources()) {
      for (const r of requirements) demands.push({ jobId, profile: r.resourceProfile, count: r.numberOfRequiredSlots });
    }
    this.#heldByAnotherJob.clear();
    const result = this.#strategy.tryFulfillRequirements(demands, this.tracker);

    this.#syncer.beginAllocations();
    for (const { demand, taskManager } of result.slotsOnRegistered) {
      const request = demand.allocationId === undefined ? undefined : this.#requests.get(demand.allocationId);
      if (request !== undefined) request.state = 'allocating';
      const reservation = this.tracker.reserve(taskManager, demand.profile, demand.jobId);
      this.#syncer.allocateSlot(reservation, {
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
    this.#cancelUnneededPendingWorkers();
    // What was planned on a refused worker cannot be fulfilled now (Flink: its jobs are unfulfillable).
    const outcomes = withRefusedWorkers(result.outcomes, refused);
    this.#recordOutcomes(outcomes);
    this.#checked(outcomes, workersRequested);
  }

  /**
   * Reports a check to the statechart (CHECKED). With requirement-check.delay 0 a check runs per
   * change, and an XState event per check (~5–15 µs) would cost more than the check itself: then,
   * unless an inspector watches, checks are counted here and reported in one CHECKED (with their
   * number and the last one's summary) when the statechart is read (`actor`) or suspended.
   */
  #checked(outcomes: readonly DemandOutcome[], workersRequested: number): void {
    if (this.#inspected || this.options['slotmanager.requirement-check.delay'] > 0) {
      this.#actor.send({ type: 'CHECKED', summary: this.#summary(outcomes, workersRequested) });
      return;
    }
    this.#unreportedChecks++;
    this.#lastCheck = { outcomes, workersRequested };
  }

  #reportChecks(): void {
    if (this.#unreportedChecks === 0) return;
    const checks = this.#unreportedChecks;
    const { outcomes, workersRequested } = this.#lastCheck!;
    this.#unreportedChecks = 0;
    this.#lastCheck = undefined;
    this.#actor.send({ type: 'CHECKED', summary: this.#summary(outcomes, workersRequested), checks });
  }

  /** Pending workers that carry no slot and are not needed for redundancy are canceled (Flink's reconcile). */
  #cancelUnneededPendingWorkers(): void {
    if (this.tracker.numberOfPendingTaskManagers === 0 || ![...this.tracker.pendingTaskManagers].some((p) => !p.hasPendingAllocations)) return;
    const spec = this.workerSpec;
    const redundant = this.options['slotmanager.redundant-taskmanager-num'];
    const needed = spec === null ? ResourceProfile.ZERO : spec.totalResourceProfile.multiply(redundant);
    let free = [...this.tracker.pendingTaskManagers].reduce((sum, p) => sum.merge(p.unusedResource), this.tracker.freeRegisteredResource);
    for (const pending of [...this.tracker.pendingTaskManagers].reverse()) {
      if (pending.hasPendingAllocations) continue;
      const without = free.allFieldsNoLessThan(pending.totalResourceProfile) ? free.subtract(pending.totalResourceProfile) : ResourceProfile.ZERO;
      if (redundant > 0 && !without.allFieldsNoLessThan(needed)) continue;
      free = without;
      this.tracker.removePendingTaskManager(pending.id);
      this.#allocator.cancelWorker(pending.id);
    }
  }

  #recordOutcomes(outcomes: readonly DemandOutcome[]): void {
    const now = this.#clock.now();
    const byJob = new Map<JobID, WaitingRequirement[]>();
    for (const outcome of outcomes) {
      const { demand } = outcome;
      const waiting = outcome.onWorkers + outcome.unfulfilled;
      if (demand.allocationId !== undefined) {
        const request = this.#requests.get(demand.allocationId);
        if (request !== undefined && request.state === 'waiting') request.reason = outcome.reason ?? null;
        continue;
      }
      if (waiting === 0 || outcome.reason === undefined) continue;
      const since = this.#waits.get(demand.jobId)?.since ?? now;
      byJob.set(demand.jobId, [...(byJob.get(demand.jobId) ?? []), { resourceProfile: demand.profile, missing: waiting, onWorkers: outcome.onWorkers, reason: outcome.reason, since }]);
    }
    for (const jobId of this.#waits.size === 0 ? [] : [...this.#waits.keys()]) {
      if (!byJob.has(jobId)) {
        this.#waits.delete(jobId);
        this.#deadlines.cancel(`job:${jobId}`);
      }
    }
    for (const [jobId, requirements] of byJob) {
      const previous = this.#waits.get(jobId);
      if (previous === undefined) this.#deadlines.schedule(`job:${jobId}`, now + this.options['slot.request.timeout']);
      const wait: JobWait = { since: previous?.since ?? now, requirements, timedOut: previous?.timedOut ?? false };
      this.#waits.set(jobId, wait);
      const unfulfilled = requirements.some((r) => r.missing > r.onWorkers);
      if (unfulfilled && !sameWaiting(requirements, previous?.requirements)) {
        const acquired = this.resourceTracker.getAcquiredResources(jobId);
        this.#notify((l) => l.notEnoughResourcesAvailable?.(jobId, acquired, requirements));
      }
    }
  }

  #summary(outcomes: readonly DemandOutcome[], workersRequested: number): RequirementCheckSummary {
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

  // ------------------------------------------------------------------ events from the syncer and the clock

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
    if (taskManager !== undefined && !taskManager.blocked && !outcome.superseded) {
      // Until its next slot report the executor's view is in doubt: place the retry elsewhere.
      this.tracker.setBlocked(taskManager, true);
      this.#deadlines.schedule(`unblock:${taskManager.resourceId}`, this.#clock.now() + this.options['heartbeat.interval']);
    }
    this.#scheduleCheck();
  }

  #applyReport(taskManager: TaskManagerRegistration, report: SlotReport): boolean {
    return this.#deferChecks(() => {
      const result = this.#syncer.reportSlotStatus(taskManager, report);
      // Requests the report answered are fulfilled before any check could plan them again.
      for (const slot of [...result.completed, ...result.adopted]) {
        const request = this.#requests.get(slot.allocationId!);
        if (request !== undefined && request.jobId === slot.jobId) this.#fulfilled(request, taskManager.resourceId, slot.index);
        else if (request !== undefined) this.#heldByAnotherJob.add(request.allocationId); // the next check fails it
      }
      return result.adopted.length > 0 || result.freed.length > 0;
    });
  }

  #fulfilled(request: SlotRequestRecord, resourceId: ResourceIDType, index: number): void {
    this.#requests.delete(request.allocationId);
    this.#deadlines.cancel(request.deadlineKey);
    this.#notify((l) => l.slotRequestFulfilled?.(request.jobId, request.allocationId, resourceId, index));
  }

  #failRequest(request: SlotRequestRecord, reason: 'timed-out' | 'canceled' | 'suspended' | 'duplicate-request', message: string): void {
    this.#requests.delete(request.allocationId);
    this.#deadlines.cancel(request.deadlineKey);
    if (request.state === 'allocating') this.#syncer.freeSlot(request.allocationId);
    const why = request.reason === null ? undefined : describeWaitReason(request.reason);
    const error = new SlotRequestError(reason, `slot request ${AllocationID.short(request.allocationId)} of job ${JobID.short(request.jobId)} for ${request.profile}: ${message}${why ? `; it waited because ${why}` : ''}`, {
      jobId: request.jobId,
      allocationId: request.allocationId,
      ...(why ? { why } : {}),
    });
    this.#notify((l) => l.slotRequestFailed?.(request.jobId, request.allocationId, error));
  }

  #deadlineDue(key: DeadlineKey): void {
    const [kind, id] = key.split(':') as [string, string];
    if (kind === 'request') {
      const request = this.#requests.get(id as AllocationID);
      if (request !== undefined) this.#failRequest(request, 'timed-out', `not fulfilled within slot.request.timeout (${this.options['slot.request.timeout']} ms)`);
      this.#scheduleCheck();
    } else if (kind === 'job') {
      const wait = this.#waits.get(id as JobID);
      if (wait !== undefined && !wait.timedOut) {
        wait.timedOut = true;
        const requirements = wait.requirements;
        this.#log(`job ${id} has waited ${this.options['slot.request.timeout']} ms for ${requirements.map((r) => `${r.missing} × ${r.resourceProfile}`).join(', ')}`);
        this.#notify((l) => l.resourceRequirementsTimedOut?.(id as JobID, requirements));
      }
    } else if (kind === 'unblock') {
      const taskManager = this.tracker.getTaskManager(id as ResourceIDType);
      if (taskManager !== undefined && !this.#releasing.has(taskManager.resourceId)) {
        this.tracker.setBlocked(taskManager, false);
        this.#scheduleCheck();
      }
    } else if (kind === 'idle') {
      this.#releaseIfStillIdle(id as ResourceIDType);
    }
  }

  #idleChanged(taskManager: TaskManagerRegistration): void {
    if (!this.#allocator.isSupported) return;
    const key = this.#idleKey(taskManager.resourceId);
    if (taskManager.idleSince === null) this.#deadlines.cancel(key);
    else this.#deadlines.schedule(key, taskManager.idleSince + this.options['resourcemanager.taskmanager-timeout']);
  }

  /** The idle deadline's key of an executor, built once per executor (see SlotRequestRecord.deadlineKey). */
  #idleKey(resourceId: ResourceIDType): DeadlineKey {
    let key = this.#idleKeys.get(resourceId);
    if (key === undefined) {
      key = `idle:${resourceId}`;
      this.#idleKeys.set(resourceId, key);
    }
    return key;
  }

  /** An executor idle for resourcemanager.taskmanager-timeout is released, unless the redundant workers need it. */
  #releaseIfStillIdle(resourceId: ResourceIDType): void {
    const taskManager = this.tracker.getTaskManager(resourceId);
    if (taskManager === undefined || taskManager.idleSince === null || this.#releasing.has(resourceId)) return;
    const redundant = this.options['slotmanager.redundant-taskmanager-num'];
    if (redundant > 0 && this.workerSpec !== null) {
      const free = [...this.tracker.pendingTaskManagers].reduce((sum, p) => sum.merge(p.unusedResource), this.tracker.freeRegisteredResource);
      const without = free.allFieldsNoLessThan(taskManager.available) ? free.subtract(taskManager.available) : ResourceProfile.ZERO;
      if (!without.allFieldsNoLessThan(this.workerSpec.totalResourceProfile.multiply(redundant))) {
        this.#deadlines.schedule(this.#idleKey(resourceId), this.#clock.now() + this.options['resourcemanager.taskmanager-timeout']);
        return;
      }
    }
    this.#releasing.add(resourceId);
    this.tracker.setBlocked(taskManager, true);
    this.#log(`releasing TaskExecutor ${resourceId}: idle since ${taskManager.idleSince}`);
    this.#allocator.releaseWorker(resourceId, `idle for ${this.options['resourcemanager.taskmanager-timeout']} ms`);
  }

  // ------------------------------------------------------------------ helpers

  #clear(): void {
    for (const request of [...this.#requests.values()]) this.#failRequest(request, 'suspended', 'the SlotManager was suspended');
    this.#syncer.close();
    for (const taskManager of [...this.tracker.taskManagers]) {
      for (const slot of this.tracker.slotsOf(taskManager)) this.tracker.free(slot.allocationId!);
      this.tracker.removeTaskManager(taskManager.resourceId);
    }
    for (const pending of [...this.tracker.pendingTaskManagers]) this.tracker.removePendingTaskManager(pending.id);
    this.resourceTracker.clear();
    this.#targets.clear();
    this.#waits.clear();
    this.#releasing.clear();
    this.#idleKeys.clear();
    this.#heldByAnotherJob.clear();
    this.#deadlines.clear();
  }

  #refuseNeverSatisfiable(jobId: JobID, profile: ResourceProfile): void {
    if (profile.isUnknown() || this.workerSpec === null) return;
    if (this.workerSpec.totalResourceProfile.allFieldsNoLessThan(profile)) return;
    for (const taskManager of this.tracker.taskManagers) if (taskManager.totalResourceProfile.allFieldsNoLessThan(profile)) return;
    const shortfall = this.workerSpec.totalResourceProfile.shortfall(profile);
    throw new SlotRequestError('never-satisfiable', `job ${JobID.short(jobId)} asks for ${profile}, which no worker can ever hold (${formatShortfall(shortfall, ['a worker has', 'asked'])})`, {
      jobId,
      profile: profile.toJSON(),
      shortfall,
    });
  }

  #exceedsMaxima(request: TaskManagerInfo): string | undefined {
    const slots = this.tracker.numberOfRegisteredSlots + this.tracker.numberOfPendingSlots + request.numberOfStaticSlots;
    const max = this.options['slotmanager.number-of-slots.max'];
    if (slots > max) return `it would make ${slots} slots, over slotmanager.number-of-slots.max = ${max}`;
    const total = this.tracker.registeredResource.merge(this.tracker.pendingResource).merge(request.totalResourceProfile);
    if (total.cpuCores > this.options['slotmanager.max-total-resource.cpu']) return `it would make ${total.cpuCores} cores, over slotmanager.max-total-resource.cpu`;
    if (total.totalMemory > this.options['slotmanager.max-total-resource.memory']) return `it would make ${total.totalMemory} bytes, over slotmanager.max-total-resource.memory`;
    return undefined;
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
    if (this.#checking) {
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

/** Whether a job waits for the same slots for the same reasons as at the last check (its start aside). */
function sameWaiting(now: readonly WaitingRequirement[], before: readonly WaitingRequirement[] | undefined): boolean {
  if (before === undefined || before.length !== now.length) return false;
  return now.every((r, i) => {
    const b = before[i]!;
    return r.resourceProfile.key === b.resourceProfile.key && r.missing === b.missing && r.onWorkers === b.onWorkers && sameWaitReason(r.reason, b.reason);
  });
}
