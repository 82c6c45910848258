/**
 * Data between subtasks (issue 25, "Benchmarks"): jobs that move bytes, run as an application runs
 * them — back to back on one warm `MiniCluster.start({ taskExecutors: 1, slotsPerTaskExecutor: 2 })`
 * per mode, from the compiled build (dist/) — against piscina moving the same bytes between the same
 * number of threads (2) as its users would: a producer's buffer moved back to the caller, handed on
 * to the consumer in a transfer list.
 *
 * - gather: PRODUCERS (64) subtasks each return a 1 MB ArrayBuffer; one sink reads them all
 *   (all-to-all) and counts the bytes (64 MB a job).
 * - shuffle: SHUFFLE_P (16) producers each return SHUFFLE_MB / SHUFFLE_P bytes split into SHUFFLE_P
 *   parts; SHUFFLE_P consumers each read their part of every producer (a hash edge; 256 MB a job), on
 *   a cluster of one TaskExecutor with SHUFFLE_P slots against piscina with as many threads: a
 *   consumer holds the slot it shares with its producer while it waits for the others (every slot is
 *   asked for at the start; Flink's region scheduling, which asks a consumer's only once its inputs
 *   are there, is not built), so a hash edge of parallelism p needs p slots.
 * - MB/s: the bytes consumers received over the job's wall time (submit → result). CPU per MB:
 *   every thread of this process and every child process (/proc), from the submit until the machine
 *   is idle again. The coordinator's growth: the main thread's heap in use, sampled every 10 ms
 *   during the job, its peak less the heap before (thread mode); the main process's RSS peak less
 *   before (process mode, whose TaskExecutors are other processes).
 * - Each TaskExecutor has network memory for a whole job's partitions (2 × DATA_SHUFFLE_MB): the in-memory path
 *   is measured; past its network memory a TaskExecutor would spill them to disk (io.tmp.dirs).
 * - ROUNDS interleaved rounds (each series once per round, same order); min / median / max.
 *
 * Targets: ≥ 0.9× piscina's MB/s; the coordinator grows ≤ 64 MB whatever the data size; CPU per MB
 * within 1.5× piscina's. Run with `npm run bench -- data`; `DATA_ROUNDS=3`, `DATA_MODES=thread,process`,
 * `DATA_SHUFFLE_MB=256`, `DATA_SHUFFLE_P=16` narrow it. The last line is one JSON object with every figure.
 * The session-cluster case (two TaskManagers over NATS) is bench/dataCluster.bench.ts.
 */
import { cpus, loadavg } from 'node:os';
import { Piscina } from 'piscina';
import type { JobGraphSpec } from '../lib/jobmaster/JobGraph.js';
import type { MiniCluster as MiniClusterType } from '../lib/MiniCluster.js';
import { compiled } from './support/compiled.js';
import { processTreeCpuMs, untilIdle } from './support/procStat.js';
import { exposedGc, formatSpread, printJson, roundedSpread, spreadOf, type Spread } from './support/report.js';

const ROUNDS = Number(process.env['DATA_ROUNDS'] ?? 3);
const MODES = (process.env['DATA_MODES'] ?? 'thread,process').split(',') as Array<'thread' | 'process'>;
const SHUFFLE_MB = Number(process.env['DATA_SHUFFLE_MB'] ?? 256);
const PRODUCERS = 64;
const SHUFFLE_P = Number(process.env['DATA_SHUFFLE_P'] ?? 16);
const MB = 1024 * 1024;
const TARGETS = { mbPerSecVsPiscina: 0.9, coordinatorGrowthMb: 64, cpuPerMbVsPiscina: 1.5 };

const tasks = new URL('./support/tasks/', import.meta.url);
const bytesTask = new URL('bytes.mjs', tasks).href;
const sumTask = new URL('sumBytes.mjs', tasks).href;
const piscinaTask = new URL('piscinaBytes.mjs', tasks).href;

interface Run {
  readonly mbPerSec: number;
  readonly cpuMsPerMb: number;
  readonly growthMb: number;
}

