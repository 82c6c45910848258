/**
 * A job's subtasks on warm threads (issue 9), on real worker threads: a job reuses its slots and
 * their threads instead of an allocation and a thread per subtask, a TaskExecutor keeps a few
 * threads booted ahead of need, and no thread ever serves two jobs.
 */
import { expect } from 'chai';
import { MiniCluster } from '../../lib/MiniCluster.js';
import type { JobEvent } from '../../lib/jobmaster/JobMaster.js';
import { until } from '../support/eventually.js';

const fixture = (name: string) => new URL(`../fixtures/tasks/${name}.ts`, import.meta.url);
type ThreadState = { threadId: number; runs: number; seen: string | null; jobId: string };

describe('jobs on warm threads (worker threads)', function () {
  this.timeout(90_000);

  let cluster: MiniCluster;
  before(async () => {
    cluster = await MiniCluster.start({
      taskExecutors: 1,
      slotsPerTaskExecutor: 2,
      resources: { cpuCores: 2, taskHeapMemory: '256m' },
    });
    // Its spare threads (one per slot by default) booted before the first job.
    await until(
      'the spare task threads',
      async () => (await cluster.taskExecutorMetrics())[0]?.taskThreads?.spare === 2,
    );
  });
  after(async () => {
    await cluster?.close();
  });

  it(
    'runs 100 subtasks on 2 slots with 2 allocations and ' + '2 threads, taken from the spares, and gets every output',
    async () => {
      const before = (await cluster.taskExecutorMetrics())[0]!.taskThreads!;
      const job = await cluster.submitJob({
        name: 'p100',
        vertices: [{ id: 'v', taskModule: fixture('threadState'), parallelism: 100 }],
      });
      const allocations = new Set<string>();
      job.onEvent((event: JobEvent) => {
        if (event.type === 'task' && event.allocationId !== null) allocations.add(event.allocationId);
      });
      const result = await job.result;
      expect(result.status, result.error?.message).to.equal('finished');
      const outputs = result.outputs['v'] as ThreadState[];
      expect(outputs).to.have.length(100);
      expect(outputs.every((o) => o.jobId === job.jobId)).to.equal(true);
      expect(allocations.size).to.equal(2);
      // Two threads ran everything, each counting its runs up through the job.
      const threads = new Set(outputs.map((o) => o.threadId));
      expect(threads.size).to.equal(2);
      expect(outputs.map((o) => o.runs).sort((a, b) => b - a)[0]).to.be.greaterThan(2);
      const after = await until('the spares booted again', async () => {
        const threadsNow = (await cluster.taskExecutorMetrics())[0]!.taskThreads!;
        return threadsNow.spare === 2 && threadsNow.inUse === 0 ? threadsNow : undefined;
      });
      // The job took the two spares; two more were booted for the next job. Nothing else.
      expect(after.servedFromSpare - before.servedFromSpare).to.equal(2);
      expect(after.bootedOnDemand - before.bootedOnDemand).to.equal(0);
      expect(after.started - before.started).to.equal(2);
    },
  );

  it('never runs a job on a thread another job used: no thread, global or module state is shared', async () => {
    const run = async (name: string) => {
      const job = await cluster.submitJob({
        name,
        vertices: [{ id: 'v', taskModule: fixture('threadState'), parallelism: 20 }],
      });
      const result = await job.result;
      expect(result.status, result.error?.message).to.equal('finished');
      return { jobId: job.jobId, outputs: result.outputs['v'] as ThreadState[] };
    };
    const first = await run('first');
    const second = await run('second');
    const firstThreads = new Set(first.outputs.map((o) => o.threadId));
    expect(second.outputs.some((o) => firstThreads.has(o.threadId))).to.equal(false);
    // On its own threads, the second job sees only its own marks and module state that starts anew.
    expect(second.outputs.every((o) => o.seen === null || o.seen === second.jobId)).to.equal(true);
    for (const threadId of new Set(second.outputs.map((o) => o.threadId))) {
      const runs = second.outputs
        .filter((o) => o.threadId === threadId)
        .map((o) => o.runs)
        .sort((a, b) => a - b);
      expect(runs[0]).to.equal(1);
    }
  });
});
