/**
 * Result partitions on a MiniCluster (ResultPartitions.ts), in both modes: producers' outputs stay on their
 * TaskExecutors and consumers read them from there — on the same TaskExecutor, or from another TaskExecutor (a
 * thread over its BroadcastChannel, a process over its Unix socket) — with the whole output of each producer for
 * all-to-all edges and exactly its part for a hash edge; the partitions are gone once the job ends. Past a
 * TaskExecutor's network memory, partitions spill to files under io.tmp.dirs, which go with the partitions.
 */
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { MiniCluster } from '../../lib/MiniCluster.js';
import { until } from '../support/eventually.js';

const produce = new URL('../fixtures/partitions/produce.mjs', import.meta.url);
const collect = new URL('../fixtures/partitions/collect.mjs', import.meta.url);
const MB = 1 << 20;

for (const mode of ['thread', 'process'] as const)
  describe(`result partitions (${mode} mode)`, function () {
    this.timeout(60_000);
    let cluster: MiniCluster;

    before(async () => {
      cluster = await MiniCluster.start({ taskExecutors: 2, slotsPerTaskExecutor: 2, mode });
    });
    after(async () => {
      await cluster?.close();
    });

    const reads = async () => {
      let local = 0;
      let served = 0;
      let held = 0;
      for (const m of await cluster.taskExecutorMetrics()) {
        local += m.partitions?.readLocally ?? 0;
        served += m.partitions?.served ?? 0;
        held += m.partitions?.partitions ?? 0;
      }
      return { reads: local + served, held };
    };

    it('an all-to-all edge hands every consumer every producer’s whole output, read where it was kept', async () => {
      const before = await reads();
      const job = await cluster.submitJob({
        name: 'broadcast',
        vertices: [
          { id: 'src', taskModule: produce, parallelism: 4, config: { bytes: MB } },
          { id: 'sink', taskModule: collect, parallelism: 2 },
        ],
        edges: [{ from: 'src', to: 'sink', pattern: 'all-to-all' }],
      });
      const result = await job.result;
      expect(result.status).to.equal('finished');
      const sinks = result.outputs['sink'] as Array<{
        subtask: number;
        seen: Array<{ from: number; first: number }>;
        bytes: number;
      }>;
      for (const sink of sinks) {
        expect(sink.bytes).to.equal(4 * MB);
        expect(sink.seen.map((s) => [s.from, s.first])).to.deep.equal([
          [0, 0],
          [1, 1],
          [2, 2],
          [3, 3],
        ]);
      }
      const after = await reads();
      // 2 consumers × 4 producers, each read once from where it was kept; nothing kept once the job ended.
      expect(after.reads - before.reads).to.equal(8);
      expect(after.held).to.equal(0);
    });

    it('a hash edge gives each consumer exactly its part of every producer', async () => {
      const job = await cluster.submitJob({
        name: 'keyed',
        vertices: [
          { id: 'src', taskModule: produce, parallelism: 3, config: { parts: 2 } },
          { id: 'sink', taskModule: collect, parallelism: 2 },
        ],
        edges: [{ from: 'src', to: 'sink', pattern: 'hash' }],
      });
      const result = await job.result;
      expect(result.status).to.equal('finished');
      const sinks = result.outputs['sink'] as Array<{ seen: Array<{ from: number; to: number; keys: number[] }> }>;
      expect(sinks.map((s) => s.seen.map((x) => [x.from, x.to, x.keys[0]]))).to.deep.equal([
        [
          [0, 0, 0],
          [1, 0, 100],
          [2, 0, 200],
        ],
        [
          [0, 1, 1],
          [1, 1, 101],
          [2, 1, 201],
        ],
      ]);
      expect((await reads()).held).to.equal(0);
    });

    it('fails a hash producer that does not return one part per consumer subtask, saying so', async () => {
      const job = await cluster.submitJob({
        name: 'misshapen',
        vertices: [
          { id: 'src', taskModule: produce, parallelism: 1, config: { parts: 3 } },
          { id: 'sink', taskModule: collect, parallelism: 2 },
        ],
        edges: [{ from: 'src', to: 'sink', pattern: 'hash' }],
        restartStrategy: { type: 'none' },
      });
      const result = await job.result;
      expect(result.status).to.equal('failed');
      expect(result.error?.message).to.match(
        /a producer of a hash edge returns an array of 2 parts.*got an array of 3/,
      );
    });
  });

