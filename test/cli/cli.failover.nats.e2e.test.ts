/**
 * A JobManager killed mid-job (SIGKILL, a child process) over a real nats-server: the standby leads
 * within the lease and a second, recovers the job under its JobID, the TaskManager follows it under its
 * ResourceID, and `slotwise run --jobmanager LEADER,STANDBY` — started against the leader — follows the
 * job to the new leader and prints its result. The child runs with a 2 s lease (-D options).
 * Skipped with a line saying so when nats-server is not installed.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { startJobManager, type JobManager } from '../../lib/cluster/JobManager.js';
import { TaskManager } from '../../lib/cluster/TaskManager.js';
import { until } from '../support/eventually.js';
import { natsServerOrSkip, startNatsServer, type NatsServer } from '../support/natsServer.js';
import { cliInProcess, FIXTURES, startJobManagerChild, TSX_CLI } from './support.js';

const CLUSTER = 'failover';
const LEASE_MS = 2_000;
const configuration = {
  'heartbeat.interval': 500,
  'heartbeat.timeout': 3_000,
  'high-availability.leader-election.lease-duration': LEASE_MS,
  'high-availability.leader-election.renew-deadline': 1_500,
  'high-availability.leader-election.retry-period': 250,
};

describe('a JobManager killed mid-job (child process, over NATS)', function () {
  this.timeout(120_000);
  let server: NatsServer | undefined;
  let leader: Awaited<ReturnType<typeof startJobManagerChild>> | undefined;
  let standby: JobManager | undefined;
  let taskManager: TaskManager | undefined;

  const tmp = mkdtempSync(join(tmpdir(), 'slotwise-failover-'));

  before(async function () {
    const binary = natsServerOrSkip(this, 'JobManager failover');
    server = await startNatsServer(binary);
  });

  after(async () => {
    leader?.child.kill('SIGKILL');
    await taskManager?.close();
    await standby?.close();
    await server?.stop();
    rmSync(tmp, { recursive: true, force: true });
  });

  it('the standby leads within the lease and a second, and the run follows its job there to the result', async () => {
    const properties = Object.entries(configuration).flatMap(([key, value]) => ['-D', `${key}=${value}`]);
    // The child's temporary files go to a directory of the test's: killed with SIGKILL, it cannot remove them.
    leader = await startJobManagerChild(
      TSX_CLI,
      ['--nats', server!.url, '--cluster-id', CLUSTER, '--rest-port', '0', ...properties],
      FIXTURES,
      { ...process.env, TMPDIR: tmp },
    );
    expect(leader.output()).to.match(/leading \(fencing token \d+\)/);
    standby = await startJobManager({ nats: server!.url, clusterId: CLUSTER, configuration, rest: { port: 0 } });
    expect(standby.isLeader).to.equal(false);
    taskManager = await TaskManager.start({ nats: server!.url, clusterId: CLUSTER, slots: 2, configuration });
    await until('the TaskManager to register', () => taskManager!.registered);
    const resourceId = taskManager.resourceId;

    const run = cliInProcess(['run', '--jobmanager', `${leader.url},${standby.restUrl}`, 'failover.job.mjs', '--json']);
    await until('both subtasks to run', async () => {
      const jobs = (await (await fetch(`${leader!.url}/jobs/overview`)).json()) as {
        jobs: { tasks: { running: number } }[];
      };
      return jobs.jobs[0]?.tasks.running === 2;
    });
    leader.child.kill('SIGKILL');
    const killed = Date.now();
    await until('the standby to lead', () => standby!.isLeader, 10_000);
    const failoverMs = Date.now() - killed;
    expect(failoverMs, 'leader SIGKILL → standby leads (ms)').to.be.at.most(LEASE_MS + 1_000);

    const { code, stdout, stderr } = await run;
    expect(code, stderr).to.equal(0);
    const result = JSON.parse(stdout) as { jobId: string; status: string; outputs: Record<string, unknown[]> };
    expect(result.status).to.equal('finished');
    expect(result.outputs['sleep']).to.deep.equal([0, 1]);
    expect(stderr).to.contain(`is now run by the JobManager at ${standby.restUrl}, which recovered it`);
    expect(standby.getJob(result.jobId as never)?.status).to.equal('finished');
    expect(taskManager.resourceId).to.equal(resourceId);
    expect(taskManager.incarnations).to.equal(1);
    expect(standby.overview().taskExecutors.map((te) => te.resourceId)).to.deep.equal([resourceId]);
  });
});
