import { expect } from 'chai';
import { MessageChannel } from 'node:worker_threads';
import { SimulatedClock } from '../../lib/core/clock.js';
import { IllegalArgumentError } from '../../lib/core/errors.js';
import { Link, WITH_NEXT_MAX_WAIT_MS, type ChannelMessageEvent, type CloseKind } from '../../lib/rpc/Link.js';
import { portTransport, type Transport } from '../../lib/rpc/Transport.js';
import { eventually } from '../support/eventually.js';
import { watched } from './support/transports.js';

/** A transport that records what it sends. */
function spy(inner: Transport): Transport & { readonly sent: unknown[] } {
  const sent: unknown[] = [];
  return Object.assign(
    watched(inner, (message) => sent.push(message)),
    { sent },
  );
}

const collect = (into: unknown[]) => (event: ChannelMessageEvent) => into.push(event.data);

describe('Link', () => {
  let links: Link[] = [];
  /** Two linked ends over a fresh MessageChannel; `a` records what it sends. */
  function pair(clock?: SimulatedClock) {
    const { port1, port2 } = new MessageChannel();
    const transport = spy(portTransport(port1));
    const a = new Link('a', transport, clock === undefined ? {} : { clock });
    const b = new Link('b', portTransport(port2));
    links.push(a, b);
    return { a, b, sent: transport.sent };
  }

  afterEach(() => {
    for (const link of links) link.close('test over');
    links = [];
  });

  it('keeps channels independent: a message reaches only the listeners of its own channel', async () => {
    const { a, b } = pair();
    const onX: unknown[] = [];
    const onY: unknown[] = [];
    b.channel('x').addEventListener('message', collect(onX));
    b.channel('y').addEventListener('message', collect(onY));
    a.channel('x').postMessage('x1');
    a.channel('y').postMessage({ y: 1 });
    a.channel('x').postMessage('x2');
    await eventually(() => onX.length === 2 && onY.length === 1, 'both channels');
    expect(onX).to.deep.equal(['x1', 'x2']);
    expect(onY).to.deep.equal([{ y: 1 }]);
    expect(a.channel('x')).to.equal(a.channel('x'), 'one channel object per name');
  });

  it(
    'sends everything posted during one job, in code and ' + 'in promise continuations, as one transport message',
    async () => {
      const { a, b, sent } = pair();
      const received: unknown[] = [];
      b.channel('burst').addEventListener('message', collect(received));
      b.channel('other').addEventListener('message', collect(received));
      const burst = a.channel('burst');
      const other = a.channel('other');
      for (let i = 0; i < 64; i++) burst.postMessage(i);
      // Promise chains of different depths, as 64 answers produced by 64 async calls would be.
      void Promise.resolve().then(() => other.postMessage('depth 1'));
      void Promise.resolve()
        .then(() => Promise.resolve())
        .then(() => burst.postMessage('depth 3'));
      await eventually(() => received.length === 66, 'the burst');
      expect(sent).to.have.length(1);
      expect(received.slice(0, 64)).to.deep.equal([...Array(64).keys()]);
      expect(received.slice(64)).to.have.members(['depth 1', 'depth 3']);
      // A later job is a later batch.
      burst.postMessage('later');
      await eventually(() => received.length === 67, 'the later message');
      expect(sent).to.have.length(2);
    },
  );

  it(
    'buffers messages for a channel nobody listens to ' + 'and delivers them, in order, to its first listener',
    async () => {
      const { a, b } = pair();
      for (const m of ['m1', 'm2', 'm3']) a.channel('late').postMessage(m);
      await eventually(() => b.buffered === 3, 'the buffered messages');
      const received: unknown[] = [];
      b.channel('late').addEventListener('message', collect(received));
      expect(received).to.deep.equal(['m1', 'm2', 'm3']);
      expect(b.buffered).to.equal(0);
      a.channel('late').postMessage('m4');
      await eventually(() => received.length === 4, 'm4');
      expect(received[3]).to.equal('m4');
    },
  );

  it(
    'hands an unknown channel to the onUnknownChannel handler ' +
      'of the longest matching prefix, once, before delivering',
    async () => {
      const { a, b } = pair();
      const opened: string[] = [];
      const received: unknown[] = [];
      b.onUnknownChannel('j', () => opened.push('wrong: shorter prefix'));
      b.onUnknownChannel('jm:', (name) => {
        opened.push(name);
        b.channel(name).addEventListener('message', collect(received));
      });
      a.channel('jm:job-1').postMessage('offer 1');
      a.channel('jm:job-1').postMessage('offer 2');
      await eventually(() => received.length === 2, 'both offers');
      expect(opened).to.deep.equal(['jm:job-1']);
      expect(received).to.deep.equal(['offer 1', 'offer 2']);

      // Registered after messages were buffered: it is given those channels too.
      a.channel('te:1').postMessage('early');
      await eventually(() => b.buffered === 1, 'the early message');
      const late: unknown[] = [];
      b.onUnknownChannel('te:', (name) => b.channel(name).addEventListener('message', collect(late)));
      expect(late).to.deep.equal(['early']);
    },
  );

  it(
    'closing tells every channel and onClosed at once, ' + 'says bye so the peer closes too, and drops later sends',
    async () => {
      const { a, b, sent } = pair();
      const told: Array<[string, string, CloseKind]> = [];
      a.channel('x').onClose((reason, kind) => told.push(['a.x', reason, kind]));
      a.onClosed((reason, kind) => told.push(['a', reason, kind]));
      b.channel('x').onClose((reason, kind) => told.push(['b.x', reason, kind]));
      a.channel('x').postMessage('last words');
      const lastWords: unknown[] = [];
      b.channel('x').addEventListener('message', collect(lastWords));

      a.close('shutting down');
      expect(a.closed).to.equal(true);
      expect(a.closeKind).to.equal('closed');
      expect(a.channel('x').closed).to.equal(true);
      expect(told).to.deep.equal([
        ['a.x', 'shutting down', 'closed'],
        ['a', 'shutting down', 'closed'],
      ]);
      await eventually(() => b.closed, 'the peer to close');
      expect(lastWords).to.deep.equal(['last words'], 'what was queued before close still goes out');
      expect(b.closeKind).to.equal('lost');
      expect(told[2]).to.deep.equal(['b.x', 'the peer closed the link: shutting down', 'lost']);

      const sends = sent.length;
      expect(() => a.channel('x').postMessage('after')).to.not.throw();
      await new Promise((resolve) => setImmediate(resolve));
      expect(sent).to.have.length(sends);
    },
  );

  it('closes as lost when the transport goes away without a bye', async () => {
    const { port1, port2 } = new MessageChannel();
    const link = new Link('survivor', portTransport(port1));
    links.push(link);
    let closed: [string, CloseKind] | undefined;
    link.onClosed((reason, kind) => (closed = [reason, kind]));
    port2.close();
    await eventually(() => closed !== undefined, 'the link to close');
    expect(closed).to.deep.equal(['the message port was closed', 'lost']);
  });

  it('sends the rest of a batch when one message cannot be cloned, and tells that channel', async () => {
    const { a, b } = pair();
    const received: unknown[] = [];
    b.channel('x').addEventListener('message', collect(received));
    const failed: unknown[] = [];
    a.channel('x').onUndeliverable((message, error) => failed.push([message, (error as Error).message]));
    a.channel('x').postMessage('before');
    a.channel('x').postMessage({ fn: () => 1 });
    a.channel('x').postMessage('after');
    await eventually(() => received.length === 2, 'the cloneable messages');
    expect(received).to.deep.equal(['before', 'after']);
    expect(failed).to.have.length(1);
    expect(() => a.channel('x').postMessage('x', [new ArrayBuffer(1)])).to.throw(
      IllegalArgumentError,
      /transfer lists are not supported/,
    );
  });

  it(
    'tells whenSent once the batch holding what was posted ' +
      'has been handed to the transport, and never after close',
    async () => {
      const { a, sent } = pair();
      const told: number[] = [];
      a.channel('x').postMessage('m1');
      a.whenSent(() => told.push(sent.length));
      expect(told, 'not while it waits in the outbox').to.deep.equal([]);
      await eventually(() => told.length === 1, 'whenSent');
      expect(told).to.deep.equal([1]);
      a.channel('x').postMessage('m2');
      a.whenSent(() => told.push(sent.length));
      a.close('closing');
      expect(told, 'closing sends what is queued, and tells').to.deep.equal([1, 2]);
      a.whenSent(() => told.push(-1));
      await new Promise((resolve) => setImmediate(resolve));
      expect(told).to.deep.equal([1, 2]);
    },
  );

  it(
    'sends a message posted with the next batch in the next one, in order, ' +
      'or alone once it waited WITH_NEXT_MAX_WAIT_MS; closing sends it',
    async () => {
      const clock = new SimulatedClock();
      const { a, b, sent } = pair(clock);
      const received: unknown[] = [];
      b.channel('x').addEventListener('message', collect(received));
      b.channel('y').addEventListener('message', collect(received));
      a.channel('x').postWithNext('ack 1');
      await new Promise((resolve) => setImmediate(resolve));
      expect(sent, 'no batch of its own').to.deep.equal([]);
      a.channel('y').postMessage('states');
      await eventually(() => received.length === 2, 'the next batch');
      expect(sent).to.deep.equal([['x', 'ack 1', 'y', 'states']]);
      expect(clock.pendingTimers, 'its wait ended with the batch').to.equal(0);

      a.channel('x').postWithNext('ack 2');
      clock.increment(WITH_NEXT_MAX_WAIT_MS - 1);
      await new Promise((resolve) => setImmediate(resolve));
      expect(sent).to.have.length(1);
      clock.increment(1);
      await eventually(() => received.length === 3, 'the message alone');
      expect(sent.at(-1)).to.deep.equal(['x', 'ack 2']);

      a.channel('x').postWithNext('ack 3');
      a.close('closing');
      expect(sent.at(-1)).to.deep.include('ack 3');
      expect(clock.pendingTimers).to.equal(0);
    },
  );

  it('tells onReceived after each transport message from the peer has been delivered', async () => {
    const { a, b } = pair();
    const seen: string[] = [];
    b.channel('x').addEventListener('message', (event) => seen.push(`message ${String(event.data)}`));
    const stop = b.onReceived(() => seen.push('received'));
    a.channel('x').postMessage(1);
    a.channel('x').postMessage(2);
    await eventually(() => seen.length === 3, 'the batch');
    expect(seen).to.deep.equal(['message 1', 'message 2', 'received']);
    stop();
    a.channel('x').postMessage(3);
    await eventually(() => seen.length === 4, 'the next message');
    expect(seen.at(-1)).to.equal('message 3');
  });
});
