/**
 * What a slot's pool (SlotTaskPool, on the TaskExecutor's thread) and its task threads
 * (taskWorker.ts) say to each other. Types only: the two sides share nothing else.
 *
 * - Once per thread, a piscina call ('attach') hands it the far end of a MessageChannel
 *   (TaskThreadPort.ts); from then on each {@link TaskWorkerBatch} (runs to make one after another)
 *   is posted on that port, the thread makes the batches one at a time in the order they came, and
 *   each one's {@link TaskWorkerBatchEnd} comes back on it; the end of a batch after which the thread
 *   has nothing waiting carries what the thread holds then ({@link ThreadAfterJobs}), which is what its
 *   reserve judges when the slot goes back (no message for the give-back). The first batch of another
 *   pool lets go of the pools and jobs before it. piscina's own calls are left for the thread's
 *   lifecycle ('heapLimit').
 * - Each run claims its started flag (an Int32 of the batch's `started` buffer, queued → started:
 *   runFlags.ts) before it runs, so the pool can cancel a queued run by claiming it first; no
 *   message says a run started.
 * - Each run's {@link TaskWorkerOutcome} is posted on the port as the run ends (before the next
 *   run starts), so a run settles when it ends, not when its batch does; the last run's comes back
 *   in the batch's end ({@link TaskWorkerBatchResult}) instead.
 * - The port also carries 'abort' to a run (its context.signal fires) and a run's 'log' lines
 *   ({@link ControlToTask}, {@link ControlFromTask}): one ordered way each direction, so a batch's
 *   end comes after every outcome and line its runs posted.
 */
import type { SharedMemoryHandle } from './MemoryManager.js';
import type { PartitionPart } from './ResultPartitions.js';

/**
 * What becomes of a producer's output on its thread: checked to be `subpartitions` parts (a hash edge's producer) and,
 * with `encode`, serialized there part by part into SharedArrayBuffers (taskWorker's encodePart) for its TaskExecutor
 * to keep as a result partition.
 */
export interface TaskPartitionSpec {
  readonly subpartitions: number | null;
  readonly encode: boolean;
}

/** Inputs read from result partitions, per input edge by producer index (null: the value is in `inputs`). */
export type EncodedInputs = Readonly<Record<string, readonly (PartitionPart | null)[]>>;

/** The plain, structured-cloneable context of one attempt (a task module's TaskContext: Flink's RuntimeContext). */
export interface TaskInvocationContext {
  readonly jobId: string;
  readonly jobName: string;
  readonly vertexId: string;
  readonly vertexName: string;
  readonly subtaskIndex: number;
  readonly parallelism: number;
  readonly attemptNumber: number;
  readonly executionAttemptId: string;
  readonly allocationId: string;
}

/** Runs of one pool call, made one after another, each with its own signal, started flag and outcome. */
export interface TaskWorkerBatch {
  /** The pool's name, unique in its TaskExecutor: the thread keeps the pool's buffers by it, its messages carry it. */
  readonly pool: string;
  /**
   * An Int32Array's buffer: the pool's started flags (runFlags.ts). Sent when it changes (the
   * first call on a thread, a grown buffer, after a lost thread); omitted, the thread uses the
   * last one it was sent for this pool (a SharedArrayBuffer costs every message it rides in).
   */
  readonly started?: SharedArrayBuffer;
  /** The slot's managed memory for every run of the batch, or null; omitted like `started`. */
  readonly memory?: SharedMemoryHandle | null;
  readonly items: readonly TaskWorkerBatchItem[];
}

export interface TaskWorkerBatchItem {
  readonly taskModule: string;
  readonly context: TaskInvocationContext;
  readonly inputs: unknown;
  readonly encoded: EncodedInputs | undefined;
  readonly partition: TaskPartitionSpec | undefined;
  readonly config?: unknown;
  /** The run's number in its pool (messages about it carry it). */
  readonly run: number;
  /** Its flag in the batch's `started`. */
  readonly index: number;
}

