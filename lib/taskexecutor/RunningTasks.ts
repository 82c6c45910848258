/**
 * The attempts a TaskExecutor runs (Flink's TaskExecutor.submitTask and cancelTask, and the
 * TaskManagerActions a Task reports through): each submitted descriptor checked against its slot
 * and added to the TaskSlotTable, run on its slot's SlotTaskRunner (one per slot, made with the
 * slot's first task and closed with the slot), canceled on request or when its slot is freed, and
 * its states reported to its job's JobMaster through the JobTable (initializing, running once it
 * starts on its thread, then finished, failed or canceled). The slots' statecharts are told of
 * starts and ends in batches, as the JobMasters are of states: a submission is checked against its
 * slot at once (the table's refusals, as Flink's addTask) but enters it with the others of
 * SLOT_TASKS_DELAY_MS, and ended attempts leave together likewise — one TaskSlot event per slot, and
 * none for an attempt that ended within that time. Before anything changes a slot (a free, a
 * shutdown, a new leader) the slots are brought up to date at once ({@link RunningTasks.syncSlots}).
 *
 * #run, #report and #finish run for every attempt (bench/tasks.bench.ts): keep them free of further
 * allocations and indirections. It runs on the TaskExecutor's mailbox.
 */
import type { Clock, TimerHandle } from '../core/clock.js';
import { isSlotwiseError, SlotNotActiveError, SlotNotFoundError, SlotOwnerMismatchError } from '../core/errors.js';
import { AllocationID, ExecutionAttemptID, JobID, type ResourceID } from '../core/ids.js';
import { serializeError } from '../rpc/errorTransfer.js';
import type { MainThreadExecutor } from '../rpc/MainThreadExecutor.js';
import type {
  ExecutionState,
  PartitionInputWire,
  ResultPartitionWire,
  SerializedError,
  TaskDeploymentDescriptor,
} from '../rpc/protocol.js';
import { heapLimitMbOf } from './heapLimitProbe.js';
import { addTaskError } from './taskSlotTableRefusals.js';
import type { JobTable } from './JobTable.js';
import { checkDescriptor, RunningTask, type SlotTaskRunner, type TaskCallbacks } from './RunningTask.js';
import { type PartitionPart, partitionError, type ResultPartitions } from './ResultPartitions.js';
import { invocationFor } from './TaskInvocation.js';
import type { TaskSlotTable } from './TaskSlotTable.js';

/**
 * How long a slot's statechart may lag behind the attempts: a submitted one enters its slot, and an ended one leaves
 * it, with the others of this window. A TaskSlot event per task was the TaskExecutor's dearest step per task (~8 KB
 * allocated for an ADD_TASK, a macrostep each, one per task when a job's subtasks reach a slot one by one); batched,
 * a slot's starts share one event, its endings another, and an attempt that ends within the window costs none.
 * Nobody waits for it: the submission was checked against the slot when it came, the JobMaster hears the states
 * directly, and anything that changes a slot brings it up to date first. An inspector sees a task in its slot up to
 * this much later, and not at all when it ran for less.
 */
export const SLOT_TASKS_DELAY_MS = 25;

export interface RunningTasksOptions {
  readonly resourceId: ResourceID;
  readonly mailbox: MainThreadExecutor;
  /** Times when the slots are brought up to date with the attempts (SLOT_TASKS_DELAY_MS). */
  readonly clock: Pick<Clock, 'setTimeout' | 'clearTimeout'>;
  readonly table: TaskSlotTable;
  /** The jobs' JobMasters: where the states go. */
  readonly jobs: JobTable;
  /** Makes the task runner of a slot; its heap limit comes from the slot's profile (heapLimitMbOf). */
  readonly createTaskRunner: (slot: { name: string; heapLimitMb: number | undefined }) => SlotTaskRunner;
  /** Where producers' outputs stay and consumers' inputs are read from; without it outputs go to the JobMaster. */
  readonly partitions?: ResultPartitions;
}

