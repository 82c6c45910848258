import { expect } from 'chai';
import fc from 'fast-check';
import { SimulatedClock, type Clock, type TimerHandle } from '../../lib/core/clock.js';
import { DeadlineScheduler } from '../../lib/core/DeadlineScheduler.js';
import { IllegalArgumentError } from '../../lib/core/errors.js';
import { seededRandom as random } from '../support/random.js';

/** A scheduler on a SimulatedClock that records every (key, deadline, now) it is handed. */
function start<K = string>(onDue?: (key: K, deadline: number, scheduler: DeadlineScheduler<K>) => void) {
  const clock = new SimulatedClock();
  const fired: Array<[K, number, number]> = [];
  const scheduler: DeadlineScheduler<K> = new DeadlineScheduler<K>(clock, (key, deadline) => {
    fired.push([key, deadline, clock.now()]);
    onDue?.(key, deadline, scheduler);
  });
  return { clock, scheduler, fired, keys: () => fired.map(([key]) => key) };
}

/** A clock whose timers run only when the test calls them: shows what one timer turn does. */
class ManualClock implements Clock {
  time = 0;
  armed: Array<{ fn: () => void; delay: number; cleared: boolean }> = [];
  now(): number {
    return this.time;
  }
  setTimeout(fn: () => void, delay: number): TimerHandle {
    const timer = { fn, delay, cleared: false };
    this.armed.push(timer);
    return timer;
  }
  clearTimeout(handle: TimerHandle): void {
    (handle as { cleared: boolean }).cleared = true;
  }
  get live() {
    return this.armed.filter((t) => !t.cleared);
  }
  /** Runs the one live timer (as if it fired now). */
  fireLive(): void {
    const live = this.live;
    expect(live, 'live timers').to.have.length(1);
    live[0]!.cleared = true;
    live[0]!.fn();
  }
}

