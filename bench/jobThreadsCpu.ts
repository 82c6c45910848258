/**
 * Not a benchmark but a profiling aid (issue 23, item 2; docs/profiling.md): the CPU each thread of this process
 * spends per job in a stream of jobs on a warm MiniCluster (4 TaskExecutors × 8 slots, thread mode, the compiled
 * build), read from /proc/self/task/<tid>/stat before and after: the main thread, each TaskExecutor thread, task
 * threads and V8's own threads (compiling, collecting), one row per thread busy for more than 20 ms. Tick-grained
 * (10 ms), so run thousands of jobs; compare two builds or settings by alternating runs.
 *
 *   node --import tsx bench/jobThreadsCpu.ts [jobs] [warm-up jobs] [parallelism]     # default 3000 3000 1
 *   JOB_THREADS_CONFIGURATION='{"taskmanager.task-threads.max-jobs": 1000}' node --import tsx bench/jobThreadsCpu.ts
 *   JOB_THREADS_IN_FLIGHT=16 node --import tsx bench/jobThreadsCpu.ts 3000 1500      # 16 jobs at a time
 *
 * Prints µs of CPU per job per thread, then wall time and CPU over the whole process (`process.cpuUsage`) per job,
 * the idle second after the last job included, and the task threads the TaskExecutors booted and retired (over the
 * measured jobs, and since the cluster started: cluster.taskExecutorMetrics()). With JOB_THREADS_ALLOCATION=1 it
 * also prints what the main thread, the TaskExecutor threads and the task threads allocate per job
 * (bench/support/allocationSampler.ts: V8's sampling heap profiler over the measured jobs, collected objects included;
 * its sampling slows the jobs, so that run's CPU figures are not comparable with others). With JOB_THREADS_POSTS=1, and
 * bench/support/countPosts.mjs preloaded in every thread, it prints the messages each thread posted to another per job,
 * by kind (its threads' numbers are `worker_threads.threadId`s, 0 the main thread):
 *
 *   NODE_OPTIONS="--import ./bench/support/countPosts.mjs" JOB_THREADS_POSTS=1 node --import tsx bench/jobThreadsCpu.ts
 */
import type { MiniCluster as MiniClusterType } from '../lib/MiniCluster.js';
import { sampleAllocations } from './support/allocationSampler.js';
import { compiled } from './support/compiled.js';
import { threadCpuMs } from './support/procStat.js';
import { BroadcastChannel } from 'node:worker_threads';

const JOBS = Number(process.argv[2] ?? 3000);
const WARM_UP = Number(process.argv[3] ?? 3000);
const PARALLELISM = Number(process.argv[4] ?? 1);
/** Jobs in flight at once (JOB_THREADS_IN_FLIGHT, default 1: one after another). */
const IN_FLIGHT = Number(process.env['JOB_THREADS_IN_FLIGHT'] ?? 1);
const configuration = JSON.parse(process.env['JOB_THREADS_CONFIGURATION'] ?? '{}') as Record<string, unknown>;

const { MiniCluster } = await compiled<{ MiniCluster: typeof MiniClusterType }>('lib/index.js');
const task = new URL('./support/tasks/subtaskIndex.mjs', import.meta.url);
const spec = { name: 'stream', vertices: [{ id: 'v', taskModule: task, parallelism: PARALLELISM }] };
const cluster = await MiniCluster.start({ mode: 'thread', taskExecutors: 4, slotsPerTaskExecutor: 8, configuration });

/** `count` jobs, IN_FLIGHT at a time (each lane submits its next job when its last one ended). */
async function runJobs(count: number): Promise<void> {
  let next = 0;
  const lane = async () => {
    while (next < count) {
      const i = next++;
      const job = await cluster.submitJob(spec);
      const result = await job.result;
      if (result.status !== 'finished') throw new Error(`job ${i} ${result.status}: ${result.error?.message}`);
    }
  };
  await Promise.all(Array.from({ length: Math.min(IN_FLIGHT, count) }, lane));
}

/** The TaskExecutors' task threads so far, summed: booted, booted because no spare was there, retired. */
async function taskThreads(): Promise<{ started: number; bootedOnDemand: number; retired: number }> {
  const sum = { started: 0, bootedOnDemand: 0, retired: 0 };
  for (const { taskThreads } of await cluster.taskExecutorMetrics()) {
    sum.started += taskThreads?.started ?? 0;
    sum.bootedOnDemand += taskThreads?.bootedOnDemand ?? 0;
    sum.retired += taskThreads?.retired ?? 0;
  }
  return sum;
}

