/**
 * The data plane of a session cluster over a real nats-server: producers pinned to one TaskManager (extended resource
 * `left`), consumers to the other (`right`), so every input crosses between them. Results are exact for hash and
 * all-to-all edges; the bytes crossed on the producer's data subject while everything else — the JobManager's subject
 * and the object store included — carried only descriptors (a tap on `>` counts them); the partitions are gone once
 * the job ended; a 100 MB output crosses without a heartbeat lost. The protocol's own cases (credit, a lost chunk, a
 * chunk that never comes): partitionStream.test.ts.
 */
import { expect } from 'chai';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { startJobManager, type JobManager } from '../../lib/cluster/JobManager.js';
import { TaskManager } from '../../lib/cluster/TaskManager.js';
import type { JobEvent } from '../../lib/jobmaster/JobResult.js';
import { until } from '../support/eventually.js';
import { natsServerOrSkip, startNatsServer, type NatsServer } from '../support/natsServer.js';

const produce = new URL('../fixtures/partitions/produce.mjs', import.meta.url);
const collect = new URL('../fixtures/partitions/collect.mjs', import.meta.url);
const MB = 1 << 20;
const CLUSTER = 'dataplane';
const configuration = { 'heartbeat.interval': 1_000, 'heartbeat.timeout': 5_000 };

interface Collected {
  subtask: number;
  bytes: number;
  seen: Array<{ edge: string; from: number; to?: number; keys?: number[]; first?: number; uniform?: boolean }>;
}

