import { expect } from 'chai';
import { MessageChannel } from 'node:worker_threads';
import { SimulatedClock } from '../../lib/core/clock.js';
import {
  EndpointClosedError,
  IllegalArgumentError,
  RpcTimeoutError,
  SlotAllocationError,
} from '../../lib/core/errors.js';
import { connectGateway, gatewayStatus, serveGateway, type Gateway } from '../../lib/rpc/connect.js';
import { Link } from '../../lib/rpc/Link.js';
import { MainThreadExecutor } from '../../lib/rpc/MainThreadExecutor.js';
import { portTransport } from '../../lib/rpc/Transport.js';
import { eventually } from '../support/eventually.js';
import { rejection, watched } from './support/transports.js';

interface Probe {
  echo(value: unknown): Promise<unknown>;
  refuse(): Promise<void>;
  crash(): Promise<void>;
  hang(): Promise<never>;
  /** Returns something that cannot be cloned. */
  unsendable(): Promise<unknown>;
  /** Asserts it runs inside the serving mailbox. */
  touchState(): Promise<string>;
}

class ProbeEndpoint implements Probe {
  /** Requests seen, so a test can wait until one arrived. */
  calls = 0;
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
  async crash() {
    this.calls++;
    throw new RangeError('out of cheese');
  }
  hang(): Promise<never> {
    this.calls++;
    return new Promise(() => {});
  }
  async unsendable() {
    this.calls++;
    return { callback: () => 1 };
  }
  async touchState() {
    this.calls++;
    this.mailbox.assertRunningInMainThread('the probe state');
    return this.mailbox.name;
  }
}

