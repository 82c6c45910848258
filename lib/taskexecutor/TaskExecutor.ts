/**
 * TaskExecutor endpoint (seeds 001 and 004): the worker-side half of the runtime. It owns a
 * TaskSlotTable and one task runner (a piscina pool) per slot, registers at the ResourceManager and
 * keeps doing so while it lives (re-registering when the ResourceManager is lost, or lets it go),
 * answers heartbeats with its slot report, allocates slots on the request of the ResourceManager it
 * is registered at (refusing them while not registered, as Flink's "not connected") and offers
 * them to the job's JobMaster (seed 004 steps 22–24), runs the subtasks it is given and reports
 * their states to the JobMaster.
 *
 * Everything runs on its MainThreadExecutor: gateway calls arrive there (the caller serves this
 * object with the mailbox), and every async completion re-enters through it.
 */
import type { InspectionEvent } from 'xstate';
import { systemClock, type Clock } from '../core/clock.js';
import { IllegalArgumentError, IllegalStateError, isSlotwiseError, SlotNotActiveError, SlotNotFoundError, SlotOwnerMismatchError, TaskNotFoundError } from '../core/errors.js';
import { AllocationID, ExecutionAttemptID, JobID, ResourceManagerId, type ResourceID } from '../core/ids.js';
import { resolveOptions, type ResolvedOptions, type SlotwiseOptions } from '../core/options.js';
import { ResourceProfile } from '../core/ResourceProfile.js';
import { totalResourceProfile } from '../core/TaskExecutorResourceUtils.js';
import type { BatchingTaskExecutorGateway, SubmitTaskOutcome } from '../rpc/batchedSubmissions.js';
import { serializeError } from '../rpc/errorTransfer.js';
import type { JobMasterGateway, ResourceManagerGateway } from '../rpc/gateways.js';
import { HeartbeatMonitor } from '../rpc/HeartbeatMonitor.js';
import { MainThreadExecutor } from '../rpc/MainThreadExecutor.js';
import type { ExecutionState, RegistrationResponse, SerializedError, SlotReportWire, SlotRequestWire, TaskDeploymentDescriptor, TaskExecutionStateWire, TaskExecutorMetricsWire } from '../rpc/protocol.js';
import { slotReportToWire } from '../rpc/slotReportWire.js';
import { invocationFor, type RunStartListener, type TaskInvocation } from './SlotTaskPool.js';
import { TaskSlotTable, type TaskSlotOutput, type TaskSlotPayload } from './TaskSlotTable.js';

/** Runs a slot's tasks (a piscina pool in production, a double in tests). */
export interface SlotTaskRunner {
  /**
   * Runs one attempt: resolves with its output; rejects when it fails or is canceled. Tells
   * `options.listener` when the attempt starts on its thread (it may wait behind others first),
   * at the latest just before it settles; never if it is canceled before it starts.
   */
  run(invocation: TaskInvocation, options?: { listener?: RunStartListener }): Promise<{ output: unknown; leakedPagesReleased?: number }>;
  /**
   * Cancels the attempt if it is queued or running here (its run then rejects, canceled); false if
   * it is not here. A cancel names the attempt rather than aborting a signal: a TaskExecutor runs
   * thousands of attempts and cancels few, and an AbortController per attempt costs more than a
   * trivial task's bookkeeping.
   */
  cancel(executionAttemptId: ExecutionAttemptID, reason: string): boolean;
  close(): Promise<void>;
}

export interface TaskExecutorOptions {
  readonly resourceId: ResourceID;
  readonly host?: string;
  readonly mode: 'thread' | 'process';
  readonly configuration?: SlotwiseOptions | ResolvedOptions;
  readonly pendingWorkerId?: string;
  readonly clock?: Clock;
  /** The ResourceManager, connected (calls carry deadlines and fail fast when it is lost). */
  readonly resourceManager: ResourceManagerGateway;
  /** A JobMaster by its address, connected. */
  readonly connectJobMaster: (address: string) => JobMasterGateway;
  /** Makes the task runner of a slot; its heap limit comes from the slot's profile. */
  readonly createTaskRunner: (slot: { name: string; heapLimitMb: number | undefined }) => SlotTaskRunner;
  /**
   * The runners' background work (task threads booted ahead of need, TaskThreadReserve): started
   * once the TaskExecutor is registered, with the default slot's heap limit; closed at shutdown.
   */
  readonly taskThreads?: {
    start(defaultHeapLimitMb: number | undefined, freeSlots: () => number): void;
    close(): Promise<void>;
    readonly stats: { readonly started: number; readonly served: number; readonly bootedOnDemand: number; readonly spare: number; readonly inUse: number };
  };
  /** Called once when the TaskExecutor has stopped (the worker should exit with `code`). */
  readonly onTerminated?: (code: number, reason: string) => void;
  readonly log?: (message: string) => void;
  /** Receives every XState inspection event of the TaskSlotTable and its TaskSlots. */
  readonly inspect?: (event: InspectionEvent) => void;
}

