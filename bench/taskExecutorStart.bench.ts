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
 * - The floor under a process-mode TaskExecutor: a bare Node child forked with an IPC channel, in
 *   this environment and, when NODE_EXTRA_CA_CERTS is set, without it — Node 20 parses every
 *   certificate it names as each process starts (~38 ms on a machine that points it at the whole
 *   system bundle), before any of our code runs.
 * - ROUNDS interleaved rounds, min / median / max.
 *
 * Targets: ≤ 50 ms CPU per TaskExecutor, 32 up in ≤ 2 s. Run with `npm run bench -- taskExecutorStart`.
 * The last line is one JSON object with every figure.
 */
import { fork } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import type { MiniCluster as MiniClusterType } from '../lib/MiniCluster.js';
import { compiled } from './support/compiled.js';
import { childrenCpuMs, cpuTicks, threadCpuMs, USER_HZ } from './support/procStat.js';
import { formatSpread, printJson, round, roundedSpread, type Spread, spreadOf } from './support/report.js';

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

/**
 * The floor under a process-mode TaskExecutor: a bare Node child forked with an IPC channel, as a
 * TaskExecutor's is, in this process's environment (or `env`), until it can answer on that channel;
 * CPU from /proc while it is still alive, so 10 ms ticks: the mean of `n` children.
 */
async function bareChildCpuMs(n: number, env: NodeJS.ProcessEnv): Promise<number> {
  const dir = mkdtempSync(join(tmpdir(), 'slotwise-bare-child-'));
  const file = join(dir, 'child.cjs');
  writeFileSync(file, 'process.send(0); process.on("disconnect", () => process.exit(0));\n');
  let ms = 0;
  try {
    for (let i = 0; i < n; i++) {
      const child = fork(file, [], { env, execArgv: [], stdio: 'ignore' });
      await new Promise((resolve, reject) => {
        child.once('message', resolve);
        child.once('error', reject);
      });
      ms += ((cpuTicks(`/proc/${child.pid}/stat`) ?? 0) * 1000) / USER_HZ;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.disconnect();
      await exited;
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  return ms / n;
}

interface Sample {
  readonly wallMs: number;
  readonly cpuMsEach: number;
}
const samples = new Map<string, Sample[]>();
const spareBoots: number[] = [];
const bareChild: number[] = [];
// Node 20 reads and parses every certificate in NODE_EXTRA_CA_CERTS as each process starts (some
// machines point it at the whole system bundle): a process-mode TaskExecutor pays that too.
const extraCaCerts = process.env['NODE_EXTRA_CA_CERTS'];
const bareChildWithout: number[] = [];
const withoutExtraCaCerts = { ...process.env };
delete withoutExtraCaCerts['NODE_EXTRA_CA_CERTS'];

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
  if (MODES.includes('process')) {
    await quiet();
    bareChild.push(await bareChildCpuMs(8, process.env));
    if (extraCaCerts !== undefined) bareChildWithout.push(await bareChildCpuMs(8, withoutExtraCaCerts));
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

const mmm = (s: Spread) => formatSpread(s, 0);
const figures = [...samples].map(([name, list]) => ({
  name,
  wallMs: spreadOf(list.map((s) => s.wallMs)),
  cpuMsEach: spreadOf(list.map((s) => s.cpuMsEach)),
}));

console.log(`\nTaskExecutors of ${SLOTS} slots from dist/; ${ROUNDS} interleaved rounds; min / median / max`);
console.table(
  figures.map((f) => ({ start: f.name, 'up in ms': mmm(f.wallMs), 'CPU ms per TaskExecutor': mmm(f.cpuMsEach) })),
);
const spare = spreadOf(spareBoots);
console.log(`a spare task thread's boot, after registration: ${mmm(spare)} ms CPU each`);
const floor = bareChild.length === 0 ? undefined : spreadOf(bareChild);
const floorWithout = bareChildWithout.length === 0 ? undefined : spreadOf(bareChildWithout);
if (floor !== undefined) {
  console.log(`a bare Node child forked with IPC (the floor under a process-mode TaskExecutor): ${mmm(floor)} ms CPU`);
}
if (floorWithout !== undefined) {
  console.log(
    `  NODE_EXTRA_CA_CERTS is set (${extraCaCerts}); the same child without it: ${mmm(floorWithout)} ms CPU — ` +
      'every process of this environment pays the difference as it starts',
  );
}
for (const f of figures) {
  const verdict = f.cpuMsEach.median <= TARGET.cpuMsPerTaskExecutor ? 'met' : 'NOT MET';
  const wallVerdict = f.wallMs.median <= TARGET.wallMsFor32 ? 'met' : 'NOT MET';
  const wall = f.name.endsWith('32 TaskExecutors')
    ? `, up in ${Math.round(f.wallMs.median)} ms (target ≤ ${TARGET.wallMsFor32}: ${wallVerdict})`
    : '';
  const aboveFloor =
    floor !== undefined && f.name.startsWith('process')
      ? `; ${Math.round(f.cpuMsEach.median - floor.median)} ms above a bare Node child's start`
      : '';
  console.log(
    `${f.name}: ${Math.round(f.cpuMsEach.median)} ms CPU each ` +
      `(target ≤ ${TARGET.cpuMsPerTaskExecutor}: ${verdict}${aboveFloor})${wall}`,
  );
}

printJson({
  bench: 'taskExecutorStart',
  rounds: ROUNDS,
  slots: SLOTS,
  starts: figures.map((f) => ({
    name: f.name,
    wallMs: roundedSpread(f.wallMs),
    cpuMsEach: roundedSpread(f.cpuMsEach),
  })),
  spareThreadBootCpuMs: roundedSpread(spare),
  bareChildCpuMs: floor === undefined ? null : roundedSpread(floor),
  bareChildWithoutExtraCaCertsCpuMs: floorWithout === undefined ? null : roundedSpread(floorWithout),
  target: TARGET,
  node: process.version,
  cpus: cpus().length,
  loadavg1: round(loadavg()[0] ?? NaN),
});
