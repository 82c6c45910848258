/**
 * Leadership of a session cluster over a real nats-server (lib/cluster/LeaderElection.ts): any
 * number of JobManagers for one cluster id, one leads, the others stand by — refusing jobs with
 * ClusterError('not-leader'), redirecting their REST API to the leader and creating no TaskManager.
 * When the leader stops, a standby leads at once, recovers the jobs that had not ended (the job store,
 * high-availability.type 'nats') and keeps the results of those that had; the TaskManager follows the
 * new leader under its ResourceID, and drops what a deposed leader still sends (counted).
 * Skipped with a line saying so when nats-server is not installed.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { headers as natsHeaders } from '@nats-io/transport-node';
import { expect } from 'chai';
import { startJobManager, type JobManager } from '../../lib/cluster/JobManager.js';
import { clusterSubjects } from '../../lib/cluster/clusterSubjects.js';
import { connectNats } from '../../lib/cluster/natsConnection.js';
import { TaskManager } from '../../lib/cluster/TaskManager.js';
import { ClusterError } from '../../lib/core/errors.js';
import type { JobID } from '../../lib/core/ids.js';
import { HEADER_FENCE, HEADER_FROM, HEADER_REPLY, HEADER_SESSION } from '../../lib/rpc/natsWire.js';
import { rejection } from '../rpc/support/transports.js';
import { until } from '../support/eventually.js';
import { natsServerOrSkip, startNatsServer, type NatsServer } from '../support/natsServer.js';

const CLUSTER = 'led';
/** A 2 s lease renewed every 250 ms; a leader that cannot renew steps down after 1.5 s. */
const configuration = {
  'heartbeat.interval': 500,
  'heartbeat.timeout': 3_000,
  'high-availability.leader-election.lease-duration': 2_000,
  'high-availability.leader-election.renew-deadline': 1_500,
  'high-availability.leader-election.retry-period': 250,
};
const sleep = new URL('../fixtures/tasks/sleep.ts', import.meta.url);
const ok = new URL('../fixtures/tasks/ok.ts', import.meta.url);
const countedSleep = new URL('../fixtures/tasks/countedSleep.ts', import.meta.url);

