/**
 * Gateways across a real boundary: one worker thread (test/fixtures/echoWorker.ts, started through
 * the tsx bootstrap) and one child process (test/fixtures/echoProcess.ts, forked with
 * serialization 'advanced'), each reused across its suite; the last test of each ends it.
 */
import { expect } from 'chai';
import type { ChildProcess } from 'node:child_process';
import type { Worker } from 'node:worker_threads';
import { EndpointClosedError, SlotAllocationError } from '../../lib/core/errors.js';
import { connectGateway, type Gateway } from '../../lib/rpc/connect.js';
import { forkProcess } from '../../lib/rpc/forkProcess.js';
import { Link } from '../../lib/rpc/Link.js';
import { startWorker } from '../../lib/rpc/startWorker.js';
import { portTransport, processTransport } from '../../lib/rpc/Transport.js';
import { ECHO_CHANNEL, ECHO_CONTROL, type EchoGateway } from '../fixtures/echoWorker.js';

/** Long enough that a rejection "at once" cannot be the deadline's. */
const TIMEOUT_MS = 15_000;
/** What "at once" may take here: a worker's exit event comes ~20 ms after terminate(). */
const AT_ONCE_MS = 2_000;

const rejection = (promise: Promise<unknown>) =>
  promise.then(
    (value) => {
      throw new Error(`expected a rejection, got ${JSON.stringify(value)}`);
    },
    (error: unknown) => error as Error,
  );

describe('gateways to a worker thread', function () {
  this.timeout(20_000);
  let worker: Worker;
  let link: Link;
  let echo: Gateway<EchoGateway>;
  /** The same gateway with its methods as control methods: by comlink on the control channel. */
  let control: Gateway<EchoGateway>;

  before(() => {
    worker = startWorker(new URL('../fixtures/echoWorker.ts', import.meta.url));
    link = new Link('test → echo worker', portTransport(worker));
    echo = connectGateway<EchoGateway>(link, ECHO_CHANNEL, {
      gateway: 'EchoGateway',
      timeoutMs: TIMEOUT_MS,
      endpoint: 'echo worker',
    });
    control = connectGateway<EchoGateway>(link, ECHO_CHANNEL, {
      gateway: 'EchoGateway',
      timeoutMs: TIMEOUT_MS,
      endpoint: 'echo worker',
      control: ECHO_CONTROL,
    });
  });

  after(async () => {
    link.close('suite over');
    await worker.terminate();
  });

  it("makes the round trip and runs in the worker's mailbox", async () => {
    const value = { slots: new Map([[0, 'free']]), at: new Date(1) };
    expect(await echo.echo(value)).to.deep.equal(value);
    expect(await echo.whereAmI()).to.include({ inMailbox: true, isMainThread: false, pid: process.pid });
  });

  it("makes control calls by comlink, in the worker's mailbox, errors in their own class", async () => {
    const value = { slots: new Map([[0, 'free']]), at: new Date(1) };
    expect(await control.echo(value)).to.deep.equal(value);
    expect(await control.whereAmI()).to.include({ inMailbox: true, isMainThread: false, pid: process.pid });
    const error = await rejection(control.fail('slot-allocation'));
    expect(error).to.be.instanceOf(SlotAllocationError);
    expect((error as SlotAllocationError).details).to.deep.equal({ index: 3, allocationId: 'a-1' });
  });

  it('delivers an error thrown in the worker as its own class, with reason and details', async () => {
    const error = await rejection(echo.fail('slot-allocation'));
    expect(error).to.be.instanceOf(SlotAllocationError);
    expect((error as SlotAllocationError).reason).to.equal('index-taken');
    expect((error as SlotAllocationError).details).to.deep.equal({ index: 3, allocationId: 'a-1' });
    expect(error.stack, 'the thrower’s stack').to.include('echoWorker.ts');
  });

  it('rejects a pending call at once with EndpointClosedError (lost) when the worker is terminated', async () => {
    const pending = rejection(echo.hang());
    const pendingControl = rejection(control.hang());
    await echo.echo('the hang() request has been delivered before this answer');
    await control.echo('so has the control one');
    const started = performance.now();
    await worker.terminate();
    const error = await pending;
    expect(performance.now() - started).to.be.below(AT_ONCE_MS);
    expect(error).to.be.instanceOf(EndpointClosedError);
    expect((error as EndpointClosedError).reason).to.equal('lost');
    expect(error.message).to.include('the worker exited');
    const controlError = await pendingControl;
    expect(controlError).to.be.instanceOf(EndpointClosedError);
    expect((controlError as EndpointClosedError).reason).to.equal('lost');
    expect((await rejection(echo.echo(1))).name).to.equal('EndpointClosedError');
    expect((await rejection(control.echo(1))).name).to.equal('EndpointClosedError');
  });
});

describe('gateways to a child process', function () {
  this.timeout(20_000);
  let child: ChildProcess;
  let link: Link;
  let echo: Gateway<EchoGateway>;
  /** The same gateway with its methods as control methods: by comlink on the control channel. */
  let control: Gateway<EchoGateway>;

  before(() => {
    child = forkProcess(new URL('../fixtures/echoProcess.ts', import.meta.url));
    link = new Link('test → echo process', processTransport(child));
    echo = connectGateway<EchoGateway>(link, ECHO_CHANNEL, {
      gateway: 'EchoGateway',
      timeoutMs: TIMEOUT_MS,
      endpoint: 'echo process',
    });
    control = connectGateway<EchoGateway>(link, ECHO_CHANNEL, {
      gateway: 'EchoGateway',
      timeoutMs: TIMEOUT_MS,
      endpoint: 'echo process',
      control: ECHO_CONTROL,
    });
  });

  after(() => {
    link.close('suite over');
    if (child.exitCode === null && child.signalCode === null) child.kill();
  });

  it("makes the round trip over the IPC channel and runs in the child's mailbox", async () => {
    const value = { big: 2n ** 70n, at: new Date(2), ids: new Set(['a']) };
    expect(await echo.echo(value)).to.deep.equal(value);
    const where = await echo.whereAmI();
    expect(where.inMailbox).to.equal(true);
    expect(where.pid).to.not.equal(process.pid);
    const error = await rejection(echo.fail('slot-allocation'));
    expect(error).to.be.instanceOf(SlotAllocationError);
  });

  it("makes control calls by comlink over IPC, in the child's mailbox, errors in their own class", async () => {
    const value = { big: 2n ** 70n, at: new Date(2), ids: new Set(['a']) };
    expect(await control.echo(value)).to.deep.equal(value);
    const where = await control.whereAmI();
    expect(where.inMailbox).to.equal(true);
    expect(where.pid).to.not.equal(process.pid);
    expect(await rejection(control.fail('slot-allocation'))).to.be.instanceOf(SlotAllocationError);
  });

  it('rejects a pending call at once with EndpointClosedError (lost) when the child exits', async () => {
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    const pending = rejection(echo.hang());
    const started = performance.now();
    const exitCall = rejection(echo.exit(3));
    for (const error of await Promise.all([pending, exitCall])) {
      expect(error).to.be.instanceOf(EndpointClosedError);
      expect((error as EndpointClosedError).reason).to.equal('lost');
    }
    expect(performance.now() - started).to.be.below(AT_ONCE_MS);
    expect(await exited).to.equal(3);
  });
});
