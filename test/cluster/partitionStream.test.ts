/**
 * The data plane's protocol (PartitionStreamServer ⇄ PartitionStreamReader) over an in-memory bus that can hold back,
 * drop or count messages: a read is exact across many chunks, chunks stay below max_payload, the producer never has
 * more chunks in flight than the reader granted, a reader has at most maxReads reads in progress, and a chunk that is
 * lost or never comes fails the read with a PartitionError naming the partition and the producer. The same over a
 * real nats-server: dataPlane.nats.test.ts.
 */
import { expect } from 'chai';
import { systemClock } from '../../lib/core/clock.js';
import { PartitionError } from '../../lib/core/errors.js';
import { ExecutionAttemptID, ResourceID } from '../../lib/core/ids.js';
import { PartitionStreamReader } from '../../lib/cluster/PartitionStreamReader.js';
import { PartitionStreamServer } from '../../lib/cluster/PartitionStreamServer.js';
import {
  type DataBus,
  dataInSubject,
  dataSubject,
  HEADER_CREDIT,
  HEADER_KIND,
  HEADER_SEQ,
} from '../../lib/cluster/partitionStreamWire.js';
import type { PartitionInputWire } from '../../lib/rpc/protocol.js';
import { rejection } from '../rpc/support/transports.js';

interface Sent {
  readonly subject: string;
  readonly body: Uint8Array;
  readonly fields: Readonly<Record<string, string>>;
}

/**
 * Delivers each message on a later turn (as a network would), unless `intercept` says to hold it (kept in `held`,
 * delivered by `release`) or drop it.
 */
class FakeBus implements DataBus {
  readonly maxPayload: number;
  readonly sent: Sent[] = [];
  readonly held: Sent[] = [];
  intercept: (message: Sent) => 'deliver' | 'hold' | 'drop' = () => 'deliver';
  readonly #handlers = new Map<string, (body: Uint8Array, header: (name: string) => string) => void>();

  constructor(maxPayload = 64 * 1024) {
    this.maxPayload = maxPayload;
  }

