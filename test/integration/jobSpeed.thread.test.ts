/**
 * Jobs on warm threads (issues 9 and 23), on real worker threads: a job reuses its slots and their
 * threads instead of an allocation and a thread per subtask; a TaskExecutor keeps threads booted
 * ahead of need and takes them back when an allocation ends, so the next job — of any job — runs on
 * them without a boot; every job imports its task modules afresh, so no job ever sees another's
 * module state; with `taskmanager.task-threads.max-jobs: 1` no thread serves a second job.
 */
import { expect } from 'chai';
import type { JobEvent } from '../../lib/jobmaster/JobMaster.js';
import { MiniCluster } from '../../lib/MiniCluster.js';
import { until } from '../support/eventually.js';

const tsFixture = (name: string) => new URL(`../fixtures/tasks/${name}.ts`, import.meta.url);
const jsFixture = (name: string) => new URL(`../fixtures/jobModules/${name}.mjs`, import.meta.url);
/** What fixtures/tasks/threadState.ts returns. */
type ThreadState = { threadId: number; runs: number; seen: string | null; jobId: string };
/** What fixtures/jobModules/moduleState.mjs returns. */
type ModuleState = ThreadState & {
  counterRuns: number;
  lazyRuns: number;
  settingsSeenBy: number;
  cjsRuns: number;
  answer: number;
  metaUrl: string;
};

/** Runs one job of both fixtures (a TypeScript one through tsx, a JavaScript one through the job's own loader). */
async function runJob(cluster: MiniCluster, name: string, parallelism: number) {
  const job = await cluster.submitJob({
    name,
    vertices: [
      { id: 'ts', taskModule: tsFixture('threadState'), parallelism },
      { id: 'js', taskModule: jsFixture('moduleState'), parallelism },
    ],
  });
  const allocations = new Set<string>();
  job.onEvent((event: JobEvent) => {
    if (event.type === 'task' && event.allocationId !== null) allocations.add(event.allocationId);
  });
  const result = await job.result;
  expect(result.status, result.error?.message).to.equal('finished');
  return {
    jobId: job.jobId,
    allocations,
    ts: result.outputs['ts'] as ThreadState[],
    js: result.outputs['js'] as ModuleState[],
  };
}

/** Per thread, the outputs it gave, in the order they ran (by their run count). */
function byThread<T extends ThreadState>(outputs: readonly T[]): Map<number, T[]> {
  const threads = new Map<number, T[]>();
  for (const o of outputs) threads.set(o.threadId, [...(threads.get(o.threadId) ?? []), o]);
  for (const list of threads.values()) list.sort((a, b) => a.runs - b.runs);
  return threads;
}

/** Every count a job's module instances keep starts at 1 on each thread: they are that job's own. */
function expectFreshModules(job: Awaited<ReturnType<typeof runJob>>): void {
  for (const list of byThread(job.ts).values()) expect(list.map((o) => o.runs)[0]).to.equal(1);
  for (const list of byThread(job.js).values()) {
    expect(list[0]).to.include({ runs: 1, counterRuns: 1, lazyRuns: 1, settingsSeenBy: 1 });
    // Within the job the instances are shared by its runs on that thread.
    expect(list.map((o) => o.counterRuns)).to.deep.equal(list.map((_, i) => i + 1));
  }
}

async function spares(cluster: MiniCluster, count: number) {
  return until(`${count} spare task threads and none in use`, async () => {
    const threads = (await cluster.taskExecutorMetrics())[0]?.taskThreads;
    return threads?.spare === count && threads.inUse === 0 ? threads : undefined;
  });
}