describe('DeadlineScheduler', () => {
  describe('firing', () => {
    it('calls onDue at the deadline and not before, with the key and its deadline, and forgets the key', () => {
      const { clock, scheduler, fired } = start();
      scheduler.schedule('request-1', 300_000);
      clock.increment(299_999);
      expect(fired).to.deep.equal([]);
      clock.increment(1);
      expect(fired).to.deep.equal([['request-1', 300_000, 300_000]]);
      expect(scheduler.has('request-1')).to.equal(false);
      expect(scheduler.size).to.equal(0);
      clock.increment(1_000_000);
      expect(fired).to.have.length(1);
    });

    it('fires in deadline order, whatever order the deadlines were scheduled in', () => {
      const { clock, scheduler, fired } = start();
      scheduler.schedule('5 min', 300_000);
      scheduler.schedule('10 s', 10_000);
      scheduler.schedule('30 s', 30_000);
      scheduler.schedule('50 ms', 50);
      clock.increment(1_000_000);
      expect(fired).to.deep.equal([
        ['50 ms', 50, 50],
        ['10 s', 10_000, 10_000],
        ['30 s', 30_000, 30_000],
        ['5 min', 300_000, 300_000],
      ]);
    });

    it('fires deadlines that tie in the order they were scheduled', () => {
      const { clock, scheduler, keys } = start();
      for (const key of ['c', 'a', 'd', 'b']) scheduler.schedule(key, 1_000);
      clock.increment(1_000);
      expect(keys()).to.deep.equal(['c', 'a', 'd', 'b']);
    });

    it('fires a deadline already in the past on the next timer turn, never inside schedule()', () => {
      const { clock, scheduler, fired } = start();
      clock.increment(5_000);
      scheduler.schedule('late', 1_000);
      expect(fired).to.deep.equal([]);
      expect(clock.pendingTimers).to.equal(1);
      clock.flush();
      expect(fired).to.deep.equal([['late', 1_000, 5_000]]);
    });

    it('hands every key due by the time the timer runs to one sweep, in deadline order', () => {
      const clock = new ManualClock();
      const fired: string[] = [];
      const scheduler = new DeadlineScheduler<string>(clock, (key) => fired.push(key));
      scheduler.schedule('b', 200);
      scheduler.schedule('a', 100);
      scheduler.schedule('c', 900);
      clock.time = 500; // the event loop was late: a and b are both due
      clock.fireLive();
      expect(fired).to.deep.equal(['a', 'b']);
      expect(clock.live.map((t) => t.delay)).to.deep.equal([400]);
    });

    it('re-arms without firing anything when a timer runs early', () => {
      const clock = new ManualClock();
      const fired: string[] = [];
      const scheduler = new DeadlineScheduler<string>(clock, (key) => fired.push(key));
      scheduler.schedule('a', 100);
      clock.time = 99;
      clock.fireLive();
      expect(fired).to.deep.equal([]);
      expect(clock.live.map((t) => t.delay)).to.deep.equal([1]);
      clock.time = 100;
      clock.fireLive();
      expect(fired).to.deep.equal(['a']);
    });

    it('arms at most 2^31-1 ms ahead (Node overflows longer delays to 1 ms) and re-arms until the deadline', () => {
      const clock = new ManualClock();
      const fired: string[] = [];
      const scheduler = new DeadlineScheduler<string>(clock, (key) => fired.push(key));
      const far = 2 ** 32;
      scheduler.schedule('far', far);
      expect(clock.live.map((t) => t.delay)).to.deep.equal([2 ** 31 - 1]);
      clock.time = 2 ** 31 - 1;
      clock.fireLive();
      expect(fired).to.deep.equal([]);
      expect(clock.live.map((t) => t.delay)).to.deep.equal([2 ** 31 - 1]);
      clock.time = 2 * (2 ** 31 - 1);
      clock.fireLive();
      expect(fired).to.deep.equal([]);
      expect(clock.live.map((t) => t.delay)).to.deep.equal([2]);
      clock.time = far;
      clock.fireLive();
      expect(fired).to.deep.equal(['far']);
    });
  });

  describe('replacing and cancelling', () => {
    it('replaces a key’s deadline: it fires once, at the new time, later or earlier', () => {
      const { clock, scheduler, fired } = start();
      scheduler.schedule('a', 1_000);
      scheduler.schedule('a', 5_000);
      expect(scheduler.size).to.equal(1);
      expect(scheduler.deadlineOf('a')).to.equal(5_000);
      clock.increment(4_999);
      expect(fired).to.deep.equal([]);
      scheduler.schedule('a', 4_000); // already past: fires on the next turn
      scheduler.schedule('b', 10_000);
      scheduler.schedule('b', 6_000);
      clock.increment(20_000);
      expect(fired).to.deep.equal([
        ['a', 4_000, 4_999],
        ['b', 6_000, 6_000],
      ]);
    });

    it('moves a re-scheduled key behind the others that tie with its new deadline', () => {
      const { clock, scheduler, keys } = start();
      scheduler.schedule('a', 100);
      scheduler.schedule('b', 100);
      scheduler.schedule('a', 100);
      clock.increment(100);
      expect(keys()).to.deep.equal(['b', 'a']);
    });

    it('cancels a deadline so it never fires, and says whether there was one', () => {
      const { clock, scheduler, keys } = start();
      scheduler.schedule('a', 100);
      scheduler.schedule('b', 200);
      scheduler.schedule('c', 300);
      expect(scheduler.cancel('b')).to.equal(true);
      expect(scheduler.cancel('b')).to.equal(false);
      expect(scheduler.cancel('never')).to.equal(false);
      expect(scheduler.has('b')).to.equal(false);
      expect(scheduler.deadlineOf('b')).to.equal(undefined);
      expect(scheduler.size).to.equal(2);
      clock.increment(1_000);
      expect(keys()).to.deep.equal(['a', 'c']);
    });

    it('cancelling the earliest re-arms the one timer for the next deadline', () => {
      const clock = new ManualClock();
      const fired: string[] = [];
      const scheduler = new DeadlineScheduler<string>(clock, (key) => fired.push(key));
      scheduler.schedule('late', 500);
      scheduler.schedule('early', 100);
      expect(clock.live.map((t) => t.delay)).to.deep.equal([100]);
      scheduler.cancel('early');
      expect(clock.live.map((t) => t.delay)).to.deep.equal([500]);
      scheduler.cancel('late');
      expect(clock.live).to.deep.equal([]);
    });

    it('cancelling the earliest on a SimulatedClock: nothing fires at its time, the next fires at its own', () => {
      const { clock, scheduler, fired } = start();
      scheduler.schedule('early', 100);
      scheduler.schedule('late', 500);
      scheduler.cancel('early');
      expect(clock.pendingTimers).to.equal(1);
      clock.increment(499);
      expect(fired).to.deep.equal([]);
      clock.increment(1);
      expect(fired).to.deep.equal([['late', 500, 500]]);
    });

    it('keeps its timer when a change does not move the earliest deadline', () => {
      const clock = new ManualClock();
      const scheduler = new DeadlineScheduler<string>(clock, () => {});
      scheduler.schedule('a', 100);
      scheduler.schedule('b', 500);
      scheduler.schedule('c', 100);
      scheduler.cancel('b');
      expect(clock.armed).to.have.length(1);
    });

    it('clear() drops every deadline and disarms the timer; the scheduler stays usable', () => {
      const { clock, scheduler, fired } = start();
      for (let i = 0; i < 100; i++) scheduler.schedule(`k${i}`, 1_000 + i);
      scheduler.clear();
      expect(scheduler.size).to.equal(0);
      expect(scheduler.has('k0')).to.equal(false);
      expect(clock.pendingTimers).to.equal(0);
      clock.increment(10_000);
      expect(fired).to.deep.equal([]);
      scheduler.schedule('again', 11_000);
      clock.increment(1_000);
      expect(fired).to.deep.equal([['again', 11_000, 11_000]]);
    });
  });

  describe('one timer', () => {
    it('keeps exactly one clock timer pending while any deadline is scheduled, none otherwise', () => {
      const { clock, scheduler } = start();
      const rnd = random(7);
      const check = (what: string) => expect(clock.pendingTimers, what).to.equal(scheduler.size > 0 ? 1 : 0);
      check('empty');
      for (let step = 0; step < 3_000; step++) {
        const key = `k${Math.floor(rnd() * 50)}`;
        const r = rnd();
        if (r < 0.5) scheduler.schedule(key, clock.now() + Math.floor(rnd() * 1_000));
        else if (r < 0.8) scheduler.cancel(key);
        else clock.increment(Math.floor(rnd() * 300));
        check(`after step ${step}`);
      }
      clock.increment(10_000);
      expect(scheduler.size).to.equal(0);
      check('drained');
    });
  });

  describe('callbacks', () => {
    it('removes a key before its callback, so the callback may schedule it again (a periodic deadline)', () => {
      const seenInside: Array<boolean> = [];
      const { clock, scheduler, fired } = start<string>((key, deadline, self) => {
        seenInside.push(self.has(key));
        if (deadline < 5_000) self.schedule(key, deadline + 1_000);
      });
      scheduler.schedule('heartbeat', 1_000);
      clock.increment(60_000);
      expect(fired.map(([, deadline]) => deadline)).to.deep.equal([1_000, 2_000, 3_000, 4_000, 5_000]);
      expect(seenInside).to.deep.equal([false, false, false, false, false]);
      expect(scheduler.size).to.equal(0);
      expect(clock.pendingTimers).to.equal(0);
    });

    it(
      'defers a key a callback re-schedules at a time already ' +
        'due to the next timer turn (no spinning in one sweep)',
      () => {
        const clock = new ManualClock();
        const fired: string[] = [];
        const scheduler: DeadlineScheduler<string> = new DeadlineScheduler<string>(clock, (key) => {
          fired.push(key);
          if (key === 'a') scheduler.schedule('a', clock.now());
        });
        scheduler.schedule('a', 100);
        scheduler.schedule('b', 100);
        clock.time = 100;
        clock.fireLive();
        expect(fired).to.deep.equal(['a', 'b']);
        expect(clock.live.map((t) => t.delay)).to.deep.equal([0]);
        clock.fireLive();
        expect(fired).to.deep.equal(['a', 'b', 'a']);
      },
    );

    it('lets a callback cancel a key that is due in the same sweep', () => {
      const { clock, scheduler, keys } = start<string>((key, _deadline, self) => {
        if (key === 'a') self.cancel('b');
      });
      scheduler.schedule('a', 100);
      scheduler.schedule('b', 100);
      scheduler.schedule('c', 100);
      clock.increment(100);
      expect(keys()).to.deep.equal(['a', 'c']);
    });

    it('survives a throwing callback: the error propagates, the keys still due fire on the next turn', () => {
      const { clock, scheduler, keys } = start<string>((key) => {
        if (key === 'bad') throw new Error('boom');
      });
      scheduler.schedule('bad', 100);
      scheduler.schedule('next', 100);
      scheduler.schedule('later', 200);
      expect(() => clock.increment(100)).to.throw('boom');
      expect(keys()).to.deep.equal(['bad']);
      expect(clock.pendingTimers).to.equal(1);
      clock.increment(100);
      expect(keys()).to.deep.equal(['bad', 'next', 'later']);
    });
  });

  describe('many keys', () => {
    it('fires 10,000 random deadlines (with ties, replacements and cancellations) in sorted order, each once', () => {
      const { clock, scheduler, fired } = start<number>();
      const rnd = random(42);
      const expected = new Map<number, { deadline: number; order: number }>();
      let order = 0;
      for (let key = 0; key < 10_000; key++) {
        const deadline = 1 + Math.floor(rnd() * 2_000); // about five keys per millisecond: many ties
        scheduler.schedule(key, deadline);
        expected.set(key, { deadline, order: order++ });
      }
      for (let i = 0; i < 2_000; i++) {
        const key = Math.floor(rnd() * 10_000);
        const deadline = 1 + Math.floor(rnd() * 2_000);
        scheduler.schedule(key, deadline);
        expected.set(key, { deadline, order: order++ });
      }
      for (let i = 0; i < 2_000; i++) {
        const key = Math.floor(rnd() * 10_000);
        expect(scheduler.cancel(key)).to.equal(expected.delete(key));
      }
      expect(scheduler.size).to.equal(expected.size);
      expect(clock.pendingTimers).to.equal(1);
      clock.increment(2_000);
      const want = [...expected]
        .sort(([, a], [, b]) => a.deadline - b.deadline || a.order - b.order)
        .map(([key, { deadline }]) => [key, deadline, deadline]);
      expect(fired).to.deep.equal(want);
      expect(scheduler.size).to.equal(0);
      expect(clock.pendingTimers).to.equal(0);
    });

    it('stays correct when stale entries pile up and the heap is rebuilt', () => {
      const { clock, scheduler, keys } = start<number>();
      for (let key = 0; key < 3_000; key++) scheduler.schedule(key, 10_000 - key);
      for (let key = 0; key < 2_900; key++) scheduler.cancel(key); // stale ≫ live: the heap is compacted
      for (let round = 0; round < 20; round++)
        for (let key = 2_900; key < 3_000; key++) scheduler.schedule(key, 20_000 + ((key * 7 + round) % 100));
      clock.increment(30_000);
      const want = Array.from({ length: 100 }, (_, i) => 2_900 + i).sort(
        (a, b) => ((a * 7 + 19) % 100) - ((b * 7 + 19) % 100) || a - b,
      );
      expect(keys()).to.deep.equal(want);
    });

    it('agrees with a naive model on random schedule / cancel / advance sequences', () => {
      type Op =
        | { op: 'schedule'; key: number; offset: number }
        | { op: 'cancel'; key: number }
        | { op: 'advance'; ms: number };
      const op: fc.Arbitrary<Op> = fc.oneof(
        fc.record({ op: fc.constant('schedule' as const), key: fc.nat(7), offset: fc.integer({ min: -50, max: 300 }) }),
        fc.record({ op: fc.constant('cancel' as const), key: fc.nat(7) }),
        fc.record({ op: fc.constant('advance' as const), ms: fc.nat(200) }),
      );
      fc.assert(
        fc.property(fc.array(op, { maxLength: 60 }), (ops) => {
          const { clock, scheduler, fired } = start<number>();
          const model = new Map<number, { deadline: number; seq: number }>();
          const modelFired: Array<[number, number, number]> = [];
          let seq = 0;
          const drain = (until: number) => {
            // SimulatedClock runs the timer at the earliest deadline (or now, if already past); each
            // sweep fires every key due by then, in (deadline, scheduling) order.
            const due = [...model]
              .filter(([, e]) => e.deadline <= until)
              .sort(([, a], [, b]) => a.deadline - b.deadline || a.seq - b.seq);
            for (const [key, { deadline }] of due) {
              model.delete(key);
              modelFired.push([key, deadline, Math.max(deadline, clock.now())]);
            }
          };
          for (const o of ops) {
            if (o.op === 'schedule') {
              scheduler.schedule(o.key, clock.now() + o.offset);
              model.set(o.key, { deadline: clock.now() + o.offset, seq: seq++ });
            } else if (o.op === 'cancel') {
              expect(scheduler.cancel(o.key)).to.equal(model.delete(o.key));
            } else {
              drain(clock.now() + o.ms);
              clock.increment(o.ms);
            }
            expect(fired).to.deep.equal(modelFired);
            expect(scheduler.size).to.equal(model.size);
            for (const [key, { deadline }] of model) expect(scheduler.deadlineOf(key)).to.equal(deadline);
            expect(clock.pendingTimers).to.equal(model.size > 0 ? 1 : 0);
          }
        }),
        { numRuns: 300 },
      );
    });
  });

  describe('bad input', () => {
    it('refuses a deadline that is not a finite number and changes nothing', () => {
      const { clock, scheduler } = start();
      scheduler.schedule('a', 100);
      for (const at of [NaN, Infinity, -Infinity, '100' as unknown as number, undefined as unknown as number]) {
        let caught: unknown;
        try {
          scheduler.schedule('a', at);
        } catch (e) {
          caught = e;
        }
        expect(caught, String(at)).to.be.instanceOf(IllegalArgumentError);
        expect((caught as IllegalArgumentError).details.argument).to.equal('at');
        expect((caught as Error).message).to.match(/finite number/);
      }
      expect(scheduler.deadlineOf('a')).to.equal(100);
      expect(scheduler.size).to.equal(1);
      expect(clock.pendingTimers).to.equal(1);
    });

    it('refuses a missing clock or callback', () => {
      const clock = new SimulatedClock();
      expect(() => new DeadlineScheduler(undefined as unknown as Clock, () => {})).to.throw(
        IllegalArgumentError,
        /clock must be a Clock/,
      );
      expect(() => new DeadlineScheduler({ now: () => 0 } as unknown as Clock, () => {})).to.throw(
        IllegalArgumentError,
        /clock/,
      );
      expect(() => new DeadlineScheduler(clock, 'run' as unknown as () => void)).to.throw(
        IllegalArgumentError,
        /onDue must be a function/,
      );
    });
  });
});
