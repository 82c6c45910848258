/**
 * A session cluster on a 3-node nats-server cluster (loopback), its JetStream streams and object stores
 * with 3 replicas (high-availability.nats.replicas): killing one NATS node mid-job loses nothing — the
 * job finishes with its exact output (its leader keeps leading, or a standby takes over and recovers
 * it), the next job runs, the ended job's result stays queryable. Every process connects with all
 * three nodes' URLs. Skipped with a line saying so when nats-server is not installed.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { startJobManager, type JobManager } from '../../lib/cluster/JobManager.js';
import { TaskManager } from '../../lib/cluster/TaskManager.js';
import type { JobID } from '../../lib/core/ids.js';
import { until } from '../support/eventually.js';
import { startNatsCluster, type NatsCluster } from '../support/natsCluster.js';
import { natsServerOrSkip } from '../support/natsServer.js';

const CLUSTER = 'three-nodes';
const configuration = {
  'heartbeat.interval': 500,
  'heartbeat.timeout': 5_000,
  'high-availability.nats.replicas': 3,
  'high-availability.leader-election.lease-duration': 4_000,
  'high-availability.leader-election.renew-deadline': 3_000,
  'high-availability.leader-election.retry-period': 250,
};
const sleep = new URL('../fixtures/tasks/sleep.ts', import.meta.url);
const ok = new URL('../fixtures/tasks/ok.ts', import.meta.url);

describe('a session cluster on three NATS nodes, one of them killed', function () {
  this.timeout(240_000);
  let nats: NatsCluster | undefined;
  const jobManagers: JobManager[] = [];
  let taskManager: TaskManager | undefined;
  let cacheDir: string;

  before(async function () {
    const binary = natsServerOrSkip(this, 'a session cluster on three NATS nodes');
    nats = await startNatsCluster(binary);
    cacheDir = mkdtempSync(join(tmpdir(), 'slotwise-tm-cache-'));
  });

  after(async () => {
    await taskManager?.close();
    for (const jobManager of jobManagers) await jobManager.close();
    await nats?.stop();
    if (cacheDir !== undefined) rmSync(cacheDir, { recursive: true, force: true });
  });

  it('loses no job, no result and no TaskManager', async () => {
    const start = async () => {
      const jobManager = await startJobManager({ nats: nats!.url, clusterId: CLUSTER, configuration });
      jobManagers.push(jobManager);
      return jobManager;
    };
    const first = await start();
    const second = await start();
    expect([first.isLeader, second.isLeader]).to.deep.equal([true, false]);
    taskManager = await TaskManager.start({ nats: nats!.url, clusterId: CLUSTER, cacheDir, slots: 2, configuration });
    await until('the TaskManager to register', () => taskManager!.registered);
    const resourceId = taskManager.resourceId;
    const done = await first.submitJob({
      name: 'done before',
      vertices: [{ id: 'ok', taskModule: ok, parallelism: 1 }],
    });
    expect((await done.result).status).to.equal('finished');

    // A node's loss is a transient failure: attempts that meet it run again (as a user would configure them).
    const job = await first.submitJob({
      name: 'across a node loss',
      vertices: [{ id: 'sleep', taskModule: sleep, parallelism: 2, config: { ms: 3_000 } }],
      restartStrategy: { type: 'fixed-delay', attempts: 10, delay: 500 },
    });
    const jobId: JobID = job.jobId;
    await until('the job to run', () => job.status === 'running');
    nats!.kill(0);

    const leader = () => jobManagers.find((jobManager) => jobManager.isLeader);
    const result = await until(
      'the job to finish under whoever leads',
      async () => {
        const client = leader()?.getJob(jobId);
        const status = client?.status;
        return status === 'finished' || status === 'failed' || status === 'canceled' ? client!.result : undefined;
      },
      // Under a whole suite's load the streams' new leaders, a step-down and the restarts have taken over 60 s.
      150_000,
    );
    expect(result.status, result.error?.message).to.equal('finished');
    expect(result.outputs['sleep']).to.have.length(2);
    const now = leader()!;
    expect((await now.getJob(done.jobId)!.result).status).to.equal('finished');
    await until('the TaskManager to be registered with the leader', () =>
      now.overview().taskExecutors.some((te) => te.resourceId === taskManager!.resourceId),
    );
    expect(taskManager.resourceId).to.equal(resourceId);
    const next = await now.submitJob({ name: 'after', vertices: [{ id: 'ok', taskModule: ok, parallelism: 2 }] });
    expect((await next.result).status).to.equal('finished');
  });
});
