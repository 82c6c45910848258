/**
 * One task attempt as a slot's runner takes it (SlotTaskPool, or a double in tests): what the
 * TaskExecutor hands over, and how the runner tells it the attempt started. Kept apart from
 * SlotTaskPool so that the TaskExecutor does not load piscina to build one.
 */
import type { TaskDeploymentDescriptor } from '../rpc/protocol.js';
import type { SharedMemoryHandle } from './MemoryManager.js';
import type { EncodedInputs, TaskInvocationContext, TaskPartitionSpec } from './taskThreadProtocol.js';

/** One task attempt to run on a slot's pool. */
export interface TaskInvocation {
  /** An absolute path or a file: URL; its default export is `async (context, inputs) => output`. */
  readonly taskModule: string;
  readonly context: TaskInvocationContext;
  /** The upstream outputs (structured-cloneable). */
  readonly inputs: unknown;
  /** Those read from result partitions, decoded into `inputs` on the task's thread. */
  readonly encoded?: EncodedInputs | undefined;
  /** A producer's: what becomes of its output (checked, and kept encoded). */
  readonly partition?: TaskPartitionSpec | undefined;
  /** The vertex's parameters (structured-cloneable), seen by the task as `context.config`. */
  readonly config?: unknown;
  /**
   * The slot's managed memory (`MemoryManager.share()`), or null: its SharedArrayBuffers are shared with the thread,
   * not copied.
   */
  readonly memory: SharedMemoryHandle | null;
}

/**
 * Told once when a run starts on its thread: when nothing is left before it there (it starts
 * within a message's latency), or when it is heard logging, and at the latest just before it
 * settles; never for a run canceled before it started. No message per run says so: the pool
 * infers it — a batch sent while a thread is free starts at once, the runs of a batch run one
 * after another (the next starts as the previous one's outcome is posted), and a thread takes the
 * next batch when it returns one. With a thread per pool (a slot's default) that is exact to a
 * message's latency; with more threads a start may be told late. Outcomes and logs come on
 * different channels than a batch's return, so a start may be heard before the end of the run
 * before it. A run re-queued after its thread was lost is not told again.
 */
export interface RunStartListener {
  started(): void;
}

/**
 * The invocation for a deployment descriptor on a slot whose managed memory is `memory`; a producer's output is
 * encoded for a result partition when its TaskExecutor keeps partitions (`keepsPartitions`), and `encoded` holds the
 * inputs read from partitions.
 */
export function invocationFor(
  descriptor: TaskDeploymentDescriptor,
  memory: SharedMemoryHandle | null,
  keepsPartitions = false,
  encoded?: EncodedInputs,
): TaskInvocation {
  const produces = descriptor.producesPartition;
  return {
    taskModule: descriptor.taskModule,
    context: {
      jobId: descriptor.jobId,
      jobName: descriptor.jobName,
      vertexId: descriptor.vertexId,
      vertexName: descriptor.vertexName,
      subtaskIndex: descriptor.subtaskIndex,
      parallelism: descriptor.parallelism,
      attemptNumber: descriptor.attemptNumber,
      executionAttemptId: descriptor.executionAttemptId,
      allocationId: descriptor.allocationId,
    },
    inputs: descriptor.inputs,
    encoded,
    partition: produces === undefined ? undefined : { subpartitions: produces.subpartitions, encode: keepsPartitions },
    config: descriptor.config,
    memory,
  };
}
