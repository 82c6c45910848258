/**
 * ResultPartitions (a TaskExecutor's result partitions): kept, read here or by another TaskExecutor over its peers,
 * released by name or by job, refused with PartitionError naming what was asked — over real BroadcastChannels (two
 * TaskExecutors of one thread) and real Unix sockets, each read's deadline on a simulated clock.
 */
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect } from 'node:net';
import v8 from 'node:v8';
import { expect } from 'chai';
import { SimulatedClock } from '../../lib/core/clock.js';
import { PartitionError } from '../../lib/core/errors.js';
import { ExecutionAttemptID, JobID, ResourceID } from '../../lib/core/ids.js';
import {
  broadcastPartitionPeers,
  partitionSocketOf,
  socketPartitionPeers,
} from '../../lib/taskexecutor/localPartitionPeers.js';
import { type PartitionPart, type PartitionPeers, ResultPartitions } from '../../lib/taskexecutor/ResultPartitions.js';
import { rejection } from '../rpc/support/transports.js';

const part = (value: unknown): Uint8Array => {
  const bytes = v8.serialize(value);
  const shared = new Uint8Array(new SharedArrayBuffer(bytes.byteLength));
  shared.set(bytes);
  return shared;
};
const decode = (p: PartitionPart) => (p instanceof Uint8Array ? v8.deserialize(p) : p.raw);

const kinds: Array<[string, (rid: ResourceID, clock: SimulatedClock, dir: string) => PartitionPeers]> = [
  ['BroadcastChannels (threads of one process)', (rid, clock) => broadcastPartitionPeers(rid, clock)],
  ['Unix sockets (processes of one host)', (rid, clock, dir) => socketPartitionPeers(dir, rid, clock)],
];

for (const [kind, peersOf] of kinds)
  describe(`ResultPartitions over ${kind}`, () => {
    const job = JobID.generate();
    const attempt = (n: number) => ExecutionAttemptID.generate({ vertex: 'src', subtask: n, attempt: 0 });
    let clock: SimulatedClock;
    let dir: string;
    let producer: ResultPartitions;
    let consumer: ResultPartitions;

    beforeEach(() => {
      clock = new SimulatedClock(0);
      dir = mkdtempSync(join(tmpdir(), 'slotwise-test-'));
      const a = ResourceID.generate('taskexecutor');
      const b = ResourceID.generate('taskexecutor');
      producer = new ResultPartitions(a, peersOf(a, clock, dir), 1_000);
      consumer = new ResultPartitions(b, peersOf(b, clock, dir), 1_000);
    });
    afterEach(() => {
      producer.close();
      consumer.close();
      rmSync(dir, { recursive: true, force: true });
    });

    it('keeps a partition, tells where and how big, and serves each subpartition here and to another', async () => {
      const id = attempt(0);
      const wire = producer.keep(job, id, [part({ to: 0 }), part({ to: 1, big: 'x'.repeat(100_000) })]);
      expect(wire.partitionId).to.equal(id);
      expect(wire.resourceId).to.equal(producer.resourceId);
      expect(wire.bytes).to.have.length(2);
      expect(producer.holds(job)).to.equal(true);
      const here = await producer.read({ partitionId: id, resourceId: producer.resourceId, subpartition: 0, bytes: 0 });
      const there = await consumer.read({
        partitionId: id,
        resourceId: producer.resourceId,
        subpartition: 1,
        bytes: 0,
      });
      expect(decode(here)).to.deep.equal({ to: 0 });
      expect((decode(there) as { to: number; big: string }).big).to.have.length(100_000);
      expect(producer.stats).to.deep.include({ partitions: 1, readLocally: 1, served: 1 });
      expect(producer.stats.bytes).to.equal(wire.bytes[0]! + wire.bytes[1]!);
    });

    it('releases partitions by name, then the job’s others; reading a released one: not-found', async () => {
      const [one, two] = [attempt(1), attempt(2)];
      producer.keep(job, one, [part(1)]);
      producer.keep(job, two, [part(2)]);
      expect(producer.releaseJob(job, [one])).to.equal(1);
      expect(producer.holds(job)).to.equal(true);
      const error = await rejection(
        consumer.read({ partitionId: one, resourceId: producer.resourceId, subpartition: 0, bytes: 0 }),
      );
      expect(error).to.be.instanceOf(PartitionError);
      expect((error as PartitionError).reason).to.equal('not-found');
      expect((error as PartitionError).details).to.deep.include({ partitionId: one, subpartition: 0 });
      expect(producer.releaseJob(job)).to.equal(1);
      expect(producer.holds(job)).to.equal(false);
      expect(producer.stats).to.deep.include({ partitions: 0, bytes: 0 });
    });

    it('gives up on a TaskExecutor not there: timed-out at its deadline, or unreachable (no socket)', async () => {
      const gone = ResourceID.generate('taskexecutor');
      const read = consumer.read({ partitionId: attempt(3), resourceId: gone, subpartition: 0, bytes: 0 });
      const settled = read.then(
        () => 'answered',
        (e: unknown) => e,
      );
      clock.advanceTo(999);
      await new Promise((resolve) => setImmediate(resolve));
      if (kind.startsWith('Unix')) {
        // No socket there: refused at once, unreachable.
        const error = (await settled) as PartitionError;
        expect(error.reason).to.equal('unreachable');
        return;
      }
      clock.advanceTo(1_000);
      const error = (await settled) as PartitionError;
      expect(error).to.be.instanceOf(PartitionError);
      expect(error.reason).to.equal('timed-out');
      expect(error.message).to.match(/within 1000 ms/);
    });
  });

