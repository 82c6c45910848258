import { expect } from 'chai';
import { SimulatedClock, type Clock } from '../../lib/core/clock.js';
import { EndpointClosedError, IllegalStateError } from '../../lib/core/errors.js';
import { DRAIN_BUDGET_MS, MainThreadExecutor } from '../../lib/rpc/MainThreadExecutor.js';

const settle = () => new Promise((resolve) => setImmediate(resolve));

describe('MainThreadExecutor', () => {
  it('runs tasks one at a time, in the order they were queued, each to completion', async () => {
    const mailbox = new MainThreadExecutor('TaskExecutor te-1');
    const log: string[] = [];
    mailbox.execute(() => {
      log.push('a:start');
      mailbox.execute(() => log.push('c')); // queued behind b, not run inside a
      log.push('a:end');
    });
    mailbox.execute(() => log.push('b'));
    expect(log).to.deep.equal([]); // nothing runs synchronously inside execute()
    await settle();
    expect(log).to.deep.equal(['a:start', 'a:end', 'b', 'c']);
  });

  /** A clock whose time the tasks move as they run (work that takes time), and whose timers the test fires. */
  function workingClock() {
    let now = 0;
    const timers = new Map<number, () => void>();
    let next = 1;
    const clock: Clock = {
      now: () => now,
      setTimeout: (fn) => {
        timers.set(next, fn);
        return next++;
      },
      clearTimeout: (handle) => void timers.delete(handle as number),
    };
    return {
      clock,
      work: (ms: number) => void (now += ms),
      pendingTimers: () => timers.size,
      fireTimers: () => {
        const due = [...timers.values()];
        timers.clear();
        for (const fn of due) fn();
      },
    };
  }

  it('lets the event loop turn once a drain ran for its budget, and goes on in order from a 0 ms timer', async () => {
    const { clock, work, fireTimers, pendingTimers } = workingClock();
    const mailbox = new MainThreadExecutor('JobMaster big', clock);
    const log: number[] = [];
    // Each task takes 4 ms: a drain stops once DRAIN_BUDGET_MS (10) has passed, after 3 of them.
    for (let i = 0; i < 6; i++)
      mailbox.execute(() => {
        log.push(i);
        work(4);
      });
    await settle();
    expect(log).to.deep.equal([0, 1, 2]);
    expect(mailbox.queued).to.equal(3);
    expect(pendingTimers()).to.equal(1);
    // A task queued meanwhile waits its turn behind them: no drain starts around the timer.
    mailbox.execute(() => log.push(6));
    await settle();
    expect(log).to.deep.equal([0, 1, 2]);
    // Each resumed drain has a budget of its own: 3 more tasks, then the last one after another turn.
    fireTimers();
    expect(log).to.deep.equal([0, 1, 2, 3, 4, 5]);
    fireTimers();
    expect(log).to.deep.equal([0, 1, 2, 3, 4, 5, 6]);
    expect(pendingTimers()).to.equal(0);
  });

  it('close cancels a drain waiting to go on: what is left rejects, nothing runs later', async () => {
    const { clock, work, fireTimers, pendingTimers } = workingClock();
    const mailbox = new MainThreadExecutor('JobMaster big', clock);
    const ran: number[] = [];
    for (let i = 0; i < 4; i++)
      mailbox.execute(() => {
        ran.push(i);
        work(DRAIN_BUDGET_MS);
      });
    const left = mailbox
      .callAsync(() => 'never')
      .then(
        () => null,
        (error: unknown) => error,
      );
    await settle();
    expect(ran).to.deep.equal([0]);
    mailbox.close();
    expect(await left).to.be.instanceOf(EndpointClosedError);
    expect(pendingTimers()).to.equal(0);
    fireTimers();
    expect(ran).to.deep.equal([0]);
  });

  it('re-enters async completions through the mailbox: interleaved calls never run at the same time', async () => {
    const mailbox = new MainThreadExecutor('ResourceManager');
    const log: string[] = [];
    let inside = 0;
    const step = (name: string) => {
      expect(inside, `${name} ran while another task was running`).to.equal(0);
      inside++;
      log.push(name);
      inside--;
    };
    // Remote answers that arrive in the order the test chooses (no timers: the order is exact).
    const answers = new Map<string, (value: number) => void>();
    const remote = (name: string) => new Promise<number>((resolve) => answers.set(name, resolve));
    for (const name of ['x', 'y', 'z']) {
      mailbox.execute(() => {
        step(`${name}:call`);
        mailbox.whenComplete(remote(name), (value) => step(`${name}:done(${value})`));
      });
    }
    const settle = () => new Promise((resolve) => setImmediate(resolve));
    await settle();
    expect(log).to.deep.equal(['x:call', 'y:call', 'z:call']);
    for (const [name, value] of [
      ['y', 1],
      ['z', 2],
      ['x', 3],
    ] as const) {
      answers.get(name)!(value);
      await settle();
    }
    expect(log.slice(3)).to.deep.equal(['y:done(1)', 'z:done(2)', 'x:done(3)']);
  });

  it('callAsync settles with the result or the error of the task, run inside the mailbox', async () => {
    const mailbox = new MainThreadExecutor('JobMaster');
    expect(await mailbox.callAsync(() => (mailbox.assertRunningInMainThread(), 42))).to.equal(42);
    expect(await mailbox.callAsync(async () => 'later')).to.equal('later');
    const error = await mailbox
      .callAsync(() => {
        throw new Error('boom');
      })
      .catch((e: unknown) => e);
    expect((error as Error).message).to.equal('boom');
  });

  it("fails loudly when state is touched from outside its mailbox, or from another endpoint's", async () => {
    const rm = new MainThreadExecutor('ResourceManager');
    const te = new MainThreadExecutor('TaskExecutor te-1');
    expect(() => rm.assertRunningInMainThread('the SlotManager')).to.throw(
      IllegalStateError,
      /the SlotManager of ResourceManager was touched outside its main thread/,
    );
    const seen = await te.callAsync(() => {
      try {
        rm.assertRunningInMainThread();
        return 'no error';
      } catch (e) {
        return (e as Error).message;
      }
    });
    expect(seen).to.match(/from TaskExecutor te-1's/);
    expect(rm.isInMainThread).to.equal(false);
  });

  it('schedules delayed tasks on the injected clock and lets them be canceled', async () => {
    const clock = new SimulatedClock();
    const mailbox = new MainThreadExecutor('TaskExecutor te-1', clock);
    const log: string[] = [];
    mailbox.schedule(() => log.push('heartbeat'), 10_000);
    const timeout = mailbox.schedule(() => log.push('timeout'), 30_000);
    clock.increment(9_999);
    await settle();
    expect(log).to.deep.equal([]);
    clock.increment(1);
    await settle();
    expect(log).to.deep.equal(['heartbeat']);
    expect(timeout.cancel()).to.equal(true);
    clock.increment(60_000);
    await settle();
    expect(log).to.deep.equal(['heartbeat']);
    expect(timeout.cancel()).to.equal(false);
    expect(() => mailbox.schedule(() => {}, -1)).to.throw(/delay/);
  });

  it('keeps running after a task throws, reporting the error', async () => {
    const errors: unknown[] = [];
    const mailbox = new MainThreadExecutor('RM', undefined, (e) => errors.push(e));
    const log: string[] = [];
    mailbox.execute(() => {
      throw new Error('bad task');
    });
    mailbox.execute(() => log.push('next'));
    await settle();
    expect(log).to.deep.equal(['next']);
    expect((errors[0] as Error).message).to.equal('bad task');
  });

  it(
    'closing rejects what is still queued and everything ' + 'after with EndpointClosedError, and cancels timers',
    async () => {
      const clock = new SimulatedClock();
      const mailbox = new MainThreadExecutor('TaskExecutor te-9', clock);
      const queued = mailbox.callAsync(() => 'never');
      mailbox.schedule(() => expect.fail('a timer ran after close'), 1000);
      mailbox.close();
      const error = await queued.catch((e: unknown) => e);
      expect(error).to.be.instanceOf(EndpointClosedError);
      expect((error as EndpointClosedError).message).to.match(/TaskExecutor te-9 is closed/);
      expect(await mailbox.callAsync(() => 1).catch((e: unknown) => e)).to.be.instanceOf(EndpointClosedError);
      expect(clock.pendingTimers).to.equal(0);
      expect(mailbox.isClosed).to.equal(true);
    },
  );
});