describe('the data plane of a session cluster (partitions read between TaskManagers over NATS)', function () {
  this.timeout(120_000);
  let server: NatsServer;
  let jobManager: JobManager;
  let left: TaskManager;
  let right: TaskManager;
  /** A TaskManager started to replace `left` (the last test). */
  let replacement: TaskManager | undefined;
  let tap: NatsConnection;
  const cacheDirs: string[] = [];
  /** Bytes seen on the tap: on data subjects, and on every other subject. */
  const tapped = { data: 0, other: 0 };

  before(async function () {
    const binary = natsServerOrSkip(this, 'data plane over NATS');
    server = await startNatsServer(binary);
    jobManager = await startJobManager({ nats: server.url, clusterId: CLUSTER, configuration, logger: () => {} });
    left = await start('left');
    right = await start('right');
    await until('both TaskManagers to register', () => jobManager.overview().taskExecutors.length === 2);
    tap = await connect({ servers: server.url, name: 'tap' });
    const dataPrefix = `slotwise.${CLUSTER}.data.`;
    tap.subscribe('>', {
      callback: (error, msg) => {
        if (error !== null) return;
        const bytes = msg.data.byteLength + (msg.headers?.toString().length ?? 0);
        if (msg.subject.startsWith(dataPrefix)) tapped.data += bytes;
        else tapped.other += bytes;
      },
    });
    await tap.flush();
  });

  /** A TaskManager of 2 slots offering 4 of the extended resource `resource`. */
  function start(resource: string): Promise<TaskManager> {
    const cacheDir = mkdtempSync(join(tmpdir(), 'slotwise-tm-cache-'));
    cacheDirs.push(cacheDir);
    return TaskManager.start({
      nats: server.url,
      clusterId: CLUSTER,
      cacheDir,
      slots: 2,
      cpuCores: 2,
      taskHeap: '512m',
      resources: { [resource]: 4 },
      configuration,
      logger: () => {},
    });
  }

  after(async () => {
    await tap?.close();
    await replacement?.close();
    await left?.close();
    await right?.close();
    await jobManager?.close();
    await server?.stop();
    for (const dir of cacheDirs) rmSync(dir, { recursive: true, force: true });
  });

  /** Runs a job of `src` on `left` into `sink` on `right`; its result, and where each attempt ran. */
  async function run(
    name: string,
    edge: 'hash' | 'all-to-all',
    src: { parallelism: number; config: unknown },
    sinks: number | { minParallelism: number; maxParallelism: number } = 2,
  ) {
    const job = await jobManager.submitJob({
      name,
      ...(typeof sinks === 'number' ? {} : { scheduler: 'adaptive' }),
      vertices: [
        {
          id: 'src',
          taskModule: produce,
          parallelism: src.parallelism,
          config: src.config,
          resources: { cpuCores: 0.5, extendedResources: { left: 1 } },
          slotSharingGroup: 'producers',
        },
        {
          id: 'sink',
          taskModule: collect,
          ...(typeof sinks === 'number' ? { parallelism: sinks } : sinks),
          resources: { cpuCores: 0.5, extendedResources: { right: 1 } },
          slotSharingGroup: 'consumers',
        },
      ],
      edges: [{ from: 'src', to: 'sink', pattern: edge }],
      restartStrategy: { type: 'none' },
    });
    const ranOn = new Map<string, Set<string>>();
    job.onEvent((event: JobEvent) => {
      if (event.type !== 'task' || event.state !== 'running' || event.resourceId === null) return;
      let on = ranOn.get(event.vertexId);
      if (on === undefined) ranOn.set(event.vertexId, (on = new Set()));
      on.add(event.resourceId);
    });
    const result = await job.result;
    expect(result.status, result.error?.message).to.equal('finished');
    expect(result.restarts).to.equal(0);
    expect([...(ranOn.get('src') ?? [])]).to.deep.equal([left.resourceId]);
    expect([...(ranOn.get('sink') ?? [])]).to.deep.equal([right.resourceId]);
    return result.outputs['sink'] as Collected[];
  }

  const held = async () => {
    let partitions = 0;
    let served = 0;
    for (const m of await jobManager.taskExecutorMetrics()) {
      partitions += m.partitions?.partitions ?? 0;
      if (m.resourceId === left.resourceId) served += m.partitions?.served ?? 0;
    }
    return { partitions, served };
  };

  it('a hash edge gives each consumer on the other TaskManager exactly its part of every producer', async () => {
    const before = { ...tapped };
    const servedBefore = (await held()).served;
    const sinks = await run('keyed', 'hash', { parallelism: 3, config: { parts: 2, partBytes: 700 * 1024 } });
    expect(sinks.map((s) => s.seen.map((x) => [x.from, x.to, x.keys![0], x.first, x.uniform]))).to.deep.equal([
      [
        [0, 0, 0, 0, true],
        [1, 0, 100, 16, true],
        [2, 0, 200, 32, true],
      ],
      [
        [0, 1, 1, 1, true],
        [1, 1, 101, 17, true],
        [2, 1, 201, 33, true],
      ],
    ]);
    expect(sinks.map((s) => s.bytes)).to.deep.equal([3 * 700 * 1024, 3 * 700 * 1024]);
    // Six subpartitions served from the producers' TaskManager, over its data subject; the JobManager (and the
    // object store behind its Link) saw descriptors only.
    expect((await held()).served - servedBefore).to.equal(6);
    await until('the tap to see the data', () => tapped.data - before.data >= 6 * 700 * 1024);
    expect(tapped.other - before.other).to.be.below(512 * 1024);
    await until('the partitions to be released', async () => (await held()).partitions === 0);
  });

  it('a hash edge to a consumer the adaptive scheduler decides: each reads its range of every producer', async () => {
    // 3 producers write the consumer's max parallelism (4) in parts of 700 KB: 8.2 MB, under the average volume
    // (16 mb) — so its min, 2, each reading subpartitions [0, 2) or [2, 4) of every producer from the other side.
    const sinks = await run(
      'keyed-adaptive',
      'hash',
      { parallelism: 3, config: { parts: 'context', partBytes: 700 * 1024 } },
      {
        minParallelism: 2,
        maxParallelism: 4,
      },
    );
    expect(sinks.map((s) => s.seen.map((x) => [x.from, x.to, x.first, x.uniform]))).to.deep.equal(
      [0, 1].map((sink) =>
        [0, 1, 2].flatMap((from) => [2 * sink, 2 * sink + 1].map((to) => [from, to, from * 16 + to, true])),
      ),
    );
    expect(sinks.map((s) => s.bytes)).to.deep.equal([6 * 700 * 1024, 6 * 700 * 1024]);
    await until('the partitions to be released', async () => (await held()).partitions === 0);
  });

  it('an all-to-all edge hands each consumer every producer’s whole output, never through the JobManager', async () => {
    const before = { ...tapped };
    const sinks = await run('broadcast', 'all-to-all', { parallelism: 2, config: { bytes: 1.5 * MB } });
    for (const sink of sinks) {
      expect(sink.bytes).to.equal(3 * MB);
      expect(sink.seen.map((x) => [x.from, x.first, x.uniform])).to.deep.equal([
        [0, 0, true],
        [1, 1, true],
      ]);
    }
    await until('the tap to see the data', () => tapped.data - before.data >= 4 * 1.5 * MB);
    expect(tapped.other - before.other).to.be.below(512 * 1024);
    await until('the partitions to be released', async () => (await held()).partitions === 0);
  });

  it('a single 100 MB output crosses with no heartbeat lost: the TaskManagers keep their ResourceIDs', async () => {
    await tap.close(); // a tap on 100 MB would only measure itself
    const ids = [left.resourceId, right.resourceId];
    const started = Date.now();
    const [sink] = await run('large', 'all-to-all', { parallelism: 1, config: { bytes: 100 * MB } }, 1);
    const seconds = (Date.now() - started) / 1000;
    expect(sink!.bytes).to.equal(100 * MB);
    expect(sink!.seen).to.deep.include({
      edge: 'src',
      from: 0,
      to: undefined,
      keys: undefined,
      first: 0,
      uniform: true,
    });
    // Nobody was lost or started afresh: the heartbeats and the job's calls on the Links never waited behind the data.
    expect([left.resourceId, right.resourceId]).to.deep.equal(ids);
    expect(left.incarnations + right.incarnations).to.equal(2);
    expect(
      jobManager
        .overview()
        .taskExecutors.map((te) => te.resourceId)
        .sort(),
    ).to.deep.equal([...ids].sort());
    expect(seconds).to.be.below(60);
    await until('the partition to be released', async () => (await held()).partitions === 0);
  });

  it('a lost TaskManager’s partitions that a consumer still needs are produced again, and only those', async () => {
    const gateFile = join(cacheDirs[0]!, 'open-the-gate');
    const job = await jobManager.submitJob({
      name: 'lost partitions',
      vertices: [
        {
          id: 'src',
          taskModule: produce,
          parallelism: 2,
          config: { bytes: 600 * 1024 },
          resources: { cpuCores: 0.5, extendedResources: { left: 1 } },
          slotSharingGroup: 'producers',
        },
        {
          id: 'gate',
          taskModule: new URL('../fixtures/partitions/gate.mjs', import.meta.url),
          parallelism: 1,
          config: { file: gateFile },
          resources: { cpuCores: 0.5, extendedResources: { right: 1 } },
          slotSharingGroup: 'consumers',
        },
        {
          id: 'sink',
          taskModule: collect,
          parallelism: 1,
          resources: { cpuCores: 0.5, extendedResources: { right: 1 } },
          slotSharingGroup: 'consumers',
        },
      ],
      edges: [
        { from: 'src', to: 'sink', pattern: 'all-to-all' },
        { from: 'gate', to: 'sink', pattern: 'all-to-all' },
      ],
      restartStrategy: { type: 'fixed-delay', attempts: 3, delay: 100 },
    });
    const runs: Array<{ vertex: string; subtask: number; attempt: number; on: string }> = [];
    const finished = new Set<string>();
    job.onEvent((event: JobEvent) => {
      if (event.type !== 'task') return;
      if (event.state === 'running' && event.resourceId !== null)
        runs.push({
          vertex: event.vertexId,
          subtask: event.subtaskIndex,
          attempt: event.attemptNumber,
          on: event.resourceId,
        });
      if (event.state === 'finished') finished.add(`${event.vertexId}#${event.subtaskIndex}`);
    });
    await until(
      'both producers to finish on the left TaskManager',
      () => finished.has('src#0') && finished.has('src#1'),
    );
    const lost = left.resourceId;
    // Where they can run again, started only now so that their first attempts had only the left one.
    replacement = await start('left');
    await until('the replacement to register', () => jobManager.overview().taskExecutors.length === 3);
    // Their partitions go with it; the sink has not read them (the gate holds it back).
    await left.close();
    await until('the JobManager to let the lost TaskManager go', () =>
      jobManager.overview().taskExecutors.every((te) => te.resourceId !== lost),
    );
    writeFileSync(gateFile, '');
    const result = await job.result;
    expect(result.status, result.error?.message).to.equal('finished');
    const [sink] = result.outputs['sink'] as Collected[];
    expect(sink!.bytes).to.equal(2 * 600 * 1024);
    expect(sink!.seen.filter((x) => x.edge === 'src').map((x) => [x.from, x.first, x.uniform])).to.deep.equal([
      [0, 0, true],
      [1, 1, true],
    ]);
    // Each producer ran twice (its second attempt on the replacement); the gate and the sink once each.
    const srcRuns = runs
      .filter((r) => r.vertex === 'src')
      .sort((a, b) => a.attempt - b.attempt || a.subtask - b.subtask);
    expect(srcRuns.map((r) => [r.subtask, r.attempt, r.on])).to.deep.equal([
      [0, 0, lost],
      [1, 0, lost],
      [0, 1, replacement.resourceId],
      [1, 1, replacement.resourceId],
    ]);
    expect(runs.filter((r) => r.vertex !== 'src').map((r) => [r.vertex, r.attempt])).to.deep.equal([
      ['gate', 0],
      ['sink', 0],
    ]);
    await until('the partitions to be released', async () => (await held()).partitions === 0);
  });
});