describe('ResultPartitions over Unix sockets: a connection that is not a reader', () => {
  it('is closed on a malformed frame, and the TaskExecutor goes on serving the others', async () => {
    const clock = new SimulatedClock(0);
    const dir = mkdtempSync(join(tmpdir(), 'slotwise-test-'));
    const [a, b] = [ResourceID.generate('taskexecutor'), ResourceID.generate('taskexecutor')];
    const producer = new ResultPartitions(a, socketPartitionPeers(dir, a, clock), 1_000);
    const consumer = new ResultPartitions(b, socketPartitionPeers(dir, b, clock), 1_000);
    try {
      const id = ExecutionAttemptID.generate({ vertex: 'src', subtask: 0, attempt: 0 });
      producer.keep(JobID.generate(), id, [part('kept')]);
      const stranger = connect(partitionSocketOf(dir, a));
      const closed = new Promise((resolve) => stranger.on('close', resolve));
      stranger.on('error', () => {});
      const frame = Buffer.alloc(9);
      frame.writeUInt32LE(5, 0);
      frame.write('nojs!', 4);
      stranger.write(frame);
      await closed;
      const read = await consumer.read({ partitionId: id, resourceId: a, subpartition: 0, bytes: 0 });
      expect(decode(read)).to.equal('kept');
    } finally {
      producer.close();
      consumer.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('ResultPartitions past their network memory: spilled to disk', () => {
  const job = JobID.generate();
  const attempt = (n: number) => ExecutionAttemptID.generate({ vertex: 'src', subtask: n, attempt: 0 });
  let clock: SimulatedClock;
  let dir: string;
  let producer: ResultPartitions;
  let consumer: ResultPartitions;
  /** The spill directories under `dir` and the files in them. */
  const spillFiles = (): string[] =>
    readdirSync(dir)
      .filter((name) => name.startsWith('slotwise-spill-'))
      .flatMap((name) => [name, ...readdirSync(join(dir, name)).map((file) => `${name}/${file}`)]);
  const big = (n: number) => part({ n, pad: 'x'.repeat(40_000) });

  beforeEach(() => {
    clock = new SimulatedClock(0);
    dir = mkdtempSync(join(tmpdir(), 'slotwise-test-'));
    const a = ResourceID.generate('taskexecutor');
    const b = ResourceID.generate('taskexecutor');
    // Room in memory for about two partitions of ~40 kB; at most ~100 kB spilled.
    const spill = { memoryBytes: 100_000, directory: dir, maxSpilledBytes: 100_000 };
    producer = new ResultPartitions(a, broadcastPartitionPeers(a, clock), 1_000, spill);
    consumer = new ResultPartitions(b, broadcastPartitionPeers(b, clock), 1_000, spill);
  });
  afterEach(() => {
    producer.close();
    consumer.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('keeps what fits in memory, spills the rest to a file, reads it back exactly here and elsewhere', async () => {
    const ids = [attempt(0), attempt(1), attempt(2)];
    for (const [n, id] of ids.entries()) producer.keep(job, id, [big(n), part({ small: n })]);
    const { bytes, spilledBytes, spilledTotal, producedBytes } = producer.stats;
    expect(spilledBytes).to.be.greaterThan(40_000).and.below(bytes);
    expect(spilledTotal).to.equal(spilledBytes);
    expect(producedBytes).to.equal(bytes);
    expect(spillFiles()).to.have.length(2); // its directory and the third partition's file
    const here = await producer.read({
      partitionId: ids[2]!,
      resourceId: producer.resourceId,
      subpartition: 0,
      bytes: 0,
    });
    const there = await consumer.read({
      partitionId: ids[2]!,
      resourceId: producer.resourceId,
      subpartition: 1,
      bytes: 0,
    });
    expect((decode(here) as { n: number; pad: string }).n).to.equal(2);
    expect((decode(here) as { n: number; pad: string }).pad).to.have.length(40_000);
    expect(decode(there)).to.deep.equal({ small: 2 });
    expect(consumer.stats.consumedBytes).to.equal(there instanceof Uint8Array ? there.byteLength : -1);
    // Released: its file goes, and memory taken by the others is counted no more.
    expect(producer.releaseJob(job, [ids[2]!])).to.equal(1);
    expect(producer.stats.spilledBytes).to.equal(0);
    expect(spillFiles()).to.have.length(1);
    // Closed: its directory goes too.
    producer.close();
    expect(spillFiles()).to.deep.equal([]);
  });

  it("a spill file gone from under it: a read here fails with 'spill-failed', a peer's with 'not-found'", async () => {
    const ids = [attempt(0), attempt(1), attempt(2)];
    for (const [n, id] of ids.entries()) producer.keep(job, id, [big(n)]);
    const file = spillFiles().find((name) => name.endsWith('.bin'))!;
    rmSync(join(dir, file));
    const input = { partitionId: ids[2]!, resourceId: producer.resourceId, subpartition: 0, bytes: 0 };
    const here = await rejection(producer.read(input));
    expect((here as PartitionError).reason).to.equal('spill-failed');
    const there = await rejection(consumer.read(input));
    expect((there as PartitionError).reason).to.equal('not-found');
  });

  it("refuses a partition past the spill bound with PartitionError('spill-limit') and keeps nothing of it", () => {
    producer.keep(job, attempt(0), [big(0)]);
    producer.keep(job, attempt(1), [big(1)]);
    producer.keep(job, attempt(2), [big(2)]); // spilled
    producer.keep(job, attempt(3), [big(3)]); // spilled
    const before = producer.stats;
    let error: unknown;
    try {
      producer.keep(job, attempt(4), [big(4)]);
    } catch (thrown) {
      error = thrown;
    }
    expect(error).to.be.instanceOf(PartitionError);
    expect((error as PartitionError).reason).to.equal('spill-limit');
    expect((error as PartitionError).message).to.contain('taskmanager.network.spill.max-size');
    expect((error as PartitionError).details).to.deep.include({ maxSpilledBytes: 100_000 });
    expect(producer.stats).to.deep.equal(before);
    expect(spillFiles()).to.have.length(3);
  });
});