type Lifecycle = 'created' | 'registering' | 'registered' | 'shutting-down' | 'stopped';

/** What a submitted attempt tells its TaskExecutor (one object for every attempt: no closure per task). */
interface TaskCallbacks {
  cancel(executionAttemptId: ExecutionAttemptID, cause: string): void;
  started(task: RunningTask): void;
}

/** A submitted attempt: what the TaskExecutor tracks, what its slot holds (the slot's TaskSlotPayload), and what its runner tells when it starts. */
class RunningTask implements TaskSlotPayload, RunStartListener {
  readonly executionAttemptId: ExecutionAttemptID;
  readonly jobId: JobID;
  readonly allocationId: AllocationID;
  /** The slot's runner once the attempt was handed to it (a cancel before that stops it in #run). */
  runner: SlotTaskRunner | null = null;
  state: ExecutionState = 'deploying';
  cancelCause: string | null = null;

  constructor(
    readonly descriptor: TaskDeploymentDescriptor,
    private readonly callbacks: TaskCallbacks,
  ) {
    this.executionAttemptId = descriptor.executionAttemptId;
    this.jobId = descriptor.jobId;
    this.allocationId = descriptor.allocationId;
  }

  /** The slot closes under it (Flink's failExternally): cancel it. */
  failExternally(cause: unknown): void {
    this.callbacks.cancel(this.executionAttemptId, `the slot was freed: ${describe(cause)}`);
  }

  /** Its runner started it on a thread. */
  started(): void {
    this.callbacks.started(this);
  }

  /** What the inspector shows of it in its slot (not its inputs, nor its runner). */
  toJSON(): { executionAttemptId: ExecutionAttemptID; jobId: JobID; allocationId: AllocationID; state: ExecutionState } {
    return { executionAttemptId: this.executionAttemptId, jobId: this.jobId, allocationId: this.allocationId, state: this.state };
  }
}

export class TaskExecutor implements BatchingTaskExecutorGateway {
  readonly resourceId: ResourceID;
  readonly mailbox: MainThreadExecutor;
  readonly options: ResolvedOptions;
  readonly table: TaskSlotTable;
  readonly #o: TaskExecutorOptions;
  readonly #clock: Clock;
  readonly #log: (message: string) => void;
  readonly #tasks = new Map<ExecutionAttemptID, RunningTask>();
  /** For every task: its failExternally cancels it; its runner's start notice reports it running (in the mailbox). */
  readonly #taskCallbacks: TaskCallbacks = {
    cancel: (executionAttemptId, cause) => this.#cancel(executionAttemptId, cause),
    started: (task) => this.mailbox.execute(() => this.#started(task)),
  };
  /** Tasks that ended in this turn, still in their slots: removed together (one TaskSlot event per slot). */
  #ended: ExecutionAttemptID[] = [];
  readonly #runners = new Map<AllocationID, SlotTaskRunner>();
  readonly #jobMasters = new Map<JobID, { address: string; gateway: JobMasterGateway }>();
  /** State updates not sent yet, per job: what a turn of the event loop produced goes out as one call. */
  readonly #pendingReports = new Map<JobID, { gateway: JobMasterGateway; updates: TaskExecutionStateWire[] }>();
  #reportFlushScheduled = false;
  #lifecycle: Lifecycle = 'created';
  #registrationId: string | null = null;
  /** The ResourceManager we are registered at (null while not registered). */
  #resourceManagerId: ResourceManagerId | null = null;
  #registrationAttempt = 0;
  /** Watches the ResourceManager's heartbeats while registered (its requests are our heartbeats from it). */
  #resourceManagerHeartbeat: HeartbeatMonitor<'ResourceManager'> | null = null;
  #registrationDeadline: { cancel(): boolean } | null = null;

