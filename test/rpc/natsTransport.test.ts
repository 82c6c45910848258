import { expect } from 'chai';
import { connect, type MsgHdrs, type NatsConnection } from '@nats-io/transport-node';
import { SimulatedClock } from '../../lib/core/clock.js';
import { IllegalArgumentError, RpcTimeoutError, SlotAllocationError } from '../../lib/core/errors.js';
import { BlobStore } from '../../lib/cluster/BlobStore.js';
import { connectGateway, serveGateway } from '../../lib/rpc/connect.js';
import { Link } from '../../lib/rpc/Link.js';
import { HEADER_SEQ } from '../../lib/rpc/natsDelivery.js';
import { NatsInbox, type LargeMessageStore } from '../../lib/rpc/natsTransport.js';
import { until } from '../support/eventually.js';
import { natsServerOrSkip, startNatsServer, type NatsServer } from '../support/natsServer.js';
import { rejection } from './support/transports.js';

interface Probe {
  echo(value: unknown): Promise<unknown>;
  refuse(): Promise<void>;
  hang(): Promise<never>;
}

/** Every value the served probe echoed, in order: a repeat delivered twice would show here. */
const echoed: unknown[] = [];

const probe: Probe = {
  echo: async (value) => {
    echoed.push(value);
    return value;
  },
  refuse: async () => {
    throw new SlotAllocationError('index-taken', 'slot 2 is taken by allocation a-1', {
      index: 2,
      allocationId: 'a-1',
    });
  },
  hang: () => new Promise(() => {}),
};

/** The probe's methods as control methods: by comlink on the probe's control channel. */
const PROBE_CONTROL = ['echo', 'refuse', 'hang'] as const;

/** The server's max_payload in these tests: small, so a "large" value stays cheap to make. */
const MAX_PAYLOAD = 64 * 1024;