  publish(subject: string, body: Uint8Array, fields: Readonly<Record<string, string>>): void {
    // A copy, as the NATS client makes when it writes the message out.
    const message = { subject, body: body.slice(), fields: { ...fields } };
    this.sent.push(message);
    const verdict = this.intercept(message);
    if (verdict === 'hold') this.held.push(message);
    else if (verdict === 'deliver') setImmediate(() => this.#deliver(message));
  }

  subscribe(subject: string, onMessage: (body: Uint8Array, header: (name: string) => string) => void) {
    this.#handlers.set(subject, onMessage);
    return { unsubscribe: () => this.#handlers.delete(subject) };
  }

  release(): void {
    for (const message of this.held.splice(0)) setImmediate(() => this.#deliver(message));
  }

  chunks(): Sent[] {
    return this.sent.filter((m) => m.fields[HEADER_KIND] === 'chunk');
  }

  #deliver(message: Sent): void {
    this.#handlers.get(message.subject)?.(message.body, (name) => message.fields[name] ?? '');
  }
}

const CLUSTER = 'unit';
const producer = ResourceID.generate('taskmanager');
const consumer = ResourceID.generate('taskmanager');

function bytesOf(length: number): Uint8Array {
  const bytes = new Uint8Array(length);
  for (let i = 0; i < length; i++) bytes[i] = (i * 31 + 7) & 0xff;
  return bytes;
}

describe('the data plane protocol (credit-based chunks over a bus)', () => {
  let bus: FakeBus;
  let server: PartitionStreamServer;
  let reader: PartitionStreamReader;
  const partitionId = ExecutionAttemptID.generate();
  let kept: Uint8Array;
  const input = (subpartition = 0): PartitionInputWire => ({
    partitionId,
    resourceId: producer,
    subpartition,
    bytes: kept.byteLength,
  });

  beforeEach(() => {
    bus = new FakeBus();
    kept = bytesOf(300 * 1024 + 17);
    server = new PartitionStreamServer({
      bus,
      subject: dataSubject(CLUSTER, producer),
      clock: systemClock,
      idleTimeoutMs: 2_000,
    });
    server.serve((id, subpartition) => (id === partitionId && subpartition === 0 ? kept : undefined));
    reader = new PartitionStreamReader({
      bus,
      subject: dataInSubject(CLUSTER, consumer),
      clock: systemClock,
      credit: 4,
    });
  });

  afterEach(() => {
    reader.close();
    server.close();
  });

  it('reads a subpartition of many chunks exactly, each chunk with its headers below max_payload', async () => {
    const read = await reader.read(dataSubject(CLUSTER, producer), input(), 1_000);
    expect(read.buffer).to.be.instanceOf(SharedArrayBuffer);
    expect(Buffer.from(read).equals(Buffer.from(kept))).to.equal(true);
    const chunks = bus.chunks();
    expect(chunks.length).to.equal(Math.ceil(kept.byteLength / server.chunkBytes));
    expect(chunks.length).to.be.greaterThan(4); // more than one window of credit
    for (const chunk of chunks) expect(chunk.body.byteLength + 4096).to.be.at.most(bus.maxPayload);
    expect(chunks.map((c) => Number(c.fields[HEADER_SEQ]))).to.deep.equal(chunks.map((_, i) => i));
    expect(server.streams).to.equal(0);
    expect(reader.reads).to.equal(0);
  });

  it('never has more chunks in flight than granted: it stops at the credit, goes on when granted more', async () => {
    // The reader's grants are held back: the producer may send the initial credit (4 chunks), not one more.
    bus.intercept = (m) => (m.fields[HEADER_KIND] === 'credit' ? 'hold' : 'deliver');
    const reading = reader.read(dataSubject(CLUSTER, producer), input(), 1_000);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(bus.chunks().length).to.equal(4);
    expect(bus.held.length).to.be.at.least(1);
    // Granted as it goes: at every point the chunks sent are at most the credit granted so far.
    bus.intercept = () => 'deliver';
    bus.release();
    const read = await reading;
    expect(Buffer.from(read).equals(Buffer.from(kept))).to.equal(true);
    let granted = 0;
    let chunks = 0;
    for (const message of bus.sent) {
      const kind = message.fields[HEADER_KIND];
      if (kind === 'request' || kind === 'credit') granted += Number(message.fields[HEADER_CREDIT]);
      if (kind === 'chunk') chunks++;
      expect(chunks, `after ${bus.sent.indexOf(message)} messages`).to.be.at.most(granted);
    }
  });

  it('fails the read with PartitionError chunk-lost, at once, when a chunk is lost and a later one comes', async () => {
    bus.intercept = (m) => (m.fields[HEADER_KIND] === 'chunk' && m.fields[HEADER_SEQ] === '2' ? 'drop' : 'deliver');
    const started = Date.now();
    const error = await rejection(reader.read(dataSubject(CLUSTER, producer), input(), 5_000));
    expect(Date.now() - started).to.be.below(1_000);
    expect(error).to.be.instanceOf(PartitionError);
    expect(error).to.include({ reason: 'chunk-lost' });
    expect(error.message).to.contain(`chunk 2 of result partition ${ExecutionAttemptID.short(partitionId)}`);
    expect(error.message).to.contain(`from TaskExecutor ${producer}`);
    expect((error as PartitionError).details).to.include({ partitionId, resourceId: producer, subpartition: 0 });
    // The producer was told to stop.
    await new Promise((resolve) => setImmediate(resolve));
    expect(bus.sent.some((m) => m.fields[HEADER_KIND] === 'cancel')).to.equal(true);
    expect(server.streams).to.equal(0);
  });

  it('fails the read with PartitionError timed-out after its timeout when the next chunk never comes', async () => {
    bus.intercept = (m) =>
      m.fields[HEADER_KIND] === 'chunk' && Number(m.fields[HEADER_SEQ]) >= 3 ? 'drop' : 'deliver';
    const started = Date.now();
    const error = await rejection(reader.read(dataSubject(CLUSTER, producer), input(), 150));
    const waited = Date.now() - started;
    expect(waited).to.be.at.least(140);
    expect(waited).to.be.below(1_500);
    expect(error).to.be.instanceOf(PartitionError);
    expect(error).to.include({ reason: 'timed-out' });
    expect(error.message).to.equal(
      `no chunk of result partition ${ExecutionAttemptID.short(partitionId)} (subpartition 0) came from ` +
        `TaskExecutor ${producer} within 150 ms (rpc.ask.timeout; 3 chunk(s) came before): it is gone or stuck`,
    );
    expect(reader.reads).to.equal(0);
  });

  it('fails the read with PartitionError timed-out when nobody serves the producer subject', async () => {
    const error = await rejection(reader.read(dataSubject(CLUSTER, ResourceID.generate('taskmanager')), input(), 100));
    expect(error).to.include({ _tag: 'PartitionError', reason: 'timed-out' });
  });

  it('fails the read with PartitionError not-found for a partition the producer does not hold', async () => {
    const error = await rejection(reader.read(dataSubject(CLUSTER, producer), input(1), 1_000));
    expect(error).to.include({ _tag: 'PartitionError', reason: 'not-found' });
    expect(error.message).to.contain(`holds no result partition ${ExecutionAttemptID.short(partitionId)}`);
  });

  it('drops a stream whose reader grants nothing more within its idle timeout (the reader is gone)', async () => {
    const idle = new PartitionStreamServer({
      bus,
      subject: dataSubject(CLUSTER, 'idle'),
      clock: systemClock,
      idleTimeoutMs: 50,
    });
    idle.serve(() => kept);
    bus.intercept = (m) => (m.fields[HEADER_KIND] === 'credit' ? 'drop' : 'deliver');
    const reading = rejection(reader.read(dataSubject(CLUSTER, 'idle'), input(), 400));
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(idle.streams).to.equal(1);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(idle.streams).to.equal(0);
    expect(await reading).to.include({ reason: 'timed-out' });
    idle.close();
  });

  it('has at most maxReads reads in progress at once; a waiting one starts as one ends', async () => {
    const few = new PartitionStreamReader({
      bus,
      subject: dataInSubject(CLUSTER, 'few'),
      clock: systemClock,
      credit: 4,
      maxReads: 2,
    });
    let requested = 0;
    let most = 0;
    bus.intercept = (m) => {
      if (m.fields[HEADER_KIND] === 'request') {
        requested++;
        most = Math.max(most, few.reads);
      }
      return 'deliver';
    };
    const reads = Array.from({ length: 5 }, () => few.read(dataSubject(CLUSTER, producer), input(), 1_000));
    expect([few.reads, few.waiting, requested]).to.deep.equal([2, 3, 2]);
    for (const read of await Promise.all(reads)) expect(Buffer.from(read).equals(Buffer.from(kept))).to.equal(true);
    expect(requested).to.equal(5);
    expect(most).to.equal(2);
    few.close();
  });

  it('reads an empty subpartition (one empty chunk)', async () => {
    kept = new Uint8Array(0);
    const read = await reader.read(dataSubject(CLUSTER, producer), input(), 1_000);
    expect(read.byteLength).to.equal(0);
  });
});
