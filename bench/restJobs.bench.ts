/**
 * What a job costs when it comes over REST: a JobManager embedded in this process with its REST API (and so its
 * dashboard) on loopback, two `slotwise taskmanager` processes × 4 slots and a nats-server, running p = 1 jobs one
 * at a time two ways, interleaved: submitted in code (`submitJob`, as bench/sessionJobs.bench.ts does, but with the
 * dashboard on) and by a REST client in another process (bench/support/restJobClient.mjs: POST /jobs with the task
 * module's code, then GET /jobs/:id/result until the job ended, 10 ms doubling to 2 s apart, as Flink's
 * RestClusterClient polls). Each result is checked.
 *
 * CPU is counted from the first submit until every process is idle again, split into this process (the JobManager),
 * the client, the TaskManagers and the nats-server. A REST job's latency is mostly the client's polling; its CPU is
 * the figure to watch. Needs nats-server; without it the bench says so and exits 0. `npm run bench -- restJobs`;
 * REST_JOBS, REST_ROUNDS, REST_WARM_UP change it. The last line is one JSON object with every figure.
 */
import { spawn } from 'node:child_process';
import { cpus, loadavg } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { JobGraphSpec } from '../lib/jobmaster/JobGraph.js';
import { until } from '../test/support/eventually.js';
import { natsServerBinary, startNatsServer } from '../test/support/natsServer.js';
import { compiled, ensureCompiled } from './support/compiled.js';
import { untilIdle } from './support/procStat.js';
import { formatSpread, printJson, quantile, round, spreadOf } from './support/report.js';
import { cpuByPart, startCliTaskManager } from './support/sessionCluster.js';

const JOBS = Number(process.env['REST_JOBS'] ?? 200);
const ROUNDS = Number(process.env['REST_ROUNDS'] ?? 3);
/** Jobs each way before the first round: V8 optimizes a job path only after thousands (jobRuns.ts). */
const WARM_UP = Number(process.env['REST_WARM_UP'] ?? 1500);
const SLOTS = 4;
const root = dirname(dirname(fileURLToPath(import.meta.url)));
const TASK = join(root, 'bench/support/tasks/subtaskIndex.mjs');
const CLIENT = join(root, 'bench/support/restJobClient.mjs');

const binary = natsServerBinary();
if (binary === undefined) {
  console.log('skipped: nats-server is not installed (apt-get install -y nats-server)');
  process.exit(0);
}

ensureCompiled();
const { startJobManager } = await compiled<typeof import('../lib/cluster/index.js')>('lib/cluster/index.js');
const spec: JobGraphSpec = { name: 'p=1', vertices: [{ id: 'v', taskModule: TASK, parallelism: 1 }] };

interface Run {
  readonly latencies: readonly number[];
  readonly wallMs: number;
  readonly cpu: Record<string, number>;
  /** GETs of the result per job (REST). */
  readonly gets?: number;
}

interface ClientReport {
  readonly latencies: number[];
  readonly gets: number;
  /** The client's CPU over its jobs (its own count: it has exited when the series is read). */
  readonly cpuMs: number;
}

/** The REST client in a child process: `count` jobs; resolves with what it printed. */
function restClient(url: string, count: number): Promise<ClientReport> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLIENT, url, String(count), TASK], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk));
    child.on('error', reject);
    child.on('exit', (code) => {
      if (code !== 0) return reject(new Error(`the REST client exited with ${code}`));
      resolve(JSON.parse(out) as ClientReport);
    });
  });
}

