/**
 * MiniCluster at the door: options and jobs refused with typed errors before anything starts, and a
 * closed cluster refusing work. No TaskExecutor is started here (the integration tests run jobs).
 */
import { expect } from 'chai';
import {
  ConfigurationError,
  IllegalArgumentError,
  IllegalStateError,
  JobGraphError,
  ResourceProfileError,
} from '../lib/core/errors.js';
import { JobID } from '../lib/core/ids.js';
import { MiniCluster, type MiniClusterOptions } from '../lib/MiniCluster.js';
import type { JobEvent } from '../lib/jobmaster/JobMaster.js';
import { startRefusal as refusal } from './support/startRefusal.js';

const OK = new URL('./fixtures/tasks/ok.ts', import.meta.url);

describe('MiniCluster', () => {
  describe('start refuses bad options, naming the option and what is allowed', () => {
    const cases: Array<[string, MiniClusterOptions, new (...args: never[]) => Error, RegExp]> = [
      [
        'an unknown option',
        { slots: 2 } as never,
        ConfigurationError,
        /unknown MiniCluster option 'slots'; known: mode, taskExecutors, slotsPerTaskExecutor/,
      ],
      ['a mode', { mode: 'fiber' as never }, ConfigurationError, /mode must be 'thread' or 'process', got fiber/],
      [
        'a negative executor count',
        { taskExecutors: -1 },
        ConfigurationError,
        /taskExecutors must be an integer >= 0 or 'on-demand', got -1/,
      ],
      [
        'zero slots',
        { taskExecutors: 0, slotsPerTaskExecutor: 0 },
        ConfigurationError,
        /taskmanager.numberOfTaskSlots/,
      ],
      [
        'an unknown Flink option',
        { taskExecutors: 0, configuration: { 'slot.request.timeuot': 5 } as never },
        ConfigurationError,
        /slot.request.timeuot/,
      ],
      [
        'a bad timeout',
        { taskExecutors: 0, configuration: { 'slot.request.timeout': 'soon' } },
        ConfigurationError,
        /slot.request.timeout/,
      ],
      ['negative resources', { taskExecutors: 0, resources: { cpuCores: -1 } }, ResourceProfileError, /cpu/i],
      [
        'a placement policy',
        { taskExecutors: 0, placementPolicy: 'random' as never },
        ConfigurationError,
        /placement-policy/,
      ],
    ];
    for (const [what, options, type, message] of cases) {
      it(what, async () => {
        const error = await refusal(options);
        expect(error).to.be.instanceOf(type);
        expect((error as Error).message).to.match(message);
      });
    }

    it('a non-object', async () => {
      expect(await refusal(null as never)).to.be.instanceOf(ConfigurationError);
    });
  });

  describe('with no TaskExecutor', () => {
    let cluster: MiniCluster;
    beforeEach(async () => {
      cluster = await MiniCluster.start({ taskExecutors: 0 });
    });
    afterEach(async () => {
      await cluster.close();
    });

    it('refuses a bad job graph with a JobGraphError and keeps no job', async () => {
      const error = await cluster
        .submitJob({
          name: 'cyclic',
          vertices: [
            { id: 'a', taskModule: OK, parallelism: 1 },
            { id: 'b', taskModule: OK, parallelism: 1 },
          ],
          edges: [
            { from: 'a', to: 'b', pattern: 'pointwise' },
            { from: 'b', to: 'a', pattern: 'pointwise' },
          ],
        })
        .catch((e: unknown) => e);
      expect(error).to.be.instanceOf(JobGraphError);
      expect(cluster.listJobs()).to.deep.equal([]);
    });

    it('refuses a task module that does not exist, naming it', async () => {
      const error = await cluster
        .submitJob({ name: 'missing', vertices: [{ id: 'a', taskModule: '/nowhere/task.ts', parallelism: 1 }] })
        .catch((e: unknown) => e);
      expect(error).to.be.instanceOf(JobGraphError);
      expect((error as Error).message).to.contain('/nowhere/task.ts');
      expect(cluster.listJobs()).to.deep.equal([]);
    });

    it('shows a job waiting for slots in the overview with its reason, and cancels it', async () => {
      const job = await cluster.submitJob({ name: 'waits', vertices: [{ id: 'a', taskModule: OK, parallelism: 2 }] });
      for (let i = 0; i < 50 && cluster.overview().pendingRequests.length === 0; i++)
        await new Promise((resolve) => setTimeout(resolve, 10));
      const overview = cluster.overview();
      expect(overview.taskExecutors).to.deep.equal([]);
      expect(overview.pendingRequests).to.have.length(1);
      expect(overview.pendingRequests[0]).to.deep.include({ jobId: job.jobId, missing: 2, profile: 'default slot' });
      expect(overview.pendingRequests[0]!.why).to.be.a('string').and.not.empty;
      expect(overview.jobs).to.deep.equal([{ jobId: job.jobId, name: 'waits', status: 'running' }]);
      await cluster.cancelJob(job.jobId);
      expect((await job.result).status).to.equal('canceled');
      expect(cluster.listJobs()[0]!.status).to.equal('canceled');
    });

    it(
      'replays the status changes so far to a listener ' + 'that subscribes late; task events only from then on',
      async () => {
        const job = await cluster.submitJob({
          name: 'late listener',
          vertices: [{ id: 'a', taskModule: OK, parallelism: 1 }],
        });
        const early: JobEvent[] = [];
        job.onEvent((event) => early.push(event));
        await cluster.cancelJob(job.jobId);
        await job.result;
        const late: JobEvent[] = [];
        const unsubscribe = job.onEvent((event) => late.push(event));
        const statuses = (events: JobEvent[]) => events.flatMap((e) => (e.type === 'status' ? [e.status] : []));
        expect(statuses(early)[0]).to.equal('created');
        expect(statuses(early).at(-1)).to.equal('canceled');
        expect(statuses(late)).to.deep.equal(statuses(early));
        expect(late.every((e) => e.type === 'status')).to.equal(true);
        unsubscribe();
        expect(() => job.onEvent('listener' as never)).to.throw(IllegalArgumentError, /onEvent takes a function/);
      },
    );

    it('refuses to cancel a job it does not know', async () => {
      const error = await cluster.cancelJob(JobID.generate()).catch((e: unknown) => e);
      expect(error).to.be.instanceOf(IllegalArgumentError);
    });

    it('once closed, refuses new work with IllegalStateError; close() is idempotent', async () => {
      const closing = cluster.close();
      expect(cluster.close()).to.equal(closing);
      await closing;
      const late = await cluster
        .submitJob({ name: 'late', vertices: [{ id: 'a', taskModule: OK, parallelism: 1 }] })
        .catch((e: unknown) => e);
      expect(late).to.be.instanceOf(IllegalStateError);
      expect((late as Error).message).to.contain('MiniCluster.submitJob: the cluster is closed');
      expect(() => cluster.killTaskExecutor('taskexecutor-x' as never)).to.throw(IllegalStateError);
    });
  });

  describe('the job store (jobstore.max-capacity, jobstore.expiration-time)', () => {
    const waiting = (name: string) => ({ name, vertices: [{ id: 'a', taskModule: OK, parallelism: 1 }] });
    async function endedJob(cluster: MiniCluster, name: string) {
      const job = await cluster.submitJob(waiting(name));
      await cluster.cancelJob(job.jobId);
      await job.result;
      return job;
    }

    it('keeps at most jobstore.max-capacity ended jobs, dropping the oldest; running jobs always stay', async () => {
      const cluster = await MiniCluster.start({ taskExecutors: 0, configuration: { 'jobstore.max-capacity': 1 } });
      try {
        const running = await cluster.submitJob(waiting('running'));
        const first = await endedJob(cluster, 'first');
        const second = await endedJob(cluster, 'second');
        expect(
          cluster
            .listJobs()
            .map((j) => j.name)
            .sort(),
        ).to.deep.equal(['running', 'second']);
        const error = await cluster.cancelJob(first.jobId).catch((e: unknown) => e);
        expect(error).to.be.instanceOf(IllegalArgumentError);
        expect((error as Error).message).to.contain('jobstore.max-capacity');
        // The client of a dropped job still has its result.
        expect((await first.result).status).to.equal('canceled');
        expect(running.status).to.equal('running');
        expect(second.status).to.equal('canceled');
      } finally {
        await cluster.close();
      }
    });

    // jobstore.expiration-time is crossed on a simulated clock in test/dispatcher/Dispatcher.test.ts.

    it('refuses a negative capacity at the door', async () => {
      const error = await MiniCluster.start({ taskExecutors: 0, configuration: { 'jobstore.max-capacity': -1 } }).catch(
        (e: unknown) => e,
      );
      expect(error).to.be.instanceOf(ConfigurationError);
      expect((error as Error).message).to.contain('jobstore.max-capacity');
    });
  });
});
