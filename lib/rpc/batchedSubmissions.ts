/**
 * A TaskExecutorGateway whose submitTask calls of one turn travel as one submitTasks call (issue 4:
 * "batch deployments where it helps"). A JobMaster deploys many subtasks at once, and a finished
 * batch of tasks lets the next ones go together: one request and one answer per turn instead of one
 * pair per task, on both sides of the link.
 *
 * Each submitTask still settles on its own: it resolves once its TaskExecutor accepted that attempt
 * and rejects with the error that refused it (its own class, as for a single call), or with the
 * batch call's failure (deadline, lost peer) for every attempt in it. Order is kept: any other call
 * on the gateway first sends the submissions queued before it (a cancelTask right after a
 * submitTask reaches the TaskExecutor after it), and a single queued submission goes as a plain
 * submitTask.
 */
import { IllegalArgumentError } from '../core/errors.js';
import { deserializeError, type WireError } from './errorTransfer.js';
import type { TaskExecutorGateway } from './gateways.js';
import type { TaskDeploymentDescriptor } from './protocol.js';

/** What submitTasks answers for each descriptor, in order: null when accepted, else why it was refused. */
export type SubmitTaskOutcome = WireError | null;

/** The gateway a TaskExecutor serves, with the batched form it answers. */
export interface BatchingTaskExecutorGateway extends TaskExecutorGateway {
  submitTasks(descriptors: readonly TaskDeploymentDescriptor[]): Promise<SubmitTaskOutcome[]>;
}

interface QueuedSubmission {
  readonly descriptor: TaskDeploymentDescriptor;
  readonly resolve: () => void;
  readonly reject: (error: unknown) => void;
}

/**
 * Wraps `gateway` (the TaskExecutor's, as connected): submitTask is queued until the end of the
 * current microtask queue run, then the queue goes as one submitTasks call; every other method
 * sends the queue first and then calls through.
 */
export function batchSubmissions(gateway: BatchingTaskExecutorGateway): TaskExecutorGateway {
  if (typeof gateway !== 'object' || gateway === null) {
    throw new IllegalArgumentError(
      'invalid-type',
      `batchSubmissions needs a TaskExecutorGateway, got ${gateway === null ? 'null' : typeof gateway}`,
      { argument: 'gateway' },
    );
  }
  let queue: QueuedSubmission[] = [];
  let scheduled = false;

  const flush = (): void => {
    scheduled = false;
    if (queue.length === 0) return;
    const batch = queue;
    queue = [];
    if (batch.length === 1) {
      const only = batch[0]!;
      gateway.submitTask(only.descriptor).then(only.resolve, only.reject);
      return;
    }
    gateway.submitTasks(batch.map((s) => s.descriptor)).then(
      (outcomes) => {
        for (let i = 0; i < batch.length; i++) {
          const outcome = outcomes[i];
          if (outcome === null) batch[i]!.resolve();
          else
            batch[i]!.reject(
              outcome === undefined
                ? new Error(`submitTasks answered ${outcomes.length} outcomes for ${batch.length} submissions`)
                : deserializeError(outcome),
            );
        }
      },
      (error: unknown) => {
        for (const submission of batch) submission.reject(error);
      },
    );
  };

  const submitTask = (descriptor: TaskDeploymentDescriptor): Promise<void> =>
    new Promise<void>((resolve, reject) => {
      queue.push({ descriptor, resolve, reject });
      if (!scheduled) {
        scheduled = true;
        queueMicrotask(flush);
      }
    });

  // Every other call sends what was submitted before it first.
  const wrapped: TaskExecutorGateway = {
    submitTask,
    requestSlot: (request) => (flush(), gateway.requestSlot(request)),
    freeSlot: (allocationId, cause) => (flush(), gateway.freeSlot(allocationId, cause)),
    freeInactiveSlots: (jobId) => (flush(), gateway.freeInactiveSlots(jobId)),
    releasePartitions: (jobId, partitionIds) => (flush(), gateway.releasePartitions(jobId, partitionIds)),
    cancelTask: (executionAttemptId) => (flush(), gateway.cancelTask(executionAttemptId)),
    heartbeatFromResourceManager: () => (flush(), gateway.heartbeatFromResourceManager()),
    heartbeatFromJobManager: (jobId) => (flush(), gateway.heartbeatFromJobManager(jobId)),
    disconnectResourceManager: (cause) => (flush(), gateway.disconnectResourceManager(cause)),
    shutdown: (cause) => (flush(), gateway.shutdown(cause)),
    requestMetrics: () => (flush(), gateway.requestMetrics()),
  };
  return wrapped;
}
