/**
 * TaskExecutor endpoint (Flink's TaskExecutor): the worker-side half of the runtime. It owns a
 * TaskSlotTable and one task runner (a piscina pool) per slot, registers at the ResourceManager and
 * keeps doing so while it lives (re-registering when the ResourceManager is lost, or lets it go),
 * answers heartbeats with its slot report, allocates slots on the request of the ResourceManager it
 * is registered at (refusing them while not registered, as Flink's "not connected") and offers them
 * to the job's JobMaster (Flink's requestSlot and offerSlotsToJobManager), runs the subtasks it is
 * given and reports their states to the JobMaster.
 *
 * Its parts: the ResourceManagerConnection registers and watches the ResourceManager's heartbeats;
 * the JobTable keeps each job's JobMaster and batches the task states for it; RunningTasks takes
 * the submitted attempts into their slots, runs, cancels and reports them; a RunningTask is one
 * attempt (Flink's Task); a slot's SlotTaskRunner runs the attempts on its threads.
 *
 * Everything runs on its MainThreadExecutor: gateway calls arrive there (the caller serves this
 * object with the mailbox), and every async completion re-enters through it.
 */
import type { InspectionEvent } from 'xstate';
import { systemClock, type Clock, type TimerHandle } from '../core/clock.js';
import {
  describeError,
  endCause,
  IllegalArgumentError,
  IllegalStateError,
  SlotNotFoundError,
  TaskNotFoundError,
} from '../core/errors.js';
import { AllocationID, ExecutionAttemptID, JobID, type ResourceID } from '../core/ids.js';
import { resolveOptions, type ResolvedOptions, type SlotwiseOptions } from '../core/options.js';
import { ResourceProfile } from '../core/ResourceProfile.js';
import { totalResourceProfile } from '../core/TaskExecutorResourceUtils.js';
import type { BatchingTaskExecutorGateway, SubmitTaskOutcome } from '../rpc/batchedSubmissions.js';
import { serializeError } from '../rpc/errorTransfer.js';
import type { JobMasterGateway, ResourceManagerGateway } from '../rpc/gateways.js';
import { MainThreadExecutor } from '../rpc/MainThreadExecutor.js';
import type {
  SlotRequestWire,
  TaskDeploymentDescriptor,
  TaskExecutorMetricsWire,
  HeartbeatPayloadWire,
} from '../rpc/protocol.js';
import { slotReportToWire } from '../rpc/slotReportWire.js';
import { heapLimitMbOf } from './heapLimitProbe.js';
import { JobTable } from './JobTable.js';
import { ResourceManagerConnection } from './ResourceManagerConnection.js';
import type { SlotTaskRunner } from './RunningTask.js';
import type { ResultPartitions } from './ResultPartitions.js';
import { RunningTasks } from './RunningTasks.js';
import { TaskSlotTable, type TaskSlotOutput } from './TaskSlotTable.js';
import { taskThreadsWire, type TaskThreadReserveStats } from './TaskThreadReserve.js';

export type { SlotTaskRunner } from './RunningTask.js';

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
  /** Lets go of a JobMaster's connection (its channels) once the job is let go of here. */
  readonly disconnectJobMaster?: (address: string) => void;
  /** Makes the task runner of a slot; its heap limit comes from the slot's profile. */
  readonly createTaskRunner: (slot: { name: string; heapLimitMb: number | undefined }) => SlotTaskRunner;
  /**
   * The runners' background work (task threads booted ahead of need, TaskThreadReserve): started
   * once the TaskExecutor is registered, with the default slot's heap limit; closed at shutdown.
   */
  readonly taskThreads?: {
    start(defaultHeapLimitMb: number | undefined, freeSlots: () => number): void;
    close(): Promise<void>;
    readonly stats: TaskThreadReserveStats;
  };
  /**
   * Where its producers' outputs stay (result partitions, read by their consumers from here); without it they go to
   * their JobMasters. Closed with the TaskExecutor.
   */
  readonly partitions?: ResultPartitions;
  /** Called on its mailbox each time the ResourceManager accepts its registration (again after a loss, too). */
  readonly onRegistered?: () => void;
  /** Called once when the TaskExecutor has stopped (the worker should exit with `code`). */
  readonly onTerminated?: (code: number, reason: string) => void;
  readonly log?: (message: string) => void;
  /** Receives every XState inspection event of the TaskSlotTable and its TaskSlots. */
  readonly inspect?: (event: InspectionEvent) => void;
}

