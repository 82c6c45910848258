/**
 * Jobs on warm threads with the TaskExecutor in a child process (issue 23, item 5: process mode gets the same reuse
 * across jobs): the child keeps its task threads from job to job as a worker-thread TaskExecutor does, and every job
 * still gets its own instances of its task modules there.
 */
import { expect } from 'chai';
import { MiniCluster } from '../../lib/MiniCluster.js';
import { until } from '../support/eventually.js';

const taskModule = new URL('../fixtures/jobModules/moduleState.mjs', import.meta.url);
/** What fixtures/jobModules/moduleState.mjs returns (the fields read here). */
type ModuleState = { threadId: number; jobId: string; runs: number; counterRuns: number; seen: string | null };

describe('jobs on warm threads (a TaskExecutor in a child process)', function () {
  this.timeout(90_000);
  let cluster: MiniCluster;

  before(async () => {
    cluster = await MiniCluster.start({
      mode: 'process',
      taskExecutors: 1,
      slotsPerTaskExecutor: 2,
      resources: { cpuCores: 2, taskHeapMemory: '256m' },
    });
  });
  after(async () => {
    await cluster?.close();
  });

  async function spares() {
    return until('2 spare task threads in the child and none in use', async () => {
      const threads = (await cluster.taskExecutorMetrics())[0]?.taskThreads;
      return threads?.spare === 2 && threads.inUse === 0 ? threads : undefined;
    });
  }

  async function runJob(name: string): Promise<{ jobId: string; outputs: ModuleState[] }> {
    const job = await cluster.submitJob({ name, vertices: [{ id: 'js', taskModule, parallelism: 6 }] });
    const result = await job.result;
    expect(result.status, result.error?.message).to.equal('finished');
    return { jobId: job.jobId, outputs: result.outputs['js'] as ModuleState[] };
  }

  it('runs the next job on the threads the last one used, each job with module instances of its own', async () => {
    const before = await spares();
    const first = await runJob('first');
    await spares();
    const second = await runJob('second');
    const after = await spares();

    const threadsOf = (job: { outputs: ModuleState[] }) => new Set(job.outputs.map((o) => o.threadId));
    expect(
      [...threadsOf(second)].every((id) => threadsOf(first).has(id)),
      'the second job on the first one’s threads',
    ).to.equal(true);
    // Each job's counts start at 1 on every thread it ran on: its own module instances, not the first job's.
    for (const job of [first, second]) {
      const firstRunPerThread = new Map<number, ModuleState>();
      for (const o of [...job.outputs].sort((a, b) => a.runs - b.runs))
        if (!firstRunPerThread.has(o.threadId)) firstRunPerThread.set(o.threadId, o);
      for (const o of firstRunPerThread.values()) expect(o).to.include({ runs: 1, counterRuns: 1 });
    }
    // The thread's globals are the thread's (the README's table): the second job sees the first one's mark.
    expect(second.outputs.some((o) => o.seen === first.jobId)).to.equal(true);
    // Both jobs took the child's spares and gave them back: nothing booted on demand, nothing retired.
    expect(after.bootedOnDemand - before.bootedOnDemand).to.equal(0);
    expect(after.retired - before.retired).to.equal(0);
    expect(after.reusedAcrossAllocations - before.reusedAcrossAllocations).to.be.greaterThan(0);
  });
});
