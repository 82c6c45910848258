/**
 * A MiniCluster's job and cluster lifetimes tied to the application's: `submitJob(graph, { signal })`
 * cancels the job when the signal aborts (and starts nothing when it aborted first), and
 * `await using` closes the cluster at the end of its scope (`Symbol.asyncDispose`). No TaskExecutor:
 * a submitted job waits for slots, running, until it is canceled.
 */
import { expect } from 'chai';
import { IllegalArgumentError, IllegalStateError } from '../lib/core/errors.js';
import { MiniCluster } from '../lib/MiniCluster.js';

const OK = new URL('./fixtures/tasks/ok.ts', import.meta.url);
const waiting = (name: string) => ({ name, vertices: [{ id: 'a', taskModule: OK, parallelism: 1 }] });

describe('MiniCluster lifetimes', () => {
  describe('submitJob(graph, { signal })', () => {
    let cluster: MiniCluster;
    beforeEach(async () => {
      cluster = await MiniCluster.start({ taskExecutors: 0 });
    });
    afterEach(async () => {
      await cluster.close();
    });

    it('cancels the job when the signal aborts', async () => {
      const controller = new AbortController();
      const job = await cluster.submitJob(waiting('aborted later'), { signal: controller.signal });
      expect(job.status).to.equal('running');
      controller.abort();
      const result = await job.result;
      expect(result.status).to.equal('canceled');
      expect(cluster.listJobs()).to.deep.equal([{ jobId: job.jobId, name: 'aborted later', status: 'canceled' }]);
    });

    it('rejects with the reason of a signal that aborted before, and starts no job', async () => {
      const reason = new Error('the request was withdrawn');
      const error = await cluster
        .submitJob(waiting('aborted before'), { signal: AbortSignal.abort(reason) })
        .catch((e: unknown) => e);
      expect(error).to.equal(reason);
      expect(cluster.listJobs()).to.deep.equal([]);
    });

    it('starts no job when the signal aborts while the task modules are checked', async () => {
      const controller = new AbortController();
      const submitted = cluster.submitJob(waiting('aborted meanwhile'), { signal: controller.signal });
      controller.abort();
      const error = await submitted.catch((e: unknown) => e);
      expect((error as Error).name).to.equal('AbortError');
      expect(cluster.listJobs()).to.deep.equal([]);
    });

    it('refuses options it does not know and a signal that is not an AbortSignal, starting nothing', async () => {
      const notASignal = await cluster.submitJob(waiting('x'), { signal: 'stop' as never }).catch((e: unknown) => e);
      expect(notASignal).to.be.instanceOf(IllegalArgumentError);
      expect((notASignal as Error).message).to.contain('options.signal must be an AbortSignal');
      const unknown = await cluster.submitJob(waiting('x'), { timeout: 5 } as never).catch((e: unknown) => e);
      expect(unknown).to.be.instanceOf(IllegalArgumentError);
      expect((unknown as Error).message).to.contain("unknown submitJob option 'timeout'; known: signal");
      expect(cluster.listJobs()).to.deep.equal([]);
    });
  });

  it('closes the cluster at the end of an `await using` scope (Symbol.asyncDispose is close)', async () => {
    let outside: MiniCluster;
    {
      await using cluster = await MiniCluster.start({ taskExecutors: 0 });
      outside = cluster;
      const job = await cluster.submitJob(waiting('in scope'));
      expect(job.status).to.equal('running');
    }
    const late = await outside.submitJob(waiting('after scope')).catch((e: unknown) => e);
    expect(late).to.be.instanceOf(IllegalStateError);
    expect(outside[Symbol.asyncDispose]()).to.equal(outside.close());
  });
});
