/**
 * A call's deadline measures a silent peer, not our own queue (issue 9 item 5): its clock starts
 * when its frame leaves, an answer already received wins over a timer that ran first, a peer that
 * keeps sending keeps the call alive — up to a bound, so that a peer answering every other call
 * but never this one still fails it. On a SimulatedClock, over memory transports (one over a real
 * MessageChannel for the default grace of a Node carrier).
 */
import { expect } from 'chai';
import { MessageChannel } from 'node:worker_threads';
import { SimulatedClock } from '../../lib/core/clock.js';
import { IllegalArgumentError, RpcTimeoutError } from '../../lib/core/errors.js';
import { connectGateway, gatewayStatus, serveGateway, type Gateway } from '../../lib/rpc/connect.js';
import { Link } from '../../lib/rpc/Link.js';
import { memoryTransportPair, type MemoryTransport } from '../../lib/rpc/memoryTransport.js';
import { portTransport, type Transport } from '../../lib/rpc/Transport.js';
import { rejection, watched } from './support/transports.js';

interface Probe {
  echo(value: unknown): Promise<unknown>;
  hang(): Promise<never>;
  /** Answers when the test says so (`probe.release(value)`). */
  answerLater(): Promise<unknown>;
}

class ProbeEndpoint implements Probe {
  readonly #held: Array<(value: unknown) => void> = [];
  get held(): number {
    return this.#held.length;
  }
  async echo(value: unknown) {
    return value;
  }
  hang(): Promise<never> {
    return new Promise(() => {});
  }
  answerLater(): Promise<unknown> {
    return new Promise((resolve) => this.#held.push(resolve));
  }
  release(value: unknown): void {
    this.#held.shift()?.(value);
  }
}

/** A transport that runs `hook` (once) right after its next send returned. */
function hooked(inner: Transport): Transport & { afterNextSend(hook: () => void): void } {
  let hook: (() => void) | undefined;
  const transport = watched(inner, () => {
    const run = hook;
    hook = undefined;
    run?.();
  });
  return Object.assign(transport, { afterNextSend: (next: () => void) => (hook = next) });
}

const turns = async (n = 4) => {
  for (let i = 0; i < n; i++) await new Promise((resolve) => setImmediate(resolve));
};

describe('gateway call deadlines: a deadline measures a silent peer, not our own queue', () => {
  let clock: SimulatedClock;
  let probe: ProbeEndpoint;
  let links: Link[];
  let callerEnd: MemoryTransport;
  let callerSide: ReturnType<typeof hooked>;
  let serverSide: ReturnType<typeof hooked>;
  let gateway: Gateway<Probe>;

  /** A caller and a server over `transports`; the gateway's deadline is 5 s, its bound `maxWaitMs`. */
  function connect(transports: [Transport, Transport], options: { maxWaitMs?: number } = {}) {
    callerSide = hooked(transports[0]);
    serverSide = hooked(transports[1]);
    const caller = new Link('caller', callerSide);
    const server = new Link('server', serverSide);
    links = [caller, server];
    serveGateway(server, 'probe', probe, { gateway: 'ProbeGateway' });
    gateway = connectGateway<Probe>(caller, 'probe', {
      gateway: 'ProbeGateway',
      timeoutMs: 5_000,
      clock,
      endpoint: 'probe endpoint',
      ...options,
    });
  }

  beforeEach(() => {
    clock = new SimulatedClock();
    probe = new ProbeEndpoint();
    const pair = memoryTransportPair();
    callerEnd = pair[0];
    connect(pair);
  });

  afterEach(() => {
    for (const link of links) link.close('test over');
  });

  it(
    'starts the clock of a call when its frame leaves: time ' +
      'our own job spends before the batch goes out does not count',
    async () => {
      const answer = gateway.echo('sent late');
      // Our job goes on for 5 s after making the call: its frame still waits in our outbox.
      clock.increment(5_000);
      expect(await answer).to.equal('sent late');
    },
  );

  it('does not count the time our transport spends sending a big batch', async () => {
    // The clone of our batch takes 6 s: the call's frame has left only when send returns.
    callerSide.afterNextSend(() => clock.increment(6_000));
    expect(await gateway.echo('big batch')).to.equal('big batch');
    expect(clock.pendingTimers, 'its deadline cleared').to.equal(0);
  });

  it('lets an answer already received win over a deadline timer that runs before it is delivered', async () => {
    const answer = gateway.answerLater();
    await turns();
    expect(probe.held).to.equal(1);
    serverSide.afterNextSend(() => {
      expect(callerEnd.waiting, 'the answer sits in our queue').to.equal(1);
      clock.increment(5_000);
    });
    probe.release('on time');
    expect(await answer).to.equal('on time');
  });

  it('lets the answer win when our own thread was blocked past the deadline while it arrived', async () => {
    const answer = gateway.answerLater();
    await turns();
    // Our event loop is blocked for 12 s (a big batch of our own) right after the peer answered:
    // the deadline timer fires late, in the timers phase, before the answer is delivered.
    serverSide.afterNextSend(() => clock.stall(12_000));
    probe.release('answered while we were busy');
    expect(await answer).to.equal('answered while we were busy');
  });

  it('does the same over a MessagePort, whose carrier has no afterIncoming (two event-loop turns)', async () => {
    for (const link of links) link.close('replaced');
    const { port1, port2 } = new MessageChannel();
    connect([portTransport(port1), portTransport(port2)]);
    const answer = gateway.answerLater();
    await turns();
    expect(probe.held).to.equal(1);
    serverSide.afterNextSend(() => clock.increment(5_000));
    probe.release('on time');
    expect(await answer).to.equal('on time');
  });

  it('fails a call once its peer has sent nothing for timeoutMs after its last frame', async () => {
    const stuck = rejection(gateway.hang());
    await turns();
    clock.increment(3_000);
    expect(await gateway.echo('alive at 3 s')).to.equal('alive at 3 s');
    clock.increment(2_000);
    await turns();
    expect(gatewayStatus(gateway).pendingCalls, 'at 5 s the peer spoke 2 s ago').to.equal(1);
    clock.increment(2_999);
    await turns();
    expect(gatewayStatus(gateway).pendingCalls).to.equal(1);
    clock.increment(1);
    const error = await stuck;
    expect(error).to.be.instanceOf(RpcTimeoutError);
    expect((error as RpcTimeoutError).details).to.include({
      gateway: 'ProbeGateway',
      method: 'hang',
      timeoutMs: 5_000,
    });
    expect(error.message).to.equal(
      'ProbeGateway.hang to probe endpoint got no answer within ' +
        '8000 ms: probe endpoint sent nothing for the last 5000 ms',
    );
  });

  it('counts no frame that came before the call left', async () => {
    expect(await gateway.echo('before')).to.equal('before');
    clock.increment(1_000);
    const stuck = rejection(gateway.hang());
    await turns();
    clock.increment(4_999);
    await turns();
    expect(gatewayStatus(gateway).pendingCalls).to.equal(1);
    clock.increment(1);
    const error = await stuck;
    expect(error).to.be.instanceOf(RpcTimeoutError);
    expect(error.message).to.equal('ProbeGateway.hang to probe endpoint got no answer within 5000 ms');
  });

  it(
    'keeps a call alive while its peer keeps sending, and fails it at 3 × ' +
      'timeoutMs even so: a peer that answers every other call but never this one',
    async () => {
      const stuck = rejection(gateway.hang());
      await turns();
      for (let second = 1; second < 15; second++) {
        clock.increment(1_000);
        expect(await gateway.echo(second)).to.equal(second);
      }
      expect(gatewayStatus(gateway).pendingCalls, 'at 14 s').to.equal(1);
      clock.increment(1_000);
      const error = await stuck;
      expect(error).to.be.instanceOf(RpcTimeoutError);
      expect((error as RpcTimeoutError).details).to.include({
        gateway: 'ProbeGateway',
        method: 'hang',
        timeoutMs: 5_000,
        maxWaitMs: 15_000,
      });
      expect(error.message).to.equal(
        'ProbeGateway.hang to probe endpoint got no answer within 15000 ' +
          'ms, the most a call waits (probe endpoint kept sending other frames)',
      );
      expect(gatewayStatus(gateway).pendingCalls).to.equal(0);
      expect(clock.pendingTimers).to.equal(0);
    },
  );

  it('takes its bound from options.maxWaitMs, which must be at least timeoutMs', async () => {
    for (const link of links) link.close('replaced');
    connect(memoryTransportPair(), { maxWaitMs: 7_000 });
    const stuck = rejection(gateway.hang());
    await turns();
    for (let second = 1; second < 7; second++) {
      clock.increment(1_000);
      await gateway.echo(second);
    }
    clock.increment(1_000);
    expect((await stuck).message).to.match(/within 7000 ms, the most a call waits/);
    expect(() =>
      connectGateway<Probe>(links[0]!, 'probe', { gateway: 'ProbeGateway', timeoutMs: 5_000, maxWaitMs: 4_999 }),
    ).to.throw(IllegalArgumentError, /maxWaitMs/);
  });
});
