/**
 * JobMaster endpoint (Flink's JobMaster): runs one job. It registers at the ResourceManager, declares what the job
 * needs (declarative: Flink's ResourceRequirements), accepts the slots offered by the TaskExecutors registered with it
 * (RegisteredTaskManagers, Flink's registerTaskManager) into its slot pool, packs subtasks into shared slots
 * (SlotSharingExecutionSlotAllocator), deploys a subtask once its slot is there and its inputs are ready, tracks
 * execution states, restarts failed subtasks and what depends on them under the restart strategy, releases its slots
 * at the end and completes the job's result with the sink outputs. When a subtask gets its slot is its
 * SchedulingStrategy's call (by default once its producers have finished): what the job declares is what is scheduled.
 *
 * Whether and when a failed job restarts is jobStatus.machine's decision (JobStatusActor); the attempts and the
 * failover step are ExecutionAttempts', deployment TaskDeploymentDescriptorFactory's, requirements
 * ResourceRequirementsDeclarer's, events and result JobResult's. A recovered job starts with the subtasks that had
 * finished restored (`restored`). Runs on its own MainThreadExecutor on the main thread.
 */
import type { Actor } from 'xstate';
import { mailboxClock, systemClock, type Clock } from '../core/clock.js';
import { describeError, endCause, isSlotwiseError } from '../core/errors.js';
import type { AllocationID, ExecutionAttemptID, JobID, ResourceID } from '../core/ids.js';
import type { RuntimeLog } from '../core/Logger.js';
import type { JobMasterGateway, TaskExecutorGateway } from '../rpc/gateways.js';
import { MainThreadExecutor } from '../rpc/MainThreadExecutor.js';
import type {
  JobMasterRegistrationResponse,
  ResultPartitionWire,
  SerializedError,
  SlotOfferWire,
  TaskExecutionStateWire,
} from '../rpc/protocol.js';
import type { jobStatusMachine, JobStatus } from '../../machines/jobStatus.machine.js';
import {
  AdaptiveVertexInitializer,
  executionGraphOf,
  initializeSources,
  type ParallelismDecision,
} from './adaptivebatch/AdaptiveVertexInitializer.js';
import { ExecutionAttempts, TERMINAL_STATES, type ExecutionRecord } from './ExecutionAttempts.js';
import { type DeployerHost, ExecutionDeployer } from './ExecutionDeployer.js';
import { type ExecutionGraph, ExecutionVertexID } from './ExecutionGraph.js';
import type { JobGraph } from './JobGraph.js';
import type { JobMasterOptions } from './JobMasterOptions.js';
import { JobEvents } from './JobEvents.js';
import { jobErrorOf, type JobResult } from './JobResult.js';
import { JobFailures, type SlotLocation } from './JobFailures.js';
import { JobPartitionTracker } from './JobPartitionTracker.js';
import { jobSlotServices } from './jobSlotServices.js';
import type { JobSlotPool } from './JobSlotPool.js';
import type { PhysicalSlotRequestBulkChecker } from './slotsharing/PhysicalSlotRequestBulkChecker.js';
import type { SlotSharingExecutionSlotAllocator } from './slotsharing/SlotSharingExecutionSlotAllocator.js';
import { JobStatusActor } from './JobStatusActor.js';
import {
  checkDisconnect,
  checkRegistration,
  checkSlotOffers,
  RegisteredTaskManagers,
} from './RegisteredTaskManagers.js';
import { ResourceRequirementsDeclarer } from './ResourceRequirementsDeclarer.js';
import { schedulingStrategyOf } from './SchedulingStrategy.js';
import { SpeculativeExecutions } from './speculative/SpeculativeExecutions.js';
import { TaskDeploymentDescriptorFactory } from './TaskDeploymentDescriptorFactory.js';
import { canonicalState, checkStateUpdate, checkStateUpdates } from './taskExecutionStateWire.js';

export type { JobEvent, JobResult } from './JobResult.js';
export type { JobMasterOptions } from './JobMasterOptions.js';

const SCHEDULING = 'jobmanager.scheduler.scheduling-strategy';
/** Why a finished subtask's logical slot went back. */
const SUBTASK_FINISHED = Object.freeze(new Error('its subtask finished'));

