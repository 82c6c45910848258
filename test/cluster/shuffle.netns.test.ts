/**
 * A keyed shuffle between two TaskManagers that reach each other only over NATS: each in a network namespace of
 * its own (test/support/netns.ts), nats-server and the JobManager in the root namespace. Each TaskManager has one
 * slot, so the job's two shared slots — each with a producer and a consumer of the `hash` edge — land one on each
 * host: every consumer reads one part from the producer beside it and one from the other host. The consumers get
 * exactly their parts; each TaskExecutor served one subpartition to the other (Flink's result partitions read
 * remotely) and read one of its own; nothing is held once the job ended, and no namespace is left behind. Needs
 * root, iproute2 and nats-server (skipped visibly otherwise).
 */
import { execFileSync } from 'node:child_process';
import { expect } from 'chai';
import type { PartitionFiguresWire } from '../../lib/rpc/protocol.js';
import type { JobEvent } from '../../lib/jobmaster/JobMaster.js';
import { until } from '../support/eventually.js';
import { createTestNetwork, netnsOrSkip, type TestNetwork } from '../support/netns.js';
import { natsServerOrSkip } from '../support/natsServer.js';
import { ClusterProcesses } from './support/clusterProcesses.js';

const CLUSTER = 'shuffle';
const configuration = {
  'heartbeat.interval': 500,
  'heartbeat.timeout': 3_000,
  'cluster.registration.max-timeout': 1_000,
};
const produce = new URL('../fixtures/partitions/produce.mjs', import.meta.url).href;
const collect = new URL('../fixtures/partitions/collect.mjs', import.meta.url).href;
/** Each producer's part for each consumer: 2 producers × 2 parts, 4 MB in all, half of it crossing. */
const PART_BYTES = 1 << 20;

interface Collected {
  subtask: number;
  bytes: number;
  seen: Array<{ edge: string; from: number; to: number; keys: number[]; first: number; uniform: boolean }>;
}
type TaskEvent = Extract<JobEvent, { type: 'task' }>;

describe('a hash shuffle between TaskManagers in network namespaces of their own', function () {
  this.timeout(120_000);
  let network: TestNetwork | undefined;
  const cluster = new ClusterProcesses();

  before(async function () {
    const natsServer = natsServerOrSkip(this, 'shuffle in network namespaces');
    netnsOrSkip(this, 'shuffle in network namespaces');
    network = createTestNetwork(2);
    await cluster.start({
      natsServer,
      clusterId: CLUSTER,
      configuration,
      network,
      taskManagers: 2,
      taskManager: { slots: 1, cpuCores: 1, taskHeap: '512m', managedMemory: '64m', networkMemory: '32m' },
    });
  });

  after(async () => {
    await cluster.stop();
    if (network === undefined) return;
    const namespaces = [network.namespace(1), network.namespace(2)];
    network.remove();
    const left = execFileSync('ip', ['netns', 'list'], { encoding: 'utf8' });
    expect(
      namespaces.filter((ns) => left.includes(ns)),
      'namespaces left behind',
    ).to.deep.equal([]);
  });

  it('gives each consumer exactly its part of every producer, each host reading the other’s over NATS', async () => {
    const jm = cluster.jm;
    const ids = (await Promise.all(cluster.taskManagers.map((tm) => tm.control.status())))
      .map((s) => s.resourceId)
      .sort();
    const jobId = await jm.submit({
      name: 'shuffle across hosts',
      vertices: [
        { id: 'src', taskModule: produce, parallelism: 2, config: { parts: 2, partBytes: PART_BYTES } },
        { id: 'sink', taskModule: collect, parallelism: 2 },
      ],
      edges: [{ from: 'src', to: 'sink', pattern: 'hash' }],
      restartStrategy: { type: 'none' },
    });
    const result = await jm.result(jobId);
    expect(result.status, result.error?.message).to.equal('finished');

    // Consumer i got part i of producer 0 and of producer 1, every byte as the producer wrote it.
    const sinks = result.outputs['sink'] as Collected[];
    expect(
      sinks.map((sink) =>
        sink.seen.sort((a, b) => a.from - b.from).map((x) => [x.edge, x.from, x.to, x.keys, x.first, x.uniform]),
      ),
    ).to.deep.equal([
      [
        ['src', 0, 0, [0], 0, true],
        ['src', 1, 0, [100], 16, true],
      ],
      [
        ['src', 0, 1, [1], 1, true],
        ['src', 1, 1, [101], 17, true],
      ],
    ]);
    expect(sinks.map((sink) => sink.bytes)).to.deep.equal([2 * PART_BYTES, 2 * PART_BYTES]);

    // Producers on both hosts, consumers on both hosts.
    const jmEvents = await jm.events(jobId);
    const ranOn = (vertex: string) =>
      [
        ...new Set(
          jmEvents
            .filter((e): e is TaskEvent => e.type === 'task' && e.vertexId === vertex && e.state === 'running')
            .map((e) => e.resourceId),
        ),
      ].sort();
    expect(ranOn('src')).to.deep.equal(ids);
    expect(ranOn('sink')).to.deep.equal(ids);

    // Each TaskExecutor served one subpartition to the other host and read one of its own (heartbeats bring the
    // figures to the JobManager); every partition let go once the job ended.
    const figures = await until(
      'both TaskExecutors’ partition figures after the job, nothing held',
      async () => {
        const found = (await jm.overview()).taskExecutors.map((te) => te.partitions);
        const settled = (f: PartitionFiguresWire | null) => f !== null && f.served === 1 && f.partitions === 0;
        return found.length === 2 && found.every(settled) ? (found as PartitionFiguresWire[]) : undefined;
      },
      30_000,
    );
    for (const f of figures) {
      expect(f).to.include({ served: 1, readLocally: 1, partitions: 0, bytes: 0, spilledBytes: 0 });
      // Two parts produced and two read there, each a little over PART_BYTES once serialized.
      expect(f.producedBytes).to.be.within(2 * PART_BYTES, 2 * PART_BYTES + 4096);
      expect(f.consumedBytes).to.be.within(2 * PART_BYTES, 2 * PART_BYTES + 4096);
    }
  });
});
