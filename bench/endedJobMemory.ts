/**
 * Not a benchmark but a measuring aid (issue 23; docs/benchmarks.md): what an ended job leaves in the coordinator — the
 * main thread's heap after a full collection, per job the Dispatcher still lists (`jobstore.max-capacity` unbounded
 * here, so every one is kept), on a warm MiniCluster (4 TaskExecutors × 8 slots, thread mode, the compiled build).
 *
 *   node --expose-gc --import tsx bench/endedJobMemory.ts [jobs] [parallelism]     # default 2000 1
 *   node --expose-gc --import tsx bench/endedJobMemory.ts 40 1000
 *
 * Measures after the JobMasters of the jobs are withdrawn (a second after each job ended), so it is what stays for
 * `jobstore.expiration-time`: the job's archive, its result (with its outputs) and its client.
 */
import type { MiniCluster as MiniClusterType } from '../lib/MiniCluster.js';
import { compiled } from './support/compiled.js';
import { exposedGc, settledHeapUsed } from './support/report.js';

const JOBS = Number(process.argv[2] ?? 2000);
const PARALLELISM = Number(process.argv[3] ?? 1);
/** Longer than the Dispatcher's JOBMASTER_WITHDRAW_DELAY_MS: every ended job's JobMaster is withdrawn by then. */
const WITHDRAWN_AFTER_MS = 1_500;

if (exposedGc() === undefined) throw new Error('run with node --expose-gc: the figure is the heap after a full gc');
const { MiniCluster } = await compiled<{ MiniCluster: typeof MiniClusterType }>('lib/index.js');
const task = new URL('./support/tasks/subtaskIndex.mjs', import.meta.url);
const cluster = await MiniCluster.start({
  mode: 'thread',
  taskExecutors: 4,
  slotsPerTaskExecutor: 8,
  configuration: { 'jobstore.max-capacity': Infinity },
});

async function runJobs(count: number): Promise<void> {
  for (let i = 0; i < count; i++) {
    const job = await cluster.submitJob({
      name: `job ${i}`,
      vertices: [{ id: 'v', taskModule: task, parallelism: PARALLELISM }],
    });
    const result = await job.result;
    if (result.status !== 'finished') throw new Error(`job ${i} ${result.status}: ${result.error?.message}`);
  }
}

const settled = async () => {
  await new Promise((resolve) => setTimeout(resolve, WITHDRAWN_AFTER_MS));
  return settledHeapUsed();
};
try {
  await runJobs(Math.min(JOBS, 200)); // the job path's code and the cluster's own structures, before the baseline
  const before = await settled();
  await runJobs(JOBS);
  const after = await settled();
  const perJob = (after - before) / JOBS;
  console.log(
    `${JOBS} ended jobs of p = ${PARALLELISM} kept: ${(perJob / 1024).toFixed(1)} KB each ` +
      `(${Math.round(perJob / PARALLELISM)} B per subtask); main heap ${(after / 2 ** 20).toFixed(0)} MB after gc`,
  );
} finally {
  await cluster.close();
}