export class JobMaster implements JobMasterGateway {
  readonly jobId: JobID;
  readonly jobGraph: JobGraph;
  readonly address: string;
  readonly mailbox: MainThreadExecutor;
  readonly graph: ExecutionGraph;
  readonly result: Promise<JobResult>;
  readonly #o: JobMasterOptions;
  readonly #clock: Clock;
  readonly #log: RuntimeLog;
  readonly #status: JobStatusActor;
  readonly #pool: JobSlotPool;
  readonly #allocator: SlotSharingExecutionSlotAllocator;
  readonly #bulkChecker: PhysicalSlotRequestBulkChecker;
  readonly #executions: ExecutionAttempts;
  readonly #deployments: TaskDeploymentDescriptorFactory;
  readonly #declarations: ResourceRequirementsDeclarer;
  /** The TaskExecutors registered with this JobMaster: the only ones whose slots it takes. */
  readonly #taskManagers: RegisteredTaskManagers;
  readonly #failures: JobFailures;
  readonly #events: JobEvents;
  readonly #deployer: ExecutionDeployer;
  /** Where the job's result partitions are (Flink's JobMasterPartitionTracker). */
  readonly #partitions: JobPartitionTracker;
  /** Gives the vertices left to the adaptive scheduler their parallelism once their producers finished. */
  readonly #adaptive: AdaptiveVertexInitializer;
  /** Speculative attempts of slow subtasks (execution.batch.speculative.enabled, adaptive scheduler); else null. */
  readonly #speculation: SpeculativeExecutions | null;
  /** Failures told to the status machine so far. */
  #failuresReported = 0;
  /** Subtasks whose current attempt finished: the job is done when this reaches every subtask. */
  #finishedCount = 0;
  #resolveResult!: (result: JobResult) => void;
  #startedAt = 0;
  #lastError: SerializedError | null = null;
  #closed = false;

  constructor(options: JobMasterOptions) {
    this.#o = options;
    this.jobId = options.jobId;
    this.jobGraph = options.jobGraph;
    this.address = options.address;
    this.#clock = options.clock ?? systemClock;
    this.#log = options.log ?? (() => {});
    this.mailbox = new MainThreadExecutor(`JobMaster ${options.jobGraph.name}`, this.#clock, (error) =>
      this.#log(`uncaught in mailbox: ${describeError(error)}`, {}, 'error'),
    );
    this.graph = executionGraphOf(options.jobGraph, options.options);
    // Sources left to the adaptive scheduler get their parallelism now: everything below is built with their subtasks.
    const sources = initializeSources(this.graph, options.options);
    this.#executions = new ExecutionAttempts(this.graph, options.options['jobmanager.execution.attempts-history-size']);
    this.#events = new JobEvents(options, this.#clock, this.#log, this.#executions);
    this.result = new Promise<JobResult>((resolve) => (this.#resolveResult = resolve));
    // Timers fire into the mailbox, like everything else of this endpoint (the restart delay too).
    const clock = mailboxClock(this.#clock, (fn) => this.mailbox.execute(fn));
    // The status machine decides whether and when a failed job restarts; #restart is its effect.
    this.#status = new JobStatusActor({
      clock,
      restartStrategy: options.jobGraph.restartStrategy,
      random: options.random ?? Math.random,
      ...(options.inspect ? { inspect: options.inspect } : {}),
      onStatus: (status, cause) => this.#events.status(status, cause),
      restart: () => this.#restart(),
    });
    this.#declarations = new ResourceRequirementsDeclarer({
      mailbox: this.mailbox,
      clock: this.#clock,
      delayMs: options.options['slotmanager.requirement-check.delay'],
      resourceManager: options.resourceManager,
      requirements: () => ({ jobId: this.jobId, targetAddress: this.address, requirements: this.#pool.requirements() }),
      onRefused: (error) => this.#failJob(jobErrorOf(error), 'the ResourceManager refused its requirements'),
    });
    const services = jobSlotServices({
      jobId: this.jobId,
      graph: this.graph,
      clock,
      options: options.options,
      reasonFor: () => this.#o.reasonFor?.() ?? 'no reason known',
      isBlocked: (resourceId) => this.#speculation?.isBlocked(resourceId) ?? false,
      onRequirementsChanged: (urgent) => this.#declarations.declareSoon(urgent),
      freeSlot: (slot, cause) => this.#tell(slot.resourceId, (te) => te.freeSlot(slot.allocationId, cause.message)),
    });
    ({ pool: this.#pool, bulkChecker: this.#bulkChecker, allocator: this.#allocator } = services);
    this.#taskManagers = new RegisteredTaskManagers((resourceId) => this.#o.taskExecutor(resourceId) !== undefined);
    this.#failures = new JobFailures(options, this.#clock, this.#log);
    this.#deployments = new TaskDeploymentDescriptorFactory(this.jobId, this.graph, this.#executions);
    this.#partitions = new JobPartitionTracker(this.graph, this.#executions);
    this.#adaptive = new AdaptiveVertexInitializer(
      {
        graph: this.graph,
        options: options.options,
        executions: this.#executions,
        partitions: this.#partitions,
        slotSharing: services.slotSharing,
        decided: (decision) => this.#events.parallelism(decision),
      },
      sources,
    );
    const deployment: DeployerHost = {
      mailbox: this.mailbox,
      clock: this.#clock,
      allocator: this.#allocator,
      executions: this.#executions,
      deployments: this.#deployments,
      scheduling: schedulingStrategyOf(options.options[SCHEDULING], this.graph, this.#executions),
      status: () => this.status,
      taskExecutor: (resourceId) => this.#o.taskExecutor(resourceId),
      emitTask: (record, error, waitingFor) => this.#events.task(record, error, waitingFor),
      slotAssigned: this.#events.slotAssigned,
      slotFailed: (record, error) => this.#slotFailed(record, error),
      failed: (record, error, where) => this.#failed(record, error, where),
      releaseTaskManager: (resourceId, cause) => this.#releaseTaskManager(resourceId, cause),
      log: this.#log,
    };
    this.#deployer = new ExecutionDeployer(deployment);
    // Speculative attempts are deployed as the deployer does, in slots of their own.
    this.#speculation = SpeculativeExecutions.of(options, {
      ...deployment,
      timers: clock,
      graph: this.graph,
      pool: this.#pool,
      events: this.#events,
      failures: this.#failures,
      releasePartition: (resourceId, id) => this.#releasePartitions(resourceId, [id]),
      countFailure: (cause, error) => {
        this.#status.reportLocalFailure(cause);
        if (this.status === 'failed') this.#terminate('failed', (this.#lastError = error));
      },
    });
  }

  get status(): JobStatus {
    return this.#status.status;
  }

  /** Ended, or on its way to canceled: it takes no slots and no TaskExecutors any more. */
  get #ended(): boolean {
    return this.#closed || TERMINAL_STATES.has(this.status) || this.status === 'canceling';
  }

