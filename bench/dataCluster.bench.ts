/**
 * Data between TaskManagers of a session cluster (issue 25, "Benchmarks", the session-cluster case of
 * bench/data.bench.ts): a JobManager in this process and two TaskManagers as child processes over a real nats-server
 * on loopback, the producers pinned to one (extended resource `left`) and the consumers to the other (`right`), so
 * every byte crosses NATS between them — never through the JobManager.
 *
 * - shuffle: P producers each return SHUFFLE_MB / P bytes split into P parts; P consumers each read their part of
 *   every producer (a hash edge; 256 MB a job). Target ≥ 100 MB/s, the JobManager's RSS flat (this process's peak
 *   less before, sampled every 10 ms: ≤ 64 MB).
 * - large: one producer returns LARGE_MB (100) MB, one consumer reads it. Target: it finishes with no heartbeat lost
 *   (both TaskManagers keep their ResourceIDs and the job restarts 0 times).
 * - MB/s: the bytes consumers received over the job's wall time (submit → result). ROUNDS rounds, min / median / max.
 * - Where the CPU goes (the shuffle rounds together): ms per MB in this process (the JobManager), each TaskManager and
 *   nats-server, and the TaskManagers' busiest threads by name (/proc's task/<tid>/comm) — the profile the issue asks
 *   for before anything is optimized.
 *
 * Runs the TypeScript sources under tsx. Needs nats-server; without it the bench says so and exits 0. Run with
 * `npm run bench -- dataCluster`; `DATA_CLUSTER_ROUNDS=3`, `DATA_CLUSTER_SHUFFLE_MB=256`, `DATA_CLUSTER_P=8`,
 * `DATA_CLUSTER_LARGE_MB=100` change it. The last line is one JSON object with every figure.
 */
import { cpus, loadavg } from 'node:os';
import { startJobManager } from '../lib/cluster/JobManager.js';
import type { JobGraphSpec } from '../lib/jobmaster/JobGraph.js';
import type { TaskManagerControl } from '../test/fixtures/clusterProcess.js';
import { start, stop } from '../test/cluster/support/clusterProcesses.js';
import { until } from '../test/support/eventually.js';
import { natsServerBinary, startNatsServer } from '../test/support/natsServer.js';
import { readdirSync, readFileSync } from 'node:fs';
import { cpuTicks, USER_HZ } from './support/procStat.js';
import { exposedGc, formatSpread, printJson, roundedSpread, spreadOf } from './support/report.js';

/** CPU ms of each thread of process `pid`, by thread id, with its name. */
function threadCpu(pid: number): Map<string, { name: string; ms: number }> {
  const threads = new Map<string, { name: string; ms: number }>();
  let tids: string[] = [];
  try {
    tids = readdirSync(`/proc/${pid}/task`);
  } catch {
    return threads;
  }
  for (const tid of tids) {
    const ticks = cpuTicks(`/proc/${pid}/task/${tid}/stat`);
    if (ticks === undefined) continue;
    let name = '?';
    try {
      name = readFileSync(`/proc/${pid}/task/${tid}/comm`, 'utf8').trim();
    } catch {}
    // Node names no thread of its own: the main thread is the one whose id is the process's.
    if (tid === String(pid)) name = 'main';
    else if (name === 'node') name = 'other node threads';
    threads.set(tid, { name, ms: (ticks * 1000) / USER_HZ });
  }
  return threads;
}

/** What each thread of `pid` used since `before`, summed by thread name (a pool's threads together). */
function usedByName(pid: number, before: Map<string, { name: string; ms: number }>): Map<string, number> {
  const byName = new Map<string, number>();
  for (const [tid, { name, ms }] of threadCpu(pid))
    byName.set(name, (byName.get(name) ?? 0) + ms - (before.get(tid)?.ms ?? 0));
  return byName;
}

const ROUNDS = Number(process.env['DATA_CLUSTER_ROUNDS'] ?? 3);
const SHUFFLE_MB = Number(process.env['DATA_CLUSTER_SHUFFLE_MB'] ?? 256);
const P = Number(process.env['DATA_CLUSTER_P'] ?? 8);
const LARGE_MB = Number(process.env['DATA_CLUSTER_LARGE_MB'] ?? 100);
const MB = 1024 * 1024;
const TARGETS = { shuffleMbPerSec: 100, jobManagerGrowthMb: 64 };

const binary = natsServerBinary();
if (binary === undefined) {
  console.log('skipped: nats-server is not installed (apt-get install -y nats-server)');
  process.exit(0);
}

