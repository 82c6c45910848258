/**
 * Many small jobs on a session cluster, as an application runs them (issue 23's series (a) and (d), on the
 * cluster of issue 13): a JobManager embedded in this process (`startJobManager` from the compiled package),
 * two TaskManagers started as `slotwise taskmanager` processes (4 slots each, thread mode) and a nats-server on
 * loopback, against a MiniCluster of the same shape in process mode (2 TaskExecutor children × 4 slots). Per
 * round and cluster, interleaved: JOBS jobs of parallelism 1 one at a time (each submitted as the previous one's
 * result came), then BURST submitted at once. Each result is checked.
 *
 * CPU is counted over this process's threads and every child (the TaskManagers, the MiniCluster's TaskExecutors,
 * the nats-server) from the first submit until the machine is idle again after the last result, and split by
 * who spent it. The task module is a plain file given by path, as a user gives it (bundled at the first submit
 * and remembered). Needs nats-server; without it the bench says so and exits 0. `npm run bench -- sessionJobs`;
 * SESSION_JOBS, SESSION_BURST, SESSION_ROUNDS, SESSION_WARM_UP change it. The last line is one JSON object with
 * every figure.
 */
import { cpus, loadavg } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { JobGraphSpec } from '../lib/jobmaster/JobGraph.js';
import { until } from '../test/support/eventually.js';
import { natsServerBinary, startNatsServer } from '../test/support/natsServer.js';
import { compiled, ensureCompiled } from './support/compiled.js';
import { childPids, untilIdle } from './support/procStat.js';
import { cpuByPart, sameShapeMiniCluster, startCliTaskManager } from './support/sessionCluster.js';
import { formatSpread, printJson, quantile, round, spreadOf } from './support/report.js';

const JOBS = Number(process.env['SESSION_JOBS'] ?? 300);
const BURST = Number(process.env['SESSION_BURST'] ?? 300);
const ROUNDS = Number(process.env['SESSION_ROUNDS'] ?? 3);
/** p = 1 jobs on each cluster before the first round: V8 optimizes a job path only after thousands (jobRuns.ts). */
const WARM_UP = Number(process.env['SESSION_WARM_UP'] ?? 2000);
const SLOTS = 4;
const root = dirname(dirname(fileURLToPath(import.meta.url)));

const binary = natsServerBinary();
if (binary === undefined) {
  console.log('skipped: nats-server is not installed (apt-get install -y nats-server)');
  process.exit(0);
}

type ClusterApi = typeof import('../lib/cluster/index.js');
type PackageApi = typeof import('../lib/index.js');
interface Submits {
  submitJob(spec: JobGraphSpec): Promise<{ readonly result: Promise<{ status: string; outputs: object }> }>;
}

ensureCompiled();
const { startJobManager } = await compiled<ClusterApi>('lib/cluster/index.js');
const { MiniCluster } = await compiled<PackageApi>('lib/index.js');

const spec: JobGraphSpec = {
  name: 'p=1',
  vertices: [{ id: 'v', taskModule: join(root, 'bench/support/tasks/subtaskIndex.mjs'), parallelism: 1 }],
};

async function runJob(cluster: Submits): Promise<void> {
  const result = await (await cluster.submitJob(spec)).result;
  const outputs = (result.outputs as Record<string, unknown[]>)['v'];
  if (result.status !== 'finished' || outputs?.length !== 1 || outputs[0] !== 0)
    throw new Error(`wrong result: ${result.status}, ${JSON.stringify(outputs)}`);
}

interface Run {
  readonly latencies: number[];
  readonly wallMs: number;
  readonly cpu: Record<string, number>;
}

/** One series from an idle machine: its latencies, wall time to the last result, CPU by part until idle again. */
async function series(
  cluster: Submits,
  children: Record<string, () => readonly number[]>,
  how: 'one' | 'burst',
): Promise<Run> {
  await untilIdle();
  const before = cpuByPart(children);
  const started = performance.now();
  const latencies: number[] = [];
  if (how === 'one') {
    for (let i = 0; i < JOBS; i++) {
      const t = performance.now();
      await runJob(cluster);
      latencies.push(performance.now() - t);
    }
  } else {
    await Promise.all(Array.from({ length: BURST }, () => runJob(cluster)));
  }
  const wallMs = performance.now() - started;
  await untilIdle();
  const after = cpuByPart(children);
  const cpu = Object.fromEntries(Object.entries(after).map(([part, ms]) => [part, ms - (before[part] ?? 0)]));
  return { latencies, wallMs, cpu };
}