describe('NATS transport (a real nats-server)', function () {
  this.timeout(30_000);
  let server: NatsServer;
  let jmConnection: NatsConnection;
  let teConnection: NatsConnection;
  const cleanups: Array<() => void | Promise<void>> = [];

  before(async function () {
    const binary = natsServerOrSkip(this, 'NATS transport');
    server = await startNatsServer(binary, { maxPayload: MAX_PAYLOAD });
    jmConnection = await connect({ servers: server.url });
    teConnection = await connect({ servers: server.url });
  });

  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  after(async () => {
    await jmConnection?.close();
    await teConnection?.close();
    await server?.stop();
  });

  /** A JobManager-side inbox serving the probe to every peer, and a TaskExecutor-side link calling it. */
  async function pair(
    options: {
      clock?: SimulatedClock;
      largeMessages?: LargeMessageStore;
      subject?: string;
      /** Drops what the serving side publishes when this says so (a NATS node losing it). */
      dropServed?: (headers: MsgHdrs | undefined) => boolean;
      /** Drops what the calling side publishes when this says so. */
      dropCalling?: (headers: MsgHdrs | undefined) => boolean;
      admitting?: () => boolean;
      giveUpMs?: number;
    } = {},
  ) {
    const subject = options.subject ?? 'slotwise.test.rm';
    const served = new NatsInbox({
      connection: options.dropServed ? lossy(jmConnection, options.dropServed) : jmConnection,
      subject,
      id: 'jobmanager',
      ...(options.largeMessages ? { largeMessages: options.largeMessages } : {}),
      ...(options.admitting ? { admitting: options.admitting } : {}),
    });
    const serverLinks: Link[] = [];
    served.onUnknownPeer((peerId, reply) => {
      const transport = served.transportTo(peerId, reply);
      const link = new Link(`JobManager to ${peerId}`, transport);
      serveGateway(link, 'probe', probe, { control: PROBE_CONTROL });
      serverLinks.push(link);
      return transport;
    });
    const calling = new NatsInbox({
      connection: options.dropCalling ? lossy(teConnection, options.dropCalling) : teConnection,
      subject: 'slotwise.test.te.te-1',
      id: 'te-1',
      ...(options.largeMessages ? { largeMessages: options.largeMessages } : {}),
      ...(options.giveUpMs ? { giveUpMs: options.giveUpMs } : {}),
    });
    // Both subscriptions in place before the first call (the server drops what nobody listens to yet).
    await Promise.all([served.ready(), calling.ready()]);
    const link = new Link('TaskExecutor te-1', calling.transportTo('jobmanager', subject));
    const gateway = connectGateway<Probe>(link, 'probe', {
      gateway: 'ProbeGateway',
      timeoutMs: 5_000,
      ...(options.clock ? { clock: options.clock } : {}),
      endpoint: 'JobManager',
    });
    const control = connectGateway<Probe>(link, 'probe', {
      gateway: 'ProbeGateway',
      timeoutMs: 5_000,
      ...(options.clock ? { clock: options.clock } : {}),
      endpoint: 'JobManager',
      control: PROBE_CONTROL,
    });
    cleanups.push(() => {
      link.close();
      calling.close();
      served.close();
    });
    return { gateway, control, link, serverLinks, served };
  }

  /** `connection` whose publishes `drop` picks are lost on the way, as a NATS node going away loses them. */
  function lossy(connection: NatsConnection, drop: (headers: MsgHdrs | undefined) => boolean): NatsConnection {
    return new Proxy(connection, {
      get(target, key) {
        if (key === 'publish')
          return (subject: string, data: Uint8Array, options?: { headers?: MsgHdrs }) =>
            drop(options?.headers) ? undefined : target.publish(subject, data, options);
        const value = Reflect.get(target, key, target) as unknown;
        return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
      },
    });
  }

  /** Drops the first message numbered `seq`, once. */
  function once(seq: number): (headers: MsgHdrs | undefined) => boolean {
    let dropped = false;
    return (headers) => {
      if (dropped || headers?.get(HEADER_SEQ) !== String(seq)) return false;
      dropped = true;
      return true;
    };
  }

  describe('when NATS loses a message', () => {
    beforeEach(() => echoed.splice(0));

    it('sends a lost call again: answered once, long before its deadline', async () => {
      const { gateway } = await pair({ dropCalling: once(1) });
      const started = Date.now();
      expect(await gateway.echo('first')).to.equal('first');
      expect(Date.now() - started).to.be.below(5_000); // the call's deadline: 5 s
      expect(echoed).to.deep.equal(['first']);
    });

    it('sends a lost answer again, and the call runs once', async () => {
      const { gateway } = await pair({ dropServed: once(1) });
      expect(await gateway.echo('answered')).to.equal('answered');
      expect(echoed).to.deep.equal(['answered']);
    });

    it('keeps a stream whole and in order across a lost message: the ones after it wait for it', async () => {
      const { gateway, served } = await pair({ dropCalling: once(3) });
      const values = Array.from({ length: 24 }, (_, i) => i);
      const answers: number[] = [];
      // One call per message (each awaited before the next is sent would not need a later one to see the gap).
      for (const value of values) {
        void gateway.echo(value).then((v) => answers.push(v as number));
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
      await until('every answer', () => (answers.length === values.length ? true : undefined));
      expect(echoed).to.deep.equal(values);
      expect(answers).to.deep.equal(values);
      expect(served.peers).to.deep.equal(['te-1']);
    });

    it('gives up what stayed unacknowledged past its bound: a peer that refused it never runs it late', async () => {
      let admitting = false;
      const { gateway } = await pair({ admitting: () => admitting, giveUpMs: 300 });
      const stale = [gateway.echo('stale 1'), gateway.echo('stale 2')];
      for (const call of stale) call.catch(() => {});
      await new Promise((resolve) => setTimeout(resolve, 1_200)); // a retransmission or two, then past the bound
      admitting = true;
      expect(await gateway.echo('fresh')).to.equal('fresh');
      expect(echoed).to.deep.equal(['fresh']);
    });
  });

  it('carries gateway calls and their structured-cloneable answers exactly, 64 in flight', async () => {
    const { gateway } = await pair();
    const value = {
      when: new Date(5),
      tags: new Set(['a', 'b']),
      counts: new Map([['x', 1n]]),
      bytes: new Uint8Array([1, 2, 3]),
    };
    expect(await gateway.echo(value)).to.deep.equal(value);
    const answers = await Promise.all(Array.from({ length: 64 }, (_, i) => gateway.echo(i)));
    expect(answers).to.deep.equal(Array.from({ length: 64 }, (_, i) => i));
  });

  it('delivers an error thrown by the served gateway as its own class and reason', async () => {
    const { gateway } = await pair();
    const error = await rejection(gateway.refuse());
    expect(error).to.be.instanceOf(SlotAllocationError);
    expect((error as SlotAllocationError).reason).to.equal('index-taken');
    expect((error as SlotAllocationError).details['index']).to.equal(2);
  });

  it('carries control calls by comlink: answers, errors in their class, a deadline naming the method', async () => {
    const clock = new SimulatedClock();
    const { control } = await pair({ clock });
    const answers = await Promise.all(Array.from({ length: 64 }, (_, i) => control.echo({ i, at: new Date(i) })));
    expect(answers).to.deep.equal(Array.from({ length: 64 }, (_, i) => ({ i, at: new Date(i) })));
    expect(await rejection(control.refuse())).to.be.instanceOf(SlotAllocationError);
    const call = rejection(control.hang());
    await new Promise((resolve) => setImmediate(resolve));
    clock.increment(5_000);
    const error = await call;
    expect(error).to.be.instanceOf(RpcTimeoutError);
    expect((error as RpcTimeoutError).details).to.include({ gateway: 'ProbeGateway', method: 'hang' });
    expect(await control.echo('still here')).to.equal('still here');
  });

  it('fails a call to a silent peer (nobody listens on its subject) with RpcTimeoutError at its deadline', async () => {
    const clock = new SimulatedClock();
    const calling = new NatsInbox({ connection: teConnection, subject: 'slotwise.test.te.te-2', id: 'te-2' });
    const link = new Link('TaskExecutor te-2', calling.transportTo('jobmanager', 'slotwise.test.nobody'));
    cleanups.push(() => (link.close(), calling.close()));
    const gateway = connectGateway<Probe>(link, 'probe', {
      gateway: 'ProbeGateway',
      timeoutMs: 1_000,
      clock,
      endpoint: 'JobManager',
    });
    const call = rejection(gateway.echo('anyone?'));
    await new Promise((resolve) => setImmediate(resolve)); // the frame has left
    clock.increment(1_000);
    const error = await call;
    expect(error).to.be.instanceOf(RpcTimeoutError);
    expect(error.message).to.contain('ProbeGateway.echo to JobManager got no answer within 1000 ms');
  });

  it('fails a call to a peer that hangs with RpcTimeoutError, and the link keeps working', async () => {
    const clock = new SimulatedClock();
    const { gateway } = await pair({ clock });
    const call = rejection(gateway.hang());
    await new Promise((resolve) => setImmediate(resolve));
    clock.increment(5_000);
    expect(await call).to.be.instanceOf(RpcTimeoutError);
    expect(await gateway.echo('still here')).to.equal('still here');
  });

  it(
    'refuses a value over max_payload with a typed error ' + 'when there is no large-message store, and sends nothing',
    async () => {
      const { gateway } = await pair();
      const big = 'x'.repeat(MAX_PAYLOAD * 2);
      const error = await rejection(gateway.echo(big));
      expect(error).to.be.instanceOf(IllegalArgumentError);
      expect(error.message).to.match(/exceeds the NATS server's max_payload of 65536 bytes/);
      expect(await gateway.echo('small')).to.equal('small');
    },
  );

  it('carries values over max_payload both ways through the object store, whole', async () => {
    const blobs = await BlobStore.open(jmConnection, 'test');
    const { gateway } = await pair({ largeMessages: blobs.messages });
    const big = Uint8Array.from({ length: MAX_PAYLOAD * 3 }, (_, i) => (i * 7) % 251);
    const back = (await gateway.echo(big)) as Uint8Array;
    expect(back.length).to.equal(big.length);
    expect(Buffer.from(back).equals(Buffer.from(big))).to.equal(true);
  });

  it('keeps the order of messages behind a large one', async () => {
    const blobs = await BlobStore.open(jmConnection, 'test');
    const received: unknown[] = [];
    const served = new NatsInbox({
      connection: jmConnection,
      subject: 'slotwise.order.rm',
      id: 'jobmanager',
      largeMessages: blobs.messages,
    });
    served.onUnknownPeer((peerId, reply) => {
      const transport = served.transportTo(peerId, reply);
      transport.onMessage((message) => received.push(typeof message === 'string' ? message.length : message));
      return transport;
    });
    const calling = new NatsInbox({
      connection: teConnection,
      subject: 'slotwise.order.te',
      id: 'te-3',
      largeMessages: blobs.messages,
    });
    await Promise.all([served.ready(), calling.ready()]);
    const transport = calling.transportTo('jobmanager', 'slotwise.order.rm');
    cleanups.push(() => (calling.close(), served.close()));
    transport.send('first');
    transport.send('y'.repeat(MAX_PAYLOAD * 2));
    transport.send('third');
    await until('three messages', () => received.length === 3);
    expect(received).to.deep.equal([5, MAX_PAYLOAD * 2, 5]);
  });

  it('tells the peer when one side closes: its link is lost at once', async () => {
    const { gateway, link, serverLinks } = await pair();
    expect(await gateway.echo(1)).to.equal(1);
    const [serverLink] = serverLinks;
    link.close('the TaskExecutor stopped');
    await until('the JobManager side to close', () => serverLink!.closed);
    expect(serverLink!.closeKind).to.equal('lost');
  });

  it(
    'drops a message still addressed to an earlier transport ' + 'of ours on the same subject, and keeps the new Link',
    async () => {
      const { gateway, serverLinks, served } = await pair({ subject: 'slotwise.stale.rm' });
      expect(await gateway.echo('first')).to.equal('first');
      // A new TaskExecutor-side inbox on the same subject (the old one's transport is still known to the other side).
      const again = new NatsInbox({ connection: teConnection, subject: 'slotwise.test.te.te-1', id: 'te-1' });
      const link = new Link('TaskExecutor te-1 again', again.transportTo('jobmanager', 'slotwise.stale.rm'));
      cleanups.push(() => (link.close(), again.close()));
      const seen: unknown[] = [];
      link.channel('stray').addEventListener('message', (event) => seen.push(event.data));
      await again.ready();
      // The other side still talks to the old transport: addressed to the old session, it must not reach the new one.
      serverLinks[0]!.channel('stray').postMessage('for the old one');
      const fresh = connectGateway<Probe>(link, 'probe', {
        gateway: 'ProbeGateway',
        timeoutMs: 5_000,
        endpoint: 'JobManager',
      });
      expect(await fresh.echo('second')).to.equal('second');
      expect(link.closed).to.equal(false);
      expect(seen).to.deep.equal([]);
      expect(served.peers).to.deep.equal(['te-1']);
    },
  );
});
