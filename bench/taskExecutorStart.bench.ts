/**
 * What a TaskExecutor costs to start (issue 9, "Benchmarks"): CPU per TaskExecutor and wall time
 * until 1, 8 and 32 TaskExecutors of 8 slots have registered, in thread and process mode, from the
 * compiled build (dist/, built first if the sources are newer), as an application runs it.
 *
 * - Wall: `MiniCluster.start({ taskExecutors: n })`, which resolves once every one is registered
 *   with its slots in the SlotManager.
 * - CPU per TaskExecutor: the CPU of the threads that did not exist before the start (a thread-mode
 *   TaskExecutor is a worker thread of this process), or of the child processes (process mode),
 *   until registered, divided by n; from /proc. The ResourceManager's side, on the main thread, is
 *   not in it. Spare task threads boot only after registration: started with
 *   `taskmanager.task-threads.spare` 0, they are measured apart, per thread, after the start.
 * - ROUNDS interleaved rounds, min / median / max.
 *
 * Targets: ≤ 50 ms CPU per TaskExecutor, 32 up in ≤ 2 s. Run with `npm run bench -- taskExecutorStart`.
 * The last line is one JSON object with every figure.
 */
import { cpus, loadavg } from 'node:os';
import type { MiniCluster as MiniClusterType } from '../lib/MiniCluster.js';
import { compiled } from './support/compiled.js';
import { childrenCpuMs, threadCpuMs } from './support/procStat.js';
import { printJson, round } from './support/report.js';

const ROUNDS = Number(process.env['START_ROUNDS'] ?? 3);
const COUNTS = (process.env['START_COUNTS'] ?? '1,8,32').split(',').map(Number);
const MODES = (process.env['START_MODES'] ?? 'thread,process').split(',') as Array<'thread' | 'process'>;
const SLOTS = 8;
const TARGET = { cpuMsPerTaskExecutor: 50, wallMsFor32: 2000 };

const { MiniCluster } = await compiled<{ MiniCluster: typeof MiniClusterType }>('lib/index.js');

/** CPU of the threads not in `before` (new ones), and of the children. */
function newCpu(before: Map<string, number>): number {
  let ms = 0;
  for (const [tid, cpu] of threadCpuMs()) if (!before.has(tid)) ms += cpu;
  return ms + childrenCpuMs();
}

async function quiet(): Promise<void> {
  let last = process.cpuUsage();
  for (let i = 0; i < 100; i++) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    const used = process.cpuUsage(last);
    last = process.cpuUsage();
    if ((used.user + used.system) / 1000 < 3) return;
  }
}

interface Sample {
  readonly wallMs: number;
  readonly cpuMsEach: number;
}
const samples = new Map<string, Sample[]>();
const spareBoots: number[] = [];

// The main side warmed once (modules, the ResourceManager's first start).
await (await MiniCluster.start({ taskExecutors: 0 })).close();

for (let r = 0; r < ROUNDS; r++) {
  for (const mode of MODES) {
    for (const n of COUNTS) {
      await quiet();
      const before = threadCpuMs();
      const started = performance.now();
      const cluster = await MiniCluster.start({
        mode,
        taskExecutors: n,
        slotsPerTaskExecutor: SLOTS,
        startTimeoutMs: 120_000,
        configuration: { 'taskmanager.task-threads.spare': 0 },
      });
      const wallMs = performance.now() - started;
      const cpuMsEach = newCpu(before) / n;
      await cluster.close();
      const name = `${mode}, ${n} TaskExecutor${n === 1 ? '' : 's'}`;
      samples.set(name, [...(samples.get(name) ?? []), { wallMs, cpuMsEach }]);
    }
  }
  // A spare task thread's boot, on one thread-mode TaskExecutor after its registration.
  await quiet();
  const cluster = await MiniCluster.start({ taskExecutors: 1, slotsPerTaskExecutor: SLOTS });
  const before = threadCpuMs();
  for (let i = 0; i < 200; i++) {
    const threads = (await cluster.taskExecutorMetrics())[0]?.taskThreads;
    if (threads !== null && threads !== undefined && threads.spare === SLOTS) break;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  const metrics = (await cluster.taskExecutorMetrics())[0]?.taskThreads;
  spareBoots.push(newCpu(before) / Math.max(1, metrics?.started ?? SLOTS));
  await cluster.close();
  console.log(`round ${r + 1} of ${ROUNDS} done`);
}

const stats = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  return {
    min: sorted[0] ?? NaN,
    median: sorted[Math.floor((sorted.length - 1) / 2)] ?? NaN,
    max: sorted.at(-1) ?? NaN,
  };
};
const mmm = (s: { min: number; median: number; max: number }) =>
  `${Math.round(s.min)} / ${Math.round(s.median)} / ${Math.round(s.max)}`;
const figures = [...samples].map(([name, list]) => ({
  name,
  wallMs: stats(list.map((s) => s.wallMs)),
  cpuMsEach: stats(list.map((s) => s.cpuMsEach)),
}));

console.log(`\nTaskExecutors of ${SLOTS} slots from dist/; ${ROUNDS} interleaved rounds; min / median / max`);
console.table(
  figures.map((f) => ({ start: f.name, 'up in ms': mmm(f.wallMs), 'CPU ms per TaskExecutor': mmm(f.cpuMsEach) })),
);
const spare = stats(spareBoots);
console.log(`a spare task thread's boot, after registration: ${mmm(spare)} ms CPU each`);
for (const f of figures) {
  const verdict = f.cpuMsEach.median <= TARGET.cpuMsPerTaskExecutor ? 'met' : 'NOT MET';
  const wallVerdict = f.wallMs.median <= TARGET.wallMsFor32 ? 'met' : 'NOT MET';
  const wall = f.name.endsWith('32 TaskExecutors')
    ? `, up in ${Math.round(f.wallMs.median)} ms (target ≤ ${TARGET.wallMsFor32}: ${wallVerdict})`
    : '';
  console.log(
    `${f.name}: ${Math.round(f.cpuMsEach.median)} ms CPU each ` +
      `(target ≤ ${TARGET.cpuMsPerTaskExecutor}: ${verdict})${wall}`,
  );
}

printJson({
  bench: 'taskExecutorStart',
  rounds: ROUNDS,
  slots: SLOTS,
  starts: figures.map((f) => ({
    name: f.name,
    wallMs: { min: round(f.wallMs.min), median: round(f.wallMs.median), max: round(f.wallMs.max) },
    cpuMsEach: { min: round(f.cpuMsEach.min), median: round(f.cpuMsEach.median), max: round(f.cpuMsEach.max) },
  })),
  spareThreadBootCpuMs: { min: round(spare.min), median: round(spare.median), max: round(spare.max) },
  target: TARGET,
  node: process.version,
  cpus: cpus().length,
  loadavg1: round(loadavg()[0] ?? NaN),
});
