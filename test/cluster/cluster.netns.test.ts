/**
 * The session cluster across a network the test can cut: each TaskManager in a network namespace
 * of its own (test/support/netns.ts: its own 10.x address, a veth pair to the root namespace where
 * nats-server and the JobManager run). Taking one host's link down makes its TaskExecutor lost
 * and its subtasks run again on the other host; bringing the link back up, that TaskManager
 * registers again by itself. Needs root and iproute2 (skipped visibly otherwise).
 */
import { expect } from 'chai';
import type { JobEvent } from '../../lib/jobmaster/JobMaster.js';
import { until } from '../support/eventually.js';
import { createTestNetwork, netnsOrSkip, type TestNetwork } from '../support/netns.js';
import { natsServerOrSkip } from '../support/natsServer.js';
import { ClusterProcesses } from './support/clusterProcesses.js';

const configuration = {
  'heartbeat.interval': 500,
  'heartbeat.timeout': 3_000,
  'restart-strategy.fixed-delay.delay': 200,
  'cluster.registration.max-timeout': 1_000,
};
const sleep = new URL('../fixtures/tasks/sleep.ts', import.meta.url).href;
type TaskEvent = Extract<JobEvent, { type: 'task' }>;

describe('a session cluster with each TaskManager in a network namespace of its own', function () {
  this.timeout(180_000);
  let network: TestNetwork | undefined;
  const cluster = new ClusterProcesses();

  before(async function () {
    const natsServer = natsServerOrSkip(this, 'cluster in network namespaces');
    netnsOrSkip(this, 'cluster in network namespaces');
    network = createTestNetwork(2);
    await cluster.start({
      natsServer,
      clusterId: 'netns',
      configuration,
      network,
      taskManagers: 2,
      taskManager: { slots: 2, cpuCores: 2, taskHeap: '1g', managedMemory: '64m', networkMemory: '32m' },
    });
  });

  after(async () => {
    await cluster.stop();
    network?.remove();
  });

  it(
    'loses the TaskExecutor whose link goes down, re-places ' + 'its subtasks, and takes it back once the link is up',
    async () => {
      const jm = cluster.jm;
      const jobId = await jm.submit({
        name: 'survives a partition',
        vertices: [{ id: 'wait', taskModule: sleep, parallelism: 2, config: { ms: 8_000 } }],
        restartStrategy: { type: 'fixed-delay', attempts: 3, delay: 200 },
      });
      const running = (events: JobEvent[]) =>
        events.filter((e): e is TaskEvent => e.type === 'task' && e.state === 'running');
      const first = await until('a subtask running', async () => running(await jm.events(jobId))[0]);
      const statuses = await Promise.all(cluster.taskManagers.map((tm) => tm.control.status()));
      const victim = statuses.findIndex((s) => s.resourceId === first.resourceId);
      expect(victim, `subtask ran on ${first.resourceId}`).to.be.at.least(0);
      const survivor = statuses[1 - victim]!.resourceId;

      network!.linkDown(victim + 1);
      try {
        await until(
          'the cut-off TaskExecutor to be lost',
          async () => !(await jm.overview()).taskExecutors.some((te) => te.resourceId === first.resourceId),
          30_000,
        );
        const result = await jm.result(jobId);
        expect(result.status, result.error?.message).to.equal('finished');
        const finished = (await jm.events(jobId)).filter(
          (e): e is TaskEvent => e.type === 'task' && e.state === 'finished',
        );
        expect(finished.map((e) => e.subtaskIndex).sort()).to.deep.equal([0, 1]);
        expect(
          finished.every((e) => e.resourceId === survivor),
          `finished on ${finished.map((e) => e.resourceId).join(', ')}`,
        ).to.equal(true);
      } finally {
        network!.linkUp(victim + 1);
      }

      // Back on the network, it registers again by itself (under its ResourceID if the ResourceManager
      // still waited for it, else as a fresh TaskExecutor), and the cluster has both hosts again.
      const back = await until(
        'the TaskManager to register again',
        async () => {
          const status = await cluster.taskManagers[victim]!.control.status();
          const listed = (await jm.overview()).taskExecutors.map((te) => te.resourceId);
          return status.registered && listed.includes(status.resourceId as never) && listed.length === 2
            ? status
            : undefined;
        },
        90_000,
      );
      expect(back.resourceId).to.not.equal(survivor);
      if (process.env['SLOTWISE_DEBUG'])
        console.log(
          `      came back as ${back.resourceId === first.resourceId ? 'the same' : 'a fresh'} ` +
            `TaskExecutor (${back.incarnations} incarnations)`,
        );
    },
  );
});
