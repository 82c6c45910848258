/**
 * The attempts a TaskExecutor runs (Flink's TaskExecutor.submitTask and cancelTask, and the
 * TaskManagerActions a Task reports through): each submitted descriptor checked against its slot
 * and added to the TaskSlotTable, run on its slot's SlotTaskRunner (one per slot, made with the
 * slot's first task and closed with the slot), canceled on request or when its slot is freed, and
 * its states reported to its job's JobMaster through the JobTable (initializing, running once it
 * starts on its thread, then finished, failed or canceled). Ended attempts leave their slots in
 * batches: those that ended within ENDED_REMOVAL_DELAY_MS of each other together, one TaskSlot event
 * per slot (the slot's statechart is told of ends in batches, as its JobMaster is of states), and
 * all of a slot's at once before the slot is freed ({@link RunningTasks.removeEnded}).
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
import type { JobTable } from './JobTable.js';
import { checkDescriptor, RunningTask, type SlotTaskRunner, type TaskCallbacks } from './RunningTask.js';
import { type PartitionPart, partitionError, type ResultPartitions } from './ResultPartitions.js';
import { invocationFor } from './TaskInvocation.js';
import type { TaskSlotTable } from './TaskSlotTable.js';

/**
 * How long an ended attempt may stay in its slot before it leaves with the others that ended meanwhile. A TaskSlot
 * event per slot per turn was the TaskExecutor's dearest step per task in a large job (~1.5 KB allocated each, one
 * per task when a slot's tasks end one per turn); batched over this window, a slot's endings share one event.
 * Nobody waits for it: the JobMaster heard the state already, and a slot being freed takes its ended tasks out first.
 */
export const ENDED_REMOVAL_DELAY_MS = 25;

export interface RunningTasksOptions {
  readonly resourceId: ResourceID;
  readonly mailbox: MainThreadExecutor;
  /** Times the removal of ended attempts from their slots (ENDED_REMOVAL_DELAY_MS). */
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
  /** Tasks that ended and are still in their slots: removed together (one TaskSlot event per slot). */
  #ended: ExecutionAttemptID[] = [];
  /** Takes #ended out of their slots, ENDED_REMOVAL_DELAY_MS after the first of them ended; null when none waits. */
  #removal: TimerHandle | null = null;
  /** A removal is queued for this poll phase's end (a closing slot waits for its ended tasks). */
  #removingNow = false;
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
    const refusals = this.#table.addTasks(candidates);
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
    if (accepted.length > 0) this.#mailbox.execute(() => this.#runAll(accepted));
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
    // Out of its slot with the others that end meanwhile, after their states have gone out (JobTable flushes in a
    // setImmediate): the TaskSlot event is the dearest part of an ending and no JobMaster waits for it — but a slot
    // closing under its tasks does (its release, the TaskExecutor's shutdown): out in this poll phase then.
    const first = this.#ended.push(executionAttemptId) === 1;
    if (task.slotClosing && !this.#removingNow) {
      this.#removingNow = true;
      setImmediate(this.#removeEndedNow);
    } else if (first) {
      this.#removal = this.#clock.setTimeout(this.#removeEndedSoon, ENDED_REMOVAL_DELAY_MS);
    }
  }

  readonly #removeEndedSoon = (): void => {
    this.#removal = null;
    this.#mailbox.execute(() => this.removeEnded());
  };

  readonly #removeEndedNow = (): void => {
    this.#removingNow = false;
    this.#mailbox.execute(() => this.removeEnded());
  };

  /**
   * Takes the attempts that ended out of their slots now, not at the end of ENDED_REMOVAL_DELAY_MS: before a slot is
   * freed (its ended tasks would hold it releasing until then) or the table closes.
   */
  removeEnded(): void {
    if (this.#removal !== null) {
      this.#clock.clearTimeout(this.#removal);
      this.#removal = null;
    }
    if (this.#ended.length === 0) return;
    const ended = this.#ended;
    this.#ended = [];
    this.#table.removeTasksIfPresent(ended);
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
