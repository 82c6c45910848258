/**
 * Failover of a session cluster's JobManager (issue 26, "Benchmarks"), over a real nats-server on
 * loopback:
 * 1. Failover time: the leading JobManager (`slotwise jobmanager`, a child process) is SIGKILLed; the
 *    clock stops when the standby (another child) serves its REST API itself — `GET /overview` answered
 *    200, not redirected — with the TaskManager registered there. Each round a fresh standby is started
 *    first (not timed), so the cluster stays warm: one TaskManager (in this process) throughout.
 *    FAILOVER_ROUNDS rounds with the default options (15 s lease), then with a 2 s lease (renew
 *    deadline 1.5 s, retry period 250 ms); min / median / max.
 * 2. What the job store costs: 1,000-subtask trivial jobs back to back on two clusters of the same shape
 *    (a JobManager in this process, two TaskManager child processes × 4 slots each), one with
 *    high-availability.type nats (each job persisted before it starts, its result stored at its end),
 *    one with none, interleaved rounds; wall time per job, and CPU over every process (the bench's, the
 *    TaskManagers', nats-server's) from the submit until the machine is idle again. Fencing is on in both (it has
 *    no switch: a header and a compare).
 *
 * Needs nats-server (without it the bench says so and exits 0). `npm run bench -- failover`; the last
 * line is one JSON object with every figure.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { startJobManager } from '../lib/cluster/JobManager.js';
import { TaskManager } from '../lib/cluster/TaskManager.js';
import type { JobGraphSpec } from '../lib/jobmaster/JobGraph.js';
import { FIXTURES, startJobManagerChild, TSX_CLI } from '../test/cli/support.js';
import { start, stop } from '../test/cluster/support/clusterProcesses.js';
import type { TaskManagerControl } from '../test/fixtures/clusterProcess.js';
import { until } from '../test/support/eventually.js';
import { natsServerBinary, startNatsServer } from '../test/support/natsServer.js';
import { processTreeCpuMs, untilIdle } from './support/procStat.js';
import { printJson, round } from './support/report.js';

const ROUNDS = Number(process.env['FAILOVER_ROUNDS'] ?? 5);
const JOB_ROUNDS = Number(process.env['FAILOVER_JOB_ROUNDS'] ?? 5);
const P = 1000;
const SLOTS = 4;

const binary = natsServerBinary();
if (binary === undefined) {
  console.log('skipped: nats-server is not installed (apt-get install -y nats-server)');
  process.exit(0);
}

const sorted = (values: number[]) => [...values].sort((x, y) => x - y);
const median = (values: number[]) => sorted(values)[Math.floor((values.length - 1) / 2)]!;
const spread = (values: number[]) => {
  const s = sorted(values);
  return `${round(s[0]!)} / ${round(median(values))} / ${round(s.at(-1)!)}`;
};

const server = await startNatsServer(binary);
const tmp = mkdtempSync(join(tmpdir(), 'slotwise-bench-failover-'));
const cleanups: Array<() => Promise<unknown>> = [
  () => server.stop(),
  async () => rmSync(tmp, { recursive: true, force: true }),
];
const failover: Record<string, number[]> = {};
const jobs = { nats: [] as number[], none: [] as number[] };
const cpu = { nats: [] as number[], none: [] as number[] };
try {
  for (const [name, options] of [
    ['default options (15 s lease)', {}],
    [
      '2 s lease',
      {
        'high-availability.leader-election.lease-duration': 2_000,
        'high-availability.leader-election.renew-deadline': 1_500,
        'high-availability.leader-election.retry-period': 250,
      },
    ],
  ] as const) {
    const clusterId = name.startsWith('2') ? 'failover-short' : 'failover-default';
    const properties = Object.entries(options).flatMap(([key, value]) => ['-D', `${key}=${value}`]);
    // Killed with SIGKILL, a JobManager cannot remove its temporary files: they go to a directory of ours.
    const jobManager = () =>
      startJobManagerChild(
        TSX_CLI,
        ['--nats', server.url, '--cluster-id', clusterId, '--rest-port', '0', ...properties],
        FIXTURES,
        { ...process.env, TMPDIR: tmp },
      );
    let leader = await jobManager();
    const taskManager = await TaskManager.start({
      nats: server.url,
      clusterId,
      slots: 1,
      configuration: options,
      logger: () => {},
    });
    await until('the TaskManager to register', () => taskManager.registered, 60_000);
    const times: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const standby = await jobManager();
      if (!/standing by/.test(standby.output())) throw new Error(`not a standby:\n${standby.output()}`);
      const killed = performance.now();
      leader.child.kill('SIGKILL');
      await until(
        'the standby to serve with the TaskManager registered',
        async () => {
          const answer = await fetch(`${standby.url}/overview`, { redirect: 'manual' }).catch(() => null);
          if (answer?.status !== 200) return false;
          return ((await answer.json()) as { taskmanagers: number }).taskmanagers === 1;
        },
        60_000,
      );
      times.push(performance.now() - killed);
      leader = standby;
    }
    failover[name] = times;
    await taskManager.close();
    await leader.stop();
  }

  // The job store's cost on a 1,000-subtask job.
  const job = (): JobGraphSpec => ({
    name: `trivial p=${P}`,
    vertices: [
      { id: 'v', taskModule: new URL('./support/tasks/subtaskIndex.mjs', import.meta.url).href, parallelism: P },
    ],
  });
  const shape = { slots: SLOTS, cpuCores: SLOTS, taskHeap: '1g', managedMemory: '64m', networkMemory: '32m' };
  const clusters = {} as Record<'nats' | 'none', Awaited<ReturnType<typeof startJobManager>>>;
  for (const type of ['nats', 'none'] as const) {
    const clusterId = `store-${type}`;
    const jobManager = await startJobManager({
      nats: server.url,
      clusterId,
      configuration: { 'high-availability.type': type },
      logger: () => {},
    });
    cleanups.push(() => jobManager.close());
    const taskManagers = [0, 1].map(() =>
      start<TaskManagerControl>('taskmanager', { nats: server.url, clusterId, ...shape }),
    );
    cleanups.push(() => Promise.all(taskManagers.map((tm) => stop(tm))));
    await until('both TaskManagers registered', () => jobManager.overview().taskExecutors.length === 2, 120_000);
    clusters[type] = jobManager;
  }
  /** One job's wall time, and its CPU over every process of the bench (nats-server too) until idle again. */
  const runOnce = async (type: 'nats' | 'none') => {
    const cpuBefore = processTreeCpuMs();
    const started = performance.now();
    const result = await (await clusters[type].submitJob(job())).result;
    const ms = performance.now() - started;
    if (result.status !== 'finished' || result.outputs['v']?.length !== P)
      throw new Error(`wrong result: ${result.status}`);
    await untilIdle();
    cpu[type].push(processTreeCpuMs() - cpuBefore);
    return ms;
  };
  await runOnce('nats');
  await runOnce('none');
  cpu.nats.length = 0;
  cpu.none.length = 0;
  for (let round = 0; round < JOB_ROUNDS; round++) {
    jobs.nats.push(await runOnce('nats'));
    jobs.none.push(await runOnce('none'));
  }
} finally {
  for (const cleanup of cleanups.reverse()) await cleanup().catch(() => {});
}