describe('result partitions past network memory (thread mode): spilled under io.tmp.dirs', function () {
  this.timeout(60_000);
  let dir: string;
  let cluster: MiniCluster | undefined;
  /** Every file under `dir` (the TaskExecutor's spill directory and what is in it). */
  const files = (): string[] =>
    readdirSync(dir, { recursive: true, encoding: 'utf8' }).filter((name) => name.endsWith('.bin'));

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'slotwise-spill-test-'));
  });
  afterEach(async () => {
    await cluster?.close();
    cluster = undefined;
    rmSync(dir, { recursive: true, force: true });
  });

  const start = (configuration: Record<string, string>) =>
    MiniCluster.start({
      taskExecutors: 1,
      slotsPerTaskExecutor: 2,
      mode: 'thread',
      resources: { cpuCores: 2, taskHeapMemory: '256m', managedMemory: '128m', networkMemory: '2m' },
      configuration: { 'io.tmp.dirs': dir, 'heartbeat.interval': 200, 'heartbeat.timeout': 5_000, ...configuration },
    });
  const broadcast = {
    name: 'spilled broadcast',
    vertices: [
      { id: 'src', taskModule: produce, parallelism: 4, config: { bytes: MB } },
      { id: 'sink', taskModule: collect, parallelism: 1 },
    ],
    edges: [{ from: 'src', to: 'sink', pattern: 'all-to-all' as const }],
  };

  it('4 MB of outputs on 2 MB of network memory: the job reads every byte, and the files go with the job', async () => {
    cluster = await start({});
    const result = await (await cluster.submitJob(broadcast)).result;
    expect(result.status).to.equal('finished');
    const [sink] = result.outputs['sink'] as Array<{ seen: Array<{ from: number; first: number }>; bytes: number }>;
    expect(sink!.bytes).to.equal(4 * MB);
    expect(sink!.seen.map((s) => [s.from, s.first])).to.deep.equal([
      [0, 0],
      [1, 1],
      [2, 2],
      [3, 3],
    ]);
    const [metrics] = await cluster.taskExecutorMetrics();
    expect(metrics!.partitions!.spilledTotal).to.be.at.least(2 * MB);
    // overview() has the same figures as of the TaskExecutor's last heartbeat (heartbeat.interval: 200 ms here).
    const c = cluster;
    // A heartbeat answered before the job let go of its partitions still shows them held: wait for a later one.
    const seen = await until('a heartbeat after the job, with the spilled bytes', () => {
      const figures = c.overview().taskExecutors[0]?.partitions;
      return figures != null && figures.partitions === 0 && figures.spilledTotal >= 2 * MB && figures;
    });
    expect(seen).to.deep.include({ bytes: 0, spilledBytes: 0 });
    expect(seen.producedBytes).to.be.at.least(4 * MB);
    expect(metrics!.partitions!.spilledBytes).to.equal(0);
    expect(metrics!.partitions!.producedBytes).to.be.at.least(4 * MB);
    expect(files()).to.deep.equal([]);
    await cluster.close();
    cluster = undefined;
    expect(readdirSync(dir)).to.deep.equal([]);
  });

  it('fails the producer that would spill past taskmanager.network.spill.max-size, saying so', async () => {
    cluster = await start({ 'taskmanager.network.spill.max-size': '1 mb', 'restart-strategy.type': 'none' });
    const result = await (await cluster.submitJob(broadcast)).result;
    expect(result.status).to.equal('failed');
    expect(result.error?.message).to.contain('taskmanager.network.spill.max-size');
  });
});
