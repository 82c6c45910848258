import { expect } from 'chai';
import { createActor, setup } from 'xstate';
import { mailboxClock, msSince, SimulatedClock, systemClock } from '../../lib/core/clock.js';

describe('clock', () => {
  it('msSince: the ms between two timestamps, whole or not, however far apart', () => {
    const t0 = 1_765_000_000_000;
    expect(msSince(t0, t0 + 5)).to.equal(5);
    expect(msSince(t0, t0 - 5)).to.equal(-5);
    expect(msSince(t0, t0 + 0.5)).to.equal(0.5);
    expect(msSince(t0, t0 + 2 ** 33)).to.equal(2 ** 33);
  });

  describe('SimulatedClock', () => {
    it('starts at the given time (0 by default) and moves only when told', () => {
      expect(new SimulatedClock().now()).to.equal(0);
      const clock = new SimulatedClock(1_000);
      expect(clock.now()).to.equal(1_000);
      clock.increment(250);
      expect(clock.now()).to.equal(1_250);
      clock.advanceTo(5_000);
      expect(clock.now()).to.equal(5_000);
    });

    it('fires nothing before its due time, and fires it once when time reaches it', () => {
      const clock = new SimulatedClock();
      let fired = 0;
      clock.setTimeout(() => fired++, 10_000);
      clock.increment(9_999);
      expect(fired).to.equal(0);
      clock.increment(1);
      expect(fired).to.equal(1);
      clock.increment(60_000);
      expect(fired).to.equal(1);
    });

    it('fires timers in due order, whatever order they were scheduled in', () => {
      const clock = new SimulatedClock();
      const fired: string[] = [];
      clock.setTimeout(() => fired.push('30 s'), 30_000);
      clock.setTimeout(() => fired.push('10 s'), 10_000);
      clock.setTimeout(() => fired.push('5 min'), 300_000);
      clock.setTimeout(() => fired.push('50 ms'), 50);
      clock.increment(300_000);
      expect(fired).to.deep.equal(['50 ms', '10 s', '30 s', '5 min']);
    });

    it('fires timers due at the same time in the order they were scheduled', () => {
      const clock = new SimulatedClock();
      const fired: number[] = [];
      for (const n of [1, 2, 3, 4]) clock.setTimeout(() => fired.push(n), 100);
      clock.increment(100);
      expect(fired).to.deep.equal([1, 2, 3, 4]);
    });

    it('runs each timer at its own due time: now() inside the callback is its due time', () => {
      const clock = new SimulatedClock(1_000);
      const seen: Array<[string, number]> = [];
      clock.setTimeout(() => seen.push(['a', clock.now()]), 10);
      clock.setTimeout(() => seen.push(['b', clock.now()]), 2_500);
      clock.increment(60_000);
      expect(seen).to.deep.equal([
        ['a', 1_010],
        ['b', 3_500],
      ]);
      expect(clock.now()).to.equal(61_000);
    });

    it('fires in the same increment a timer that another timer scheduled inside the window', () => {
      const clock = new SimulatedClock();
      const fired: Array<[string, number]> = [];
      clock.setTimeout(() => {
        fired.push(['first', clock.now()]);
        clock.setTimeout(() => fired.push(['second', clock.now()]), 3_000);
        clock.setTimeout(() => fired.push(['too late', clock.now()]), 20_000);
      }, 5_000);
      clock.setTimeout(() => fired.push(['between', clock.now()]), 7_000);
      clock.increment(10_000);
      expect(fired).to.deep.equal([
        ['first', 5_000],
        ['between', 7_000],
        ['second', 8_000],
      ]);
      expect(clock.pendingTimers).to.equal(1);
    });

    it('drives a periodic timer (a heartbeat) once per period across a long increment', () => {
      const clock = new SimulatedClock();
      const beats: number[] = [];
      const beat = () => {
        beats.push(clock.now());
        clock.setTimeout(beat, 10_000);
      };
      clock.setTimeout(beat, 10_000);
      clock.increment(45_000);
      expect(beats).to.deep.equal([10_000, 20_000, 30_000, 40_000]);
    });

    it('does not fire a cancelled timer', () => {
      const clock = new SimulatedClock();
      const fired: string[] = [];
      const cancelled = clock.setTimeout(() => fired.push('cancelled'), 100);
      clock.setTimeout(() => fired.push('kept'), 100);
      clock.clearTimeout(cancelled);
      clock.increment(1_000);
      expect(fired).to.deep.equal(['kept']);
    });

    it('does not fire a timer cancelled by an earlier timer in the same increment', () => {
      const clock = new SimulatedClock();
      const fired: string[] = [];
      const later = clock.setTimeout(() => fired.push('later'), 200);
      clock.setTimeout(() => {
        fired.push('earlier');
        clock.clearTimeout(later);
      }, 100);
      clock.increment(1_000);
      expect(fired).to.deep.equal(['earlier']);
    });

    it('ignores clearing a timer that already fired or never existed', () => {
      const clock = new SimulatedClock();
      let fired = 0;
      const handle = clock.setTimeout(() => fired++, 1);
      clock.increment(1);
      const other = clock.setTimeout(() => fired++, 1);
      clock.clearTimeout(handle);
      clock.clearTimeout(12345);
      clock.clearTimeout(undefined);
      expect(clock.pendingTimers).to.equal(1);
      clock.increment(1);
      expect(fired).to.equal(2);
      expect(other).to.not.equal(handle);
    });

    it('counts pending timers: scheduled ones until they fire or are cancelled', () => {
      const clock = new SimulatedClock();
      expect(clock.pendingTimers).to.equal(0);
      const a = clock.setTimeout(() => {}, 10);
      clock.setTimeout(() => {}, 20);
      clock.setTimeout(() => {}, 30);
      expect(clock.pendingTimers).to.equal(3);
      clock.clearTimeout(a);
      expect(clock.pendingTimers).to.equal(2);
      clock.increment(20);
      expect(clock.pendingTimers).to.equal(1);
      clock.increment(10);
      expect(clock.pendingTimers).to.equal(0);
    });

    it('flush fires zero-delay timers without moving time, and leaves later ones pending', () => {
      const clock = new SimulatedClock(500);
      const fired: Array<[string, number]> = [];
      clock.setTimeout(() => fired.push(['zero', clock.now()]), 0);
      clock.setTimeout(() => fired.push(['later', clock.now()]), 1);
      clock.flush();
      expect(fired).to.deep.equal([['zero', 500]]);
      expect(clock.now()).to.equal(500);
      expect(clock.pendingTimers).to.equal(1);
    });

    it('stall moves time first and then fires every timer that fell due, late, at the new time, in due order', () => {
      const clock = new SimulatedClock(1_000);
      const fired: Array<[string, number]> = [];
      clock.setTimeout(() => fired.push(['3 s', clock.now()]), 3_000);
      clock.setTimeout(() => {
        fired.push(['1 s', clock.now()]);
        clock.setTimeout(() => fired.push(['then 0', clock.now()]), 0); // due now: fires in this stall
        clock.setTimeout(() => fired.push(['then 500 ms', clock.now()]), 500); // counted from 5000, as in a real loop
      }, 1_000);
      clock.setTimeout(() => fired.push(['6 s', clock.now()]), 6_000); // due at 7000
      clock.stall(4_000);
      expect(clock.now()).to.equal(5_000);
      expect(fired).to.deep.equal([
        ['1 s', 5_000],
        ['3 s', 5_000],
        ['then 0', 5_000],
      ]);
      expect(clock.pendingTimers).to.equal(2);
      clock.increment(2_000);
      expect(fired.slice(3)).to.deep.equal([
        ['then 500 ms', 5_500],
        ['6 s', 7_000],
      ]);
      expect(() => clock.stall(-1)).to.throw(RangeError, /finite ms >= 0/);
    });

    it('treats a negative or NaN delay as zero, as Node does', () => {
      const clock = new SimulatedClock();
      let fired = 0;
      clock.setTimeout(() => fired++, -5);
      clock.setTimeout(() => fired++, NaN);
      clock.flush();
      expect(fired).to.equal(2);
    });

    it('rejects a negative or non-finite increment and changes no state', () => {
      const clock = new SimulatedClock(1_000);
      let fired = 0;
      clock.setTimeout(() => fired++, 0);
      for (const bad of [-1, NaN, Infinity]) {
        expect(() => clock.increment(bad), String(bad)).to.throw(RangeError, /finite ms >= 0/);
      }
      expect(clock.now()).to.equal(1_000);
      expect(fired).to.equal(0);
      expect(clock.pendingTimers).to.equal(1);
    });

    it('rejects advancing to the past and changes no state', () => {
      const clock = new SimulatedClock(1_000);
      let fired = 0;
      clock.setTimeout(() => fired++, 0);
      expect(() => clock.advanceTo(999)).to.throw(RangeError, /cannot go back from 1000 to 999/);
      expect(clock.now()).to.equal(1_000);
      expect(fired).to.equal(0);
    });

    it('rejects advancing to a non-finite time and changes no state', () => {
      const clock = new SimulatedClock(1_000);
      const beat = () => clock.setTimeout(beat, 10);
      clock.setTimeout(beat, 10);
      for (const bad of [NaN, Infinity]) {
        expect(() => clock.advanceTo(bad), String(bad)).to.throw(RangeError, /finite time/);
      }
      expect(clock.now()).to.equal(1_000);
      expect(clock.pendingTimers).to.equal(1);
    });
  });

  describe('SimulatedClock driving XState', () => {
    const slotMachine = setup({ types: { events: {} as { type: 'MARK_ACTIVE' } } }).createMachine({
      id: 'slot',
      initial: 'allocated',
      states: {
        allocated: { after: { 10000: 'timedOut' }, on: { MARK_ACTIVE: 'active' } },
        active: {},
        timedOut: {},
      },
    });

    it('fires an `after` delay when the clock crosses it, and not before', () => {
      const clock = new SimulatedClock();
      const actor = createActor(slotMachine, { clock }).start();
      expect(clock.pendingTimers).to.equal(1);
      clock.increment(9_999);
      expect(actor.getSnapshot().value).to.equal('allocated');
      clock.increment(1);
      expect(actor.getSnapshot().value).to.equal('timedOut');
      actor.stop();
    });

    it('cancels an `after` delay on the clock when its state is left', () => {
      const clock = new SimulatedClock();
      const actor = createActor(slotMachine, { clock }).start();
      actor.send({ type: 'MARK_ACTIVE' });
      expect(clock.pendingTimers).to.equal(0);
      clock.increment(60_000);
      expect(actor.getSnapshot().value).to.equal('active');
      actor.stop();
    });
  });

  describe('systemClock', () => {
    it('reads wall time', () => {
      const before = Date.now();
      const now = systemClock.now();
      expect(now).to.be.within(before, Date.now());
    });

    it('really fires a timer after its delay, and not a cleared one', async function () {
      this.timeout(5_000);
      const start = systemClock.now();
      let cleared = false;
      const handle = systemClock.setTimeout(() => (cleared = true), 5);
      systemClock.clearTimeout(handle);
      const firedAt = await new Promise<number>((resolve) =>
        systemClock.setTimeout(() => resolve(systemClock.now()), 5),
      );
      // Node may fire up to a millisecond early by Date.now()'s rounding.
      expect(firedAt - start).to.be.at.least(4);
      await new Promise<void>((resolve) => systemClock.setTimeout(resolve, 10));
      expect(cleared).to.equal(false);
    });
  });

  describe('mailboxClock', () => {
    it('fires its timers through the executor it is given, on the clock it wraps, and cancels them there', () => {
      const clock = new SimulatedClock(500);
      const queued: Array<() => void> = [];
      const onMailbox = mailboxClock(clock, (fn) => queued.push(fn));
      const fired: string[] = [];
      onMailbox.setTimeout(() => fired.push('a'), 100);
      const b = onMailbox.setTimeout(() => fired.push('b'), 100);
      onMailbox.clearTimeout(b);
      expect(onMailbox.now()).to.equal(500);
      clock.increment(100);
      expect(fired, 'not run outside the mailbox').to.deep.equal([]);
      expect(queued).to.have.length(1);
      queued.shift()!();
      expect(fired).to.deep.equal(['a']);
    });
  });
});