/**
 * What a batch ends with: the outcome of its last run, or null when that one did not run (canceled while
 * queued).
 */
export type TaskWorkerBatchResult = { readonly run: number; readonly outcome: TaskWorkerOutcome } | null;

/**
 * How a batch ended, on the thread's port: what its last run returned ({@link TaskWorkerBatchResult}), or the error the
 * batch failed with before its runs could be made (the thread had not been sent the pool's started flags).
 */
export type TaskWorkerBatchEnd = (
  | { readonly result: TaskWorkerBatchResult; readonly error?: undefined }
  | { readonly error: Error }
) & {
  /** What the thread holds as it goes idle: set when no other batch waited for it as this one ended. */
  readonly after?: ThreadAfterJobs;
};

/**
 * A pool's messages about its runs, on the thread's port beside the requests and answers, each naming the pool (the
 * batch's `pool`): a thread serves one slot's pool at a time, and a late log line of a run of the pool before must
 * not be taken for one of the next pool's runs (run numbers are per pool). An abort is acted on as it comes, not after
 * the batch that runs the run.
 */
export type ControlToTask = {
  readonly type: 'abort';
  readonly pool: string;
  readonly run: number;
  readonly reason: string;
};
export type ControlFromTask =
  | { readonly type: 'log'; readonly pool: string; readonly run: number; readonly message: string }
  /** A run has ended (posted at once, so the pool settles it while the batch goes on). */
  | { readonly type: 'outcome'; readonly pool: string; readonly run: number; readonly outcome: TaskWorkerOutcome };

/** An error as plain data. */
export interface WorkerErrorInfo {
  readonly name: string;
  readonly message: string;
  readonly stack?: string;
  readonly code?: string;
  /** A slotwise error's `_tag`, `reason` and `details`, when the task threw one. */
  readonly tag?: string;
  readonly reason?: string;
  readonly details?: Record<string, unknown>;
}

export type TaskWorkerOutcome =
  /** With an encoding partition spec, `output` is the parts (PartitionPart[]). */
  | { readonly ok: true; readonly output: unknown; readonly leakedPagesReleased: number }
  | {
      readonly ok: false;
      readonly failure: 'threw' | 'bad-module' | 'bad-output';
      readonly error: WorkerErrorInfo;
      /** True when the task's signal had fired: the failure is the task stopping on a cancel. */
      readonly aborted: boolean;
      /** Pages the task returned without (released, after a bad output) or threw holding (left held). */
      readonly leakedPagesReleased: number;
      readonly pagesLeft: number;
    };

/** What the worker's `heapLimit` probe reports about its thread's heap. */
export interface HeapLimitProbe {
  /** `v8.getHeapStatistics().heap_size_limit`: old generation + young generation, in bytes. */
  readonly heapSizeLimit: number;
  /**
   * The thread's resource limits as Node reports them (the *requested* values: a process-wide flag that overrides them
   * is not visible here).
   */
  readonly resourceLimits: { readonly maxYoungGenerationSizeMb?: number; readonly maxOldGenerationSizeMb?: number };
}

/**
 * What a thread holds as it goes idle after a batch (taskWorker's `afterBatch`): what its reserve judges when the
 * thread's slot goes back (TaskThreadReserve's retirement rules).
 */
export interface ThreadAfterJobs {
  /**
   * `v8.getHeapStatistics().used_heap_size` (uncollected garbage included, and the module instances of the jobs it
   * served, let go only as it takes another pool's batch; after a full collection when SLOTWISE_GC_AFTER_JOBS=1 and the
   * process runs with --expose-gc).
   */
  readonly heapUsedBytes: number;
  /**
   * What still keeps the thread's event loop alive but its pool's ports, by kind
   * (`process.getActiveResourcesInfo()`: 'Timeout', 'TCPWrap', …): code of a job that has ended.
   * Unref'd timers are not seen.
   */
  readonly leftRunning: readonly string[];
}