const idle = () => new Promise((resolve) => setTimeout(resolve, 1000));

type PostCounts = Map<number, Record<string, number>>;
/** Every thread's posts so far, by kind (countPosts.mjs answers on its channel); null when it is not preloaded. */
async function postCounts(): Promise<PostCounts | null> {
  if (process.env['JOB_THREADS_POSTS'] !== '1') return null;
  const channel = new BroadcastChannel('slotwise.count-posts');
  const answers: PostCounts = new Map();
  const ask = Math.random();
  channel.onmessage = (event) => {
    const { answer, threadId, counts } = (event as MessageEvent).data ?? {};
    if (answer === ask) answers.set(threadId as number, counts as Record<string, number>);
  };
  channel.postMessage({ ask });
  await new Promise((resolve) => setTimeout(resolve, 500));
  channel.close();
  if (answers.size === 0)
    throw new Error('JOB_THREADS_POSTS=1 needs NODE_OPTIONS="--import ./bench/support/countPosts.mjs"');
  return answers;
}

/** Per thread, the kinds it posted at least once every 20 jobs, per job. */
function printPosts(before: PostCounts, after: PostCounts): void {
  let total = 0;
  for (const [threadId, counts] of [...after].sort((a, b) => a[0] - b[0])) {
    const rows = Object.entries(counts)
      .map(([kind, n]) => [kind, (n - (before.get(threadId)?.[kind] ?? 0)) / JOBS] as const)
      .filter(([, perJob]) => perJob >= 0.05)
      .sort((a, b) => b[1] - a[1]);
    if (rows.length === 0) continue;
    const sum = rows.reduce((n, [, perJob]) => n + perJob, 0);
    total += sum;
    console.log(`thread ${threadId}: ${sum.toFixed(2)} posts per job`);
    for (const [kind, perJob] of rows) console.log(`  ${perJob.toFixed(2)}  ${kind}`);
  }
  console.log(`${total.toFixed(2)} cross-thread posts per job over every thread`);
}
try {
  await runJobs(WARM_UP);
  await idle();
  const allocation = process.env['JOB_THREADS_ALLOCATION'] === '1' ? await sampleAllocations() : null;
  const postsBefore = await postCounts();
  const threadsBefore = await taskThreads();
  const before = threadCpuMs();
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  await runJobs(JOBS);
  const wallMs = performance.now() - t0;
  if (allocation !== null) {
    const kb = new Map<string, number>();
    for (const { kind, bytes } of await allocation.stop()) kb.set(kind, (kb.get(kind) ?? 0) + bytes / 1024);
    console.log(
      `allocated per job (collected objects included): ${[...kb]
        .map(([kind, total]) => `${kind} ${(total / JOBS).toFixed(1)} KB`)
        .join(', ')}`,
    );
  }
  await idle();
  const postsAfter = await postCounts();
  if (postsBefore !== null && postsAfter !== null) printPosts(postsBefore, postsAfter);
  const after = threadCpuMs();
  const cpu = process.cpuUsage(cpu0);
  const rows = [...after]
    .map(([tid, ms]) => ({ tid, ms: ms - (before.get(tid) ?? 0) }))
    .filter((row) => row.ms > 20)
    .sort((a, b) => b.ms - a.ms)
    .map(({ tid, ms }) => ({
      thread: tid === String(process.pid) ? 'main' : tid,
      'µs CPU per job': Math.round((ms * 1000) / JOBS),
    }));
  console.table(rows);
  console.log(
    `${JOBS} jobs of p = ${PARALLELISM}, ${IN_FLIGHT} in flight, after ${WARM_UP} of warm-up: ` +
      `${(wallMs / JOBS).toFixed(2)} ms wall per job, ` +
      `${((cpu.user + cpu.system) / 1000 / JOBS).toFixed(2)} ms CPU per job over every thread`,
  );
  const threads = await taskThreads();
  console.log(
    `task threads over the measured jobs: ${threads.started - threadsBefore.started} booted ` +
      `(${threads.bootedOnDemand - threadsBefore.bootedOnDemand} for an allocation that found no spare), ` +
      `${threads.retired - threadsBefore.retired} retired; since the cluster started: ${threads.started} booted, ` +
      `${threads.bootedOnDemand} on demand, ${threads.retired} retired`,
  );
} finally {
  await cluster.close();
}
