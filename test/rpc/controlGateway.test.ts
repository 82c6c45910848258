/**
 * A gateway's control methods go by comlink's wrap/expose on the gateway's control channel
 * (connect.ts, ControlCaller.ts, serveControl.ts) and keep every guarantee of the frames: the
 * deadline (RpcTimeoutError naming gateway, method and timeout), EndpointClosedError at once on
 * close, errors with their class, calls on the serving mailbox, and nothing left behind — neither
 * our entry nor comlink's resolver of a call given up. On a SimulatedClock over memory transports.
 */
import { expect } from 'chai';
import { releaseProxy, wrap, type Endpoint } from 'comlink';
import { SimulatedClock } from '../../lib/core/clock.js';
import {
  EndpointClosedError,
  IllegalArgumentError,
  RpcTimeoutError,
  SlotAllocationError,
} from '../../lib/core/errors.js';
import { connectGateway, gatewayStatus, serveGateway, type Gateway } from '../../lib/rpc/connect.js';
import { controlChannel } from '../../lib/rpc/gatewayMethods.js';
import { Link, WITH_NEXT_MAX_WAIT_MS } from '../../lib/rpc/Link.js';
import { MainThreadExecutor } from '../../lib/rpc/MainThreadExecutor.js';
import { memoryTransportPair } from '../../lib/rpc/memoryTransport.js';
import { eventually } from '../support/eventually.js';
import { rejection, watched } from './support/transports.js';

interface Probe {
  echo(value: unknown): Promise<unknown>;
  refuse(): Promise<void>;
  hang(): Promise<never>;
  /** Answers when the test says so (`probe.release(value)`). */
  answerLater(): Promise<unknown>;
  unsendable(): Promise<unknown>;
  /** The hot-path method of this probe: stays on the frames. */
  record(value: unknown): Promise<void>;
  /** Control: what `record` saw so far, and whether it runs inside the serving mailbox. */
  seen(): Promise<{ readonly values: unknown[]; readonly inMailbox: boolean }>;
}

const CONTROL = ['echo', 'refuse', 'hang', 'answerLater', 'unsendable', 'seen'] as const;

