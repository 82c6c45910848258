/**
 * How a JobMaster's subtasks get to run (Flink's DefaultExecutionDeployer, and the part of its DefaultScheduler that
 * applies the SchedulingStrategy's decisions): slots asked for at once for the records to schedule
 * (SlotSharingExecutionSlotAllocator), each attempt deployed as soon as its slot is there, its producers have
 * finished and the job runs — moved to DEPLOYING as it is submitted, as Flink's Execution.deploy does — and, while it
 * cannot deploy yet, a task event saying what it waits for; and an attempt canceled, where it runs or before it was
 * deployed (Flink's Execution.cancel). What failing means is the JobMaster's (its host).
 */
import { type Clock, msSince } from '../core/clock.js';
import { AllocationID, type ResourceID } from '../core/ids.js';
import type { RuntimeLog } from '../core/Logger.js';
import type { TaskExecutorGateway } from '../rpc/gateways.js';
import type { MainThreadExecutor } from '../rpc/MainThreadExecutor.js';
import type { SerializedError } from '../rpc/protocol.js';
import type { JobStatus } from '../../machines/jobStatus.machine.js';
import {
  type ExecutionAttempts,
  type ExecutionRecord,
  type SlotRequest,
  TERMINAL_STATES,
} from './ExecutionAttempts.js';
import { fieldsOf, type SlotLocation } from './JobFailures.js';
import { jobErrorOf, type TaskWait } from './JobResult.js';
import type { SchedulingStrategy } from './SchedulingStrategy.js';
import type { LogicalSlot, LogicalSlotListener } from './slotsharing/SharedSlot.js';
import type { SlotSharingExecutionSlotAllocator } from './slotsharing/SlotSharingExecutionSlotAllocator.js';
import type { TaskDeploymentDescriptorFactory } from './TaskDeploymentDescriptorFactory.js';

/** What the deployer needs of its JobMaster. */
export interface DeployerHost {
  readonly mailbox: MainThreadExecutor;
  readonly clock: Clock;
  readonly allocator: SlotSharingExecutionSlotAllocator;
  readonly executions: ExecutionAttempts;
  readonly deployments: TaskDeploymentDescriptorFactory;
  /** Which subtasks are scheduled when (jobmanager.scheduler.scheduling-strategy). */
  readonly scheduling: SchedulingStrategy;
  status(): JobStatus;
  taskExecutor(resourceId: ResourceID): TaskExecutorGateway | undefined;
  emitTask(record: ExecutionRecord, error: SerializedError | null, waitingFor?: TaskWait): void;
  /** A slot was assigned `requestedAt` (only when someone listens). */
  slotAssigned: ((record: ExecutionRecord, requestedAt: number) => void) | undefined;
  slotFailed(record: ExecutionRecord, error: unknown): void;
  /** The attempt failed; `where`: the slot it was in, when it has lost it already. */
  failed(record: ExecutionRecord, error: SerializedError, where?: SlotLocation): void;
  releaseTaskManager(resourceId: ResourceID, cause: string): void;
  readonly log: RuntimeLog;
}

export class ExecutionDeployer {
  readonly #h: DeployerHost;
  /** When it was made (the JobMaster's clock): what its slot requests' times count from (SlotRequest). */
  readonly #since: number;

  constructor(host: DeployerHost) {
    this.#h = host;
    this.#since = host.clock.now();
  }

