/**
 * A leader cut off from the network (test/support/netns.ts): two JobManagers, each in a network
 * namespace of its own, nats-server and a TaskManager in the root namespace. Taking the leader's link
 * down, it steps down after its renew deadline — before its lease lapses — and the standby leads once
 * the lease lapsed; the TaskManager follows the new leader under its ResourceID. Once the link is up
 * again the old leader stands by, and whatever it had buffered for the TaskManager meanwhile is
 * dropped for its stale fencing token. Needs root and iproute2 (skipped visibly otherwise).
 */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { TaskManager } from '../../lib/cluster/TaskManager.js';
import { resolveTsx } from '../../lib/rpc/startWorker.js';
import type { JobManagerControl } from '../fixtures/clusterProcess.js';
import { until } from '../support/eventually.js';
import { createTestNetwork, netnsOrSkip, type TestNetwork } from '../support/netns.js';
import { natsServerOrSkip, startNatsServer, type NatsServer } from '../support/natsServer.js';
import { control, ENTRY, stop, type Started } from './support/clusterProcesses.js';

const CLUSTER = 'partitioned';
const configuration = {
  'heartbeat.interval': 500,
  'heartbeat.timeout': 3_000,
  'high-availability.leader-election.lease-duration': 3_000,
  'high-availability.leader-election.renew-deadline': 2_000,
  'high-availability.leader-election.retry-period': 250,
};

describe('a leading JobManager cut off from the network (namespaces)', function () {
  this.timeout(180_000);
  let network: TestNetwork | undefined;
  let server: NatsServer | undefined;
  const jobManagers: Array<Started<JobManagerControl>> = [];
  let taskManager: TaskManager | undefined;

  before(async function () {
    const binary = natsServerOrSkip(this, 'a partitioned leader');
    netnsOrSkip(this, 'a partitioned leader');
    network = createTestNetwork(2);
    server = await startNatsServer(binary, { address: network.serverAddress });
  });

  after(async () => {
    await taskManager?.close();
    for (const jobManager of jobManagers) await stop(jobManager);
    await server?.stop();
    network?.remove();
  });

  const startIn = (host: number) => {
    const options = { nats: server!.url, clusterId: CLUSTER, configuration };
    // `ip netns exec` execs node in the namespace; the IPC channel's descriptor goes with it.
    const child = spawn(
      'ip',
      [
        ...['netns', 'exec', network!.namespace(host), process.execPath],
        ...['--import', resolveTsx('.', ENTRY), fileURLToPath(ENTRY), 'jobmanager', JSON.stringify(options)],
      ],
      { stdio: ['ignore', 'inherit', 'inherit', 'ipc'], serialization: 'advanced' },
    );
    const started = control<JobManagerControl>(`jobmanager in ${network!.namespace(host)}`, child);
    jobManagers.push(started);
    return started.control;
  };

  it('steps down within its renew deadline, the standby leads, and it stands by once the network heals', async () => {
    const first = startIn(1);
    expect((await first.leadership()).isLeader).to.equal(true);
    const second = startIn(2);
    expect((await second.leadership()).isLeader).to.equal(false);
    taskManager = await TaskManager.start({ nats: server!.url, clusterId: CLUSTER, slots: 1, configuration });
    await until('the TaskManager to register', async () => (await first.overview()).taskExecutors.length === 1);
    const resourceId = taskManager.resourceId;
    const firstToken = taskManager.leaderToken;

    network!.linkDown(1);
    const cut = Date.now();
    try {
      await until('the cut-off leader to step down', async () => !(await first.leadership()).isLeader, 10_000);
      const steppedDownMs = Date.now() - cut;
      await until('the standby to lead', async () => (await second.leadership()).isLeader, 10_000);
      const ledMs = Date.now() - cut;
      // It stepped down before the standby could lead: never two leaders at once.
      expect(steppedDownMs, 'stepped down after (ms)').to.be.below(ledMs);
      expect(ledMs, 'the standby led after (ms)').to.be.below(3_000 + 2_000);
      const { changes } = await first.leadership();
      expect(changes.at(-1)).to.deep.include({ leading: false });
      expect(changes.at(-1)!.reason).to.match(/could not be renewed within 2000 ms|another JobManager/);
      await until('the TaskManager to follow the new leader', async () =>
        (await second.overview()).taskExecutors.some((te) => te.resourceId === resourceId),
      );
      expect(taskManager.leaderToken).to.be.above(firstToken);
      expect(taskManager.incarnations).to.equal(1);
    } finally {
      network!.linkUp(1);
    }
    // Healed: the old leader reconnects, hears the new lease and stands by.
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    expect((await first.leadership()).isLeader).to.equal(false);
    expect((await second.leadership()).isLeader).to.equal(true);
    expect((await first.overview()).taskExecutors).to.deep.equal([]);
    expect(taskManager.registered).to.equal(true);
    expect(taskManager.resourceId).to.equal(resourceId);
  });
});