class ProbeEndpoint implements Probe {
  calls = 0;
  readonly #held: Array<(value: unknown) => void> = [];
  readonly #values: unknown[] = [];
  constructor(private readonly mailbox: MainThreadExecutor) {}
  async echo(value: unknown) {
    this.calls++;
    return value;
  }
  async refuse() {
    this.calls++;
    throw new SlotAllocationError('index-taken', 'slot 2 is taken by allocation a-1', {
      index: 2,
      allocationId: 'a-1',
    });
  }
  hang(): Promise<never> {
    this.calls++;
    return new Promise(() => {});
  }
  answerLater(): Promise<unknown> {
    this.calls++;
    return new Promise((resolve) => this.#held.push(resolve));
  }
  async unsendable() {
    this.calls++;
    return { callback: () => 1 };
  }
  async record(value: unknown) {
    this.#values.push(value);
  }
  async seen() {
    return { values: [...this.#values], inMailbox: this.mailbox.isInMainThread };
  }
  release(value: unknown): void {
    this.#held.shift()?.(value);
  }
}

describe('control gateway methods over comlink', () => {
  let clock: SimulatedClock;
  let mailbox: MainThreadExecutor;
  let probe: ProbeEndpoint;
  let caller: Link;
  let server: Link;
  let gateway: Gateway<Probe>;
  let sends: number;

  beforeEach(() => {
    const [a, b] = memoryTransportPair();
    sends = 0;
    clock = new SimulatedClock();
    caller = new Link(
      'caller',
      watched(a, () => sends++),
    );
    server = new Link('server', b);
    mailbox = new MainThreadExecutor('ProbeEndpoint');
    probe = new ProbeEndpoint(mailbox);
    serveGateway(server, 'probe', probe, { mailbox, gateway: 'ProbeGateway', control: CONTROL });
    gateway = connectGateway<Probe>(caller, 'probe', {
      gateway: 'ProbeGateway',
      timeoutMs: 5_000,
      clock,
      endpoint: 'probe endpoint',
      control: CONTROL,
    });
  });

  afterEach(() => {
    caller.close('test over');
    server.close('test over');
  });

  it('answers on the control channel, the hot path in frames, in the order made, on the mailbox', async () => {
    const recorded = gateway.record(1);
    const echoed = gateway.echo({ id: 'a-1', at: new Date(0), big: 2n ** 64n });
    expect(await echoed).to.deep.equal({ id: 'a-1', at: new Date(0), big: 2n ** 64n });
    await recorded;
    void gateway.record(2);
    // Made after record(2) on another channel of the same link: it runs after it.
    expect(await gateway.seen()).to.deep.equal({ values: [1, 2], inMailbox: true });
    expect(clock.pendingTimers, 'deadline timers cleared on answer').to.equal(0);
    expect(gatewayStatus(gateway)).to.deep.equal({
      pendingCalls: 0,
      closed: false,
      control: { pendingCalls: 0, generations: 1 },
    });
    expect(caller.channel(controlChannel('probe')).listenerCount, 'one listener for every control call').to.equal(1);
  });

  it('delivers a SlotAllocationError thrown by the implementation as a SlotAllocationError', async () => {
    const error = await rejection(gateway.refuse());
    expect(error).to.be.instanceOf(SlotAllocationError);
    expect((error as SlotAllocationError).reason).to.equal('index-taken');
    expect((error as SlotAllocationError).details).to.deep.equal({ index: 2, allocationId: 'a-1' });
    expect(error.message).to.equal('slot 2 is taken by allocation a-1');
  });

  it('times out with RpcTimeoutError naming gateway, method and timeout; nothing is left behind', async () => {
    const pending = rejection(gateway.hang());
    await eventually(() => probe.calls === 1, 'the call to arrive');
    clock.increment(4_999);
    expect(gatewayStatus(gateway).control).to.deep.equal({ pendingCalls: 1, generations: 1 });
    clock.increment(1);
    const error = await pending;
    expect(error).to.be.instanceOf(RpcTimeoutError);
    expect((error as RpcTimeoutError).details).to.include({
      gateway: 'ProbeGateway',
      method: 'hang',
      timeoutMs: 5_000,
    });
    expect(error.message).to.equal('ProbeGateway.hang to probe endpoint got no answer within 5000 ms');
    // Our entry is gone, and so is comlink's resolver: its wrap, with nothing else in flight, was released.
    expect(gatewayStatus(gateway)).to.deep.equal({
      pendingCalls: 0,
      closed: false,
      control: { pendingCalls: 0, generations: 0 },
    });
    expect(clock.pendingTimers).to.equal(0);
    expect(await gateway.echo('next'), 'the next call opens a fresh wrap').to.equal('next');
    expect(gatewayStatus(gateway).control).to.deep.equal({ pendingCalls: 0, generations: 1 });
  });

  it("releases a given-up call's resolver once the calls made beside it are done", async () => {
    const given = rejection(gateway.hang());
    await eventually(() => probe.calls === 1, 'the first call to arrive');
    clock.increment(2_000);
    const beside = gateway.answerLater();
    await eventually(() => probe.calls === 2, 'the second call to arrive');
    clock.increment(3_000);
    expect(await given).to.be.instanceOf(RpcTimeoutError);
    // The wrap holding the dead resolver still carries a live call: it stays, and takes no new calls.
    expect(gatewayStatus(gateway).control).to.deep.equal({ pendingCalls: 1, generations: 1 });
    const after = gateway.echo('after');
    expect(gatewayStatus(gateway).control).to.deep.equal({ pendingCalls: 2, generations: 2 });
    expect(await after).to.equal('after');
    probe.release('late but in time');
    expect(await beside).to.equal('late but in time');
    expect(gatewayStatus(gateway).control, 'the old wrap released').to.deep.equal({ pendingCalls: 0, generations: 1 });
  });

  it('rejects pending calls at once with EndpointClosedError when the link closes; later ones unsent', async () => {
    const first = rejection(gateway.hang());
    const second = rejection(gateway.answerLater());
    await eventually(() => probe.calls === 2, 'both calls to arrive');
    server.close('server stopping');
    // No clock increment: the deadline cannot be what ends them.
    for (const error of await Promise.all([first, second])) {
      expect(error).to.be.instanceOf(EndpointClosedError);
      expect((error as EndpointClosedError).reason).to.equal('lost');
      expect((error as EndpointClosedError).details).to.include({
        gateway: 'ProbeGateway',
        endpoint: 'probe endpoint',
      });
    }
    expect(clock.pendingTimers).to.equal(0);
    const sendsBefore = sends;
    const later = await rejection(gateway.echo(1));
    expect(later).to.be.instanceOf(EndpointClosedError);
    expect((later as EndpointClosedError).details).to.include({ method: 'echo' });
    await new Promise((resolve) => setImmediate(resolve));
    expect(sends).to.equal(sendsBefore);
    expect(gatewayStatus(gateway)).to.deep.equal({
      pendingCalls: 0,
      closed: true,
      control: { pendingCalls: 0, generations: 0 },
    });
  });

  it('keeps answering other callers after a proxy of the channel is released (RELEASE)', async () => {
    // Another comlink caller on the same control channel; releasing its proxy is what comlink does
    // when it finds a proxy collected: it sends RELEASE, and a bare `expose` stops listening.
    const other = wrap<Probe>(caller.channel(controlChannel('probe')) as unknown as Endpoint);
    expect(await other.echo('other')).to.equal('other');
    other[releaseProxy]();
    await new Promise((resolve) => setImmediate(resolve));
    await new Promise((resolve) => setImmediate(resolve));
    expect(await gateway.echo('still served')).to.equal('still served');
    expect(await gateway.echo('and again')).to.equal('and again');
  });

  it('rejects unsendable arguments with IllegalArgumentError; an unsendable result comes as a TypeError', async () => {
    const [bad, good] = await Promise.allSettled([gateway.echo({ callback: () => 1 }), gateway.echo('fine')]);
    expect((bad as PromiseRejectedResult).reason).to.be.instanceOf(IllegalArgumentError);
    expect((bad as PromiseRejectedResult).reason.details).to.include({ gateway: 'ProbeGateway', method: 'echo' });
    expect(good).to.deep.equal({ status: 'fulfilled', value: 'fine' });
    const unsendable = await rejection(gateway.unsendable());
    expect(unsendable.name).to.equal('TypeError');
    expect(unsendable.message).to.match(
      /ProbeGateway: the result of a call could not be sent back \(ProbeGateway.unsendable/,
    );
    expect(gatewayStatus(gateway).pendingCalls).to.equal(0);
    expect(clock.pendingTimers).to.equal(0);
  });

  it('rejects a control method the serving side does not serve by comlink with IllegalArgumentError', async () => {
    const wider = connectGateway<Probe & { drop(): Promise<void> }>(caller, 'probe', {
      gateway: 'ProbeGateway',
      timeoutMs: 5_000,
      clock,
      control: [...CONTROL, 'drop'],
    });
    const error = await rejection(wider.drop());
    expect(error).to.be.instanceOf(IllegalArgumentError);
    expect((error as IllegalArgumentError).details).to.include({ argument: 'method', value: 'drop' });
  });

  it('validates the control lists on both sides', () => {
    expect(() => serveGateway(server, 'x', probe, { control: ['echo', 'nope' as keyof Probe & string] })).to.throw(
      IllegalArgumentError,
      /options.control names "nope"/,
    );
    expect(() =>
      connectGateway<Probe>(caller, 'x', { gateway: 'ProbeGateway', timeoutMs: 10, control: ['toString'] }),
    ).to.throw(IllegalArgumentError, /options.control/);
  });
});

describe('answers sent with the next batch (serveGateway answerWithNext)', () => {
  it('holds a result until the next batch or WITH_NEXT_MAX_WAIT_MS, an error not; checks the names', async () => {
    const [a, b] = memoryTransportPair();
    const clock = new SimulatedClock();
    const caller = new Link('caller', a);
    const server = new Link('server', b, { clock });
    const mailbox = new MainThreadExecutor('ProbeEndpoint');
    const probe = new ProbeEndpoint(mailbox);
    serveGateway(server, 'probe', probe, { mailbox, gateway: 'ProbeGateway', answerWithNext: ['record', 'refuse'] });
    const gateway = connectGateway<Probe>(caller, 'probe', { gateway: 'ProbeGateway', timeoutMs: 5_000, clock });
    const turns = async () => {
      for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve));
    };
    try {
      const answered: string[] = [];
      void gateway.record(1).then(() => answered.push('record 1'));
      await turns();
      expect(answered, 'held').to.deep.equal([]);
      clock.increment(WITH_NEXT_MAX_WAIT_MS);
      await eventually(() => answered.length === 1, 'the held answer, alone');

      // With another answer, in one batch and in order.
      void gateway.record(2).then(() => answered.push('record 2'));
      await turns();
      void gateway.echo('e').then(() => answered.push('echo'));
      await eventually(() => answered.length === 3, 'both answers');
      expect(answered).to.deep.equal(['record 1', 'record 2', 'echo']);

      // An error is not held.
      expect(await rejection(gateway.refuse())).to.be.instanceOf(SlotAllocationError);
      expect(() =>
        serveGateway(server, 'other', probe, { answerWithNext: ['nope' as keyof ProbeEndpoint & string] }),
      ).to.throw(IllegalArgumentError, /options.answerWithNext names "nope"/);
    } finally {
      caller.close('test over');
      server.close('test over');
    }
  });
});
