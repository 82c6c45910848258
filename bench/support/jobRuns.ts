/**
 * What the jobs benchmark (bench/jobs.bench.ts) and its large-job process (bigJob.ts) share: the
 * jobs they run, how a job's result is checked, a warm cluster, and a series measured from an idle
 * machine to an idle machine.
 */
import type { JobGraphSpec } from '../../lib/jobmaster/JobGraph.js';
import type { MiniCluster } from '../../lib/MiniCluster.js';
import { processTreeCpuMs, untilIdle } from './procStat.js';

export const task = (name: string) => new URL(`./tasks/${name}.mjs`, import.meta.url);

export const oneVertex = (name: string, p: number): JobGraphSpec => ({
  name,
  vertices: [{ id: 'v', taskModule: task('subtaskIndex'), parallelism: p }],
});

export function checkOneVertex(p: number, outputs: Readonly<Record<string, unknown[]>>): void {
  const got = outputs['v'] ?? [];
  if (got.length !== p || got.some((value, i) => value !== i)) throw new Error(`p=${p}: wrong outputs`);
}

export async function runJob(cluster: MiniCluster, spec: JobGraphSpec): Promise<Readonly<Record<string, unknown[]>>> {
  const job = await cluster.submitJob(spec);
  const result = await job.result;
  if (result.status !== 'finished') throw new Error(`${spec.name} ${result.status}: ${result.error?.message ?? ''}`);
  return result.outputs;
}

/**
 * A warm cluster is one an application has run jobs on for a while: task modules are checked (and
 * remembered) at a job's first submit, and V8 optimizes the job path's functions — most of them
 * called once per job — only after thousands of jobs. Until then TurboFan's compiles on V8's
 * background threads cost ~1 ms of CPU per p = 1 job (node --trace-opt: ~600 compiles per 2,000
 * jobs between the 500th and the 2,500th), a cost an application pays once, not per job. The same
 * holds for jobs of 1,000 subtasks, whose paths (batches of runs, slot reuse) p = 1 jobs do not take:
 * after 3 of them a p = 1,000 job cost ~0.27 ms of CPU per subtask, after 40 ~0.17 (npm run bench --
 * jobs with JOBS_WARM_UP_1000=3 and 40, one after the other).
 */
export async function warmUp(cluster: MiniCluster, p1Jobs: number, p1000Jobs: number): Promise<void> {
  for (let i = 0; i < p1Jobs; i++) checkOneVertex(1, await runJob(cluster, oneVertex('warm-up p=1', 1)));
  for (let i = 0; i < p1000Jobs; i++) checkOneVertex(1000, await runJob(cluster, oneVertex('warm-up p=1000', 1000)));
}

/** Runs `series` from an idle machine; its wall time to the last result, and its CPU until idle again. */
export async function measured<T>(series: () => Promise<T>): Promise<{ value: T; wallMs: number; cpuMs: number }> {
  await untilIdle();
  const cpuStart = processTreeCpuMs();
  const started = performance.now();
  const value = await series();
  const wallMs = performance.now() - started;
  await untilIdle();
  return { value, wallMs, cpuMs: processTreeCpuMs() - cpuStart };
}