console.table(
  Object.entries(failover).map(([name, times]) => ({
    'leader SIGKILL → standby serving, TaskManager registered': name,
    'ms (min / median / max)': spread(times),
  })),
);
const overhead = median(jobs.nats) / median(jobs.none);
console.table([
  {
    cluster: 'high-availability.type nats (job store)',
    'ms per 1,000-subtask job (min / median / max)': spread(jobs.nats),
  },
  { cluster: 'high-availability.type none', 'ms per 1,000-subtask job (min / median / max)': spread(jobs.none) },
]);
const cpuOverhead = median(cpu.nats) / median(cpu.none);
console.log(`job store overhead on a 1,000-subtask job: ${round((overhead - 1) * 100)} % (median / median)`);
console.log(
  `CPU per job until idle (every process): ${spread(cpu.nats)} ms vs ${spread(cpu.none)} ms, ` +
    `${round((cpuOverhead - 1) * 100)} % (median / median)`,
);
printJson({
  bench: 'failover',
  rounds: ROUNDS,
  failoverMs: Object.fromEntries(Object.entries(failover).map(([name, times]) => [name, times.map(round)])),
  jobRounds: JOB_ROUNDS,
  jobMs: { nats: jobs.nats.map(round), none: jobs.none.map(round) },
  storeOverheadPercent: round((overhead - 1) * 100),
  cpuMs: { nats: cpu.nats.map(round), none: cpu.none.map(round) },
  storeCpuOverheadPercent: round((cpuOverhead - 1) * 100),
  node: process.version,
  cpus: cpus().length,
  loadavg1: round(loadavg()[0] ?? NaN),
});