const server = await startNatsServer(binary);
/** Run last first at the end, whatever happened: no server or child left behind. */
const cleanups: Array<() => Promise<unknown>> = [() => server.stop()];
const runs = { code: [] as Run[], rest: [] as Run[] };
try {
  const jobManager = await startJobManager({
    nats: server.url,
    clusterId: 'bench-rest',
    logger: () => {},
    rest: { port: 0 },
  });
  cleanups.push(() => jobManager.close());
  const taskManagers = [0, 1].map(() => startCliTaskManager(server.url, 'bench-rest', SLOTS));
  cleanups.push(async () => {
    for (const taskManager of taskManagers) await taskManager.stop();
  });
  await until('both TaskManagers registered', () => jobManager.overview().taskExecutors.length === 2, 60_000);
  const url = jobManager.restUrl!;
  const parts = {
    taskmanagers: () => taskManagers.map(({ child }) => child.pid!),
    'nats-server': () => [server.process.pid!],
  };
  const inCode = async () => {
    const result = await (await jobManager.submitJob(spec)).result;
    if (result.status !== 'finished' || result.outputs['v']?.[0] !== 0)
      throw new Error(`wrong result: ${result.status}`);
  };
  for (let i = 0; i < WARM_UP; i++) await inCode();
  await restClient(url, WARM_UP);
  /** One series from an idle machine; CPU by part until idle again, the client's as it counted it. */
  const measured = async (series: () => Promise<{ latencies: number[]; gets?: number; cpuMs?: number }>) => {
    await untilIdle();
    const before = cpuByPart(parts);
    const started = performance.now();
    const { latencies, gets, cpuMs } = await series();
    const wallMs = performance.now() - started;
    await untilIdle();
    const after = cpuByPart(parts);
    const cpu = Object.fromEntries(Object.entries(after).map(([part, ms]) => [part, ms - (before[part] ?? 0)]));
    cpu['client'] = cpuMs ?? 0;
    const run: Run = { latencies, wallMs, cpu, ...(gets === undefined ? {} : { gets: gets / JOBS }) };
    return run;
  };
  for (let r = 0; r < ROUNDS; r++) {
    runs.code.push(
      await measured(async () => {
        const latencies: number[] = [];
        for (let i = 0; i < JOBS; i++) {
          const t = performance.now();
          await inCode();
          latencies.push(performance.now() - t);
        }
        return { latencies };
      }),
    );
    runs.rest.push(await measured(() => restClient(url, JOBS)));
  }
} finally {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {});
}

const at = quantile;
const spread = (values: readonly number[], digits = 0) => formatSpread(spreadOf(values), digits);
const total = (run: Run) => Object.values(run.cpu).reduce((a, b) => a + b, 0);

const figures: Record<string, unknown> = {};
const rows = (['code', 'rest'] as const).map((how) => {
  const list = runs[how];
  const partNames = Object.keys(list[0]?.cpu ?? {});
  const perJob = (part: string) =>
    round(
      at(
        list.map((run) => (run.cpu[part] ?? 0) / JOBS),
        0.5,
      ),
    );
  figures[how] = {
    jobsPerSec: Math.round(
      at(
        list.map((run) => (JOBS * 1000) / run.wallMs),
        0.5,
      ),
    ),
    medianMs: round(
      at(
        list.flatMap((run) => run.latencies),
        0.5,
      ),
    ),
    cpuMsPerJob: round(
      at(
        list.map((run) => total(run) / JOBS),
        0.5,
      ),
    ),
    ...Object.fromEntries(partNames.map((part) => [part, perJob(part)])),
    ...(how === 'rest'
      ? {
          getsPerJob: round(
            at(
              list.map((run) => run.gets ?? 0),
              0.5,
            ),
          ),
        }
      : {}),
  };
  return {
    submitted: how === 'code' ? 'in code (submitJob)' : 'over REST (another process)',
    'jobs/s (min / median / max)': spread(list.map((run) => (JOBS * 1000) / run.wallMs)),
    'median ms': round(
      at(
        list.flatMap((run) => run.latencies),
        0.5,
      ),
    ),
    'CPU ms per job': spread(
      list.map((run) => total(run) / JOBS),
      2,
    ),
    ...Object.fromEntries(partNames.map((part) => [`${part} (median)`, perJob(part)])),
  };
});
console.log(`${JOBS} p = 1 jobs one at a time per series, ${ROUNDS} interleaved rounds, dashboard on`);
console.table(rows);
printJson({
  bench: 'restJobs',
  jobs: JOBS,
  rounds: ROUNDS,
  ...figures,
  node: process.version,
  cpus: cpus().length,
  loadavg1: round(loadavg()[0] ?? Number.NaN),
});