  /** The status statechart (for inspection). */
  get statusActor(): Actor<typeof jobStatusMachine> {
    return this.#status.actor;
  }

  /** The job's failures, newest first (Flink's exception history): a snapshot, kept after the job ended. */
  exceptionHistory() {
    return this.#failures.history();
  }

  /** Per subtask: its current attempt (state, where it runs or ran, start and end), its ended ones (for overviews). */
  executions() {
    return this.#executions.summaries((record) => this.#speculation?.summariesOf(record) ?? []);
  }

  /** When the job was created and when it ended (Flink's job start-time and end-time): epoch ms, -1 before. */
  times(): { readonly startTime: number; readonly endTime: number } {
    return this.#status.times;
  }

  /** Registers at the ResourceManager and schedules the subtasks its SchedulingStrategy starts with. */
  start(): void {
    this.mailbox.execute(() => {
      this.#startedAt = this.#clock.now();
      this.#status.send({ type: 'START' });
      this.mailbox.whenComplete(this.#o.resourceManager.registerJobMaster(this.jobId, this.address), (_, error) => {
        if (this.#closed) return; // canceled while it registered: nothing to schedule
        if (error !== undefined) return this.#failJob(jobErrorOf(error), 'could not register at the ResourceManager');
        for (const decision of this.#adaptive.decisions()) this.#events.parallelism(decision);
        // A recovered job's finished subtasks (its progress) are done: only the others run. A vertex whose producers
        // are all restored is decided again from what they produced, and its own restored subtasks follow.
        const restored = this.#executions.restore(this.#o.restored ?? []);
        while (this.#adaptive.initializeReady().length > 0)
          restored.push(...this.#executions.restore(this.#o.restored ?? []));
        for (const record of restored) {
          this.#partitions.kept(record, record.partition);
          this.#events.task(record, null);
        }
        if ((this.#finishedCount += restored.length) === this.#executions.size) return this.#complete();
        this.#deployer.start();
        this.#speculation?.start();
        for (const record of restored) this.#deployer.scheduleConsumersOf(record);
      });
    });
  }

  /** Cancels the job: running subtasks are canceled, slots given back; the result says 'canceled'. */
  cancel(): Promise<void> {
    return this.mailbox.callAsync(() => {
      if (TERMINAL_STATES.has(this.status) || this.status === 'canceling') return;
      // Leaving `restarting` cancels a pending restart with it.
      this.#status.send({ type: 'CANCEL' });
      for (const record of this.#executions.values()) this.#deployer.cancel(record, 'the job was canceled');
      this.#checkCanceled();
    });
  }

  async registerTaskManager(jobId: JobID, resourceId: ResourceID): Promise<JobMasterRegistrationResponse> {
    this.mailbox.assertRunningInMainThread('JobMaster.registerTaskManager');
    checkRegistration(jobId, resourceId);
    if (jobId !== this.jobId) return { kind: 'refused', reason: `this JobMaster runs job ${this.jobId}, not ${jobId}` };
    if (this.#ended) return { kind: 'refused', reason: `job ${this.jobGraph.name} is ${this.status}` };
    return this.#taskManagers.register(resourceId);
  }

  async disconnectTaskManager(resourceId: ResourceID, cause: string): Promise<void> {
    this.mailbox.assertRunningInMainThread('JobMaster.disconnectTaskManager');
    checkDisconnect(resourceId, cause);
    this.#releaseTaskManager(resourceId, `TaskExecutor ${resourceId} let go of the job: ${cause}`);
  }

  async offerSlots(resourceId: ResourceID, offers: readonly SlotOfferWire[]): Promise<AllocationID[]> {
    this.mailbox.assertRunningInMainThread('JobMaster.offerSlots');
    const profiles = checkSlotOffers(resourceId, offers);
    if (this.#ended) return [];
    // Flink's DeclarativeSlotPoolService.offerSlots: nothing from a TaskExecutor not registered with us.
    if (!this.#taskManagers.has(resourceId)) {
      this.#log(`rejected ${offers.length} slot(s) of ${resourceId}, not registered with us`, { resourceId }, 'warn');
      return [];
    }
    // While it restarts, every offer is registered for the restart (Flink's DeclarativeSlotPoolBridge).
    return this.#pool.offerSlots(
      resourceId,
      offers.map((offer, i) => ({ allocationId: offer.allocationId, resourceProfile: profiles[i]! })),
      { restarting: this.status === 'restarting' },
    );
  }

  async updateTaskExecutionState(update: TaskExecutionStateWire): Promise<void> {
    this.mailbox.assertRunningInMainThread('JobMaster.updateTaskExecutionState');
    checkStateUpdate(update, 'update');
    this.#applyStateUpdate(update);
  }

  async updateTaskExecutionStates(updates: readonly TaskExecutionStateWire[]): Promise<void> {
    this.mailbox.assertRunningInMainThread('JobMaster.updateTaskExecutionStates');
    // All checked before any is applied: a refused batch changes nothing.
    checkStateUpdates(updates);
    for (const update of updates) this.#applyStateUpdate(update);
  }

  #applyStateUpdate(update: TaskExecutionStateWire): void {
    // A speculative attempt's own states are its; one that finished first is its subtask's current attempt from now;
    // when one attempt of a subtask finishes, the others are canceled.
    if (this.#speculation?.stateUpdate(update) === 'handled') return;
    const record = this.#executions.current(update.executionAttemptId);
    // An older attempt, or a subtask restarted meanwhile: ignore.
    if (record === undefined || TERMINAL_STATES.has(record.state)) return;
    // Nothing changes (a state repeated, e.g. 'deploying', where the JobMaster put the attempt itself): no event.
    if (record.state === update.state) return;
    // A failed attempt's event comes from #failed, as every failed attempt's does.
    if (update.state === 'failed')
      return this.#failed(record, update.error ?? { name: 'Error', message: 'the task failed' });
    record.state = canonicalState(update.state);
    this.#events.task(record, update.error ?? null);
    if (update.state === 'finished') this.#finished(record, update.output, update.partition ?? null);
    else if (update.state === 'canceled') this.#canceledByExecutor(record);
  }

  async notifySlotFreed(resourceId: ResourceID, allocationId: AllocationID, cause: string): Promise<void> {
    this.mailbox.assertRunningInMainThread('JobMaster.notifySlotFreed');
    this.#slotLost(resourceId, allocationId, cause);
  }

  /** A slot of the job is gone from its TaskExecutor: what ran there failed, what waited there needs another slot. */
  #slotLost(resourceId: ResourceID, allocationId: AllocationID, cause: string): void {
    const slot = this.#pool.slotLost(allocationId);
    if (slot === undefined) return;
    const inSlot = this.#executions.inSlot(allocationId);
    // Speculative attempts in it fail with it, as their slot is released.
    this.#allocator.releasePhysicalSlot(allocationId, new Error(cause));
    this.#deployer.slotLost(inSlot, { resourceId, allocationId }, cause);
  }

  #finished(record: ExecutionRecord, output: unknown, partition: ResultPartitionWire | null): void {
    this.#o.onSubtaskFinished?.({ ...ExecutionVertexID.fieldsOf(record.vertex.id), output, partition });
    record.output = output;
    record.partition = partition;
    record.hasOutput = true;
    this.#partitions.kept(record, partition);
    // Vertices left to the adaptive scheduler whose producers have now all finished get their subtasks first.
    const initialized = this.#adaptive.initializeReady(record);
    const last = ++this.#finishedCount === this.#executions.size;
    // Before it gives its logical slot back: a consumer of its slot sharing group takes the shared slot on.
    if (!last) this.#deployer.scheduleConsumersOf(record, initialized);
    // Batch semantics: its slot is needed no more (its group's shared slot may); one cause for all (no stack each).
    this.#allocator.releaseLogicalSlot(record.vertex.id, SUBTASK_FINISHED);
    record.slot = null;
    // Finished before its cancel landed: canceled once nothing runs (Flink's CANCELLING → CANCELED, FINISHED too).
    if (this.status === 'canceling') return this.#checkCanceled();
    if (last) return this.#complete();
    // The partitions every consumer has read go now, not at the job's end.
    for (const [resourceId, ids] of this.#partitions.consumed(record)) this.#releasePartitions(resourceId, ids);
    for (const consumer of this.graph.consumersOf(record.vertex))
      this.#deployer.tryDeploy(this.#executions.of(consumer));
  }

  #slotFailed(record: ExecutionRecord, error: unknown): void {
    if (this.status === 'canceling' || TERMINAL_STATES.has(this.status)) return;
    const failure = jobErrorOf(error);
    if (isSlotwiseError(error) && error._tag === 'SlotRequestError')
      return this.#failJob(failure, 'its slots did not come in time');
    // A shared slot whose physical slot failed: ask again, as part of the normal failover.
    this.#failed(record, failure);
  }

  /**
   * The attempt failed — its task, its deployment, its slot, whatever failed: it ends `failed` with
   * its task event (once: an attempt already ended keeps its end), then the status machine decides.
   */
  #failed(record: ExecutionRecord, error: SerializedError, where: SlotLocation = record.slot): void {
    if (!TERMINAL_STATES.has(record.state)) {
      record.state = 'failed';
      this.#events.task(record, error);
    }
    // A speculative attempt of it that can still finish takes over: a failure of this attempt only.
    if (this.#speculation?.currentFailed(record, error, where)) return;
    this.#lastError = error;
    if (this.status === 'canceling') return this.#checkCanceled();
    if (TERMINAL_STATES.has(this.status)) return;
    this.#failures.attemptFailed(record, error, where, this.status === 'restarting');
    // The status machine's restart strategy decides: restarting (its delay, then #restart) or failed.
    this.#failuresReported++;
    this.#status.reportFailure(`${record.vertex.key} (attempt ${record.attemptNumber}) failed: ${error.message}`);
    const restart = this.#status.pendingRestart;
    if (restart !== null) this.#failures.restartAnnounced(record, where, restart.delayMs, this.#status.restarts);
    if (this.status === 'failed') this.#terminate('failed', error);
  }

  /** The status machine's restartTasks: the failed subtasks' next attempts (ExecutionAttempts.restartFailed). */
  #restart(): void {
    if (!this.#closed) this.#deployer.restart(this.#executions.restartFailed());
  }

  /**
   * Forgets a TaskExecutor (Flink's releaseTaskManager): every slot the job held there is lost, and so is every result
   * partition it kept — a TaskExecutor lets go of a job only once it holds none of its partitions, so one that goes
   * while holding some is lost with them.
   */
  #releaseTaskManager(resourceId: ResourceID, cause: string): void {
    this.#taskManagers.release(resourceId);
    if (this.#closed) return;
    // The partitions first: a restart the slots' loss sets off must find their producers failed too.
    const lost = this.#ended ? null : this.#partitions.lose(resourceId, cause, this.#deployer.partitionLoss);
    if (lost !== null) this.#finishedCount -= lost.producers.length;
    // Consumers waiting to read them wait again (region scheduling: without a slot) until they have run again.
    if (lost !== null) this.#deployer.inputsLost(lost.producers);
    const failuresBefore = this.#failuresReported;
    for (const slot of this.#pool.heldSlots)
      if (slot.resourceId === resourceId) this.#slotLost(resourceId, slot.allocationId, cause);
    // The loss of the TaskExecutor is one failure: when its running subtasks failed with it, their restart runs these
    // producers again too (it restarts every failed subtask); otherwise their loss is the failure.
    if (lost === null || this.#failuresReported > failuresBefore || this.#ended) return;
    this.#log(lost.message, { resourceId }, 'warn');
    this.#lastError = lost.error;
    this.#failuresReported++;
    this.#status.reportFailure(lost.message);
    if (this.status === 'failed') this.#terminate('failed', lost.error);
  }

  /** Tells a TaskExecutor to release the job's partitions there: those named, or all of them. */
  #releasePartitions(resourceId: ResourceID, ids?: readonly ExecutionAttemptID[]): void {
    this.#tell(resourceId, (te) => te.releasePartitions(this.jobId, ids));
  }

  /** Calls a TaskExecutor the job can reach, its answer ignored (a slot freed, partitions released). */
  #tell(resourceId: ResourceID, call: (gateway: TaskExecutorGateway) => Promise<unknown>): void {
    const gateway = this.#o.taskExecutor(resourceId);
    if (gateway !== undefined) this.mailbox.whenComplete(call(gateway), () => {});
  }

  #canceledByExecutor(record: ExecutionRecord): void {
    if (this.status === 'canceling') return this.#checkCanceled();
    // Canceled though the job is not canceling (its slot was freed under it): a failure of that attempt.
    if (!TERMINAL_STATES.has(this.status) && this.status !== 'restarting')
      this.#failed(record, { name: 'TaskCanceled', message: `${record.vertex.key} was canceled by its TaskExecutor` });
  }

  #checkCanceled(): void {
    if (this.status !== 'canceling') return;
    if (this.#executions.anyDeployed()) return;
    this.#status.send({ type: 'ALL_CANCELED' });
    this.#terminate('canceled', null);
  }

  #failJob(error: SerializedError, why: string): void {
    if (TERMINAL_STATES.has(this.status)) return;
    this.#lastError = error;
    const cause = `${why}: ${error.message}`;
    this.#failures.globalFailure(error);
    // running → failing → failed, failing or restarting → failed: no restart mends this.
    if (this.status === 'running') this.#status.send({ type: 'TASK_FAILED', cause });
    this.#status.send({ type: 'FAIL', cause });
    for (const record of this.#executions.values()) this.#deployer.cancel(record, cause);
    this.#terminate('failed', error);
  }

  #complete(): void {
    this.#status.send({ type: 'ALL_FINISHED' });
    this.#terminate('finished', null);
  }

  #terminate(status: JobResult['status'], error: SerializedError | null): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#speculation?.close(`job ${this.jobGraph.name} ${status}`);
    this.#declarations.close();
    const cause = endCause(`job ${this.jobGraph.name} ${status}`);
    this.#allocator.releaseAll(cause);
    this.#pool.close(cause);
    this.#bulkChecker.close();
    const outputs = status === 'finished' ? this.#executions.sinkOutputs() : {};
    this.mailbox.whenComplete(this.#o.resourceManager.disconnectJobMaster(this.jobId, `job ${status}`, true), () => {});
    // Its result partitions are let go of on every TaskExecutor that kept some.
    for (const resourceId of this.#partitions.releaseAll()) this.#releasePartitions(resourceId);
    const endError = this.#failures.jobEnded(status, error ?? this.#lastError, this.#status.restarts);
    this.#resolveResult({
      jobId: this.jobId,
      jobName: this.jobGraph.name,
      status,
      outputs,
      error: endError,
      restarts: this.#status.restarts,
      durationMs: this.#clock.now() - this.#startedAt,
    });
  }

  /** The adaptive scheduler's decisions so far: each vertex it gave a parallelism, from how many bytes, and why. */
  parallelismDecisions(): readonly ParallelismDecision[] {
    return this.#adaptive.decisions();
  }
}
