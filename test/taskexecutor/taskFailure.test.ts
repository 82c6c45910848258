/**
 * The task-failure classifier (taskFailure.ts) without threads: what a failed pool call or a
 * failed outcome becomes, read from error names, codes and the pool's facts, never from message text.
 */
import { expect } from 'chai';
import { IllegalArgumentError, TaskExecutionError } from '../../lib/core/errors.js';
import {
  canceledAfterOutcome,
  classifyPoolFailure,
  isCanceledError,
  isDataCloneError,
  outcomeFailure,
  type FailureScope,
  type PoolCallFailure,
} from '../../lib/taskexecutor/taskFailure.js';
import type { TaskInvocationContext } from '../../lib/taskexecutor/taskThreadProtocol.js';

const scope: FailureScope = { pool: 'te-1/0', heapLimitMb: 64, cancelGraceMs: 300 };
const ctx: TaskInvocationContext = {
  jobId: 'job',
  jobName: 'classifier-test',
  vertexId: 'v',
  vertexName: 'mapper',
  subtaskIndex: 1,
  parallelism: 4,
  attemptNumber: 2,
  executionAttemptId: 'attempt-1',
  allocationId: 'alloc-1',
};

/** Shaped like piscina 5's AbortError (dist/abort.js: an Error whose name is 'AbortError'). */
class PiscinaAbortError extends Error {
  override get name(): string {
    return 'AbortError';
  }
}

const failure = (error: unknown, facts: Partial<Omit<PoolCallFailure, 'error'>> = {}): PoolCallFailure => ({
  error,
  cancelReason: null,
  stoppedBy: null,
  poolClosing: false,
  threadExitCode: null,
  ...facts,
});

function dataCloneError(): unknown {
  try {
    structuredClone({ f: () => 1 });
  } catch (error) {
    return error;
  }
  throw new Error('structuredClone of a function did not throw');
}

function asTaskError(error: Error, reason: string): TaskExecutionError {
  expect(error).to.be.instanceOf(TaskExecutionError);
  expect((error as TaskExecutionError).reason, error.message).to.equal(reason);
  return error as TaskExecutionError;
}