  constructor(options: TaskExecutorOptions) {
    this.#o = options;
    this.resourceId = options.resourceId;
    this.options = resolveOptions(options.configuration ?? {});
    this.#clock = options.clock ?? systemClock;
    this.#log = options.log ?? (() => {});
    this.mailbox = new MainThreadExecutor(`TaskExecutor ${options.resourceId}`, this.#clock, (error) => this.#log(`uncaught in mailbox: ${describe(error)}`));
    this.table = new TaskSlotTable({
      totalResourceProfile: totalResourceProfile(this.options),
      numberSlots: this.options['taskmanager.numberOfTaskSlots'],
      slotTimeout: this.options['taskmanager.slot.timeout'],
      releaseTimeout: this.options['task.cancellation.timeout'],
      pageSize: this.options['taskmanager.memory.segment-size'],
      clock: this.#clock,
      ...(options.inspect ? { inspect: options.inspect } : {}),
      executor: (task) => this.mailbox.execute(task),
      slotActions: {
        timeoutSlot: (allocationId, ticket) => {
          // Flink's TaskExecutor.timeoutSlot: free it only if the timeout is still current.
          if (this.table.isValidTimeout(allocationId, ticket)) this.#freeSlotInternal(allocationId, 'the slot was not activated within taskmanager.slot.timeout');
        },
        slotFreed: (allocationId, jobId) => this.#slotFreed(allocationId, jobId),
        releaseTimedOut: (allocationId, ids) => this.#log(`slot ${AllocationID.short(allocationId)}: tasks ${ids.map(ExecutionAttemptID.short).join(', ')} did not stop within task.cancellation.timeout`),
        slotClosed: (output) => this.#slotClosed(output),
      },
    });
    this.table.start();
  }

  get lifecycle(): Lifecycle {
    return this.#lifecycle;
  }

  get isRegistered(): boolean {
    return this.#lifecycle === 'registered';
  }

  /** Starts registering at the ResourceManager (retried with backoff until accepted or the registration timeout). */
  start(): void {
    this.mailbox.execute(() => {
      if (this.#lifecycle !== 'created') return;
      this.#register('first registration');
    });
  }

  // ------------------------------------------------------------------ TaskExecutorGateway

  async requestSlot(request: SlotRequestWire): Promise<void> {
    this.#requireRunning('requestSlot');
    this.#requireRegisteredAt(request?.resourceManagerId, 'requestSlot');
    const profile = ResourceProfile.fromJSON(request.resourceProfile);
    const allocated = this.table.allocateSlot({ index: request.index, jobId: request.jobId, allocationId: request.allocationId, resourceProfile: profile });
    this.#rememberJobMaster(request.jobId, request.targetAddress);
    if (allocated) this.#offerSlot(request.jobId, request.allocationId);
  }

  async freeSlot(allocationId: AllocationID, cause: string): Promise<void> {
    this.#requireRunning('freeSlot');
    if (this.table.getTaskSlot(allocationId) === undefined) throw new SlotNotFoundError(`${this.resourceId} has no slot ${AllocationID.short(allocationId)}`, { allocationId });
    this.#freeSlotInternal(allocationId, cause);
  }

  async freeInactiveSlots(jobId: JobID): Promise<void> {
    this.#requireRunning('freeInactiveSlots');
    for (const allocationId of this.table.getAllocationIdsPerJob(jobId)) {
      if (this.table.getTaskSlot(allocationId)?.state === 'allocated') this.#freeSlotInternal(allocationId, `job ${JobID.short(jobId)} ended`);
    }
  }

  async submitTask(descriptor: TaskDeploymentDescriptor): Promise<void> {
    this.#requireRunning('submitTask');
    const [error] = this.#submit([descriptor]);
    if (error !== undefined) throw error;
  }

  /**
   * Several submitTask calls in one (what a JobMaster's gateway sends for the submissions of one
   * turn): each descriptor is accepted or refused on its own, in order, exactly as submitTask would;
   * the answer says, per descriptor, null (accepted) or the error that refused it.
   */
  async submitTasks(descriptors: readonly TaskDeploymentDescriptor[]): Promise<SubmitTaskOutcome[]> {
    this.#requireRunning('submitTasks');
    if (!Array.isArray(descriptors)) {
      throw new IllegalArgumentError('invalid-type', `submitTasks: descriptors must be an array of task deployment descriptors, got ${descriptors === null ? 'null' : typeof descriptors}`, { argument: 'descriptors' });
    }
    return this.#submit(descriptors).map((error) => (error === undefined ? null : serializeError(error)));
  }

  /**
   * Accepts or refuses each descriptor in order (the refusal, or undefined when accepted); the
   * accepted ones enter their slots together (one TaskSlot event per slot, not one per task).
   */
  #submit(descriptors: readonly TaskDeploymentDescriptor[]): Array<Error | undefined> {
    const errors: Array<Error | undefined> = [];
    const candidates: RunningTask[] = [];
    const candidateAt: number[] = [];
    for (const descriptor of descriptors) {
      try {
        candidates.push(this.#candidate(descriptor));
        candidateAt.push(errors.length);
        errors.push(undefined);
      } catch (error) {
        errors.push(error as Error);
      }
    }
    const refusals = this.table.addTasks(candidates);
    const accepted: RunningTask[] = [];
    for (let i = 0; i < candidates.length; i++) {
      const task = candidates[i]!;
      const refusal = refusals[i];
      if (refusal !== undefined) {
        errors[candidateAt[i]!] = refusal;
        continue;
      }
      this.#tasks.set(task.executionAttemptId, task);
      accepted.push(task);
    }
    // Deploying, where the JobMaster put them when it submitted (Flink's Task does not report it):
    // the reports start with initializing, once the call has been answered.
    if (accepted.length > 0) this.mailbox.execute(() => this.#runAll(accepted));
    return errors;
  }

  /** A descriptor checked against its slot (which is marked active), as a task the table may still refuse. */
  #candidate(descriptor: TaskDeploymentDescriptor): RunningTask {
    checkDescriptor(descriptor);
    const { allocationId, jobId, executionAttemptId } = descriptor;
    // The owner alone (not getTaskSlot, which lists the slot's tasks): this runs for every task.
    const owner = this.table.getOwningJob(allocationId);
    if (owner === undefined) throw new SlotNotFoundError(`could not submit task ${ExecutionAttemptID.short(executionAttemptId)}: ${this.resourceId} has no slot ${AllocationID.short(allocationId)}`, { allocationId, executionAttemptId });
    if (owner !== jobId) throw new SlotOwnerMismatchError('job-mismatch', `could not submit task ${ExecutionAttemptID.short(executionAttemptId)}: slot ${AllocationID.short(allocationId)} belongs to job ${JobID.short(owner)}`, { allocationId, jobId, expected: owner });
    if (!this.table.markSlotActive(allocationId)) throw new SlotNotActiveError('slot-releasing', `could not submit task ${ExecutionAttemptID.short(executionAttemptId)}: slot ${AllocationID.short(allocationId)} is releasing`, { allocationId });
    return new RunningTask(descriptor, this.#taskCallbacks);
  }

  async cancelTask(executionAttemptId: ExecutionAttemptID): Promise<void> {
    this.#requireRunning('cancelTask');
    if (!this.#tasks.has(executionAttemptId)) throw new TaskNotFoundError(`${this.resourceId} runs no task ${ExecutionAttemptID.short(executionAttemptId)}`, { executionAttemptId });
    this.#cancel(executionAttemptId, 'canceled by the JobMaster');
  }

  async heartbeatFromResourceManager(): Promise<SlotReportWire> {
    this.#resourceManagerHeartbeat?.reportHeartbeat('ResourceManager');
    return slotReportToWire(this.table.createSlotReport(this.resourceId));
  }

  async heartbeatFromJobManager(jobId: JobID): Promise<ExecutionAttemptID[]> {
    return [...this.#tasks.values()].filter((t) => t.descriptor.jobId === jobId).map((t) => t.descriptor.executionAttemptId);
  }

  async disconnectResourceManager(cause: string): Promise<void> {
    if (this.#lifecycle !== 'registered') return;
    this.#log(`the ResourceManager disconnected: ${cause}; registering again`);
    this.#register('disconnected by the ResourceManager');
  }

  async shutdown(cause: string): Promise<void> {
    return this.#shutdown(cause, 0);
  }

  async requestMetrics(): Promise<TaskExecutorMetricsWire> {
    this.mailbox.assertRunningInMainThread('TaskExecutor.requestMetrics');
    const slots = { numberOfSlots: this.table.numberSlots, allocated: 0, active: 0, releasing: 0 };
    for (const slot of this.table.getTaskSlots()) slots[slot.state === 'done' ? 'releasing' : slot.state]++;
    const threads = this.#o.taskThreads?.stats;
    return {
      resourceId: this.resourceId,
      slots,
      runningTasks: this.#tasks.size,
      taskThreads: threads === undefined ? null : { started: threads.started, servedFromSpare: threads.served, bootedOnDemand: threads.bootedOnDemand, spare: threads.spare, inUse: threads.inUse },
    };
  }

  async #shutdown(cause: string, exitCode: number): Promise<void> {
    if (this.#lifecycle === 'shutting-down' || this.#lifecycle === 'stopped') return;
    this.#lifecycle = 'shutting-down';
    this.#disconnectFromResourceManager();
    this.#registrationDeadline?.cancel();
    this.#log(`shutting down: ${cause}`);
    const deadline = this.options['task.cancellation.grace-period'] + this.options['rpc.ask.timeout'];
    const closed = this.table.closeAsync(new Error(`the TaskExecutor is shutting down: ${cause}`));
    await Promise.race([closed, new Promise<void>((resolve) => this.#clock.setTimeout(resolve, deadline))]);
    await Promise.allSettled([...this.#runners.values()].map((runner) => runner.close()));
    this.#runners.clear();
    await this.#o.taskThreads?.close().catch(() => {});
    await this.#o.resourceManager.disconnectTaskExecutor(this.resourceId, cause).catch(() => {});
    this.#terminate(exitCode, cause);
  }

  // ------------------------------------------------------------------ registration and heartbeats

  #register(why: string): void {
    this.#lifecycle = 'registering';
    this.#disconnectFromResourceManager();
    this.#registrationAttempt = 0;
    this.#registrationDeadline?.cancel();
    this.#registrationDeadline = this.mailbox.schedule(() => {
      if (this.#lifecycle === 'registering') void this.#shutdown(`could not register at the ResourceManager within taskmanager.registration.timeout (${why})`, 1);
    }, this.options['taskmanager.registration.timeout']);
    this.#attemptRegistration();
  }

  #attemptRegistration(): void {
    if (this.#lifecycle !== 'registering') return;
    const attempt = ++this.#registrationAttempt;
    const registration = {
      resourceId: this.resourceId,
      host: this.#o.host ?? 'localhost',
      totalResourceProfile: this.table.totalResourceProfile.toJSON(),
      defaultSlotResourceProfile: this.table.defaultSlotResourceProfile.toJSON(),
      numberOfSlots: this.table.numberSlots,
      mode: this.#o.mode,
      ...(this.#o.pendingWorkerId === undefined ? {} : { pendingWorkerId: this.#o.pendingWorkerId }),
    };
    this.mailbox.whenComplete(this.#o.resourceManager.registerTaskExecutor(registration), (response, error) => {
      if (this.#lifecycle !== 'registering' || attempt !== this.#registrationAttempt) return;
      if (response?.kind === 'accepted') {
        this.#registered(response);
        return;
      }
      const initial = this.options['cluster.registration.initial-timeout'];
      const delay = Math.min(initial * 2 ** (attempt - 1), this.options['cluster.registration.max-timeout']);
      this.#log(`registration attempt ${attempt} ${response?.kind === 'refused' ? `refused: ${response.reason}` : `failed: ${describe(error)}`}; retrying in ${delay} ms`);
      this.mailbox.schedule(() => this.#attemptRegistration(), delay);
    });
  }

  #registered(response: Extract<RegistrationResponse, { kind: 'accepted' }>): void {
    this.#registrationDeadline?.cancel();
    this.#lifecycle = 'registered';
    // Registered: threads may now boot in the background for the slots to come.
    this.#o.taskThreads?.start(heapLimitMbOf(this.table.defaultSlotResourceProfile), () => this.#freeStaticSlots());
    this.#registrationId = response.registrationId;
    this.#resourceManagerId = response.resourceManagerId;
    this.#monitorResourceManager(response.heartbeatIntervalMs, response.heartbeatTimeoutMs);
    const report = slotReportToWire(this.table.createSlotReport(this.resourceId));
    this.mailbox.whenComplete(this.#o.resourceManager.sendSlotReport(this.resourceId, this.#registrationId!, report), (_, error) => {
      if (error !== undefined) this.#log(`sending the first slot report failed: ${describe(error)}`);
    });
  }

  /**
   * The ResourceManager heartbeats us; silent for heartbeat.timeout while we could look, it is lost
   * (Flink: reconnect). Our own lateness (a blocked event loop) is not held against it.
   */
  #monitorResourceManager(intervalMs: number, timeoutMs: number): void {
    const monitor = new HeartbeatMonitor<'ResourceManager'>({
      mailbox: this.mailbox,
      intervalMs,
      timeoutMs,
      onTimeout: (_, silentMs) => {
        if (this.#resourceManagerHeartbeat !== monitor || this.#lifecycle !== 'registered') return;
        this.#log(`no heartbeat from the ResourceManager for ${silentMs} ms (heartbeat.timeout ${timeoutMs} ms): registering again`);
        this.#register('the ResourceManager was lost');
      },
      log: (message) => this.#log(message),
    });
    monitor.monitorTarget('ResourceManager');
    monitor.start();
    this.#resourceManagerHeartbeat = monitor;
  }

  /** No longer registered: forget the registration, stop watching the ResourceManager. */
  #disconnectFromResourceManager(): void {
    this.#registrationId = null;
    this.#resourceManagerId = null;
    this.#resourceManagerHeartbeat?.stop();
    this.#resourceManagerHeartbeat = null;
  }

  /** Flink's isConnectedToResourceManager check: slots only for the ResourceManager we are registered at. */
  #requireRegisteredAt(resourceManagerId: ResourceManagerId | undefined, operation: string): void {
    if (this.#lifecycle === 'registered' && resourceManagerId === this.#resourceManagerId) return;
    if (!ResourceManagerId.is(resourceManagerId)) {
      throw new IllegalArgumentError('invalid-value', `${operation}: resourceManagerId must be the ResourceManagerId of the ResourceManager asking, got ${String(resourceManagerId)}`, { argument: 'resourceManagerId' });
    }
    const state = this.#lifecycle === 'registered' ? `registered at ResourceManager ${this.#resourceManagerId}` : this.#lifecycle;
    throw new IllegalStateError(`TaskExecutor ${this.resourceId} is not connected to ResourceManager ${String(resourceManagerId)} (it is ${state}): ${operation} refused`, {
      component: 'TaskExecutor',
      operation,
      state,
      allowed: [`registered at ResourceManager ${String(resourceManagerId)}`],
    });
  }

  // ------------------------------------------------------------------ slots

  #rememberJobMaster(jobId: JobID, address: string): void {
    const known = this.#jobMasters.get(jobId);
    if (known?.address === address) return;
    this.#jobMasters.set(jobId, { address, gateway: this.#o.connectJobMaster(address) });
  }

  /** Offers the slot to its job's JobMaster; a rejected or unanswered offer frees the slot. */
  #offerSlot(jobId: JobID, allocationId: AllocationID): void {
    const slot = this.table.getTaskSlot(allocationId);
    const jobMaster = this.#jobMasters.get(jobId);
    if (slot === undefined || jobMaster === undefined) return;
    const offer = { allocationId, index: slot.index, resourceProfile: slot.resourceProfile.toJSON() };
    this.#flushReports(jobId);
    this.mailbox.whenComplete(jobMaster.gateway.offerSlots(this.resourceId, [offer]), (accepted, error) => {
      if (this.table.getTaskSlot(allocationId) === undefined) return;
      if (error !== undefined || !accepted?.includes(allocationId)) {
        this.#freeSlotInternal(allocationId, error !== undefined ? `the JobMaster did not answer the offer: ${describe(error)}` : 'the JobMaster rejected the offer');
      } else if (this.table.state === 'running') {
        this.table.markSlotActive(allocationId);
      }
    });
  }

  #freeSlotInternal(allocationId: AllocationID, cause: string): void {
    if (this.table.getTaskSlot(allocationId) === undefined || this.table.state === 'closed') return;
    this.table.freeSlot(allocationId, new Error(cause));
  }

  #slotFreed(allocationId: AllocationID, jobId: JobID): void {
    if (this.#lifecycle === 'registered') {
      this.mailbox.whenComplete(this.#o.resourceManager.notifySlotAvailable(this.resourceId, allocationId), (_, error) => {
        if (error !== undefined) this.#log(`notifySlotAvailable failed: ${describe(error)}`);
      });
    }
    const jobMaster = this.#jobMasters.get(jobId);
    if (jobMaster !== undefined) {
      // The slot's tasks' last states first: the JobMaster fails what is still running in a freed slot.
      this.#flushReports(jobId);
      this.mailbox.whenComplete(jobMaster.gateway.notifySlotFreed(this.resourceId, allocationId, 'freed'), () => {});
      if (!this.table.hasAllocatedSlots(jobId)) this.#jobMasters.delete(jobId);
    }
  }

  #slotClosed(output: TaskSlotOutput): void {
    if (output.leaks.leakedPages > 0) {
      this.#log(`slot ${output.index} (${AllocationID.short(output.allocationId)}) closed with ${output.leaks.leakedPages} managed-memory pages never released: ${output.leaks.owners.map((o) => `${o.owner}=${o.pages}`).join(', ')}`);
    }
    const runner = this.#runners.get(output.allocationId);
    this.#runners.delete(output.allocationId);
    void runner?.close();
  }

  /** Static slots nobody holds: how many allocations could still take a spare thread of the default slot. */
  #freeStaticSlots(): number {
    let free = 0;
    for (let index = 0; index < this.table.numberSlots; index++) if (this.table.isSlotFree(index)) free++;
    return free;
  }

  // ------------------------------------------------------------------ tasks

  #runnerFor(allocationId: AllocationID): SlotTaskRunner {
    let runner = this.#runners.get(allocationId);
    if (runner === undefined) {
      const slot = this.table.getTaskSlot(allocationId)!;
      runner = this.#o.createTaskRunner({ name: `${this.resourceId}/${slot.index}`, heapLimitMb: heapLimitMbOf(slot.resourceProfile) });
      this.#runners.set(allocationId, runner);
    }
    return runner;
  }