/** One job (or piscina's equivalent) from an idle machine: its rate, its CPU until idle, the coordinator's peak. */
async function measured(
  mode: 'thread' | 'process' | 'piscina',
  bytes: number,
  run: () => Promise<number>,
): Promise<Run> {
  const gc = exposedGc();
  gc?.();
  await untilIdle();
  const sample = () => (mode === 'process' ? process.memoryUsage.rss() : process.memoryUsage().heapUsed);
  const before = sample();
  let peak = before;
  const sampler = setInterval(() => {
    peak = Math.max(peak, sample());
  }, 10);
  const cpuStart = processTreeCpuMs();
  const started = performance.now();
  const received = await run();
  const wallMs = performance.now() - started;
  clearInterval(sampler);
  peak = Math.max(peak, sample());
  if (received !== bytes) throw new Error(`${mode}: the consumers received ${received} bytes, not ${bytes}`);
  await untilIdle();
  return {
    mbPerSec: bytes / MB / (wallMs / 1000),
    cpuMsPerMb: (processTreeCpuMs() - cpuStart) / (bytes / MB),
    growthMb: (peak - before) / MB,
  };
}

const gather = (): JobGraphSpec => ({
  name: 'gather',
  vertices: [
    { id: 'src', taskModule: bytesTask, parallelism: PRODUCERS, config: { bytes: MB } },
    { id: 'sink', taskModule: sumTask, parallelism: 1 },
  ],
  edges: [{ from: 'src', to: 'sink', pattern: 'all-to-all' }],
});

const shuffle = (): JobGraphSpec => ({
  name: 'shuffle',
  vertices: [
    {
      id: 'src',
      taskModule: bytesTask,
      parallelism: SHUFFLE_P,
      config: { bytes: (SHUFFLE_MB * MB) / SHUFFLE_P, parts: SHUFFLE_P },
    },
    { id: 'sink', taskModule: sumTask, parallelism: SHUFFLE_P },
  ],
  edges: [{ from: 'src', to: 'sink', pattern: 'hash' }],
});

async function runJob(cluster: MiniClusterType, spec: JobGraphSpec): Promise<number> {
  const job = await cluster.submitJob(spec);
  const result = await job.result;
  if (result.status !== 'finished') throw new Error(`${spec.name} ${result.status}: ${result.error?.message ?? ''}`);
  return (result.outputs['sink'] as number[]).reduce((a, b) => a + b, 0);
}

async function piscinaGather(pool: Piscina): Promise<number> {
  const buffers = (await Promise.all(
    Array.from({ length: PRODUCERS }, (_, index) => pool.run({ op: 'produce', bytes: MB, index })),
  )) as ArrayBuffer[];
  return (await pool.run({ op: 'consume', inputs: buffers }, { transferList: buffers })) as number;
}

async function piscinaShuffle(pool: Piscina): Promise<number> {
  const bytes = (SHUFFLE_MB * MB) / SHUFFLE_P;
  const parts = (await Promise.all(
    Array.from({ length: SHUFFLE_P }, (_, index) => pool.run({ op: 'produce', bytes, parts: SHUFFLE_P, index })),
  )) as ArrayBuffer[][];
  const sums = await Promise.all(
    Array.from({ length: SHUFFLE_P }, (_, consumer) => {
      const inputs = parts.map((p) => p[consumer]!);
      return pool.run({ op: 'consume', inputs }, { transferList: inputs }) as Promise<number>;
    }),
  );
  return sums.reduce((a, b) => a + b, 0);
}

const { MiniCluster } = await compiled<{ MiniCluster: typeof MiniClusterType }>('lib/index.js');
const clusters = new Map<string, MiniClusterType>();
const wide = new Map<string, MiniClusterType>();
for (const mode of MODES) {
  // Network memory for a whole job's partitions: the in-memory path is measured, not spilling to disk.
  const resources = (slots: number) => ({
    cpuCores: slots,
    taskHeapMemory: '256m',
    managedMemory: '128m',
    networkMemory: `${Math.max(64, 2 * SHUFFLE_MB)}m`,
  });
  clusters.set(
    mode,
    await MiniCluster.start({ taskExecutors: 1, slotsPerTaskExecutor: 2, mode, resources: resources(2) }),
  );
  wide.set(
    mode,
    await MiniCluster.start({
      taskExecutors: 1,
      slotsPerTaskExecutor: SHUFFLE_P,
      mode,
      resources: resources(SHUFFLE_P),
    }),
  );
}
// As many threads as the cluster has slots, kept (minThreads): its default idleTimeout of 0 would end every thread
// above the minimum as soon as it is idle, and a round would pay their boots.
const pool = new Piscina({ filename: piscinaTask, minThreads: 2, maxThreads: 2 });
const widePool = new Piscina({ filename: piscinaTask, minThreads: SHUFFLE_P, maxThreads: SHUFFLE_P });

