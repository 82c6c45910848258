/**
 * Whole jobs as an application runs them (issue 23, "Benchmarks"): many jobs, back to back, on one
 * warm `MiniCluster.start({ taskExecutors: 4, slotsPerTaskExecutor: 8 })` per mode, never a fresh
 * cluster or a pause per round.
 *
 * - The compiled build (dist/, built first if the sources are newer), as an application runs it;
 *   trivial subtasks from plain .mjs task files; every job's result is checked.
 * - A warm cluster: JOBS_WARM_UP p = 1 jobs (3,000) and JOBS_WARM_UP_1000 of p = 1,000 (40) on each
 *   before anything is timed (an application's cluster has run jobs for a while: support/jobRuns.ts's
 *   warmUp says what the first jobs cost); piscina runs as many tasks, the same way, first.
 * - (a) a stream of p = 1 jobs: STREAM jobs one at a time (the next submitted as the previous
 *   result arrives): median and p99 submit → result, jobs/s; then STREAM jobs with 16 in flight.
 * - (b) BACK_TO_BACK jobs of p = 1,000 back to back: subtasks/s.
 * - (d) BURST jobs of p = 1 submitted at once (1,000; an application handing over a day's batch):
 *   jobs/s to the last result and CPU per job, against (a)'s one at a time. Not one of the issue's
 *   targets; a job's cost must not grow with the number of jobs waiting (it did: the SlotManager
 *   weighed every waiting job once per change, 1,000 jobs at once ran 81 jobs/s at 17 ms of CPU each).
 * - (c) one job of 100,000 subtasks (4 vertices × 25,000; BIG=0 skips it), after the rounds, per
 *   mode in a process of its own (bench/support/bigJob.ts: a cluster warmed as these are, then the
 *   job), as an application runs one cluster in one mode: subtasks/s, the process's RSS peak and the
 *   main thread's heap peak (sampled every 20 ms), and the longest main-thread stall
 *   (`perf_hooks.monitorEventLoopDelay`). In process mode the RSS is the coordinator's process
 *   (with the benchmark's own few MB); in thread mode it holds the TaskExecutors and their task
 *   threads too.
 * - CPU: every thread of this process and every child process (/proc), from the first submit of a
 *   series until the machine is idle again after its last result (less than 3 ms of CPU in 150 ms),
 *   so what the jobs leave behind (threads refilled, slots freed, memory released) is counted.
 * - The peer, as its users run it: piscina with its default options and a plain task file
 *   (`export default (x) => x`), its threads started as by `node app.js` (not with this benchmark's tsx), warm,
 *   running the same number of tasks the same way (one at a time; 16 in flight; 1,000 in flight
 *   per "job").
 * - ROUNDS interleaved rounds (every series once per round, in the same order); min / median / max.
 *
 * Targets (thread mode, this 2-core machine): p = 1 median ≤ 2 ms, p99 ≤ 10 ms, ≥ 500 jobs/s one at
 * a time, ≤ 2 ms CPU per job; p = 1,000 back to back ≥ 5,000 subtasks/s and ≤ 0.2 ms CPU per
 * subtask; p = 100,000 ≥ 15,000 subtasks/s, RSS ≤ 300 MB, no stall over 100 ms; process mode within
 * 1.5× of thread mode. Run with `npm run bench -- jobs`; `JOBS_MODES=thread`, `JOBS_ROUNDS=3`,
 * `JOBS_STREAM=200`, `JOBS_BACK_TO_BACK=10`, `JOBS_BIG=100000`, `JOBS_WARM_UP=3000`,
 * `JOBS_WARM_UP_1000=40`, `JOBS_BURST=1000` narrow it.
 * The last line is one JSON object with every figure.
 */