  #runAll(tasks: readonly RunningTask[]): void {
    for (const task of tasks) this.#run(task);
  }

  #run(task: RunningTask): void {
    const { descriptor } = task;
    if (task.cancelCause !== null) return this.#finish(task, 'canceled', undefined, { name: 'TaskCanceled', message: task.cancelCause });
    const memoryManager = this.table.getTaskMemoryManager(descriptor.allocationId);
    const invocation = invocationFor(descriptor, memoryManager.totalPages > 0 ? memoryManager.share() : null);
    this.#report(task, 'initializing');
    let result: Promise<{ output: unknown }>;
    try {
      task.runner = this.#runnerFor(descriptor.allocationId);
      // Running once it starts on the slot's thread (it may wait there behind the slot's other tasks).
      result = task.runner.run(invocation, { listener: task });
    } catch (error) {
      result = Promise.reject(error);
    }
    this.mailbox.whenComplete(result, (value, error) => {
      if (error === undefined) return this.#finish(task, 'finished', value!.output);
      const canceled = task.cancelCause !== null || (isSlotwiseError(error) && error.reason === 'canceled');
      this.#finish(task, canceled ? 'canceled' : 'failed', undefined, serializeError(error));
    });
  }

  #started(task: RunningTask): void {
    if (this.#tasks.get(task.executionAttemptId) === task && task.state === 'initializing') this.#report(task, 'running');
  }

  #cancel(executionAttemptId: ExecutionAttemptID, cause: string): void {
    const task = this.#tasks.get(executionAttemptId);
    if (task === undefined || task.cancelCause !== null) return;
    task.cancelCause = cause;
    task.runner?.cancel(executionAttemptId, cause);
  }

  #finish(task: RunningTask, state: 'finished' | 'failed' | 'canceled', output: unknown, error?: SerializedError): void {
    const { executionAttemptId } = task.descriptor;
    if (!this.#tasks.has(executionAttemptId)) return;
    this.#tasks.delete(executionAttemptId);
    this.#report(task, state, output, error);
    // Out of its slot once this turn's other endings are in too: queued behind them in the mailbox.
    if (this.#ended.push(executionAttemptId) === 1) this.mailbox.execute(() => this.#removeEnded());
  }

  #removeEnded(): void {
    const ended = this.#ended;
    this.#ended = [];
    this.table.removeTasksIfPresent(ended);
  }

  /**
   * Queues a state update for the task's JobMaster. Updates go out in order, as one
   * updateTaskExecutionStates call per job once the event loop has handled every message waiting
   * for it (setImmediate), and before anything else this TaskExecutor sends that JobMaster (a slot
   * offer, a freed slot) or its link closes.
   */
  #report(task: RunningTask, state: ExecutionState, output?: unknown, error?: SerializedError): void {
    task.state = state;
    const { jobId, executionAttemptId } = task.descriptor;
    const jobMaster = this.#jobMasters.get(jobId);
    if (jobMaster === undefined) return;
    const update: TaskExecutionStateWire = { jobId, executionAttemptId, state, resourceId: this.resourceId, ...(output === undefined ? {} : { output }), ...(error === undefined ? {} : { error }) };
    let pending = this.#pendingReports.get(jobId);
    if (pending === undefined || pending.gateway !== jobMaster.gateway) {
      if (pending !== undefined) this.#flushReports(jobId);
      pending = { gateway: jobMaster.gateway, updates: [] };
      this.#pendingReports.set(jobId, pending);
    }
    pending.updates.push(update);
    if (!this.#reportFlushScheduled) {
      this.#reportFlushScheduled = true;
      // After the event loop's poll phase: every task result that arrived in it (each a message
      // of its own, each followed by its own ticks) shares one call, hence one cross-thread hop.
      setImmediate(() => this.mailbox.execute(() => this.#flushAllReports()));
    }
  }

  #flushAllReports(): void {
    this.#reportFlushScheduled = false;
    for (const jobId of [...this.#pendingReports.keys()]) this.#flushReports(jobId);
  }

  /** Sends the job's queued state updates now (one call), if there are any. */
  #flushReports(jobId: JobID): void {
    const pending = this.#pendingReports.get(jobId);
    if (pending === undefined) return;
    this.#pendingReports.delete(jobId);
    const { updates } = pending;
    this.mailbox.whenComplete(pending.gateway.updateTaskExecutionStates(updates), (_, failure) => {
      if (failure !== undefined) {
        const what = updates.map((u) => `${u.state} of ${ExecutionAttemptID.short(u.executionAttemptId)}`);
        this.#log(`reporting ${what.length > 4 ? `${what.slice(0, 4).join(', ')} and ${what.length - 4} more` : what.join(', ')} failed: ${describe(failure)}`);
      }
    });
  }

  // ------------------------------------------------------------------ helpers

  #requireRunning(operation: string): void {
    this.mailbox.assertRunningInMainThread(`TaskExecutor.${operation}`);
    if (this.#lifecycle === 'shutting-down' || this.#lifecycle === 'stopped') {
      throw new IllegalStateError(`TaskExecutor ${this.resourceId} is ${this.#lifecycle}: ${operation} refused`, { component: 'TaskExecutor', operation, state: this.#lifecycle, allowed: ['registering', 'registered'] });
    }
  }

  #terminate(code: number, reason: string): void {
    if (this.#lifecycle === 'stopped') return;
    this.#lifecycle = 'stopped';
    // The last states go out before the link closes.
    this.#flushAllReports();
    this.mailbox.close();
    this.#o.onTerminated?.(code, reason);
  }
}

/** The heap limit (MB) of a slot's task threads: its profile's task heap; undefined when it has none. */
export function heapLimitMbOf(profile: ResourceProfile): number | undefined {
  const heap = profile.taskHeapMemory;
  return heap > 0 ? Math.max(1, Math.floor(heap / (1024 * 1024))) : undefined;
}

function checkDescriptor(d: TaskDeploymentDescriptor): void {
  const fail = (field: string, rule: string) => new IllegalArgumentError('invalid-value', `submitTask: ${field} ${rule}`, { argument: field });
  if (typeof d !== 'object' || d === null) throw fail('descriptor', 'must be a TaskDeploymentDescriptor object');
  if (!JobID.is(d.jobId)) throw fail('jobId', 'must be a JobID');
  if (!AllocationID.is(d.allocationId)) throw fail('allocationId', 'must be an AllocationID');
  if (!ExecutionAttemptID.is(d.executionAttemptId)) throw fail('executionAttemptId', 'must be an ExecutionAttemptID');
  if (typeof d.taskModule !== 'string' || d.taskModule === '') throw fail('taskModule', 'must be the path or file: URL of a module');
  for (const key of ['subtaskIndex', 'parallelism', 'attemptNumber'] as const) {
    if (!Number.isSafeInteger(d[key]) || d[key] < 0) throw fail(key, 'must be an integer >= 0');
  }
}

function describe(error: unknown): string {
  if (isSlotwiseError(error)) return `${error._tag}(${error.reason}): ${error.message}`;
  return error instanceof Error ? error.message : String(error);
}