/** How long a shutdown waits for the ResourceManager to acknowledge its goodbye. */
const GOODBYE_WAIT_MS = 300;

type Lifecycle = 'created' | 'registering' | 'registered' | 'shutting-down' | 'stopped';
/** Between created and shutting-down it registers or is registered: its ResourceManagerConnection says which. */
type Phase = 'created' | 'started' | 'shutting-down' | 'stopped';

export class TaskExecutor implements BatchingTaskExecutorGateway {
  readonly resourceId: ResourceID;
  readonly mailbox: MainThreadExecutor;
  readonly options: ResolvedOptions;
  readonly table: TaskSlotTable;
  readonly #o: TaskExecutorOptions;
  readonly #clock: Clock;
  readonly #log: (message: string) => void;
  /** The jobs served here and their JobMasters; task state updates go out through it. */
  readonly #jobs: JobTable;
  /** The attempts submitted here: run on their slots' runners, reported to their JobMasters. */
  readonly #tasks: RunningTasks;
  readonly #resourceManager: ResourceManagerConnection;
  #phase: Phase = 'created';

  constructor(options: TaskExecutorOptions) {
    this.#o = options;
    this.resourceId = options.resourceId;
    this.options = resolveOptions(options.configuration ?? {});
    this.#clock = options.clock ?? systemClock;
    this.#log = options.log ?? (() => {});
    this.mailbox = new MainThreadExecutor(`TaskExecutor ${options.resourceId}`, this.#clock, (error) =>
      this.#log(`uncaught in mailbox: ${describeError(error)}`),
    );
    this.#jobs = new JobTable({
      resourceId: this.resourceId,
      mailbox: this.mailbox,
      connect: options.connectJobMaster,
      ...(options.disconnectJobMaster === undefined ? {} : { disconnect: options.disconnectJobMaster }),
      log: (message) => this.#log(message),
    });
    this.#resourceManager = new ResourceManagerConnection({
      resourceId: this.resourceId,
      resourceManager: options.resourceManager,
      mailbox: this.mailbox,
      options: this.options,
      registration: () => ({
        resourceId: this.resourceId,
        host: this.#o.host ?? 'localhost',
        totalResourceProfile: this.table.totalResourceProfile.toJSON(),
        defaultSlotResourceProfile: this.table.defaultSlotResourceProfile.toJSON(),
        numberOfSlots: this.table.numberSlots,
        mode: this.#o.mode,
        ...(this.#o.pendingWorkerId === undefined ? {} : { pendingWorkerId: this.#o.pendingWorkerId }),
      }),
      onRegistered: () => this.#registered(),
      onRegistrationTimeout: (cause) => void this.#shutdown(cause, 1),
      log: (message) => this.#log(message),
    });
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
          if (this.table.isValidTimeout(allocationId, ticket))
            this.#freeSlotInternal(allocationId, 'the slot was not activated within taskmanager.slot.timeout');
        },
        slotFreed: (allocationId, jobId) => this.#slotFreed(allocationId, jobId),
        releaseTimedOut: (allocationId, ids) =>
          this.#log(
            `slot ${AllocationID.short(allocationId)}: tasks ${ids.map(ExecutionAttemptID.short).join(', ')} ` +
              `did not stop within task.cancellation.timeout`,
          ),
        slotClosed: (output) => this.#slotClosed(output),
      },
    });
    this.table.start();
    this.#tasks = new RunningTasks({
      resourceId: this.resourceId,
      mailbox: this.mailbox,
      clock: this.#clock,
      table: this.table,
      jobs: this.#jobs,
      createTaskRunner: options.createTaskRunner,
      ...(options.partitions === undefined ? {} : { partitions: options.partitions }),
    });
  }

  get lifecycle(): Lifecycle {
    if (this.#phase !== 'started') return this.#phase;
    return this.#resourceManager.state === 'registered' ? 'registered' : 'registering';
  }

  get isRegistered(): boolean {
    return this.lifecycle === 'registered';
  }

  /** Starts registering at the ResourceManager (retried with backoff until accepted or the registration timeout). */
  start(): void {
    this.mailbox.execute(() => {
      if (this.#phase !== 'created') return;
      this.#phase = 'started';
      this.#resourceManager.register('first registration');
    });
  }

  // ------------------------------------------------------------------ TaskExecutorGateway

  async requestSlot(request: SlotRequestWire): Promise<void> {
    this.#requireRunning('requestSlot');
    this.#resourceManager.requireRegisteredAt(request?.resourceManagerId, 'requestSlot', this.lifecycle);
    const profile = ResourceProfile.fromJSON(request.resourceProfile);
    const allocated = this.table.allocateSlot({
      index: request.index,
      jobId: request.jobId,
      allocationId: request.allocationId,
      resourceProfile: profile,
    });
    this.#jobs.connect(request.jobId, request.targetAddress);
    if (allocated) this.#offerSlot(request.jobId, request.allocationId);
  }

  async freeSlot(allocationId: AllocationID, cause: string): Promise<void> {
    this.#requireRunning('freeSlot');
    if (this.table.getTaskSlot(allocationId) === undefined)
      throw new SlotNotFoundError(`${this.resourceId} has no slot ${AllocationID.short(allocationId)}`, {
        allocationId,
      });
    this.#freeSlotInternal(allocationId, cause);
  }

  async freeInactiveSlots(jobId: JobID): Promise<void> {
    this.#requireRunning('freeInactiveSlots');
    for (const allocationId of this.table.getAllocationIdsPerJob(jobId)) {
      if (this.table.getTaskSlot(allocationId)?.state === 'allocated')
        this.#freeSlotInternal(allocationId, `job ${JobID.short(jobId)} ended`);
    }
  }

  /**
   * The job lets go of its result partitions here (Flink's TaskExecutorGateway.releasePartitions, at the job's end);
   * once it holds no slot either, the job is let go of too.
   */
  async releasePartitions(jobId: JobID, partitionIds?: readonly ExecutionAttemptID[]): Promise<void> {
    this.#requireRunning('releasePartitions');
    if (!JobID.is(jobId))
      throw new IllegalArgumentError('invalid-value', `releasePartitions: jobId must be a JobID, got ${jobId}`, {
        argument: 'jobId',
      });
    if (partitionIds !== undefined && (!Array.isArray(partitionIds) || !partitionIds.every(ExecutionAttemptID.is)))
      throw new IllegalArgumentError(
        'invalid-value',
        'releasePartitions: partitionIds must be an array of ExecutionAttemptIDs (the producing attempts), or absent',
        { argument: 'partitionIds' },
      );
    const partitions = this.#o.partitions;
    if (partitions === undefined || partitions.releaseJob(jobId, partitionIds) === 0) return;
    if (!this.table.hasAllocatedSlots(jobId) && !partitions.holds(jobId))
      this.#jobs.release(jobId, 'it holds neither slot nor partition of the job');
  }

  async submitTask(descriptor: TaskDeploymentDescriptor): Promise<void> {
    this.#requireRunning('submitTask');
    const [error] = this.#tasks.submit([descriptor]);
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
      throw new IllegalArgumentError(
        'invalid-type',
        `submitTasks: descriptors must be an array of task deployment ` +
          `descriptors, got ${descriptors === null ? 'null' : typeof descriptors}`,
        { argument: 'descriptors' },
      );
    }
    return this.#tasks.submit(descriptors).map((error) => (error === undefined ? null : serializeError(error)));
  }

  async cancelTask(executionAttemptId: ExecutionAttemptID): Promise<void> {
    this.#requireRunning('cancelTask');
    if (!this.#tasks.has(executionAttemptId))
      throw new TaskNotFoundError(`${this.resourceId} runs no task ${ExecutionAttemptID.short(executionAttemptId)}`, {
        executionAttemptId,
      });
    this.#tasks.cancel(executionAttemptId, 'canceled by the JobMaster');
  }

  async heartbeatFromResourceManager(): Promise<HeartbeatPayloadWire> {
    this.#resourceManager.heartbeatReceived();
    return {
      ...slotReportToWire(this.table.createSlotReport(this.resourceId)),
      partitions: this.#o.partitions?.stats ?? null,
    };
  }

  async heartbeatFromJobManager(jobId: JobID): Promise<ExecutionAttemptID[]> {
    return this.#tasks.attemptsOf(jobId);
  }

  async disconnectResourceManager(cause: string): Promise<void> {
    this.#resourceManager.disconnected(cause);
  }

  /**
   * Another JobManager leads (its TaskManager calls this on the mailbox). As Flink's TaskExecutor when a job's leader
   * changes: every job's tasks are canceled, its slots stay allocated but inactive (`taskmanager.slot.timeout` frees
   * one nobody takes back) and, once registered with the new leader under the same ResourceID, are offered to the
   * JobMaster at the job's address — which the new leader serves for a job it recovered.
   */
  async jobManagerLeaderChanged(cause: string): Promise<void> {
    if (this.#phase !== 'started') return;
    for (const [jobId, address] of this.#jobs.forgetAll()) {
      this.#tasks.cancelJob(jobId, cause);
      for (const allocationId of this.table.getAllocationIdsPerJob(jobId))
        if (this.table.getTaskSlot(allocationId)?.state === 'active') this.table.markSlotInactive(allocationId);
      this.#reoffer.set(jobId, address);
    }
    this.#log(`${cause}: registering with it, ${this.#reoffer.size} job(s) to offer slots to`);
    this.#resourceManager.register(cause);
  }

  /** Jobs whose slots are offered again once registered with a new leader, and their JobMasters' addresses. */
  readonly #reoffer = new Map<JobID, string>();

  async shutdown(cause: string): Promise<void> {
    return this.#shutdown(cause, 0);
  }

  async requestMetrics(): Promise<TaskExecutorMetricsWire> {
    this.mailbox.assertRunningInMainThread('TaskExecutor.requestMetrics');
    const slots = { numberOfSlots: this.table.numberSlots, allocated: 0, active: 0, releasing: 0 };
    for (const slot of this.table.getTaskSlots()) slots[slot.state === 'done' ? 'releasing' : slot.state]++;
    return {
      resourceId: this.resourceId,
      slots,
      runningTasks: this.#tasks.size,
      partitions: this.#o.partitions?.stats ?? null,
      taskThreads: taskThreadsWire(this.#o.taskThreads?.stats),
    };
  }

  async #shutdown(cause: string, exitCode: number): Promise<void> {
    if (this.#phase === 'shutting-down' || this.#phase === 'stopped') return;
    this.#phase = 'shutting-down';
    const registered = this.#resourceManager.state === 'registered';
    this.#resourceManager.close();
    this.#log(`shutting down: ${cause}`);
    const deadline = this.options['task.cancellation.grace-period'] + this.options['rpc.ask.timeout'];
    this.#tasks.syncSlots();
    const closed = this.table.closeAsync(new Error(`the TaskExecutor is shutting down: ${cause}`));
    let bound: TimerHandle | undefined;
    await Promise.race([closed, new Promise<void>((resolve) => (bound = this.#clock.setTimeout(resolve, deadline)))]);
    if (bound !== undefined) this.#clock.clearTimeout(bound);
    await this.#tasks.closeRunners();
    this.#o.partitions?.close();
    await this.#o.taskThreads?.close().catch(() => {});
    // As Flink's TaskExecutor, a goodbye only to the ResourceManager it is registered at, and no waiting on
    // a lost or hung one: its answer is awaited a moment only, so that the call leaves before the link closes.
    if (registered) {
      let timer: TimerHandle | undefined;
      await Promise.race([
        this.#o.resourceManager.disconnectTaskExecutor(this.resourceId, cause).catch(() => {}),
        new Promise<void>((resolve) => (timer = this.#clock.setTimeout(resolve, GOODBYE_WAIT_MS))),
      ]);
      if (timer !== undefined) this.#clock.clearTimeout(timer);
    }
    this.#terminate(exitCode, cause);
  }

  // ------------------------------------------------------------------ registration

  /** The ResourceManager accepted us: spare task threads may boot, and it gets our first slot report. */
  #registered(): void {
    this.#o.onRegistered?.();
    const report = slotReportToWire(this.table.createSlotReport(this.resourceId));
    this.mailbox.whenComplete(
      this.#o.resourceManager.sendSlotReport(this.resourceId, this.#resourceManager.registrationId!, report),
      (_, error) => {
        if (error !== undefined) this.#log(`sending the first slot report failed: ${describeError(error)}`);
        // The ResourceManager knows these slots as the job's now: offered to the job's JobMaster again.
        for (const [jobId, address] of this.#reoffer) {
          const inactive = this.table
            .getAllocationIdsPerJob(jobId)
            .filter((allocationId) => this.table.getTaskSlot(allocationId)?.state === 'allocated');
          if (inactive.length === 0 || this.#phase !== 'started') continue;
          this.#jobs.connect(jobId, address);
          for (const allocationId of inactive) this.#offerSlot(jobId, allocationId);
        }
        this.#reoffer.clear();
        // Our slots are known: spare task threads may now boot in the background for the slots to
        // come (not before: loading piscina and booting threads would compete with the registration).
        if (this.#phase === 'started')
          this.#o.taskThreads?.start(heapLimitMbOf(this.table.defaultSlotResourceProfile), () =>
            this.#freeSlotsForSpares(),
          );
      },
    );
  }

  // ------------------------------------------------------------------ slots

  /** Offers the slot to its job's JobMaster; a rejected or unanswered offer frees the slot. */
  #offerSlot(jobId: JobID, allocationId: AllocationID): void {
    const slot = this.table.getTaskSlot(allocationId);
    const jobMaster = this.#jobs.gateway(jobId);
    if (slot === undefined || jobMaster === undefined) return;
    const offer = { allocationId, index: slot.index, resourceProfile: slot.resourceProfile.toJSON() };
    this.#jobs.flush(jobId);
    this.mailbox.whenComplete(jobMaster.offerSlots(this.resourceId, [offer]), (accepted, error) => {
      if (this.table.getTaskSlot(allocationId) === undefined) return;
      if (error !== undefined || !accepted?.includes(allocationId)) {
        this.#freeSlotInternal(
          allocationId,
          error !== undefined
            ? `the JobMaster did not answer the offer: ${describeError(error)}`
            : 'the JobMaster rejected the offer',
        );
      } else if (this.table.state === 'running') {
        this.table.markSlotActive(allocationId);
      }
    });
  }

  #freeSlotInternal(allocationId: AllocationID, cause: string): void {
    if (this.table.getTaskSlot(allocationId) === undefined || this.table.state === 'closed') return;
    this.#tasks.syncSlots();
    this.table.freeSlot(allocationId, endCause(cause));
  }

  #slotFreed(allocationId: AllocationID, jobId: JobID): void {
    if (this.lifecycle === 'registered') {
      this.mailbox.whenComplete(
        this.#o.resourceManager.notifySlotAvailable(this.resourceId, allocationId),
        (_, error) => {
          if (error !== undefined) this.#log(`notifySlotAvailable failed: ${describeError(error)}`);
        },
      );
    }
    const jobMaster = this.#jobs.gateway(jobId);
    if (jobMaster !== undefined) {
      // The slot's tasks' last states first: the JobMaster fails what is still running in a freed slot.
      this.#jobs.flush(jobId);
      this.mailbox.whenComplete(jobMaster.notifySlotFreed(this.resourceId, allocationId, 'freed'), () => {});
      // Its partitions keep the job here (their consumers read them) until the job releases them (Flink: a
      // TaskExecutor keeps its JobMaster connection while it tracks partitions of the job).
      if (!this.table.hasAllocatedSlots(jobId) && this.#o.partitions?.holds(jobId) !== true)
        this.#jobs.release(jobId, 'it holds no slot of the job any more');
    }
  }

  #slotClosed(output: TaskSlotOutput): void {
    if (output.leaks.leakedPages > 0) {
      this.#log(
        `slot ${output.index} (${AllocationID.short(output.allocationId)}) closed with ${output.leaks.leakedPages} ` +
          `managed-memory pages never released: ${output.leaks.owners.map((o) => `${o.owner}=${o.pages}`).join(', ')}`,
      );
    }
    this.#tasks.slotClosed(output.allocationId);
  }

  /**
   * How many allocations could still take a spare thread of the default slot: the static slots
   * nobody holds, less those freed whose runner has not begun to close (the TaskExecutor hears of
   * the slot's close after the turn that freed it): their thread comes back as a spare, and one
   * booted meanwhile would be one too many.
   */
  #freeSlotsForSpares(): number {
    let free = 0;
    for (let index = 0; index < this.table.numberSlots; index++) if (this.table.isSlotFree(index)) free++;
    const returning = this.#tasks.runnersOfFreedSlots(
      (allocationId) => this.table.getTaskSlot(allocationId) !== undefined,
    );
    return Math.max(0, free - returning);
  }

  // ------------------------------------------------------------------ helpers

  #requireRunning(operation: string): void {
    this.mailbox.assertRunningInMainThread(`TaskExecutor.${operation}`);
    if (this.#phase === 'shutting-down' || this.#phase === 'stopped') {
      throw new IllegalStateError(`TaskExecutor ${this.resourceId} is ${this.#phase}: ${operation} refused`, {
        component: 'TaskExecutor',
        operation,
        state: this.#phase,
        allowed: ['registering', 'registered'],
      });
    }
  }

  #terminate(code: number, reason: string): void {
    if (this.#phase === 'stopped') return;
    this.#phase = 'stopped';
    // The last states go out before the link closes.
    this.#jobs.flushAll();
    this.mailbox.close();
    this.#o.onTerminated?.(code, reason);
  }
}