describe('taskFailure (classifier)', () => {
  describe('a pool call that rejected', () => {
    it("refuses the invocation (IllegalArgumentError) when it could not be posted: Node's DataCloneError", () => {
      const error = dataCloneError();
      expect(isDataCloneError(error)).to.equal(true);
      const classified = classifyPoolFailure(scope, ctx, failure(error));
      expect(classified).to.be.instanceOf(IllegalArgumentError);
      expect(classified.message).to.contain('mapper (2/4) attempt 2 [attempt-1]').and.contain('structured-cloneable');
      expect((classified as IllegalArgumentError).details).to.include({
        argument: 'invocation',
        executionAttemptId: 'attempt-1',
      });
    });

    it("is a forced cancel when piscina's abort rejected the call of a canceled run, naming the grace it had", () => {
      const error = asTaskError(
        classifyPoolFailure(
          scope,
          ctx,
          failure(new PiscinaAbortError('The task has been aborted'), {
            cancelReason: 'job canceled',
            stoppedBy: 'forced',
          }),
        ),
        'canceled',
      );
      expect(error.message).to.contain('canceled (job canceled); its thread was terminated after a 300 ms grace');
      expect(error.details).to.include({ stoppedBy: 'forced', graceMs: 300, causeName: 'AbortError' });
      expect(isCanceledError(error)).to.equal(true);
    });

    it(
      'is a forced cancel when the only thread of a canceled ' +
        'run was terminated under it (whatever the error says)',
      () => {
        const error = asTaskError(
          classifyPoolFailure(
            scope,
            ctx,
            failure(new Error('anything at all'), { cancelReason: 'stop', stoppedBy: 'forced', threadExitCode: 1 }),
          ),
          'canceled',
        );
        expect(error.details).to.include({ stoppedBy: 'forced' });
        const noGrace = asTaskError(
          classifyPoolFailure(
            { ...scope, cancelGraceMs: 0 },
            ctx,
            failure(new PiscinaAbortError('x'), { cancelReason: 'stop', stoppedBy: 'forced' }),
          ),
          'canceled',
        );
        expect(noGrace.message).to.contain('after no grace');
      },
    );

    it("is out-of-memory by Node's ERR_WORKER_OUT_OF_MEMORY code, before the exit that follows it", () => {
      const oom = Object.assign(new Error('Worker terminated due to reaching memory limit: JS heap out of memory'), {
        code: 'ERR_WORKER_OUT_OF_MEMORY',
      });
      const error = asTaskError(classifyPoolFailure(scope, ctx, failure(oom, { threadExitCode: 1 })), 'out-of-memory');
      expect(error.message).to.contain("thread's limit is 64 MB");
      expect(error.details).to.include({ code: 'ERR_WORKER_OUT_OF_MEMORY', heapLimitMb: 64 });
      const unlimited = asTaskError(
        classifyPoolFailure({ ...scope, heapLimitMb: undefined }, ctx, failure(oom)),
        'out-of-memory',
      );
      expect(unlimited.details).to.include({ heapLimitMb: null });
    });

    it("is thread-exited with the exit code the thread's 'exit' event gave, not one read from the message", () => {
      const exited = asTaskError(
        classifyPoolFailure(scope, ctx, failure(new Error('worker exited with code: 1'), { threadExitCode: 3 })),
        'thread-exited',
      );
      expect(exited.details).to.include({ exitCode: 3, cause: 'worker exited with code: 1' });
      expect(exited.message).to.contain('ended its thread (exit code 3)');
      // The same text with no exit seen: an uncaught error, not an exit code parsed out of the text.
      const uncaught = asTaskError(
        classifyPoolFailure(scope, ctx, failure(new Error('worker exited with code: 1'))),
        'thread-exited',
      );
      expect(uncaught.details).to.not.have.property('exitCode');
      expect(uncaught.message).to.contain('lost its thread to an uncaught Error: worker exited with code: 1');
    });

    it('is canceled pool-closed while the pool closes (piscina terminating its threads)', () => {
      const error = asTaskError(
        classifyPoolFailure(scope, ctx, failure(new Error('Terminating worker thread'), { poolClosing: true })),
        'canceled',
      );
      expect(error.details).to.include({ stoppedBy: 'pool-closed' });
      expect(error.message).to.contain("the slot's task pool te-1/0 was closed while it ran");
    });

    it('is thread-exited for an uncaught error that killed the thread, keeping its name and stack', () => {
      const stray = new RangeError('stray timer blew up');
      const error = asTaskError(classifyPoolFailure(scope, ctx, failure(stray)), 'thread-exited');
      expect(error.details).to.include({ causeName: 'RangeError', cause: 'stray timer blew up' });
      expect(error.details['stack']).to.be.a('string');
      // Not an error at all: still classified, by its string form.
      expect(asTaskError(classifyPoolFailure(scope, ctx, failure('gone')), 'thread-exited').details).to.include({
        cause: 'gone',
        causeName: 'Error',
      });
    });
  });

  describe("a run's outcome", () => {
    const failed = (failure: 'threw' | 'bad-module' | 'bad-output') =>
      ({
        ok: false,
        failure,
        error: {
          name: 'TypeError',
          message: 'nope',
          code: 'E_NOPE',
          tag: 'SlotwiseError',
          reason: 'x',
          details: { a: 1 },
        },
        aborted: false,
        leakedPagesReleased: 0,
        pagesLeft: 2,
      }) as const;

    it('says what failed: threw, bad-module (naming the module), bad-output; with the cause and the pages left', () => {
      const threw = outcomeFailure(scope, ctx, '/tasks/map.mjs', failed('threw'));
      expect(threw.reason).to.equal('threw');
      expect(threw.message).to.contain('threw: TypeError: nope');
      expect(threw.details).to.include({
        cause: 'nope',
        causeName: 'TypeError',
        code: 'E_NOPE',
        causeTag: 'SlotwiseError',
        causeReason: 'x',
        pagesLeft: 2,
      });
      expect(outcomeFailure(scope, ctx, '/tasks/map.mjs', failed('bad-module')).message).to.contain(
        'could not load its task module /tasks/map.mjs',
      );
      expect(outcomeFailure(scope, ctx, '/tasks/map.mjs', failed('bad-output')).message).to.contain(
        'returned an output that cannot cross threads',
      );
    });

    it('is canceled (cooperative) when the run ended after its cancel, whether it returned or stopped', () => {
      const returned = canceledAfterOutcome(scope, ctx, 'job canceled', {
        ok: true,
        output: 1,
        leakedPagesReleased: 3,
      });
      expect(returned.reason).to.equal('canceled');
      expect(returned.message).to.contain('canceled (job canceled); it returned after the cancel');
      expect(returned.details).to.include({ stoppedBy: 'cooperative', leakedPagesReleased: 3 });
      const stopped = canceledAfterOutcome(scope, ctx, 'job canceled', failed('threw'));
      expect(stopped.message).to.contain('it stopped: TypeError: nope');
      expect(stopped.details).to.include({ pagesLeft: 2 });
    });
  });
});
