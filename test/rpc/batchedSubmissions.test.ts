/**
 * batchSubmissions: the submitTask calls of one turn go to the TaskExecutor as one submitTasks
 * call, each still settling on its own, and nothing overtakes them.
 */
import { expect } from 'chai';
import { DuplicateTaskError, EndpointClosedError, SlotNotFoundError } from '../../lib/core/errors.js';
import { AllocationID, ExecutionAttemptID, JobID } from '../../lib/core/ids.js';
import {
  batchSubmissions,
  type BatchingTaskExecutorGateway,
  type SubmitTaskOutcome,
} from '../../lib/rpc/batchedSubmissions.js';
import { serializeError } from '../../lib/rpc/errorTransfer.js';
import type { TaskDeploymentDescriptor } from '../../lib/rpc/protocol.js';

const jobId = JobID.generate();

function descriptor(subtaskIndex: number): TaskDeploymentDescriptor {
  return {
    jobId,
    jobName: 'wordcount',
    vertexId: 'v1',
    vertexName: 'tokenize',
    subtaskIndex,
    parallelism: 8,
    attemptNumber: 0,
    executionAttemptId: ExecutionAttemptID.generate({ vertex: 'tokenize', subtask: subtaskIndex, attempt: 0 }),
    allocationId: AllocationID.generate(),
    taskModule: '/tasks/tokenize.js',
    inputs: [],
  };
}

/** A gateway that records every call in order and answers submitTasks with `answer`. */
function recordingGateway(answer: (descriptors: readonly TaskDeploymentDescriptor[]) => Promise<SubmitTaskOutcome[]>) {
  const calls: string[] = [];
  const gateway = {
    submitTask: async (d: TaskDeploymentDescriptor) => void calls.push(`submitTask ${d.subtaskIndex}`),
    submitTasks: (ds: readonly TaskDeploymentDescriptor[]) => (
      calls.push(`submitTasks ${ds.map((d) => d.subtaskIndex).join(',')}`), answer(ds)
    ),
    cancelTask: async (id: ExecutionAttemptID) => void calls.push(`cancelTask ${ExecutionAttemptID.short(id)}`),
    requestSlot: async () => void calls.push('requestSlot'),
    freeSlot: async () => void calls.push('freeSlot'),
    freeInactiveSlots: async () => void calls.push('freeInactiveSlots'),
    releasePartitions: async () => void calls.push('releasePartitions'),
    heartbeatFromResourceManager: async () => (calls.push('heartbeatFromResourceManager'), { slots: [] } as never),
    heartbeatFromJobManager: async () => (calls.push('heartbeatFromJobManager'), []),
    disconnectResourceManager: async () => void calls.push('disconnectResourceManager'),
    shutdown: async () => void calls.push('shutdown'),
    requestMetrics: async () => (calls.push('requestMetrics'), {} as never),
  } satisfies BatchingTaskExecutorGateway;
  return { gateway, calls };
}

const settled = <T>(promise: Promise<T>) =>
  promise.then(
    (value) => ({ value }),
    (error: unknown) => ({ error }),
  );

describe('batchSubmissions', () => {
  it(
    'sends the submissions of one turn as one submitTasks call; ' +
      'each settles on its own, a refusal with its own error class',
    async () => {
      const { gateway, calls } = recordingGateway(async (ds) =>
        ds.map((d) =>
          d.subtaskIndex === 1
            ? serializeError(new SlotNotFoundError('no slot', { allocationId: d.allocationId }))
            : d.subtaskIndex === 2
              ? serializeError(new DuplicateTaskError('twice', { executionAttemptId: d.executionAttemptId }))
              : null,
        ),
      );
      const batched = batchSubmissions(gateway);
      const results = await Promise.all([0, 1, 2, 3].map((i) => settled(batched.submitTask(descriptor(i)))));
      expect(calls).to.deep.equal(['submitTasks 0,1,2,3']);
      expect(results[0]).to.deep.equal({ value: undefined });
      expect((results[1] as { error: unknown }).error)
        .to.be.instanceOf(SlotNotFoundError)
        .and.to.have.property('message', 'no slot');
      expect((results[2] as { error: unknown }).error).to.be.instanceOf(DuplicateTaskError);
      expect(results[3]).to.deep.equal({ value: undefined });
    },
  );

  it('sends a submission alone as a plain submitTask, and one turn later a new batch', async () => {
    const { gateway, calls } = recordingGateway(async (ds) => ds.map(() => null));
    const batched = batchSubmissions(gateway);
    await batched.submitTask(descriptor(0));
    await Promise.all([batched.submitTask(descriptor(1)), batched.submitTask(descriptor(2))]);
    expect(calls).to.deep.equal(['submitTask 0', 'submitTasks 1,2']);
  });

  it('lets nothing overtake a queued submission: another call sends the queue first', async () => {
    const { gateway, calls } = recordingGateway(async (ds) => ds.map(() => null));
    const batched = batchSubmissions(gateway);
    const a = descriptor(0);
    const b = descriptor(1);
    const submitted = Promise.all([batched.submitTask(a), batched.submitTask(b)]);
    await batched.cancelTask(a.executionAttemptId);
    await submitted;
    await batched.freeSlot(a.allocationId, 'done');
    expect(calls).to.deep.equal([
      'submitTasks 0,1',
      `cancelTask ${ExecutionAttemptID.short(a.executionAttemptId)}`,
      'freeSlot',
    ]);
  });

  it('fails every submission of a batch whose call failed, with that failure', async () => {
    const lost = new EndpointClosedError('the TaskExecutor is gone', { endpoint: 'te' }, 'lost');
    const { gateway } = recordingGateway(async () => {
      throw lost;
    });
    const batched = batchSubmissions(gateway);
    const results = await Promise.all([0, 1, 2].map((i) => settled(batched.submitTask(descriptor(i)))));
    expect(results.map((r) => (r as { error: unknown }).error)).to.deep.equal([lost, lost, lost]);
  });

  it('refuses something that is not a gateway', () => {
    expect(() => batchSubmissions(null as never)).to.throw(/needs a TaskExecutorGateway/);
  });
});
