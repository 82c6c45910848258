/**
 * A whole job on a session cluster over NATS (issue 13, "Benchmarks"): a trivial 1,000-subtask job
 * (each subtask returns its index) submitted to a JobManager in this process whose two
 * TaskManagers are child processes (4 slots each) talking over a real nats-server on loopback,
 * against the same job on a MiniCluster of the same shape (2 TaskExecutors × 4 slots in child
 * processes, talking over IPC). Per job: wall time submitJob → result and subtasks per second;
 * ROUNDS interleaved rounds, min / median / max. Each result is checked.
 *
 * Runs the TypeScript sources under tsx (both sides alike). Needs nats-server; without it the
 * bench says so and exits 0. Run with `npm run bench -- clusterJob`; `CLUSTER_JOB_PARALLELISM`,
 * `CLUSTER_JOB_ROUNDS` change it. The last line is one JSON object with every figure.
 */
import { cpus, loadavg } from 'node:os';
import { startJobManager } from '../lib/cluster/JobManager.js';
import type { JobGraphSpec } from '../lib/jobmaster/JobGraph.js';
import { MiniCluster } from '../lib/MiniCluster.js';
import type { TaskManagerControl } from '../test/fixtures/clusterProcess.js';
import { start, stop } from '../test/cluster/support/clusterProcesses.js';
import { until } from '../test/support/eventually.js';
import { natsServerBinary, startNatsServer } from '../test/support/natsServer.js';
import { printJson, round } from './support/report.js';
import { sameShapeMiniCluster, taskManagerShape } from './support/sessionCluster.js';

const P = Number(process.env['CLUSTER_JOB_PARALLELISM'] ?? 1000);
const ROUNDS = Number(process.env['CLUSTER_JOB_ROUNDS'] ?? 3);
const SLOTS = 4;
const shape = taskManagerShape(SLOTS);

const binary = natsServerBinary();
if (binary === undefined) {
  console.log('skipped: nats-server is not installed (apt-get install -y nats-server)');
  process.exit(0);
}

const job = (): JobGraphSpec => ({
  name: `trivial p=${P}`,
  vertices: [
    { id: 'v', taskModule: new URL('./support/tasks/subtaskIndex.mjs', import.meta.url).href, parallelism: P },
  ],
});

async function runOnce(
  submit: (spec: JobGraphSpec) => Promise<{ result: Promise<{ status: string; outputs: Record<string, unknown[]> }> }>,
): Promise<number> {
  const started = performance.now();
  const client = await submit(job());
  const result = await client.result;
  const ms = performance.now() - started;
  const outputs = result.outputs['v'] ?? [];
  if (result.status !== 'finished' || outputs.length !== P || outputs.some((value, i) => value !== i))
    throw new Error(`wrong result: ${result.status}, ${outputs.length} outputs`);
  return ms;
}

const server = await startNatsServer(binary);
/** Run last first at the end, whatever happened: no server or child left behind. */
const cleanups: Array<() => Promise<unknown>> = [() => server.stop()];
const times = { nats: [] as number[], mini: [] as number[] };
try {
  const jobManager = await startJobManager({ nats: server.url, clusterId: 'bench', logger: () => {} });
  cleanups.push(() => jobManager.close());
  const taskManagers = [0, 1].map(() =>
    start<TaskManagerControl>('taskmanager', { nats: server.url, clusterId: 'bench', ...shape }),
  );
  cleanups.push(() => Promise.all(taskManagers.map((tm) => stop(tm))));
  await until('both TaskManagers registered', () => jobManager.overview().taskExecutors.length === 2, 120_000);
  const mini = await MiniCluster.start(sameShapeMiniCluster(2, SLOTS));
  cleanups.push(() => mini.close());
  // One job each to warm up (code bundled and fetched, task threads booted), not counted.
  await runOnce((spec) => jobManager.submitJob(spec));
  await runOnce((spec) => mini.submitJob(spec));
  for (let r = 0; r < ROUNDS; r++) {
    times.nats.push(await runOnce((spec) => jobManager.submitJob(spec)));
    times.mini.push(await runOnce((spec) => mini.submitJob(spec)));
  }
} finally {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {});
}

const sorted = (values: number[]) => [...values].sort((x, y) => x - y);
const median = (values: number[]) => sorted(values)[Math.floor((values.length - 1) / 2)]!;
const rate = (ms: number) => (P * 1000) / ms;
console.table(
  (['nats', 'mini'] as const).map((key) => ({
    cluster:
      key === 'nats'
        ? `session cluster over NATS (2 TaskManager processes × ${SLOTS} slots)`
        : `MiniCluster (2 TaskExecutor processes × ${SLOTS} slots)`,
    'median ms': round(median(times[key])),
    'subtasks/s (min / median / max)': sorted(times[key])
      .reverse()
      .map((ms) => Math.round(rate(ms)))
      .join(' / '),
  })),
);
const ratio = median(times.nats) / median(times.mini);
console.log(`NATS session cluster / MiniCluster, wall time per job: ${round(ratio)}×`);

printJson({
  bench: 'clusterJob',
  parallelism: P,
  rounds: ROUNDS,
  slots: 2 * SLOTS,
  natsMedianMs: round(median(times.nats)),
  miniMedianMs: round(median(times.mini)),
  natsSubtasksPerSec: Math.round(rate(median(times.nats))),
  miniSubtasksPerSec: Math.round(rate(median(times.mini))),
  ratioNatsOverMini: round(ratio),
  node: process.version,
  cpus: cpus().length,
  loadavg1: round(loadavg()[0] ?? NaN),
});
