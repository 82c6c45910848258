/**
 * Whole jobs (issue 9, "Benchmarks"): what a user's job costs from `submitJob` to its result, on
 * `MiniCluster.start({ taskExecutors: 4, slotsPerTaskExecutor: 8 })`, in thread and process mode.
 *
 * - The compiled build (dist/, built first if the sources are newer), as an application runs it.
 * - Jobs of trivial subtasks (plain .mjs task files): `one vertex` (each subtask returns its
 *   index) and `source → map → sink` (source p, map p pointwise, sink 1 all-to-all), at
 *   parallelism 1, 100, 1,000 and 10,000. Each job's result is checked.
 * - Per job: wall time submitJob → result, subtasks per second, and CPU per subtask over every
 *   thread of this process and of the process-mode TaskExecutors' child processes (from /proc).
 *   Before each job the cluster is let go quiet (no CPU used for a moment: spare task threads
 *   booted, the last job's slots freed); what it spends after a job until it is quiet again
 *   (freeing slots, booting spares for the next job) is reported apart, per job.
 * - The peer, as its users run it: piscina with its default options and a plain task file
 *   (`export default (x) => x`), warm, running the same number of tasks with all of them in
 *   flight — what a piscina user writes for "run these p things in parallel".
 * - ROUNDS interleaved rounds (every job once per round, in the same order); min / median / max.
 *
 * Targets (thread mode, p = 1,000): ≥ 2,000 subtasks/s and ≤ 1 ms CPU per subtask; p = 10,000
 * finishes in both modes. Run with `npm run bench -- jobs`; `JOBS_PARALLELISM=1,100`,
 * `JOBS_MODES=thread`, `JOBS_ROUNDS=3` narrow it. The last line is one JSON object with every figure.
 */
import { cpus, loadavg } from 'node:os';
import { Piscina } from 'piscina';
import { Bench } from 'tinybench';
import type { JobGraphSpec } from '../lib/jobmaster/JobGraph.js';
import type { MiniCluster as MiniClusterType } from '../lib/MiniCluster.js';
import { compiled } from './support/compiled.js';
import { childPids, cpuTicks, USER_HZ } from './support/procStat.js';
import { printJson, round } from './support/report.js';

const ROUNDS = Number(process.env['JOBS_ROUNDS'] ?? 3);
const PARALLELISMS = (process.env['JOBS_PARALLELISM'] ?? '1,100,1000,10000').split(',').map(Number);
const MODES = (process.env['JOBS_MODES'] ?? 'thread,process').split(',') as Array<'thread' | 'process'>;
const SHAPES = ['one vertex', 'source → map → sink'] as const;
type Shape = (typeof SHAPES)[number];
const TARGET = { parallelism: 1000, subtasksPerSec: 2000, cpuMsPerSubtask: 1 };

const task = (name: string) => new URL(`./support/tasks/${name}.mjs`, import.meta.url);

function graph(shape: Shape, p: number): JobGraphSpec {
  if (shape === 'one vertex')
    return { name: `trivial p=${p}`, vertices: [{ id: 'v', taskModule: task('subtaskIndex'), parallelism: p }] };
  return {
    name: `source-map-sink p=${p}`,
    vertices: [
      { id: 'source', taskModule: task('subtaskIndex'), parallelism: p },
      { id: 'map', taskModule: task('plusOne'), parallelism: p },
      { id: 'sink', taskModule: task('sum'), parallelism: 1 },
    ],
    edges: [
      { from: 'source', to: 'map', pattern: 'pointwise' },
      { from: 'map', to: 'sink', pattern: 'all-to-all' },
    ],
  };
}

const subtasksOf = (shape: Shape, p: number) => (shape === 'one vertex' ? p : 2 * p + 1);

function check(shape: Shape, p: number, outputs: Readonly<Record<string, unknown[]>>): void {
  if (shape === 'one vertex') {
    const got = outputs['v'] ?? [];
    if (got.length !== p || got.some((value, i) => value !== i)) throw new Error(`trivial p=${p}: wrong outputs`);
  } else {
    const expected = (p * (p - 1)) / 2 + p;
    if (outputs['sink']?.[0] !== expected)
      throw new Error(`source-map-sink p=${p}: sink returned ${String(outputs['sink']?.[0])}, expected ${expected}`);
  }
}