import { execFile } from 'node:child_process';
import { cpus, loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { Piscina } from 'piscina';
import type { MiniCluster as MiniClusterType } from '../lib/MiniCluster.js';
import type { BigJobSample } from './support/bigJob.js';
import { compiled } from './support/compiled.js';
import { checkOneVertex, measured, oneVertex, runJob, warmUp } from './support/jobRuns.js';
import { printJson, round } from './support/report.js';

const ROUNDS = Number(process.env['JOBS_ROUNDS'] ?? 3);
const MODES = (process.env['JOBS_MODES'] ?? 'thread,process').split(',') as Array<'thread' | 'process'>;
const STREAM = Number(process.env['JOBS_STREAM'] ?? 200);
const BACK_TO_BACK = Number(process.env['JOBS_BACK_TO_BACK'] ?? 10);
const BIG = Number(process.env['JOBS_BIG'] ?? 100_000);
const BURST = Number(process.env['JOBS_BURST'] ?? 1000);
const WARM_UP = Number(process.env['JOBS_WARM_UP'] ?? 3000);
const WARM_UP_1000 = Number(process.env['JOBS_WARM_UP_1000'] ?? 40);
const IN_FLIGHT = 16;
const BIG_VERTICES = 4;

const TARGETS = {
  p1MedianMs: 2,
  p1P99Ms: 10,
  p1JobsPerSec: 500,
  p1CpuMsPerJob: 2,
  p1000SubtasksPerSec: 5000,
  p1000CpuMsPerSubtask: 0.2,
  bigSubtasksPerSec: 15_000,
  bigRssMb: 300,
  bigStallMs: 100,
  processOverThread: 1.5,
} as const;

// ------------------------------------------------------------------------------ the series

/** `count` runs of `one`, `inFlight` at a time; each run's latency in ms. */
async function pipeline(count: number, inFlight: number, one: (i: number) => Promise<void>): Promise<number[]> {
  const latencies: number[] = [];
  let next = 0;
  const lane = async () => {
    while (next < count) {
      const i = next++;
      const t0 = performance.now();
      await one(i);
      latencies.push(performance.now() - t0);
    }
  };
  await Promise.all(Array.from({ length: Math.min(inFlight, count) }, lane));
  return latencies;
}

interface SeriesSample {
  readonly wallMs: number;
  readonly cpuMs: number;
  /** Jobs (or piscina batches) in the series, and subtasks (tasks) in all. */
  readonly jobs: number;
  readonly subtasks: number;
  readonly latencies: readonly number[];
}

interface Series {
  readonly name: string;
  run(): Promise<SeriesSample>;
}

const { MiniCluster } = await compiled<{ MiniCluster: typeof MiniClusterType }>('lib/index.js');
const setupStarted = performance.now();
const clusters = new Map<'thread' | 'process', MiniClusterType>();
for (const mode of MODES)
  clusters.set(
    mode,
    await MiniCluster.start({ mode, taskExecutors: 4, slotsPerTaskExecutor: 8, startTimeoutMs: 120_000 }),
  );
// Its defaults, its threads started as under `node app.js`: this benchmark runs under tsx (`--import tsx`), which a
// piscina thread inherits by default and loads at every start (idleTimeout 0: threads beyond one come and go with each
// batch), each start also leaving an esbuild child behind. (--expose-gc is the process's: no thread can be given it.)
const identity = new URL('./support/tasks/identity.mjs', import.meta.url).href;
const piscina = new Piscina({ filename: identity, execArgv: [] });
piscina.on('error', (error: unknown) => console.error('piscina pool error:', error));
// Warm clusters (jobRuns.ts warmUp says why), and piscina as warm: as many tasks, the same way.
for (const cluster of clusters.values()) await warmUp(cluster, WARM_UP, WARM_UP_1000);
for (let i = 0; i < WARM_UP; i++) await piscina.run(i);
for (let i = 0; i < WARM_UP_1000; i++) await Promise.all(Array.from({ length: 1000 }, (_, t) => piscina.run(t)));
const setupMs = performance.now() - setupStarted;

const series: Series[] = [];
const jobSeries = (name: string, jobs: number, p: number, inFlight: number) => {
  for (const [mode, cluster] of clusters)
    series.push({
      name: `${mode}: ${name}`,
      run: async () => {
        const { value, wallMs, cpuMs } = await measured(() =>
          pipeline(jobs, inFlight, async (i) =>
            checkOneVertex(p, await runJob(cluster, oneVertex(`${name} #${i}`, p))),
          ),
        );
        return { wallMs, cpuMs, jobs, subtasks: jobs * p, latencies: value };
      },
    });
  series.push({
    name: `piscina: ${name}`,
    run: async () => {
      const { value, wallMs, cpuMs } = await measured(() =>
        pipeline(jobs, inFlight, async () => {
          const outputs = await Promise.all(Array.from({ length: p }, (_, i) => piscina.run(i) as Promise<number>));
          if (outputs.some((value, i) => value !== i)) throw new Error('piscina returned wrong outputs');
        }),
      );
      return { wallMs, cpuMs, jobs, subtasks: jobs * p, latencies: value };
    },
  });
};
const P1 = 'p=1 jobs one at a time';
const P1_16 = `p=1 jobs, ${IN_FLIGHT} in flight`;
const P1000 = 'p=1000 jobs back to back';
if (STREAM > 0) {
  jobSeries(P1, STREAM, 1, 1);
  jobSeries(P1_16, STREAM, 1, IN_FLIGHT);
}
if (BACK_TO_BACK > 0) jobSeries(P1000, BACK_TO_BACK, 1000, 1);
const AT_ONCE = `${BURST} p=1 jobs at once`;
if (BURST > 0) jobSeries(AT_ONCE, BURST, 1, BURST);

// ------------------------------------------------------------------------------ rounds

const samples = new Map<string, SeriesSample[]>();
const failures = new Map<string, string>();
for (let r = 0; r < ROUNDS; r++) {
  for (const s of series) {
    if (failures.has(s.name)) continue;
    try {
      const sample = await s.run();
      samples.set(s.name, [...(samples.get(s.name) ?? []), sample]);
    } catch (error) {
      failures.set(s.name, error instanceof Error ? error.message : String(error));
    }
  }
  console.log(`round ${r + 1} of ${ROUNDS} done (load ${loadavg()[0]?.toFixed(1)})`);
}

// (c) one large job per mode, after the rounds, each in a process of its own (bigJob.ts says why);
// this process's clusters and piscina's threads are gone first, so the machine is quiet.
await piscina.destroy();
await Promise.all([...clusters.values()].map((cluster) => cluster.close()));
const big = new Map<string, BigJobSample>();
if (BIG > 0) {
  const script = fileURLToPath(new URL('./support/bigJob.ts', import.meta.url));
  for (const mode of MODES) {
    const args = [
      ...process.execArgv,
      script,
      mode,
      String(BIG),
      String(BIG_VERTICES),
      String(WARM_UP),
      String(WARM_UP_1000),
    ];
    try {
      const { stdout } = await promisify(execFile)(process.execPath, args, { maxBuffer: 16 * 2 ** 20 });
      big.set(mode, JSON.parse(stdout.trim().split('\n').at(-1)!) as BigJobSample);
    } catch (error) {
      const failed = error instanceof Error ? error.message.slice(0, 300) : String(error);
      big.set(mode, { mode, wallMs: NaN, cpuMs: NaN, rssPeakMb: NaN, heapPeakMb: NaN, stallMs: NaN, failed });
    }
  }
}

// ------------------------------------------------------------------------------ figures

interface Spread {
  readonly min: number;
  readonly median: number;
  readonly max: number;
}
const spread = (values: number[]): Spread => {
  const sorted = [...values].sort((a, b) => a - b);
  return {
    min: sorted[0] ?? NaN,
    median: sorted[Math.floor((sorted.length - 1) / 2)] ?? NaN,
    max: sorted.at(-1) ?? NaN,
  };
};
const percentile = (values: readonly number[], q: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? NaN;
};
const show = (s: Spread, digits = 0) =>
  `${s.min.toFixed(digits)} / ${s.median.toFixed(digits)} / ${s.max.toFixed(digits)}`;

const figures = series.map((s) => {
  const list = samples.get(s.name) ?? [];
  return {
    name: s.name,
    failed: failures.get(s.name) ?? null,
    medianMs: spread(list.map((x) => percentile(x.latencies, 0.5))),
    p99Ms: spread(list.map((x) => percentile(x.latencies, 0.99))),
    jobsPerSec: spread(list.map((x) => (x.jobs * 1000) / x.wallMs)),
    subtasksPerSec: spread(list.map((x) => (x.subtasks * 1000) / x.wallMs)),
    cpuMsPerJob: spread(list.map((x) => x.cpuMs / x.jobs)),
    cpuMsPerSubtask: spread(list.map((x) => x.cpuMs / x.subtasks)),
  };
});

console.log(
  `\n4 TaskExecutors × 8 slots; ${ROUNDS} interleaved rounds; min / median / max; ` +
    `${STREAM} p=1 jobs, ${BACK_TO_BACK} p=1000 jobs, ${BURST} p=1 jobs at once per round`,
);
console.table(
  figures.map((f) => ({
    series: f.name,
    'median ms': f.failed ? `FAILED: ${f.failed.slice(0, 80)}` : show(f.medianMs, 2),
    'p99 ms': f.failed ? '' : show(f.p99Ms, 2),
    'jobs/s': f.failed ? '' : show(f.jobsPerSec),
    'subtasks/s': f.failed ? '' : show(f.subtasksPerSec),
    'CPU ms/job': f.failed ? '' : show(f.cpuMsPerJob, 3),
    'CPU ms/subtask': f.failed ? '' : show(f.cpuMsPerSubtask, 3),
  })),
);
if (big.size > 0) {
  console.log(`\none job of ${BIG} subtasks (${BIG_VERTICES} vertices), one run per mode`);
  console.table(
    [...big].map(([mode, b]) => ({
      mode,
      'subtasks/s': b.failed ? `FAILED: ${b.failed.slice(0, 80)}` : Math.round((BIG * 1000) / b.wallMs),
      'CPU ms/subtask': (b.cpuMs / BIG).toFixed(3),
      'RSS peak MB': Math.round(b.rssPeakMb),
      'main heap peak MB': Math.round(b.heapPeakMb),
      'longest stall ms': Math.round(b.stallMs),
    })),
  );
}

const figure = (name: string) => figures.find((f) => f.name === name && f.failed === null);
const lines: string[] = [];
/** One target's line: what was measured, the target, and whether it is met. */
const target = (what: string, value: string, bound: string, met: boolean) =>
  lines.push(`${what} ${value} (${bound}: ${met ? 'met' : 'NOT MET'})`);
const p1 = figure(`thread: ${P1}`);
if (p1 !== undefined) {
  const { medianMs, p99Ms, jobsPerSec, cpuMsPerJob } = p1;
  const t = TARGETS;
  target('p=1 median', `${medianMs.median.toFixed(2)} ms`, `≤ ${t.p1MedianMs}`, medianMs.median <= t.p1MedianMs);
  target('p=1 p99', `${p99Ms.median.toFixed(2)} ms`, `≤ ${t.p1P99Ms}`, p99Ms.median <= t.p1P99Ms);
  target('p=1', `${Math.round(jobsPerSec.median)} jobs/s`, `≥ ${t.p1JobsPerSec}`, jobsPerSec.median >= t.p1JobsPerSec);
  const cpu = cpuMsPerJob.median;
  target('p=1', `${cpu.toFixed(3)} ms CPU per job`, `≤ ${t.p1CpuMsPerJob}`, cpu <= t.p1CpuMsPerJob);
}
const p1000 = figure(`thread: ${P1000}`);
if (p1000 !== undefined) {
  const rate = p1000.subtasksPerSec.median;
  const cpu = p1000.cpuMsPerSubtask.median;
  const t = TARGETS;
  target('p=1000', `${Math.round(rate)} subtasks/s`, `≥ ${t.p1000SubtasksPerSec}`, rate >= t.p1000SubtasksPerSec);
  target(
    'p=1000',
    `${cpu.toFixed(3)} ms CPU per subtask`,
    `≤ ${t.p1000CpuMsPerSubtask}`,
    cpu <= t.p1000CpuMsPerSubtask,
  );
}
const bigThread = big.get('thread');
if (bigThread !== undefined && bigThread.failed === null) {
  const rate = (BIG * 1000) / bigThread.wallMs;
  const { rssPeakMb, stallMs } = bigThread;
  const t = TARGETS;
  target(`p=${BIG}`, `${Math.round(rate)} subtasks/s`, `≥ ${t.bigSubtasksPerSec}`, rate >= t.bigSubtasksPerSec);
  target(`p=${BIG} RSS peak`, `${Math.round(rssPeakMb)} MB`, `≤ ${t.bigRssMb}`, rssPeakMb <= t.bigRssMb);
  target(`p=${BIG} longest stall`, `${Math.round(stallMs)} ms`, `≤ ${t.bigStallMs}`, stallMs <= t.bigStallMs);
}
const bigProcess = big.get('process');
if (bigProcess !== undefined && bigProcess.failed === null) {
  const { rssPeakMb } = bigProcess;
  const bound = TARGETS.bigRssMb;
  target(
    `process mode, p=${BIG} RSS peak of the coordinator's process`,
    `${Math.round(rssPeakMb)} MB`,
    `≤ ${bound}`,
    rssPeakMb <= bound,
  );
}
for (const name of [P1, P1000]) {
  const thread = figure(`thread: ${name}`);
  const proc = figure(`process: ${name}`);
  if (thread === undefined || proc === undefined) continue;
  const ratio = thread.subtasksPerSec.median / proc.subtasksPerSec.median;
  const bound = TARGETS.processOverThread;
  target(`process mode, ${name}:`, `${ratio.toFixed(2)}× thread mode's time`, `≤ ${bound}`, ratio <= bound);
}
if (lines.length > 0) console.log(`\ntargets (thread mode unless named):\n  ${lines.join('\n  ')}`);
const atOnce = figure(`thread: ${AT_ONCE}`);
if (p1 !== undefined && atOnce !== undefined) {
  const ratio = atOnce.cpuMsPerJob.median / p1.cpuMsPerJob.median;
  console.log(`${AT_ONCE}: ${ratio.toFixed(2)}× the CPU per job of one at a time (no target)`);
}

const json = (s: Spread, digits = 3) => ({
  min: round(s.min, digits),
  median: round(s.median, digits),
  max: round(s.max, digits),
});
printJson({
  bench: 'jobs',
  rounds: ROUNDS,
  cluster: { taskExecutors: 4, slotsPerTaskExecutor: 8 },
  series: figures.map((f) => ({
    name: f.name,
    failed: f.failed,
    medianMs: json(f.medianMs),
    p99Ms: json(f.p99Ms),
    jobsPerSec: json(f.jobsPerSec, 4),
    subtasksPerSec: json(f.subtasksPerSec, 4),
    cpuMsPerJob: json(f.cpuMsPerJob),
    cpuMsPerSubtask: json(f.cpuMsPerSubtask),
  })),
  big: Object.fromEntries(
    [...big].map(([mode, b]) => [
      mode,
      {
        failed: b.failed,
        subtasksPerSec: Math.round((BIG * 1000) / b.wallMs),
        cpuMsPerSubtask: round(b.cpuMs / BIG, 4),
        rssPeakMb: Math.round(b.rssPeakMb),
        heapPeakMb: Math.round(b.heapPeakMb),
        stallMs: Math.round(b.stallMs),
      },
    ]),
  ),
  targets: TARGETS,
  verdicts: lines,
  setupMs: Math.round(setupMs),
  warmUpJobs: WARM_UP,
  warmUpJobsOf1000: WARM_UP_1000,
  node: process.version,
  cpus: cpus().length,
  loadavg1: round(loadavg()[0] ?? NaN),
});
