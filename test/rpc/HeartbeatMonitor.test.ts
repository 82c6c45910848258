/**
 * HeartbeatMonitor on a SimulatedClock: rounds every interval, a target lost once silent for the
 * timeout while the monitor looked — never for the monitor's own stall, never before what had
 * already arrived was handled.
 */
import { expect } from 'chai';
import { SimulatedClock } from '../../lib/core/clock.js';
import { IllegalArgumentError } from '../../lib/core/errors.js';
import { HeartbeatMonitor } from '../../lib/rpc/HeartbeatMonitor.js';
import { MainThreadExecutor } from '../../lib/rpc/MainThreadExecutor.js';

const settle = async () => {
  for (let i = 0; i < 3; i++) await new Promise((resolve) => setImmediate(resolve));
};

function harness(o: { intervalMs?: number; timeoutMs?: number } = {}) {
  const clock = new SimulatedClock();
  const mailbox = new MainThreadExecutor('ResourceManager', clock);
  const lost: Array<[string, number]> = [];
  const rounds: Array<readonly string[]> = [];
  const logs: string[] = [];
  const monitor = new HeartbeatMonitor<string>({
    mailbox,
    intervalMs: o.intervalMs ?? 1_000,
    timeoutMs: o.timeoutMs ?? 3_000,
    onTimeout: (target, silentMs) => lost.push([target, silentMs]),
    onRound: (targets) => rounds.push(targets),
    log: (message) => logs.push(message),
  });
  const inMailbox = (fn: () => void) => mailbox.callAsync(fn);
  return {
    clock,
    mailbox,
    monitor,
    lost,
    rounds,
    logs,
    inMailbox,
    /** Monitors `targets` (heard from now) and starts the rounds. */
    watch: (...targets: string[]) =>
      inMailbox(() => {
        for (const target of targets) monitor.monitorTarget(target);
        monitor.start();
      }),
    async advance(ms: number, step = 100) {
      for (let left = ms; left > 0; left -= step) {
        clock.increment(Math.min(step, left));
        await settle();
      }
    },
  };
}

describe('HeartbeatMonitor', () => {
  it(
    'runs a round every interval with the monitored ' + 'targets, and loses a silent one exactly at the timeout',
    async () => {
      const h = harness();
      await h.watch('a', 'b');
      await h.advance(2_000);
      expect(h.rounds).to.deep.equal([
        ['a', 'b'],
        ['a', 'b'],
      ]);
      await h.inMailbox(() => h.monitor.reportHeartbeat('a'));
      await h.advance(900);
      expect(h.lost).to.deep.equal([]);
      await h.advance(100);
      expect(h.lost).to.deep.equal([['b', 3_000]]);
      expect(h.monitor.targets).to.deep.equal(['a']);
      await h.advance(2_000);
      expect(h.lost).to.deep.equal([
        ['b', 3_000],
        ['a', 3_000],
      ]);
    },
  );

  it(
    'gives every target a fresh timeout when it wakes late (a ' +
      'blocked event loop), and loses a silent one a timeout later',
    async () => {
      const h = harness();
      await h.watch('a');
      h.clock.stall(10_000);
      await settle();
      expect(h.lost).to.deep.equal([]);
      expect(h.logs.some((m) => /woke 9000 ms late/.test(m))).to.equal(true);
      expect(h.rounds).to.have.length(1); // it asks at once
      await h.advance(2_900);
      expect(h.lost).to.deep.equal([]);
      await h.advance(100);
      expect(h.lost).to.deep.equal([['a', 3_000]]);
    },
  );

  it('does not forgive a lateness within half of (timeout - interval)', async () => {
    const h = harness();
    await h.watch('a');
    await h.advance(2_000);
    h.clock.stall(1_500); // the wake-up due at 3000 comes 500 ms late: within the 1000 ms forgiven
    await settle();
    expect(h.lost).to.deep.equal([['a', 3_500]]);
  });

  it('waits for what is queued behind its round: a heartbeat handled then keeps the target', async () => {
    const h = harness();
    await h.watch('a');
    await h.advance(2_900);
    h.clock.increment(100); // the round is queued ...
    h.mailbox.execute(() => h.monitor.reportHeartbeat('a')); // ... and the heartbeat behind it
    await settle();
    expect(h.lost).to.deep.equal([]);
    expect(h.monitor.lastHeartbeatFrom('a')).to.equal(3_000);
  });

  it(
    'waits for a message that arrived while its round ran: one ' +
      'delivered on this turn of the event loop keeps the target',
    async () => {
      const h = harness();
      await h.watch('a');
      await h.advance(2_900);
      // A message event of this turn (setImmediate stands in for the port's delivery).
      setImmediate(() => h.mailbox.execute(() => h.monitor.reportHeartbeat('a')));
      h.clock.increment(100);
      await settle();
      expect(h.lost).to.deep.equal([]);
    },
  );

  it('ignores a heartbeat from a target it does not monitor, and forgets everything on stop', async () => {
    const h = harness();
    await h.inMailbox(() => {
      h.monitor.reportHeartbeat('stranger');
      h.monitor.monitorTarget('a');
      h.monitor.start();
    });
    expect(h.monitor.isMonitoring('stranger')).to.equal(false);
    await h.inMailbox(() => h.monitor.stop());
    await h.advance(5_000);
    expect([h.lost, h.rounds, h.monitor.targets, h.clock.pendingTimers]).to.deep.equal([[], [], [], 0]);
  });

  it('refuses an interval that is not a positive number, and a timeout not longer than the interval', () => {
    const mailbox = new MainThreadExecutor('x', new SimulatedClock());
    const make = (intervalMs: number, timeoutMs: number) => () =>
      new HeartbeatMonitor({ mailbox, intervalMs, timeoutMs, onTimeout: () => {} });
    expect(make(0, 1_000)).to.throw(IllegalArgumentError, /intervalMs must be a finite number of ms > 0, got 0/);
    expect(make(NaN, 1_000)).to.throw(IllegalArgumentError, /intervalMs/);
    expect(make(1_000, 1_000)).to.throw(
      IllegalArgumentError,
      /timeoutMs must be a finite number of ms > intervalMs \(1000\), got 1000/,
    );
  });
});