// ------------------------------------------------------------------------------ CPU time

function cpuMs(): number {
  const usage = process.cpuUsage();
  let ticks = 0;
  for (const pid of childPids()) ticks += cpuTicks(`/proc/${pid}/stat`) ?? 0;
  return (usage.user + usage.system) / 1000 + (ticks * 1000) / USER_HZ;
}

/**
 * Waits until this process and its children have used less than 3 ms of CPU in 150 ms (at most `limitMs`); returns the
 * CPU ms spent meanwhile.
 */
async function quiet(limitMs = 20_000): Promise<number> {
  const start = cpuMs();
  const deadline = performance.now() + limitMs;
  let last = start;
  for (;;) {
    await new Promise((resolve) => setTimeout(resolve, 150));
    const now = cpuMs();
    if (now - last < 3 || performance.now() > deadline) return now - start;
    last = now;
  }
}

// ------------------------------------------------------------------------------ setup

interface Sample {
  readonly ms: number;
  readonly cpuMs: number;
  readonly afterCpuMs: number;
}
const samples = new Map<string, Sample[]>();
const failures = new Map<string, string>();
const record = (name: string, sample: Sample) => samples.set(name, [...(samples.get(name) ?? []), sample]);

const { MiniCluster } = await compiled<{ MiniCluster: typeof MiniClusterType }>('lib/index.js');
const setupStarted = performance.now();
const clusters = new Map<'thread' | 'process', MiniClusterType>();
for (const mode of MODES)
  clusters.set(
    mode,
    await MiniCluster.start({ mode, taskExecutors: 4, slotsPerTaskExecutor: 8, startTimeoutMs: 120_000 }),
  );
const piscina = new Piscina({ filename: new URL('./support/tasks/identity.mjs', import.meta.url).href });
piscina.on('error', (error: unknown) => console.error('piscina pool error:', error));
await Promise.all(Array.from({ length: 1000 }, (_, i) => piscina.run(i)));
// Each shape once on each cluster before anything is timed: the task modules are checked (and
// remembered) at a job's first submit, and the threads' code warms up.
for (const cluster of clusters.values())
  for (const shape of SHAPES) await (await cluster.submitJob(graph(shape, 64))).result;
const setupMs = performance.now() - setupStarted;

type Case = { readonly name: string; readonly subtasks: number; run(): Promise<void> };
const cases: Case[] = [];
for (const p of PARALLELISMS) {
  cases.push({
    name: `piscina, ${p} tasks`,
    subtasks: p,
    run: async () => {
      const outputs = await Promise.all(Array.from({ length: p }, (_, i) => piscina.run(i) as Promise<number>));
      if (outputs.some((value, i) => value !== i)) throw new Error('piscina returned wrong outputs');
    },
  });
  for (const mode of MODES) {
    for (const shape of SHAPES) {
      cases.push({
        name: `${mode}, ${shape}, p=${p}`,
        subtasks: subtasksOf(shape, p),
        run: async () => {
          const job = await clusters.get(mode)!.submitJob(graph(shape, p));
          const result = await job.result;
          if (result.status !== 'finished')
            throw new Error(`${mode} ${shape} p=${p} ${result.status}: ${result.error?.message ?? ''}`);
          check(shape, p, result.outputs);
        },
      });
    }
  }
}

// ------------------------------------------------------------------------------ rounds

for (let r = 0; r < ROUNDS; r++) {
  const bench = new Bench({ name: `jobs round ${r + 1}`, iterations: 1, time: 0, warmup: false, throws: false });
  for (const c of cases) {
    let cpuStart = 0;
    let started = 0;
    bench.add(
      c.name,
      async () => {
        if (failures.has(c.name)) return;
        try {
          await c.run();
        } catch (error) {
          failures.set(c.name, error instanceof Error ? error.message : String(error));
        }
      },
      {
        beforeEach: async () => {
          await quiet();
          cpuStart = cpuMs();
          started = performance.now();
        },
        afterEach: async () => {
          const ms = performance.now() - started;
          const cpu = cpuMs() - cpuStart;
          const after = await quiet();
          if (!failures.has(c.name)) record(c.name, { ms, cpuMs: cpu, afterCpuMs: after });
        },
      },
    );
  }
  await bench.run();
  console.log(`round ${r + 1} of ${ROUNDS} done`);
}