const server = await startNatsServer(binary);
/** Run last first at the end, whatever happened: no server or child left behind. */
const cleanups: Array<() => Promise<unknown>> = [() => server.stop()];
const runs: Record<'session' | 'mini', { one: Run[]; burst: Run[] }> = {
  session: { one: [], burst: [] },
  mini: { one: [], burst: [] },
};
const partsOf: Record<'session' | 'mini', Record<string, () => readonly number[]>> = {
  session: {},
  mini: {},
};
try {
  const jobManager = await startJobManager({ nats: server.url, clusterId: 'bench', logger: () => {} });
  cleanups.push(() => jobManager.close());
  const taskManagers = [0, 1].map(() => startCliTaskManager(server.url, 'bench', SLOTS));
  cleanups.push(async () => {
    for (const taskManager of taskManagers) await taskManager.stop();
  });
  await until('both TaskManagers registered', () => jobManager.overview().taskExecutors.length === 2, 60_000);
  const mini = await MiniCluster.start(sameShapeMiniCluster(2, SLOTS));
  cleanups.push(() => mini.close());
  const natsPid = server.process.pid!;
  const taskManagerPids = taskManagers.map(({ child }) => child.pid!);
  // Every child of this process but the TaskManagers and the nats-server: the MiniCluster's TaskExecutors.
  const miniPids = () =>
    childPids()
      .map(Number)
      .filter((pid) => pid !== natsPid && !taskManagerPids.includes(pid));
  partsOf.session = { taskmanagers: () => taskManagerPids, 'nats-server': () => [natsPid] };
  partsOf.mini = { taskexecutors: miniPids, 'nats-server': () => [natsPid] };
  // A warm cluster: the task module bundled (session) and checked, V8's job path optimized.
  for (let i = 0; i < WARM_UP; i++) await runJob(jobManager);
  for (let i = 0; i < WARM_UP; i++) await runJob(mini);
  for (let r = 0; r < ROUNDS; r++) {
    for (const how of ['one', 'burst'] as const) {
      runs.session[how].push(await series(jobManager, partsOf.session, how));
      runs.mini[how].push(await series(mini, partsOf.mini, how));
    }
  }
} finally {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {});
}

const at = quantile;
const spread = (values: readonly number[], digits = 0) => formatSpread(spreadOf(values), digits);
const total = (run: Run) => Object.values(run.cpu).reduce((a, b) => a + b, 0);
const jobsOf = (how: 'one' | 'burst') => (how === 'one' ? JOBS : BURST);

const rows = [];
const figures: Record<string, unknown> = {};
for (const cluster of ['session', 'mini'] as const) {
  for (const how of ['one', 'burst'] as const) {
    const list = runs[cluster][how];
    const n = jobsOf(how);
    const perJob = (part: string) => list.map((run) => (run.cpu[part] ?? 0) / n);
    const parts = Object.keys(list[0]?.cpu ?? {});
    rows.push({
      cluster: cluster === 'session' ? 'session cluster (NATS)' : 'MiniCluster (process mode)',
      jobs: how === 'one' ? `${n} one at a time` : `${n} at once`,
      'jobs/s (min / median / max)': spread(list.map((run) => (n * 1000) / run.wallMs)),
      'median ms':
        how === 'one'
          ? round(
              at(
                list.flatMap((run) => run.latencies),
                0.5,
              ),
            )
          : '',
      'p99 ms':
        how === 'one'
          ? round(
              at(
                list.flatMap((run) => run.latencies),
                0.99,
              ),
            )
          : '',
      'CPU ms per job': spread(
        list.map((run) => total(run) / n),
        2,
      ),
      ...Object.fromEntries(parts.map((part) => [`${part} (median)`, round(at(perJob(part), 0.5))])),
    });
    figures[`${cluster}_${how}`] = {
      jobsPerSec: Math.round(
        at(
          list.map((run) => (n * 1000) / run.wallMs),
          0.5,
        ),
      ),
      cpuMsPerJob: round(
        at(
          list.map((run) => total(run) / n),
          0.5,
        ),
      ),
      ...(how === 'one'
        ? {
            medianMs: round(
              at(
                list.flatMap((run) => run.latencies),
                0.5,
              ),
            ),
          }
        : {}),
      ...Object.fromEntries(parts.map((part) => [part, round(at(perJob(part), 0.5))])),
    };
  }
}
console.table(rows);
printJson({
  bench: 'sessionJobs',
  jobs: JOBS,
  burst: BURST,
  rounds: ROUNDS,
  slots: 2 * SLOTS,
  ...figures,
  node: process.version,
  cpus: cpus().length,
  loadavg1: round(loadavg()[0] ?? Number.NaN),
});