describe('leadership of a session cluster (over NATS)', function () {
  this.timeout(60_000);
  let server: NatsServer | undefined;
  const jobManagers: JobManager[] = [];
  let taskManager: TaskManager | undefined;
  let cacheDir: string;
  const start = async () => {
    const jobManager = await startJobManager({
      nats: server!.url,
      clusterId: CLUSTER,
      configuration,
      rest: { port: 0 },
    });
    jobManagers.push(jobManager);
    return jobManager;
  };
  const registeredAt = (jobManager: JobManager) => jobManager.overview().taskExecutors.map((te) => te.resourceId);

  before(async function () {
    const binary = natsServerOrSkip(this, 'leadership of a session cluster');
    server = await startNatsServer(binary);
    cacheDir = mkdtempSync(join(tmpdir(), 'slotwise-tm-cache-'));
  });

  after(async () => {
    await taskManager?.close();
    for (const jobManager of jobManagers) await jobManager.close();
    await server?.stop();
    if (cacheDir !== undefined) rmSync(cacheDir, { recursive: true, force: true });
  });

  let first: JobManager;
  let second: JobManager;

  it('one leads; a second stands by: it refuses jobs, redirects REST to the leader, gets no TaskManager', async () => {
    first = await start();
    expect(first.isLeader).to.equal(true);
    taskManager = await TaskManager.start({ nats: server!.url, clusterId: CLUSTER, cacheDir, slots: 1, configuration });
    await until('the TaskManager to register', () => registeredAt(first).length === 1);
    expect(taskManager.leaderToken).to.equal(first.leader!.token);

    second = await start();
    expect(second.isLeader).to.equal(false);
    await until('the standby to read who leads', () => second.leader?.holder.restUrl === first.restUrl);
    expect(second.leader!.token).to.equal(first.leader!.token);
    const refused = await rejection(
      second.submitJob({ name: 'refused', vertices: [{ id: 'ok', taskModule: ok, parallelism: 1 }] }),
    );
    expect(refused).to.be.instanceOf(ClusterError);
    expect((refused as ClusterError).reason).to.equal('not-leader');
    expect((refused as ClusterError).message).to.include(`is led by the JobManager on `);
    expect((refused as ClusterError).message).to.include(first.restUrl!);
    expect(second.listJobs()).to.deep.equal([]);

    const redirect = await fetch(`${second.restUrl}/jobs/overview`, { redirect: 'manual' });
    expect(redirect.status).to.equal(307);
    expect(redirect.headers.get('location')).to.equal(`${first.restUrl}/jobs/overview`);
    expect((await fetch(`${second.restUrl}/jobs/overview`)).status).to.equal(200);

    // Renewed past its lease many times over: the same leader, the same TaskManager, nothing at the standby.
    await new Promise((resolve) => setTimeout(resolve, 2_500));
    expect(first.isLeader).to.equal(true);
    expect(second.isLeader).to.equal(false);
    expect(registeredAt(first)).to.deep.equal([taskManager.resourceId]);
    expect(second.overview().taskExecutors).to.deep.equal([]);
    expect(taskManager.incarnations).to.equal(1);
  });

  let recovered: JobID;

  it('when the leader stops a standby leads at once, recovers the running job; the TaskManager follows', async () => {
    const resourceId = taskManager!.resourceId;
    const job = await first.submitJob({
      name: 'outlives its leader',
      // Long enough not to finish while its leader closes (a subtask that finished then would not run again).
      vertices: [{ id: 'sleep', taskModule: sleep, parallelism: 1, config: { ms: 4_000 } }],
    });
    recovered = job.jobId;
    let slot: string | null = null;
    job.onEvent((event) => {
      if (event.type === 'task' && event.state === 'running') slot = event.allocationId;
    });
    await until('the subtask to run', () => slot !== null);
    const stopped = Date.now();
    // It lets go of the lease as it begins to close: the standby leads while it still stops its jobs.
    const closed = first.close();
    await until('the standby to lead', () => second.isLeader, 3_000);
    expect(Date.now() - stopped, 'the standby led after (ms)').to.be.below(2_000);
    await closed;
    await until('the TaskManager to register with the new leader', () => registeredAt(second).includes(resourceId));
    expect(taskManager!.resourceId).to.equal(resourceId);
    expect(taskManager!.incarnations).to.equal(1);
    expect(taskManager!.leaderToken).to.equal(second.leader!.token);
    const again = second.getJob(recovered);
    expect(again, 'the recovered job').to.not.equal(undefined);
    // Its slot was offered back to the recovered job and taken: the same allocation, not a second one.
    const master = second.dispatcher.getJobView(recovered)!;
    const rerun = await until('the recovered subtask to run', () =>
      master.executions().find((e) => e.state === 'running'),
    );
    expect(rerun.allocationId).to.equal(slot);
    const result = await again!.result;
    expect(result.status).to.equal('finished');
    expect(result.outputs['sleep']).to.deep.equal([{ subtask: 0, attempt: 0, inputs: {} }]);
  });

  it('a job that ended under one leader keeps its result for the next', async () => {
    const third = await start();
    expect(third.isLeader).to.equal(false);
    await second.close();
    await until('the third JobManager to lead', () => third.isLeader, 3_000);
    const summary = third.listJobs().find((job) => job.jobId === recovered);
    expect(summary).to.deep.include({ status: 'finished', name: 'outlives its leader' });
    const result = await third.getJob(recovered)!.result;
    expect(result.status).to.equal('finished');
    expect(result.outputs['sleep']).to.deep.equal([{ subtask: 0, attempt: 0, inputs: {} }]);
    // Not run again: nothing of it is in the job store any more.
    expect(third.getJob(recovered)!.status).to.equal('finished');
    await until('the TaskManager to register with the third leader', () => registeredAt(third).length === 1);
    const next = await third.submitJob({ name: 'served', vertices: [{ id: 'ok', taskModule: ok, parallelism: 1 }] });
    expect((await next.result).status).to.equal('finished');
  });

  it('a recovered job runs only the subtasks that had not finished (each run counted)', async () => {
    const leader = jobManagers.find((jobManager) => jobManager.isLeader)!;
    const standby = await start();
    const log = join(cacheDir, 'runs.log');
    writeFileSync(log, '');
    const job = await leader.submitJob({
      name: 'partly done',
      vertices: [{ id: 'v', taskModule: countedSleep, parallelism: 3, config: { log, ms: [0, 0, 3_000] } }],
    });
    const finished = new Set<number>();
    job.onEvent((event) => event.type === 'task' && event.state === 'finished' && finished.add(event.subtaskIndex));
    await until('subtasks 0 and 1 to finish', () => finished.size === 2);
    // Their progress goes to the job store within a flush (50 ms).
    await new Promise((resolve) => setTimeout(resolve, 300));
    await leader.close();
    await until('the standby to lead', () => standby.isLeader, 3_000);
    const result = await standby.getJob(job.jobId)!.result;
    expect(result.status).to.equal('finished');
    expect(result.outputs['v']).to.deep.equal([0, 1, 2]);
    const runs = readFileSync(log, 'utf8').trim().split('\n').sort();
    // Subtasks 0 and 1 ran once; 2, canceled with its leader, ran again.
    expect(runs).to.deep.equal(['0 0', '1 0', '2 0', '2 0']);
  });

  it('what a deposed leader still sends a TaskManager is dropped unheard, and counted', async () => {
    const tm = taskManager!;
    const before = tm.fencedMessages;
    const connection = await connectNats({ url: server!.url, name: 'a deposed JobManager', clusterId: CLUSTER });
    try {
      const h = natsHeaders();
      h.set(HEADER_FROM, 'jobmanager');
      h.set(HEADER_REPLY, clusterSubjects(CLUSTER).resourceManager);
      h.set(HEADER_SESSION, 'deposed-session');
      h.set(HEADER_FENCE, String(tm.leaderToken - 1));
      for (let i = 0; i < 3; i++)
        connection.publish(clusterSubjects(CLUSTER).taskExecutor(tm.resourceId), new Uint8Array([1, 2, 3]), {
          headers: h,
        });
      await connection.flush();
      await until('the TaskManager to drop the three', () => tm.fencedMessages === before + 3);
      expect(tm.registered).to.equal(true);
      expect(tm.incarnations).to.equal(1);
    } finally {
      await connection.close();
    }
  });

  it("a deposed leader's client follows its job: its result is the job's end under the next leader", async () => {
    const leader = jobManagers.find((jobManager) => jobManager.isLeader)!;
    const standby = await start();
    const job = await leader.submitJob({
      name: 'outlives its client’s leader',
      vertices: [{ id: 'sleep', taskModule: sleep, parallelism: 1, config: { ms: 3_000 } }],
    });
    const statuses: string[] = [];
    job.onEvent((event) => event.type === 'status' && statuses.push(event.status));
    await until('the job to run', () => job.status === 'running');
    // Someone speaks to the leader under a newer fencing token: it steps down (its jobs stop here, not for the
    // cluster), and the standby leads and recovers the job.
    const connection = await connectNats({ url: server!.url, name: 'a newer leader', clusterId: CLUSTER });
    try {
      const h = natsHeaders();
      h.set(HEADER_FROM, 'taskmanager-someone');
      h.set(HEADER_REPLY, clusterSubjects(CLUSTER).taskExecutor('taskmanager-someone'));
      h.set(HEADER_SESSION, 'newer-session');
      h.set(HEADER_FENCE, String(leader.leader!.token + 1_000_000));
      connection.publish(clusterSubjects(CLUSTER).resourceManager, new Uint8Array([1]), { headers: h });
      await connection.flush();
    } finally {
      await connection.close();
    }
    await until('the leader to step down', () => !leader.isLeader);
    expect(job.status, 'not canceled: the job goes on elsewhere').to.equal('running');
    expect(await rejection(job.cancel())).to.be.instanceOf(ClusterError);
    const result = await job.result;
    expect(standby.isLeader || leader.isLeader, 'someone leads').to.equal(true);
    expect(result.status).to.equal('finished');
    expect(result.outputs['sleep']).to.have.length(1);
    expect(statuses, 'no cancel reached the client').to.not.include('canceled');
  });
});