// ------------------------------------------------------------------------------ figures

const stats = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  return {
    min: sorted[0] ?? NaN,
    median: sorted[Math.floor((sorted.length - 1) / 2)] ?? NaN,
    max: sorted.at(-1) ?? NaN,
  };
};
const mmm = (s: { min: number; median: number; max: number }, digits = 0) =>
  `${s.min.toFixed(digits)} / ${s.median.toFixed(digits)} / ${s.max.toFixed(digits)}`;

const figures = cases.map((c) => {
  const list = samples.get(c.name) ?? [];
  return {
    name: c.name,
    subtasks: c.subtasks,
    ms: stats(list.map((s) => s.ms)),
    subtasksPerSec: stats(list.map((s) => (c.subtasks * 1000) / s.ms)),
    cpuMsPerSubtask: stats(list.map((s) => s.cpuMs / c.subtasks)),
    afterCpuMs: stats(list.map((s) => s.afterCpuMs)),
    failed: failures.get(c.name) ?? null,
  };
});

console.log(`\n4 TaskExecutors × 8 slots; ${ROUNDS} interleaved rounds; min / median / max`);
console.table(
  figures.map((f) => ({
    job: f.name,
    'submit → result ms': f.failed ? `FAILED: ${f.failed.slice(0, 80)}` : mmm(f.ms),
    'subtasks/s': f.failed ? '' : mmm(f.subtasksPerSec),
    'CPU ms/subtask': f.failed ? '' : mmm(f.cpuMsPerSubtask, 3),
    'CPU ms after (free, refill)': f.failed ? '' : mmm(f.afterCpuMs),
  })),
);

const target = figures.find((f) => f.name === `thread, one vertex, p=${TARGET.parallelism}`);
if (target !== undefined && target.failed === null) {
  const rate = target.subtasksPerSec.median;
  const cpu = target.cpuMsPerSubtask.median;
  console.log(
    `thread mode, p=${TARGET.parallelism}: ${Math.round(rate)} subtasks/s (target ` +
      `≥ ${TARGET.subtasksPerSec}: ${rate >= TARGET.subtasksPerSec ? 'met' : 'NOT MET'}), ${cpu.toFixed(3)} ms ` +
      `CPU per subtask (target ≤ ${TARGET.cpuMsPerSubtask}: ${cpu <= TARGET.cpuMsPerSubtask ? 'met' : 'NOT MET'})`,
  );
}
for (const mode of MODES) {
  const big = figures.filter((f) => f.name.startsWith(`${mode},`) && f.name.endsWith('p=10000'));
  if (big.length > 0)
    console.log(
      `${mode} mode, p=10000: ${
        big.every((f) => f.failed === null)
          ? 'every job finished'
          : `FAILED: ${big
              .filter((f) => f.failed)
              .map((f) => f.name)
              .join(', ')}`
      }`,
    );
}

await Promise.all([...clusters.values()].map((cluster) => cluster.close()));
await piscina.destroy();

printJson({
  bench: 'jobs',
  rounds: ROUNDS,
  cluster: { taskExecutors: 4, slotsPerTaskExecutor: 8 },
  jobs: figures.map((f) => ({
    name: f.name,
    subtasks: f.subtasks,
    failed: f.failed,
    ms: { min: round(f.ms.min), median: round(f.ms.median), max: round(f.ms.max) },
    subtasksPerSec: {
      min: round(f.subtasksPerSec.min),
      median: round(f.subtasksPerSec.median),
      max: round(f.subtasksPerSec.max),
    },
    cpuMsPerSubtask: {
      min: round(f.cpuMsPerSubtask.min),
      median: round(f.cpuMsPerSubtask.median),
      max: round(f.cpuMsPerSubtask.max),
    },
    afterCpuMs: { min: round(f.afterCpuMs.min), median: round(f.afterCpuMs.median), max: round(f.afterCpuMs.max) },
  })),
  target: TARGET,
  atTarget:
    target === undefined || target.failed !== null
      ? null
      : { subtasksPerSec: round(target.subtasksPerSec.median), cpuMsPerSubtask: round(target.cpuMsPerSubtask.median) },
  setupMs: Math.round(setupMs),
  node: process.version,
  cpus: cpus().length,
  loadavg1: round(loadavg()[0] ?? NaN),
});