describe('connectGateway / serveGateway', () => {
  let clock: SimulatedClock;
  let mailbox: MainThreadExecutor;
  let probe: ProbeEndpoint;
  let caller: Link;
  let server: Link;
  let sends: number;
  let gateway: Gateway<Probe>;

  beforeEach(() => {
    const { port1, port2 } = new MessageChannel();
    const inner = portTransport(port1);
    sends = 0;
    const counting = watched(inner, () => sends++);
    clock = new SimulatedClock();
    caller = new Link('caller', counting);
    server = new Link('server', portTransport(port2));
    mailbox = new MainThreadExecutor('ProbeEndpoint');
    probe = new ProbeEndpoint(mailbox);
    serveGateway(server, 'probe', probe, { mailbox, gateway: 'ProbeGateway' });
    gateway = connectGateway<Probe>(caller, 'probe', {
      gateway: 'ProbeGateway',
      timeoutMs: 5_000,
      clock,
      endpoint: 'probe endpoint',
    });
  });

  afterEach(() => {
    caller.close('test over');
    server.close('test over');
  });

  it('resolves a call with what the implementation returned, cloned; no timer and no entry left behind', async () => {
    const value = { id: 'a-1', at: new Date(0), tags: new Set(['x']), big: 2n ** 64n };
    expect(await gateway.echo(value)).to.deep.equal(value);
    const many = await Promise.all([...Array(50).keys()].map((i) => gateway.echo(i)));
    expect(many).to.deep.equal([...Array(50).keys()]);
    expect(clock.pendingTimers, 'deadline timers cleared on answer').to.equal(0);
    expect(gatewayStatus(gateway)).to.deep.equal({ pendingCalls: 0, closed: false });
    expect(caller.channel('probe').listenerCount, 'one listener per gateway, not per call').to.equal(1);
    expect(server.channel('probe').listenerCount).to.equal(1);
  });

  it(
    "delivers an implementation's SlotAllocationError " + 'as a SlotAllocationError with its reason and details',
    async () => {
      const error = await rejection(gateway.refuse());
      expect(error).to.be.instanceOf(SlotAllocationError);
      const refused = error as SlotAllocationError;
      expect(refused._tag).to.equal('SlotAllocationError');
      expect(refused.reason).to.equal('index-taken');
      expect(refused.details).to.deep.equal({ index: 2, allocationId: 'a-1' });
      expect(refused.message).to.equal('slot 2 is taken by allocation a-1');
    },
  );

  it('delivers any other Error with its name and message', async () => {
    const error = await rejection(gateway.crash());
    expect(error).to.be.instanceOf(Error);
    expect(error.name).to.equal('RangeError');
    expect(error.message).to.equal('out of cheese');
  });

  it('rejects a method the implementation does not have with IllegalArgumentError', async () => {
    const loose = gateway as unknown as Record<string, () => Promise<unknown>>;
    const unknown = await rejection(loose['dropTables']!());
    expect(unknown).to.be.instanceOf(IllegalArgumentError);
    expect((unknown as IllegalArgumentError).details).to.include({ argument: 'method', value: 'dropTables' });
    expect(await rejection(loose['constructor']!())).to.be.instanceOf(IllegalArgumentError);
    expect(await rejection(loose['hasOwnProperty']!())).to.be.instanceOf(IllegalArgumentError);
    expect((gateway as { then?: unknown }).then, 'a gateway is not a thenable').to.equal(undefined);
  });

  it(
    'rejects with RpcTimeoutError naming gateway, method ' + 'and timeout when the deadline passes without an answer',
    async () => {
      const pending = rejection(gateway.hang());
      await eventually(() => probe.calls === 1, 'the call to arrive');
      clock.increment(4_999);
      expect(gatewayStatus(gateway).pendingCalls).to.equal(1);
      clock.increment(1);
      const error = await pending;
      expect(error).to.be.instanceOf(RpcTimeoutError);
      expect((error as RpcTimeoutError).details).to.include({
        gateway: 'ProbeGateway',
        method: 'hang',
        timeoutMs: 5_000,
      });
      expect(error.message).to.equal('ProbeGateway.hang to probe endpoint got no answer within 5000 ms');
      expect(gatewayStatus(gateway).pendingCalls).to.equal(0);
    },
  );

  it(
    "rejects pending calls at once when the peer's link " + 'closes, and fails later calls at once without sending',
    async () => {
      const first = rejection(gateway.hang());
      const second = rejection(gateway.hang());
      await eventually(() => probe.calls === 2, 'both calls to arrive');
      server.close('server stopping');
      // No clock increment: the deadline cannot be what ends them.
      for (const error of await Promise.all([first, second])) {
        expect(error).to.be.instanceOf(EndpointClosedError);
        expect((error as EndpointClosedError).reason).to.equal('lost');
        expect((error as EndpointClosedError).details).to.include({
          endpoint: 'probe endpoint',
          gateway: 'ProbeGateway',
          method: 'hang',
        });
      }
      expect(clock.pendingTimers).to.equal(0);
      const sendsBefore = sends;
      const later = await rejection(gateway.echo(1));
      expect(later).to.be.instanceOf(EndpointClosedError);
      expect((later as EndpointClosedError).reason).to.equal('lost');
      await new Promise((resolve) => setImmediate(resolve));
      expect(sends).to.equal(sendsBefore);
      expect(gatewayStatus(gateway)).to.deep.equal({ pendingCalls: 0, closed: true });
    },
  );

  it("runs served calls as tasks of the serving endpoint's mailbox", async () => {
    expect(await gateway.touchState()).to.equal('ProbeEndpoint');
  });

  it(
    'rejects a call whose arguments cannot be cloned with ' + 'IllegalArgumentError; the calls beside it go through',
    async () => {
      const [bad, good] = await Promise.allSettled([gateway.echo({ callback: () => 1 }), gateway.echo('fine')]);
      expect(bad.status).to.equal('rejected');
      expect((bad as PromiseRejectedResult).reason).to.be.instanceOf(IllegalArgumentError);
      expect(good).to.deep.equal({ status: 'fulfilled', value: 'fine' });
      expect(clock.pendingTimers).to.equal(0);
    },
  );

  it(
    'answers a call whose result cannot be cloned with ' + 'an error instead of letting it wait out its deadline',
    async () => {
      const error = await rejection(gateway.unsendable());
      expect(error.name).to.equal('TypeError');
      expect(error.message).to.match(/ProbeGateway: the result of a call could not be sent back/);
    },
  );

  it('serves only the methods it is told to, when told', async () => {
    const narrow = serveGateway(server, 'narrow', probe, { methods: ['echo'] });
    expect(narrow.methods).to.deep.equal(['echo']);
    const client = connectGateway<Probe>(caller, 'narrow', { gateway: 'Narrow', timeoutMs: 5_000, clock });
    expect(await client.echo(7)).to.equal(7);
    expect(await rejection(client.hang())).to.be.instanceOf(IllegalArgumentError);
    expect(probe.calls).to.equal(1);
  });

  it('validates its options', () => {
    expect(() => serveGateway(server, 'x', probe, { methods: ['echo', 'nope' as keyof Probe] })).to.throw(
      IllegalArgumentError,
      /"nope"/,
    );
    expect(() => connectGateway<Probe>(caller, 'probe', { gateway: 'ProbeGateway', timeoutMs: 0 })).to.throw(
      IllegalArgumentError,
      /timeoutMs/,
    );
    expect(() => connectGateway<Probe>(caller, 'probe', { gateway: '', timeoutMs: 10 })).to.throw(
      IllegalArgumentError,
      /gateway/,
    );
  });
});
