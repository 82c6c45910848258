/**
 * One JobManager per cluster id (issue 24 item 10; lib/cluster/JobManagerLease.ts), over a real
 * nats-server: a second JobManager on a served cluster id refuses to start, at once and saying who
 * serves it (startJobManager's ClusterError, the CLI's one line and exit code 2), while the first
 * keeps its TaskManager and its lease; once the first stops, a new one starts and the TaskManager
 * joins it; one that died without letting go holds the cluster id only until its lease expires.
 * Skipped with a line saying so when nats-server is not installed.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { startJobManager, type JobManager } from '../../lib/cluster/JobManager.js';
import { JobManagerLease } from '../../lib/cluster/JobManagerLease.js';
import { connectNats } from '../../lib/cluster/natsConnection.js';
import { TaskManager } from '../../lib/cluster/TaskManager.js';
import { runCli } from '../../lib/cli/runCli.js';
import { ClusterError } from '../../lib/core/errors.js';
import { until } from '../support/eventually.js';
import { natsServerOrSkip, startNatsServer, type NatsServer } from '../support/natsServer.js';
import { rejection } from '../rpc/support/transports.js';

const CLUSTER = 'leased';
/** The lease lasts heartbeat.timeout unrenewed: 3 s here, renewed every 500 ms. */
const configuration = { 'heartbeat.interval': 500, 'heartbeat.timeout': 3_000 };
/** How long a refusal may take: a few round trips to the server. */
const REFUSAL_MS = 2_000;
const ok = new URL('../fixtures/tasks/ok.ts', import.meta.url);

describe('one JobManager per cluster id (over NATS)', function () {
  this.timeout(60_000);
  let server: NatsServer | undefined;
  let first: JobManager | undefined;
  let taskManager: TaskManager | undefined;
  let cacheDir: string;

  before(async function () {
    const binary = natsServerOrSkip(this, 'one JobManager per cluster id');
    server = await startNatsServer(binary);
    cacheDir = mkdtempSync(join(tmpdir(), 'slotwise-tm-cache-'));
    first = await startJobManager({ nats: server.url, clusterId: CLUSTER, configuration });
    taskManager = await TaskManager.start({ nats: server.url, clusterId: CLUSTER, cacheDir, slots: 1, configuration });
    await until('the TaskManager to register', () => first!.overview().taskExecutors.length === 1);
  });

  after(async () => {
    await taskManager?.close();
    await first?.close();
    await server?.stop();
    if (cacheDir !== undefined) rmSync(cacheDir, { recursive: true, force: true });
  });

  it('a second JobManager refuses to start with ClusterError naming the first; the first keeps working', async () => {
    const resourceId = taskManager!.resourceId;
    const started = Date.now();
    const error = await rejection(startJobManager({ nats: server!.url, clusterId: CLUSTER, configuration }));
    expect(Date.now() - started, 'the refusal took (ms)').to.be.below(REFUSAL_MS);
    expect(error).to.be.instanceOf(ClusterError);
    expect((error as ClusterError).reason).to.equal('jobmanager-running');
    expect((error as ClusterError).message).to.match(
      new RegExp(`^cluster '${CLUSTER}' already has a JobManager \\(on \\S+, pid ${process.pid}, since `),
    );
    expect((error as ClusterError).details).to.deep.include({ clusterId: CLUSTER });
    // Past the lease's 3 s: renewed, still the first's; its TaskManager never left it.
    await new Promise((resolve) => setTimeout(resolve, 3_500));
    expect(await rejection(startJobManager({ nats: server!.url, clusterId: CLUSTER, configuration }))).to.be.instanceOf(
      ClusterError,
    );
    expect(taskManager!.resourceId).to.equal(resourceId);
    expect(taskManager!.incarnations).to.equal(1);
    expect(first!.overview().taskExecutors.map((te) => te.resourceId)).to.deep.equal([resourceId]);
    const job = await first!.submitJob({
      name: 'still served',
      vertices: [{ id: 'ok', taskModule: ok, parallelism: 1 }],
    });
    expect((await job.result).status).to.equal('finished');
  });

  it('slotwise jobmanager on that cluster id says so in one line and exits with code 2', async () => {
    const stderr: string[] = [];
    const code = await runCli(['jobmanager', '--nats', server!.url, '--cluster-id', CLUSTER, '--rest-port', '0'], {
      stdout: () => {},
      stderr: (line) => stderr.push(line),
      env: {},
      cwd: process.cwd(),
    });
    expect(code).to.equal(2);
    expect(stderr).to.have.length(1);
    expect(stderr[0]).to.match(
      new RegExp(`^slotwise jobmanager: cluster '${CLUSTER}' already has a JobManager \\(on `),
    );
  });

  it('once the first stops, a new JobManager starts on the cluster id and the TaskManager joins it', async () => {
    await first!.close();
    first = await startJobManager({ nats: server!.url, clusterId: CLUSTER, configuration });
    await until('the TaskManager to join the new JobManager', () => first!.overview().taskExecutors.length === 1);
    expect(first!.overview().taskExecutors.map((te) => te.resourceId)).to.deep.equal([taskManager!.resourceId]);
  });

  it('a JobManager that died without letting go holds the cluster id only until its lease expires', async () => {
    const log = () => {};
    const options = { ttlMs: 1_500, renewMs: 500, log };
    const dead = await connectNats({ url: server!.url, name: 'a JobManager that dies', clusterId: 'lease' });
    const alive = await connectNats({ url: server!.url, name: 'the next JobManager', clusterId: 'lease' });
    const held = await JobManagerLease.acquire(dead, 'crashed', options);
    let next: JobManagerLease | undefined;
    try {
      await dead.close(); // no goodbye: its lease is left to expire
      const died = Date.now();
      const refused = await rejection(JobManagerLease.acquire(alive, 'crashed', options));
      expect(refused).to.be.instanceOf(ClusterError);
      expect((refused as ClusterError).details['expiresInMs']).to.be.within(0, 1_500);
      next = await until(
        'the lease to expire',
        () => JobManagerLease.acquire(alive, 'crashed', options).catch(() => undefined),
        10_000,
      );
      expect(Date.now() - died, 'the cluster id was free after (ms)').to.be.at.least(500);
    } finally {
      await held.release(); // its timer only: the connection is gone
      await next?.release();
      await alive.close();
    }
  });
});