const scenarios = [
  { name: 'gather', bytes: PRODUCERS * MB, spec: gather, peer: piscinaGather, clusters, pool },
  { name: 'shuffle', bytes: SHUFFLE_MB * MB, spec: shuffle, peer: piscinaShuffle, clusters: wide, pool: widePool },
] as const;
const series = [...MODES, 'piscina'] as const;
const runs = new Map<string, Run[]>();
console.log(`data: ${ROUNDS} rounds, ${cpus().length} cores, load ${loadavg()[0]!.toFixed(2)} at the start`);
// Warm-up: one of each, not counted.
for (const s of scenarios) {
  for (const [mode, cluster] of s.clusters) {
    const started = performance.now();
    await runJob(cluster, s.spec());
    console.log(`  warm-up ${s.name} ${mode}: ${(performance.now() - started).toFixed(0)} ms`);
  }
  await s.peer(s.pool);
}
for (let round = 0; round < ROUNDS; round++) {
  for (const s of scenarios) {
    for (const mode of series) {
      const cluster = s.clusters.get(mode);
      const run = await measured(mode, s.bytes, () =>
        cluster === undefined ? s.peer(s.pool) : runJob(cluster, s.spec()),
      );
      const key = `${s.name} ${mode}`;
      runs.set(key, [...(runs.get(key) ?? []), run]);
      console.log(
        `  round ${round + 1} ${key.padEnd(16)} ${run.mbPerSec.toFixed(0)} MB/s, ` +
          `${run.cpuMsPerMb.toFixed(2)} ms CPU/MB, coordinator +${run.growthMb.toFixed(1)} MB`,
      );
    }
  }
}
await pool.destroy();
await widePool.destroy();
for (const cluster of [...clusters.values(), ...wide.values()]) await cluster.close();

const figures: Record<string, { mbPerSec: Spread; cpuMsPerMb: Spread; growthMb: Spread }> = {};
console.log(`\n${'series'.padEnd(20)} ${'MB/s'.padEnd(26)} ${'CPU ms/MB'.padEnd(26)} coordinator growth MB`);
for (const [key, list] of runs) {
  const row = {
    mbPerSec: spreadOf(list.map((r) => r.mbPerSec)),
    cpuMsPerMb: spreadOf(list.map((r) => r.cpuMsPerMb)),
    growthMb: spreadOf(list.map((r) => r.growthMb)),
  };
  figures[key] = row;
  console.log(
    `${key.padEnd(20)} ${formatSpread(row.mbPerSec, 1).padEnd(26)} ${formatSpread(row.cpuMsPerMb, 2).padEnd(26)} ` +
      formatSpread(row.growthMb, 1),
  );
}
const verdicts: string[] = [];
for (const s of scenarios) {
  const peer = figures[`${s.name} piscina`]!;
  for (const mode of MODES) {
    const ours = figures[`${s.name} ${mode}`]!;
    const rate = ours.mbPerSec.median / peer.mbPerSec.median;
    const cpu = ours.cpuMsPerMb.median / peer.cpuMsPerMb.median;
    verdicts.push(
      `${s.name} ${mode}: ${rate.toFixed(2)}× piscina's MB/s (target ≥ ${TARGETS.mbPerSecVsPiscina}) ` +
        `${rate >= TARGETS.mbPerSecVsPiscina ? 'met' : 'NOT met'}; CPU/MB ${cpu.toFixed(2)}× ` +
        `(≤ ${TARGETS.cpuPerMbVsPiscina}) ${cpu <= TARGETS.cpuPerMbVsPiscina ? 'met' : 'NOT met'}; coordinator ` +
        `+${ours.growthMb.max.toFixed(0)} MB at most (≤ ${TARGETS.coordinatorGrowthMb}) ` +
        `${ours.growthMb.max <= TARGETS.coordinatorGrowthMb ? 'met' : 'NOT met'}`,
    );
  }
}
console.log(`\n${verdicts.join('\n')}\nload ${loadavg()[0]!.toFixed(2)} at the end`);
printJson({
  rounds: ROUNDS,
  load: loadavg()[0],
  targets: TARGETS,
  figures: Object.fromEntries(
    Object.entries(figures).map(([k, v]) => [
      k,
      {
        mbPerSec: roundedSpread(v.mbPerSec),
        cpuMsPerMb: roundedSpread(v.cpuMsPerMb),
        growthMb: roundedSpread(v.growthMb),
      },
    ]),
  ),
});