const bytesTask = new URL('./support/tasks/bytes.mjs', import.meta.url).href;
const sumTask = new URL('./support/tasks/sumBytes.mjs', import.meta.url).href;
const on = (resource: string) => ({ cpuCores: 0.5, extendedResources: { [resource]: 1 } });

const shuffle = (): JobGraphSpec => ({
  name: 'shuffle over NATS',
  vertices: [
    {
      id: 'src',
      taskModule: bytesTask,
      parallelism: P,
      config: { bytes: Math.floor((SHUFFLE_MB * MB) / P / P) * P, parts: P },
      resources: on('left'),
      slotSharingGroup: 'producers',
    },
    { id: 'sink', taskModule: sumTask, parallelism: P, resources: on('right'), slotSharingGroup: 'consumers' },
  ],
  edges: [{ from: 'src', to: 'sink', pattern: 'hash' }],
});

const large = (): JobGraphSpec => ({
  name: 'one large output over NATS',
  vertices: [
    {
      id: 'src',
      taskModule: bytesTask,
      parallelism: 1,
      config: { bytes: LARGE_MB * MB },
      resources: on('left'),
      slotSharingGroup: 'producers',
    },
    { id: 'sink', taskModule: sumTask, parallelism: 1, resources: on('right'), slotSharingGroup: 'consumers' },
  ],
  edges: [{ from: 'src', to: 'sink', pattern: 'all-to-all' }],
});