describe('jobs on warm threads (worker threads)', function () {
  this.timeout(90_000);

  describe('by default: threads serve job after job, each job with its own module instances', () => {
    let cluster: MiniCluster;
    before(async () => {
      cluster = await MiniCluster.start({
        taskExecutors: 1,
        slotsPerTaskExecutor: 2,
        resources: { cpuCores: 2, taskHeapMemory: '256m' },
      });
      // Its spare threads (one per slot by default) booted before the first job.
      await spares(cluster, 2);
    });
    after(async () => {
      await cluster?.close();
    });

    it('runs 100 subtasks on 2 slots with 2 allocations and 2 threads, taken from spares, given back', async () => {
      const before = await spares(cluster, 2);
      const job = await runJob(cluster, 'p50 × 2', 50);
      expect(job.ts).to.have.length(50);
      expect(job.js).to.have.length(50);
      expect([...job.ts, ...job.js].every((o) => o.jobId === job.jobId)).to.equal(true);
      expect(job.allocations.size).to.equal(2);
      // Two threads ran everything, each counting its runs up through the job.
      const threads = new Set([...job.ts, ...job.js].map((o) => o.threadId));
      expect(threads.size).to.equal(2);
      expect(Math.max(...job.ts.map((o) => o.runs))).to.be.greaterThan(2);
      // The job took the two spares and gave them back: nothing booted, nothing retired.
      const after = await spares(cluster, 2);
      expect(after.servedFromSpare - before.servedFromSpare).to.equal(2);
      expect(after.bootedOnDemand - before.bootedOnDemand).to.equal(0);
      expect(after.started - before.started).to.equal(0);
      expect(after.retired - before.retired).to.equal(0);
    });

    it('runs the next job on the threads the last one used, and it sees none of that job’s module state', async () => {
      const first = await runJob(cluster, 'first', 10);
      await spares(cluster, 2);
      const second = await runJob(cluster, 'second', 10);
      const firstThreads = new Set([...first.js, ...first.ts].map((o) => o.threadId));
      const secondThreads = new Set([...second.js, ...second.ts].map((o) => o.threadId));
      expect([...secondThreads].every((id) => firstThreads.has(id))).to.equal(true);
      expectFreshModules(first);
      expectFreshModules(second);
      // The modules are the files themselves: import.meta.url names the task module's file.
      expect(second.js[0]!.metaUrl).to.equal(jsFixture('moduleState').href);
      expect(second.js.every((o) => o.answer === 42)).to.equal(true); // a data: module, through Node's loader
      // A CommonJS module is the thread's (Node's require cache), as the README's table says: on a
      // thread both jobs used, the second job's count goes on from where the first one left it.
      for (const [threadId, runs] of byThread(second.js)) {
        const before = byThread(first.js).get(threadId);
        if (before !== undefined) expect(runs[0]!.cjsRuns).to.be.greaterThan(before.at(-1)!.cjsRuns);
      }
      // What the thread's globals hold is the thread's: the strict setting below is for that.
      expect(second.js.some((o) => o.seen === first.jobId)).to.equal(true);
      const metrics = await spares(cluster, 2);
      expect(metrics.reusedAcrossAllocations).to.be.greaterThan(0);
    });

    it('runs a stream of jobs of one subtask on its spare threads: none boots, none retires', async () => {
      const before = await spares(cluster, 2);
      for (let i = 0; i < 5; i++) {
        const job = await cluster.submitJob({
          name: `p1 #${i}`,
          vertices: [{ id: 'ts', taskModule: tsFixture('threadState'), parallelism: 1 }],
        });
        expect((await job.result).status).to.equal('finished');
      }
      const after = await spares(cluster, 2);
      expect(after.servedFromSpare - before.servedFromSpare).to.equal(5);
      expect([after.started - before.started, after.retired - before.retired]).to.deep.equal([0, 0]);
    });

    it('runs jobs of fine-grained subtasks (not the default heap limit) back to back on the same threads', async () => {
      // { cpuCores: 1 } and no heap: dynamic slots whose threads have no heap limit, unlike the default slot's.
      const fineGrained = async (name: string) => {
        const job = await cluster.submitJob({
          name,
          vertices: [{ id: 'ts', taskModule: tsFixture('threadState'), parallelism: 2, resources: { cpuCores: 1 } }],
        });
        const result = await job.result;
        expect(result.status, result.error?.message).to.equal('finished');
        return new Set((result.outputs['ts'] as ThreadState[]).map((o) => o.threadId));
      };
      const first = await fineGrained('fine 1');
      const before = await spares(cluster, 2);
      const second = await fineGrained('fine 2');
      const after = await spares(cluster, 2);
      // Given back, the first job's threads stayed (in the idle default spares' places) and ran the second job.
      expect([...second]).to.have.members([...first]);
      expect(after.started - before.started).to.equal(0);
      expect(after.bootedOnDemand - before.bootedOnDemand).to.equal(0);
    });
  });

  describe('with taskmanager.task-threads.max-jobs: 1', () => {
    let cluster: MiniCluster;
    before(async () => {
      cluster = await MiniCluster.start({
        taskExecutors: 1,
        slotsPerTaskExecutor: 2,
        resources: { cpuCores: 2, taskHeapMemory: '256m' },
        configuration: { 'taskmanager.task-threads.max-jobs': 1 },
      });
      await spares(cluster, 2);
    });
    after(async () => {
      await cluster?.close();
    });

    it('never runs a job on a thread another job used: no thread, global or module state is shared', async () => {
      const first = await runJob(cluster, 'first', 10);
      const second = await runJob(cluster, 'second', 10);
      const firstThreads = new Set([...first.js, ...first.ts].map((o) => o.threadId));
      expect([...second.js, ...second.ts].some((o) => firstThreads.has(o.threadId))).to.equal(false);
      // On its own threads, the second job sees only its own marks and module state that starts anew.
      expect([...second.js, ...second.ts].every((o) => o.seen === null || o.seen === second.jobId)).to.equal(true);
      expectFreshModules(second);
      const metrics = await spares(cluster, 2);
      expect(metrics.reusedAcrossAllocations).to.equal(0);
      expect(metrics.retired).to.be.at.least(4);
    });
  });
});
