/**
 * The jobs benchmark's large job (bench/jobs.bench.ts, series c), in a process of its own per mode:
 * `node --expose-gc --import tsx bench/support/bigJob.ts <thread|process> <subtasks> <vertices> <p=1 warm-up jobs>
 * <p=1000 warm-up jobs>`.
 *
 * An application runs one cluster in one mode; its process's RSS is that cluster's. Run in the
 * benchmark's own process, after both modes' series, the process-mode coordinator's RSS held what the
 * thread-mode cluster had left in the process (its threads' freed memory stays with the process).
 *
 * The cluster (4 TaskExecutors × 8 slots) is warmed as the benchmark's are (p = 1 and p = 1,000
 * jobs), then runs the one job: its wall time, CPU over the process tree until idle
 * again, the process's RSS peak and the main thread's heap peak (sampled every 20 ms), and the longest
 * main-thread stall (`perf_hooks.monitorEventLoopDelay`). Prints one JSON line: BigJobSample.
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';
import type { MiniCluster as MiniClusterType } from '../../lib/MiniCluster.js';
import { compiled } from './compiled.js';
import { measured, runJob, task, warmUp } from './jobRuns.js';

export interface BigJobSample {
  readonly mode: 'thread' | 'process';
  readonly wallMs: number;
  readonly cpuMs: number;
  readonly rssPeakMb: number;
  /** The main thread's heap: the coordinator's (Dispatcher, JobMasters, ResourceManager) in both modes. */
  readonly heapPeakMb: number;
  readonly stallMs: number;
  readonly failed: string | null;
}

const [mode, ...counts] = process.argv.slice(2);
if ((mode !== 'thread' && mode !== 'process') || counts.length !== 4 || counts.some((a) => !(Number(a) >= 0)))
  throw new Error('usage: bigJob.ts <thread|process> <subtasks> <vertices> <p=1 warm-up jobs> <p=1000 warm-up jobs>');
const [subtasksArg, verticesArg, warmUp1, warmUp1000] = counts.map(Number) as [number, number, number, number];
const vertices = verticesArg;
const perVertex = Math.ceil(subtasksArg / vertices);

const { MiniCluster } = await compiled<{ MiniCluster: typeof MiniClusterType }>('lib/index.js');
const cluster = await MiniCluster.start({ mode, taskExecutors: 4, slotsPerTaskExecutor: 8, startTimeoutMs: 120_000 });
await warmUp(cluster, warmUp1, warmUp1000);

let rssPeak = process.memoryUsage.rss();
let heapPeak = process.memoryUsage().heapUsed;
const sampler = setInterval(() => {
  const { rss, heapUsed } = process.memoryUsage();
  rssPeak = Math.max(rssPeak, rss);
  heapPeak = Math.max(heapPeak, heapUsed);
}, 20);
const delay = monitorEventLoopDelay({ resolution: 10 });
let failed: string | null = null;
const { wallMs, cpuMs } = await measured(async () => {
  delay.enable();
  try {
    const outputs = await runJob(cluster, {
      name: `${perVertex * vertices} subtasks`,
      vertices: Array.from({ length: vertices }, (_, v) => ({
        id: `v${v}`,
        taskModule: task('subtaskIndex'),
        parallelism: perVertex,
      })),
    });
    for (let v = 0; v < vertices; v++)
      if ((outputs[`v${v}`] ?? []).length !== perVertex) throw new Error(`v${v}: wrong number of outputs`);
  } catch (error) {
    failed = error instanceof Error ? error.message : String(error);
  } finally {
    delay.disable();
  }
});
clearInterval(sampler);
await cluster.close();
const sample: BigJobSample = {
  mode,
  wallMs,
  cpuMs,
  rssPeakMb: rssPeak / 2 ** 20,
  heapPeakMb: heapPeak / 2 ** 20,
  stallMs: delay.max / 1e6,
  failed,
};
console.log(JSON.stringify(sample));
