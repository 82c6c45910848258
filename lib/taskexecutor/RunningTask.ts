/**
 * A task attempt on a TaskExecutor (Flink's Task): what the TaskExecutor tracks of it, what its
 * slot holds (the slot's TaskSlotPayload), and what its slot's runner tells when it starts; the
 * runner's contract; and the checks a deployment descriptor passes before it becomes one.
 */
import { describeError, IllegalArgumentError } from '../core/errors.js';
import { AllocationID, ExecutionAttemptID, JobID } from '../core/ids.js';
import type { ExecutionState, TaskDeploymentDescriptor } from '../rpc/protocol.js';
import type { RunStartListener, TaskInvocation } from './TaskInvocation.js';
import type { TaskSlotPayload } from './TaskSlotTable.js';

/** Runs a slot's tasks (a piscina pool in production, a double in tests). */
export interface SlotTaskRunner {
  /**
   * Runs one attempt: resolves with its output; rejects when it fails or is canceled. Tells
   * `options.listener` when the attempt starts on its thread (it may wait behind others first),
   * at the latest just before it settles; never if it is canceled before it starts.
   */
  run(
    invocation: TaskInvocation,
    options?: { listener?: RunStartListener },
  ): Promise<{ output: unknown; leakedPagesReleased?: number }>;
  /**
   * Cancels the attempt if it is queued or running here (its run then rejects, canceled); false if
   * it is not here. A cancel names the attempt rather than aborting a signal: a TaskExecutor runs
   * thousands of attempts and cancels few, and an AbortController per attempt costs more than a
   * trivial task's bookkeeping.
   */
  cancel(executionAttemptId: ExecutionAttemptID, reason: string): boolean;
  close(): Promise<void>;
}

/** What a submitted attempt tells its TaskExecutor (one object for every attempt: no closure per task). */
export interface TaskCallbacks {
  cancel(executionAttemptId: ExecutionAttemptID, cause: string): void;
  started(task: RunningTask): void;
}

/**
 * A submitted attempt: what the TaskExecutor tracks, what its slot holds (the slot's TaskSlotPayload), and what its
 * runner tells when it starts.
 */
export class RunningTask implements TaskSlotPayload, RunStartListener {
  readonly executionAttemptId: ExecutionAttemptID;
  readonly jobId: JobID;
  readonly allocationId: AllocationID;
  /** The slot's runner once the attempt was handed to it (a cancel before that stops it in #run). */
  runner: SlotTaskRunner | null = null;
  state: ExecutionState = 'deploying';
  cancelCause: string | null = null;
  /** Its slot is closing under it (failExternally): once it ended, the slot waits for it to leave. */
  slotClosing = false;
  /** In its slot's statechart (it enters some time after it was accepted: RunningTasks.syncSlots). */
  inSlot = false;

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
    this.slotClosing = true;
    this.callbacks.cancel(this.executionAttemptId, `the slot was freed: ${describeError(cause)}`);
  }

  /** Its runner started it on a thread. */
  started(): void {
    this.callbacks.started(this);
  }

  /** What the inspector shows of it in its slot (not its inputs, nor its runner). */
  toJSON(): {
    executionAttemptId: ExecutionAttemptID;
    jobId: JobID;
    allocationId: AllocationID;
    state: ExecutionState;
  } {
    return {
      executionAttemptId: this.executionAttemptId,
      jobId: this.jobId,
      allocationId: this.allocationId,
      state: this.state,
    };
  }
}

/** Throws IllegalArgumentError naming the first field of the descriptor that is not what submitTask takes. */
export function checkDescriptor(d: TaskDeploymentDescriptor): void {
  const fail = (field: string, rule: string) =>
    new IllegalArgumentError('invalid-value', `submitTask: ${field} ${rule}`, { argument: field });
  if (typeof d !== 'object' || d === null) throw fail('descriptor', 'must be a TaskDeploymentDescriptor object');
  if (!JobID.is(d.jobId)) throw fail('jobId', 'must be a JobID');
  if (!AllocationID.is(d.allocationId)) throw fail('allocationId', 'must be an AllocationID');
  if (!ExecutionAttemptID.is(d.executionAttemptId)) throw fail('executionAttemptId', 'must be an ExecutionAttemptID');
  if (typeof d.taskModule !== 'string' || d.taskModule === '')
    throw fail('taskModule', 'must be the path or file: URL of a module');
  for (const key of ['subtaskIndex', 'parallelism', 'attemptNumber'] as const) {
    if (!Number.isSafeInteger(d[key]) || d[key] < 0) throw fail(key, 'must be an integer >= 0');
  }
}