export class RunningTasks {
  readonly #resourceId: ResourceID;
  readonly #mailbox: MainThreadExecutor;
  readonly #clock: Pick<Clock, 'setTimeout' | 'clearTimeout'>;
  readonly #table: TaskSlotTable;
  readonly #jobs: JobTable;
  readonly #createTaskRunner: RunningTasksOptions['createTaskRunner'];
  readonly #partitions: ResultPartitions | undefined;
  readonly #tasks = new Map<ExecutionAttemptID, RunningTask>();
  /** For every task: its failExternally cancels it; its runner's start notice reports it running (in the mailbox). */
  readonly #taskCallbacks: TaskCallbacks = {
    cancel: (executionAttemptId, cause) => this.cancel(executionAttemptId, cause),
    started: (task) => this.#mailbox.execute(() => this.#started(task)),
  };
  /** Tasks accepted and not in their slots yet: they enter together (one TaskSlot event per slot), if still running. */
  #entering: RunningTask[] = [];
  /** Tasks that ended and are still in their slots: removed together (one TaskSlot event per slot). */
  #ended: ExecutionAttemptID[] = [];
  /** Brings the slots up to date, SLOT_TASKS_DELAY_MS after the first change waiting; null when none waits. */
  #sync: TimerHandle | null = null;
  /** A sync is queued for this poll phase's end (a closing slot waits for its ended tasks). */
  #syncingNow = false;
  readonly #runners = new Map<AllocationID, SlotTaskRunner>();

  constructor(options: RunningTasksOptions) {
    this.#resourceId = options.resourceId;
    this.#mailbox = options.mailbox;
    this.#clock = options.clock;
    this.#table = options.table;
    this.#jobs = options.jobs;
    this.#createTaskRunner = options.createTaskRunner;
    this.#partitions = options.partitions;
  }

  /** How many attempts run here (submitted and not ended). */
  get size(): number {
    return this.#tasks.size;
  }

  has(executionAttemptId: ExecutionAttemptID): boolean {
    return this.#tasks.has(executionAttemptId);
  }

  /** The attempts of a job that run here. */
  attemptsOf(jobId: JobID): ExecutionAttemptID[] {
    return [...this.#tasks.values()]
      .filter((t) => t.descriptor.jobId === jobId)
      .map((t) => t.descriptor.executionAttemptId);
  }

  /**
   * Accepts or refuses each descriptor in order (the refusal, or undefined when accepted); the
   * accepted ones enter their slots together (one TaskSlot event per slot, not one per task).
   */
  submit(descriptors: readonly TaskDeploymentDescriptor[]): Array<Error | undefined> {
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
    // What the table would refuse now; the accepted enter their slots later (#syncSoon), so one that has not
    // entered yet is a duplicate here.
    const refusals = this.#table.checkTasks(candidates);
    const accepted: RunningTask[] = [];
    for (let i = 0; i < candidates.length; i++) {
      const task = candidates[i]!;
      const refusal =
        refusals[i] ??
        (this.#tasks.has(task.executionAttemptId)
          ? addTaskError(task, { reason: 'duplicate-execution-attempt' })
          : undefined);
      if (refusal !== undefined) {
        errors[candidateAt[i]!] = refusal;
        continue;
      }
      this.#tasks.set(task.executionAttemptId, task);
      accepted.push(task);
      this.#entering.push(task);
    }
    if (accepted.length === 0) return errors;
    this.#syncSoon();
    // Deploying, where the JobMaster put them when it submitted (Flink's Task does not report it):
    // the reports start with initializing, once the call has been answered.
    this.#mailbox.execute(() => this.#runAll(accepted));
    return errors;
  }

  /** Cancels the attempt if it runs here and was not canceled yet (its run then ends canceled). */
  cancel(executionAttemptId: ExecutionAttemptID, cause: string): void {
    const task = this.#tasks.get(executionAttemptId);
    if (task === undefined || task.cancelCause !== null) return;
    task.cancelCause = cause;
    // Still reading its inputs (initializing, on no runner yet): it ends now, its reads' answers are dropped.
    if (task.runner === null && task.state === 'initializing')
      return this.#finish(task, 'canceled', undefined, { name: 'TaskCanceled', message: cause });
    task.runner?.cancel(executionAttemptId, cause);
  }

  /** Cancels every attempt of the job here, its slots brought up to date for what the caller does to them next. */
  cancelJob(jobId: JobID, cause: string): void {
    for (const attempt of this.attemptsOf(jobId)) this.cancel(attempt, cause);
    this.syncSlots();
  }

  /** Runners whose slot is no longer held (`held` says which are): freed, their close not begun yet. */
  runnersOfFreedSlots(held: (allocationId: AllocationID) => boolean): number {
    let count = 0;
    for (const allocationId of this.#runners.keys()) if (!held(allocationId)) count++;
    return count;
  }

  /** The slot has closed: its runner closes too. */
  slotClosed(allocationId: AllocationID): void {
    const runner = this.#runners.get(allocationId);
    this.#runners.delete(allocationId);
    void runner?.close();
  }

  /** Closes every slot's runner (the TaskExecutor is shutting down). */
  async closeRunners(): Promise<void> {
    await Promise.allSettled([...this.#runners.values()].map((runner) => runner.close()));
    this.#runners.clear();
  }

  /** A descriptor checked against its slot (which is marked active), as a task the table may still refuse. */
  #candidate(descriptor: TaskDeploymentDescriptor): RunningTask {
    checkDescriptor(descriptor);
    const { allocationId, jobId, executionAttemptId } = descriptor;
    // The owner alone (not getTaskSlot, which lists the slot's tasks): this runs for every task.
    const owner = this.#table.getOwningJob(allocationId);
    if (owner === undefined)
      throw new SlotNotFoundError(
        `could not submit task ${ExecutionAttemptID.short(executionAttemptId)}: ${this.#resourceId} ` +
          `has no slot ${AllocationID.short(allocationId)}`,
        { allocationId, executionAttemptId },
      );
    if (owner !== jobId)
      throw new SlotOwnerMismatchError(
        'job-mismatch',
        `could not submit task ${ExecutionAttemptID.short(executionAttemptId)}: ` +
          `slot ${AllocationID.short(allocationId)} belongs to job ${JobID.short(owner)}`,
        { allocationId, jobId, expected: owner },
      );
    if (!this.#table.markSlotActive(allocationId))
      throw new SlotNotActiveError(
        'slot-releasing',
        `could not submit task ${ExecutionAttemptID.short(executionAttemptId)}: ` +
          `slot ${AllocationID.short(allocationId)} is releasing`,
        { allocationId },
      );
    return new RunningTask(descriptor, this.#taskCallbacks);
  }

  #runnerFor(allocationId: AllocationID): SlotTaskRunner {
    let runner = this.#runners.get(allocationId);
    if (runner === undefined) {
      const slot = this.#table.getTaskSlot(allocationId)!;
      runner = this.#createTaskRunner({
        name: `${this.#resourceId}/${slot.index}`,
        heapLimitMb: heapLimitMbOf(slot.resourceProfile),
      });
      this.#runners.set(allocationId, runner);
    }
    return runner;
  }

  #runAll(tasks: readonly RunningTask[]): void {
    for (const task of tasks) this.#run(task);
  }

  #run(task: RunningTask): void {
    const { descriptor } = task;
    if (task.cancelCause !== null)
      return this.#finish(task, 'canceled', undefined, { name: 'TaskCanceled', message: task.cancelCause });
    this.#report(task, 'initializing');
    if (descriptor.partitionInputs === undefined) return this.#start(task, undefined);
    // Its inputs that stayed with their producers are read first (here, or from their TaskExecutors).
    const encoded: Record<string, (PartitionPart | null)[]> = {};
    const reads: Promise<void>[] = [];
    for (const [from, refs] of Object.entries(descriptor.partitionInputs)) {
      const parts: (PartitionPart | null)[] = (encoded[from] = new Array(refs.length).fill(null));
      for (let i = 0; i < refs.length; i++) {
        const ref = refs[i];
        if (ref !== null && ref !== undefined)
          reads.push(
            this.#read(ref).then((part) => {
              parts[i] = part;
            }),
          );
      }
    }
    this.#mailbox.whenComplete(Promise.all(reads), (_, error) => {
      if (this.#tasks.get(descriptor.executionAttemptId) !== task) return;
      if (task.cancelCause !== null)
        return this.#finish(task, 'canceled', undefined, { name: 'TaskCanceled', message: task.cancelCause });
      if (error !== undefined) return this.#finish(task, 'failed', undefined, serializeError(error));
      this.#start(task, encoded);
    });
  }

  #read(input: PartitionInputWire): Promise<PartitionPart> {
    if (this.#partitions !== undefined) return this.#partitions.read(input);
    return Promise.reject(
      partitionError(
        'unreachable',
        input,
        `TaskExecutor ${this.#resourceId} cannot read result partitions (it keeps none and reaches no one's)`,
      ),
    );
  }

  #start(task: RunningTask, encoded: Record<string, (PartitionPart | null)[]> | undefined): void {
    const { descriptor } = task;
    const memoryManager = this.#table.getTaskMemoryManager(descriptor.allocationId);
    const invocation = invocationFor(
      descriptor,
      memoryManager.totalPages > 0 ? memoryManager.share() : null,
      this.#partitions !== undefined,
      encoded,
    );
    let result: Promise<{ output: unknown }>;
    try {
      task.runner = this.#runnerFor(descriptor.allocationId);
      // Running once it starts on the slot's thread (it may wait there behind the slot's other tasks).
      result = task.runner.run(invocation, { listener: task });
    } catch (error) {
      result = Promise.reject(error);
    }
    this.#mailbox.whenComplete(result, (value, error) => {
      if (error === undefined) return this.#finish(task, 'finished', value!.output);
      const canceled = task.cancelCause !== null || (isSlotwiseError(error) && error.reason === 'canceled');
      this.#finish(task, canceled ? 'canceled' : 'failed', undefined, serializeError(error));
    });
  }

  #started(task: RunningTask): void {
    if (this.#tasks.get(task.executionAttemptId) === task && task.state === 'initializing')
      this.#report(task, 'running');
  }

  #finish(
    task: RunningTask,
    state: 'finished' | 'failed' | 'canceled',
    output: unknown,
    error?: SerializedError,
  ): void {
    const { executionAttemptId, jobId, producesPartition } = task.descriptor;
    if (!this.#tasks.has(executionAttemptId)) return;
    this.#tasks.delete(executionAttemptId);
    if (
      state === 'finished' &&
      producesPartition !== undefined &&
      this.#partitions !== undefined &&
      this.#jobs.gateway(jobId) !== undefined
    ) {
      // A producer's output stays here: its JobMaster hears where, and how big. One that cannot be
      // kept (network memory full and the spill bound reached, or the file not written) fails.
      let partition: ResultPartitionWire | undefined;
      try {
        partition = this.#partitions.keep(jobId, executionAttemptId, output as PartitionPart[]);
      } catch (failure) {
        this.#report(task, 'failed', undefined, serializeError(failure));
      }
      if (partition !== undefined) this.#report(task, state, undefined, undefined, partition);
    } else {
      this.#report(task, state, output, error);
    }
    // One that never entered its slot leaves nothing there.
    if (!task.inSlot) return;
    // Out of its slot with the others that end meanwhile, after their states have gone out (JobTable flushes in a
    // setImmediate): no JobMaster waits for it — but a slot closing under its tasks does (its release, the
    // TaskExecutor's shutdown): out in this poll phase then.
    this.#ended.push(executionAttemptId);
    if (task.slotClosing && !this.#syncingNow) {
      this.#syncingNow = true;
      setImmediate(this.#syncNow);
    } else {
      this.#syncSoon();
    }
  }

  #syncSoon(): void {
    if (this.#sync === null) this.#sync = this.#clock.setTimeout(this.#syncLater, SLOT_TASKS_DELAY_MS);
  }

  readonly #syncLater = (): void => {
    this.#sync = null;
    this.#mailbox.execute(() => this.syncSlots());
  };

  readonly #syncNow = (): void => {
    this.#syncingNow = false;
    this.#mailbox.execute(() => this.syncSlots());
  };

  /**
   * Brings the slots up to date now, not at the end of SLOT_TASKS_DELAY_MS: the attempts still running that have not
   * entered their slots enter them, those that ended leave. Before anything changes a slot (a free: its tasks are
   * canceled with it, and its ended ones would hold it releasing) or the table closes.
   */
  syncSlots(): void {
    if (this.#sync !== null) {
      this.#clock.clearTimeout(this.#sync);
      this.#sync = null;
    }
    if (this.#entering.length > 0) this.#enter();
    if (this.#ended.length === 0) return;
    const ended = this.#ended;
    this.#ended = [];
    this.#table.removeTasksIfPresent(ended);
  }

  /** The accepted attempts still running enter their slots (the ended ones never do). */
  #enter(): void {
    const entering = this.#entering.filter((task) => this.#tasks.get(task.executionAttemptId) === task);
    this.#entering = [];
    if (entering.length === 0) return;
    const refusals = this.#table.addTasks(entering);
    for (let i = 0; i < entering.length; i++) {
      const task = entering[i]!;
      const refusal = refusals[i];
      if (refusal === undefined) task.inSlot = true;
      // Its slot changed since it was accepted without being brought up to date first: it cannot run there.
      else this.cancel(task.executionAttemptId, `its slot no longer takes it: ${refusal.message}`);
    }
  }

  /** The task is now in `state`; its JobMaster hears it in the next batch of updates (JobTable). */
  #report(
    task: RunningTask,
    state: ExecutionState,
    output?: unknown,
    error?: SerializedError,
    partition?: ResultPartitionWire,
  ): void {
    task.state = state;
    const { jobId, executionAttemptId } = task.descriptor;
    if (this.#jobs.gateway(jobId) === undefined) return;
    this.#jobs.report({
      jobId,
      executionAttemptId,
      state,
      resourceId: this.#resourceId,
      ...(output === undefined ? {} : { output }),
      ...(error === undefined ? {} : { error }),
      ...(partition === undefined ? {} : { partition }),
    });
  }
}