const server = await startNatsServer(binary);
const cleanups: Array<() => Promise<unknown>> = [() => server.stop()];
const figures = {
  shuffleMbPerSec: [] as number[],
  shuffleGrowthMb: [] as number[],
  largeMbPerSec: [] as number[],
  cpuMsPerMb: {} as Record<string, number>,
};
const verdicts: string[] = [];
try {
  const jobManager = await startJobManager({
    nats: server.url,
    clusterId: 'benchdata',
    logger: () => {},
    configuration: { 'heartbeat.interval': 1_000, 'heartbeat.timeout': 5_000 },
  });
  cleanups.push(() => jobManager.close());
  // Network memory for a whole job's partitions: the in-memory path is measured, not spilling to disk.
  const shape = {
    nats: server.url,
    clusterId: 'benchdata',
    slots: P,
    cpuCores: P,
    taskHeap: '2g',
    networkMemory: '1g',
  };
  const taskManagers = ['left', 'right'].map((resource) =>
    start<TaskManagerControl>('taskmanager', { ...shape, resources: { [resource]: P } }),
  );
  cleanups.push(() => Promise.all(taskManagers.map((tm) => stop(tm))));
  await until('both TaskManagers registered', () => jobManager.overview().taskExecutors.length === 2, 120_000);
  const ids = async () => (await Promise.all(taskManagers.map((tm) => tm.control.status()))).map((s) => s.resourceId);
  const before = await ids();

  /** One job: its MB/s (checked: every byte arrived, no restart) and this process's RSS peak less before. */
  const run = async (spec: JobGraphSpec, bytes: number) => {
    exposedGc()?.();
    const rssBefore = process.memoryUsage.rss();
    let peak = rssBefore;
    const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage.rss())), 10);
    const started = performance.now();
    const job = await jobManager.submitJob(spec);
    const result = await job.result;
    const seconds = (performance.now() - started) / 1000;
    clearInterval(sampler);
    if (result.status !== 'finished') throw new Error(`${spec.name} ${result.status}: ${result.error?.message ?? ''}`);
    const received = (result.outputs['sink'] as number[]).reduce((a, b) => a + b, 0);
    if (received !== bytes) throw new Error(`${spec.name}: the consumers received ${received} bytes, not ${bytes}`);
    if (result.restarts !== 0) throw new Error(`${spec.name}: restarted ${result.restarts} time(s)`);
    return { mbPerSec: bytes / MB / seconds, growthMb: (peak - rssBefore) / MB };
  };
  const shuffleBytes = Math.floor((SHUFFLE_MB * MB) / P / P) * P * P;
  console.log(`dataCluster: ${ROUNDS} rounds, ${cpus().length} cores, load ${loadavg()[0]!.toFixed(2)} at the start`);
  await run(shuffle(), shuffleBytes); // warm-up: code fetched, task threads booted
  const pids = {
    jobManager: process.pid,
    left: taskManagers[0]!.child.pid!,
    right: taskManagers[1]!.child.pid!,
    'nats-server': server.process.pid!,
  };
  const spent = Object.fromEntries(Object.keys(pids).map((k) => [k, 0])) as Record<keyof typeof pids, number>;
  const threadsSpent = { left: new Map<string, number>(), right: new Map<string, number>() };
  for (let round = 0; round < ROUNDS; round++) {
    const threadsBefore = { left: threadCpu(pids.left), right: threadCpu(pids.right) };
    const cpuBefore = Object.fromEntries(
      Object.entries(pids).map(([k, pid]) => [k, ((cpuTicks(`/proc/${pid}/stat`) ?? 0) * 1000) / USER_HZ]),
    );
    const s = await run(shuffle(), shuffleBytes);
    for (const [k, pid] of Object.entries(pids))
      spent[k as keyof typeof pids] += ((cpuTicks(`/proc/${pid}/stat`) ?? 0) * 1000) / USER_HZ - cpuBefore[k]!;
    for (const side of ['left', 'right'] as const)
      for (const [name, ms] of usedByName(pids[side], threadsBefore[side]))
        threadsSpent[side].set(name, (threadsSpent[side].get(name) ?? 0) + ms);
    const l = await run(large(), LARGE_MB * MB);
    figures.shuffleMbPerSec.push(s.mbPerSec);
    figures.shuffleGrowthMb.push(s.growthMb);
    figures.largeMbPerSec.push(l.mbPerSec);
    console.log(
      `  round ${round + 1}: shuffle ${s.mbPerSec.toFixed(0)} MB/s (JobManager +${s.growthMb.toFixed(1)} MB), ` +
        `large ${l.mbPerSec.toFixed(0)} MB/s (JobManager +${l.growthMb.toFixed(1)} MB)`,
    );
  }
  const after = await ids();
  const rate = spreadOf(figures.shuffleMbPerSec);
  const growth = spreadOf(figures.shuffleGrowthMb);
  console.log(
    `\nshuffle ${SHUFFLE_MB} MB, p=${P}: ${formatSpread(rate, 1)} MB/s; JobManager ${formatSpread(growth, 1)} MB`,
  );
  console.log(`large ${LARGE_MB} MB: ${formatSpread(spreadOf(figures.largeMbPerSec), 1)} MB/s`);
  const shuffledMb = (ROUNDS * shuffleBytes) / MB;
  const perMb = (ms: number) => (ms / shuffledMb).toFixed(2);
  console.log(
    `\nCPU ms per MB shuffled: ${Object.entries(spent)
      .map(([k, ms]) => `${k} ${perMb(ms)}`)
      .join(', ')}`,
  );
  for (const side of ['left', 'right'] as const) {
    const busiest = [...threadsSpent[side]].sort((a, b) => b[1] - a[1]).slice(0, 5);
    console.log(
      `  ${side} (${side === 'left' ? 'producers' : 'consumers'}) by thread: ` +
        busiest.map(([name, ms]) => `${name} ${perMb(ms)}`).join(', '),
    );
  }
  if (process.platform === 'linux')
    figures.cpuMsPerMb = Object.fromEntries(Object.entries(spent).map(([k, ms]) => [k, Number(perMb(ms))]));
  const met = (ok: boolean) => (ok ? 'met' : 'NOT met');
  const kept = JSON.stringify(before) === JSON.stringify(after);
  verdicts.push(
    `shuffle: ${rate.median.toFixed(0)} MB/s (target ≥ ${TARGETS.shuffleMbPerSec}) ` +
      `${met(rate.median >= TARGETS.shuffleMbPerSec)}; JobManager +${growth.max.toFixed(0)} MB at most ` +
      `(≤ ${TARGETS.jobManagerGrowthMb}) ${met(growth.max <= TARGETS.jobManagerGrowthMb)}`,
    `large: ${kept ? 'no TaskManager lost' : 'a TaskManager was lost'} (${met(kept)})`,
  );
  console.log(`\n${verdicts.join('\n')}\nload ${loadavg()[0]!.toFixed(2)} at the end`);
} finally {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {});
}
printJson({
  rounds: ROUNDS,
  load: loadavg()[0],
  targets: TARGETS,
  verdicts,
  figures: {
    shuffleMbPerSec: roundedSpread(spreadOf(figures.shuffleMbPerSec)),
    shuffleGrowthMb: roundedSpread(spreadOf(figures.shuffleGrowthMb)),
    largeMbPerSec: roundedSpread(spreadOf(figures.largeMbPerSec)),
    cpuMsPerMb: figures.cpuMsPerMb,
  },
});