  /** Schedules the subtasks the SchedulingStrategy starts the job with. */
  start(): void {
    this.schedule(this.#h.scheduling.startScheduling());
  }

  /**
   * A subtask finished: the consumers it made ready are scheduled (while the job runs or restarts), and of the
   * subtasks created as it finished (`initialized`: vertices the adaptive scheduler just gave their parallelism) those
   * the strategy schedules. Called while it still holds its logical slot: one of its slot sharing group takes its
   * shared slot on (and reads its partition there) instead of asking for another.
   */
  scheduleConsumersOf(finished: ExecutionRecord, initialized: readonly ExecutionRecord[] = []): void {
    const status = this.#h.status();
    if (status !== 'running' && status !== 'restarting') return;
    this.schedule(this.#h.scheduling.onFinished(finished));
    // The subtasks of vertices the adaptive scheduler just initialized: those the strategy schedules now.
    if (initialized.length > 0) this.schedule(this.#h.scheduling.restartTasks(initialized));
  }

  /**
   * The restart of the failed subtasks (what ExecutionAttempts.restartFailed returned): the restarted ones give their
   * logical slots back and are scheduled as the strategy says (region: those whose inputs are there), those that lost
   * their slot ask again, those whose slot came during the restart delay deploy now (their inputs permitting).
   */
  restart(attempts: { restarted: ExecutionRecord[]; reslot: ExecutionRecord[]; slotted: ExecutionRecord[] }): void {
    const { restarted, reslot, slotted } = attempts;
    for (const record of restarted) this.#h.allocator.releaseLogicalSlot(record.vertex.id);
    this.schedule([...this.#h.scheduling.restartTasks(restarted), ...reslot]);
    for (const record of slotted) this.tryDeploy(record);
  }

  /** Finished producers lost their outputs: the consumers the strategy sends back to wait go back (#unschedule). */
  inputsLost(producers: readonly ExecutionRecord[]): void {
    for (const record of this.#h.scheduling.onInputsLost(producers)) this.#unschedule(record);
  }

  /**
   * Schedules the records (Flink's allocateSlotsAndDeploy): each `scheduled`, its slot asked for (the records of one
   * call as one bulk), deployed once it has its slot (and its inputs). A record whose slot request is out already is
   * left as it is.
   */
  schedule(records: Iterable<ExecutionRecord>): void {
    const h = this.#h;
    const toSchedule: ExecutionRecord[] = [];
    // A finished subtask (a recovered job's) is not scheduled again; nor one whose slot request is out.
    for (const record of records)
      if (record.slotRequest === null && record.state !== 'finished') toSchedule.push(record);
    if (toSchedule.length === 0) return;
    const requestedAfter = msSince(this.#since, h.clock.now());
    const requests = toSchedule.map((record) => ({
      id: record.vertex.id,
      token: { record, attempt: record.executionAttemptId, requestedAfter } satisfies SlotRequest,
    }));
    // Slots that are there already are told during the call; they come back through the mailbox (#slots), after this.
    h.allocator.requestSlotsFor(requests, this.#slots);
    for (const { token } of requests) {
      const { record } = token;
      record.state = 'scheduled';
      record.slotRequest = token;
      h.emitTask(record, null, 'slot');
    }
  }

  /** Where the records' slots come back: into the mailbox, one task per slot (or failure), as a promise would. */
  readonly #slots: LogicalSlotListener<SlotRequest> = {
    slotReady: (request, slot) => this.#h.mailbox.execute(() => this.#slotCame(request, slot, undefined)),
    slotFailed: (request, cause) => this.#h.mailbox.execute(() => this.#slotCame(request, undefined, cause)),
  };

  #slotCame(request: SlotRequest, slot: LogicalSlot | undefined, error: Error | undefined): void {
    const h = this.#h;
    const { record, attempt } = request;
    // Another attempt now, or this request given up (the record sent back to wait: unschedule).
    const current = record.slotRequest === request;
    if (current) record.slotRequest = null;
    if (!current || record.executionAttemptId !== attempt || TERMINAL_STATES.has(h.status())) {
      // A logical slot still alive that the record does not hold is nobody's: it goes back.
      if (slot?.isAlive() && record.slot !== slot) h.allocator.releaseLogicalSlot(record.vertex.id);
      return;
    }
    if (error !== undefined) return h.slotFailed(record, error);
    record.slot = slot!;
    h.slotAssigned?.(record, this.#since + request.requestedAfter);
    this.tryDeploy(record);
    // Its slot is here but it cannot deploy yet: it says what it waits for now.
    if (record.state === 'scheduled' && record.executionAttemptId === attempt) {
      const waitingFor = this.#waitOf(record);
      if (waitingFor !== null) h.emitTask(record, null, waitingFor);
    }
  }

  /**
   * Sends a record scheduled and not deployed yet back to wait (`created`, under region scheduling, when an input it
   * was to read is lost): its slot, or its request for one, goes back; it is scheduled again once its inputs are there.
   */
  #unschedule(record: ExecutionRecord): void {
    if (record.state !== 'scheduled') return;
    const h = this.#h;
    record.slotRequest = null;
    record.slot = null;
    record.state = 'created';
    h.allocator.releaseLogicalSlot(record.vertex.id);
    h.emitTask(record, null, 'inputs');
  }

  /** Deploys the record's attempt if it is scheduled, has its slot and its inputs, and the job runs. */
  tryDeploy(record: ExecutionRecord): void {
    const h = this.#h;
    if (record.state !== 'scheduled' || record.slot === null || !h.executions.inputsReady(record)) return;
    if (h.status() !== 'running') return;
    const { resourceId } = record.slot;
    const gateway = h.taskExecutor(resourceId);
    if (gateway === undefined) {
      // Its link is closed: the deployment fails, and the TaskExecutor goes with every slot it held
      // (Flink's JobMaster releases a TaskManager whose heartbeat timed out), so no restart reuses them.
      const cause = `TaskExecutor ${resourceId} is gone`;
      h.failed(record, { name: 'TaskExecutorLost', message: cause });
      return h.releaseTaskManager(resourceId, cause);
    }
    const descriptor = h.deployments.createDeploymentDescriptor(record, record.slot.allocationId);
    // As Flink's Execution.deploy: the JobMaster moves the attempt to DEPLOYING as it submits it;
    // the TaskExecutor reports what comes after (initializing, running, the end).
    record.state = 'deploying';
    h.emitTask(record, null);
    const attempt = record.executionAttemptId;
    h.mailbox.whenComplete(gateway.submitTask(descriptor), (_, error) => {
      if (error !== undefined && record.executionAttemptId === attempt && !TERMINAL_STATES.has(record.state))
        h.failed(record, jobErrorOf(error));
    });
  }

  /**
   * Cancels the record's attempt (the job is canceled or fails): one on a TaskExecutor is told to cancel there (its
   * `canceled` comes from there), one not deployed yet is `canceled` at once, its slot request canceled with `cause`.
   */
  cancel(record: ExecutionRecord, cause: string): void {
    if (record.state === 'deploying' || record.state === 'initializing' || record.state === 'running') {
      this.cancelOn(record);
      this.#h.log(`canceling ${record.vertex.key}: ${cause}`, fieldsOf(record, record.slot));
    }
    if (record.state === 'scheduled' || record.state === 'created') {
      if (record.state === 'scheduled') this.#h.allocator.cancel(record.vertex.id, new Error(cause));
      record.state = 'canceled';
      this.#h.emitTask(record, null);
    }
  }

  /**
   * A slot of the job is gone: of the attempts that were in it (`inSlot`), one not deployed yet (waiting for its
   * inputs) simply needs another slot — now, or with the restart when this loss fails a subtask too; one deployed
   * there is gone with it.
   */
  slotLost(inSlot: readonly ExecutionRecord[], where: NonNullable<SlotLocation>, cause: string): void {
    for (const record of inSlot) {
      record.slot = null;
      if (record.state === 'scheduled') {
        if (this.#h.status() === 'running') this.schedule([record]);
        continue;
      }
      const message = `its slot ${AllocationID.short(where.allocationId)} on ${where.resourceId} was freed: ${cause}`;
      this.#h.failed(record, { name: 'SlotLost', message }, where);
    }
  }

  /**
   * What a lost partition does to the attempts it undoes (JobPartitionTracker.lose): a finished producer's ends
   * `failed` with its event, a reader's is canceled where it runs.
   */
  readonly partitionLoss = {
    failed: (record: ExecutionRecord, error: SerializedError) => {
      record.state = 'failed';
      this.#h.emitTask(record, error);
    },
    cancel: (record: ExecutionRecord) => this.cancelOn(record),
  };

  /** Tells the TaskExecutor the record's attempt runs on to cancel it (nothing when it has no slot or link). */
  cancelOn(record: ExecutionRecord): void {
    const gateway = record.slot === null ? undefined : this.#h.taskExecutor(record.slot.resourceId);
    if (gateway !== undefined) this.#h.mailbox.whenComplete(gateway.cancelTask(record.executionAttemptId), () => {});
  }

  /**
   * What a scheduled subtask holding its slot waits for before it deploys: its producers' outputs,
   * or the job's pending restart (which deploys it); null when nothing (or the job is ending).
   */
  #waitOf(record: ExecutionRecord): TaskWait | null {
    if (!this.#h.executions.inputsReady(record)) return 'inputs';
    const status = this.#h.status();
    return status === 'restarting' || status === 'failing' ? 'restart' : null;
  }
}
