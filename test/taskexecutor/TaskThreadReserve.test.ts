/**
 * TaskThreadReserve with pools the test plays (no threads): spares per heap limit, booted one at a
 * time, taken by slots, given back and taken again or retired, refilled, and all destroyed on close.
 */
import { expect } from 'chai';
import type { Piscina } from 'piscina';
import { SimulatedClock } from '../../lib/core/clock.js';
import { IllegalStateError } from '../../lib/core/errors.js';
import type { TaskThreadsOptions } from '../../lib/taskexecutor/taskThreads.js';
import { TaskThreadReserve } from '../../lib/taskexecutor/TaskThreadReserve.js';

/** A pool of one thread that boots when the test says so. */
class TestingPool {
  destroyed = false;
  readonly heapLimitMb: number | undefined;
  readonly #onError: (error: unknown) => void;
  #boot!: () => void;
  readonly #booted = new Promise<void>((resolve) => (this.#boot = resolve));
  constructor(options: TaskThreadsOptions) {
    this.heapLimitMb = options.heapLimitMb;
    this.#onError = options.onError;
  }
  boot(): void {
    this.#boot();
  }
  fail(error: Error): void {
    this.#onError(error);
  }
  run(): Promise<unknown> {
    return this.#booted;
  }
  async destroy(): Promise<void> {
    this.destroyed = true;
  }
}

/** What a thread answers when its slot has gone back: a small heap, nothing left running. */
const IDLE = { heapUsedBytes: 5 * 2 ** 20, leftRunning: [] };

function setup(
  spare = 2,
  limits: { maxJobs?: number; maxHeapAfterJobBytes?: number; clock?: SimulatedClock; returnWaitMs?: number } = {},
) {
  const pools: TestingPool[] = [];
  const logs: string[] = [];
  const loads: string[] = [];
  const reserve = new TaskThreadReserve({
    spare,
    ...limits,
    log: (message) => logs.push(message),
    load: async () => void loads.push('load'),
    create: (options) => {
      const pool = new TestingPool(options);
      pools.push(pool);
      return pool as unknown as Piscina;
    },
  });
  /** Boots every pool not booted yet, one after another, as the reserve asks for them. */
  const bootAll = async () => {
    for (let i = 0; i < 20; i++) {
      for (const pool of pools) pool.boot();
      await new Promise((resolve) => setImmediate(resolve));
    }
  };
  return { reserve, pools, logs, loads, bootAll };
}

/** Free slots of a TaskExecutor of `slots` slots, one per allocation: what a TaskExecutor tells its reserve. */
const slotsOf = (reserve: TaskThreadReserve, slots: number) => () => slots - reserve.stats.inUse;

describe('TaskThreadReserve', () => {
  it('boots nothing before start, then the default slot’s spares one at a time, up to `spare`', async () => {
    const { reserve, pools, bootAll } = setup(2);
    await bootAll();
    expect(pools).to.have.length(0);
    reserve.start(128);
    await new Promise((resolve) => setImmediate(resolve)); // what the pools need is loaded first
    expect(pools).to.have.length(1); // the second waits for the first to be up
    await bootAll();
    expect(pools.map((p) => p.heapLimitMb)).to.deep.equal([128, 128]);
    expect(reserve.stats).to.deep.equal({
      started: 2,
      served: 0,
      bootedOnDemand: 0,
      spare: 2,
      inUse: 0,
      reused: 0,
      retired: 0,
      servedSpares: [],
    });
  });

  it(
    'with no spare wanted, loads nothing at start (a TaskExecutor’s ' +
      'start stays light) and boots a taken thread on demand',
    async () => {
      const { reserve, pools, loads, bootAll } = setup(0);
      reserve.start(128);
      await bootAll();
      expect(loads).to.deep.equal([]);
      expect(pools).to.have.length(0);
      reserve.take(128);
      await bootAll();
      expect(pools.map((p) => p.heapLimitMb)).to.deep.equal([128]);
      expect(reserve.stats).to.deep.equal({
        started: 1,
        served: 0,
        bootedOnDemand: 1,
        spare: 0,
        inUse: 1,
        reused: 0,
        retired: 0,
        servedSpares: [],
      });
    },
  );

  it(
    'hands a spare to a slot once, refills, and boots ' + 'on demand only when no spare of that limit is there',
    async () => {
      const { reserve, pools, bootAll } = setup(1);
      reserve.start(128);
      await bootAll();
      const taken = reserve.take(128);
      expect(taken).to.equal(pools[0]);
      await bootAll();
      // A new spare in its place; the taken one is not handed out while its slot holds it.
      expect(pools).to.have.length(2);
      const next = reserve.take(128);
      expect(next).to.equal(pools[1]).and.not.equal(taken);
      // Another heap limit has no spare: booted for it now.
      const other = reserve.take(512) as unknown as TestingPool;
      expect(other.heapLimitMb).to.equal(512);
      expect(reserve.stats).to.include({ served: 2, bootedOnDemand: 1, inUse: 3 });
    },
  );

  it('boots no more spares than slots could still be allocated: none while a job holds every slot', async () => {
    const { reserve, pools, bootAll } = setup(2);
    let free = 2;
    reserve.start(128, () => free);
    await bootAll();
    expect(pools).to.have.length(2);
    // Both slots taken: the two spares go, nothing boots in their place while the slots are held.
    free = 1;
    reserve.take(128);
    free = 0;
    reserve.take(128);
    await bootAll();
    expect(pools).to.have.length(2);
    expect(reserve.stats).to.include({ spare: 0, inUse: 2 });
    // One slot freed: one spare for it.
    free = 1;
    reserve.released(128);
    await bootAll();
    expect(pools).to.have.length(3);
    expect(reserve.stats).to.include({ spare: 1, inUse: 1 });
  });

  it('keeps a thread of another heap limit given back, in the idle default spare’s place', async () => {
    const { reserve, pools, bootAll } = setup(1);
    reserve.start(128, slotsOf(reserve, 4));
    await bootAll();
    const big = (await reserve.take(512)) as Piscina;
    await bootAll();
    // At most `spare` (1) in all: the default spare stays while the 512 slot runs, nothing else boots.
    expect(pools.map((p) => p.heapLimitMb)).to.deep.equal([128, 512]);
    // Its slot ends: jobs back to back ask for the same slots again, so it stays, in the default spare's place.
    reserve.released(512, { threads: big, after: IDLE });
    await bootAll();
    expect(pools.map((p) => p.destroyed)).to.deep.equal([true, false]);
    expect(reserve.stats).to.include({ spare: 1, inUse: 0, retired: 1 });
    expect(pools).to.have.length(2); // no default spare boots while a thread of another limit is around
    // The next job of that limit takes it: nothing boots on demand.
    const before = reserve.stats.bootedOnDemand;
    expect(await reserve.take(512)).to.equal(big);
    expect(reserve.stats.bootedOnDemand).to.equal(before);
  });

  it('reports errors of spares, and leaves those of a taken pool to its owner', async () => {
    const { reserve, pools, logs, bootAll } = setup(2);
    reserve.start(undefined);
    await bootAll();
    pools[0]!.fail(new Error('stray rejection'));
    expect(logs).to.have.length(1);
    expect(logs[0]).to.match(/a spare task thread \(heap limit none MB\) reported an error: stray rejection/);
    const taken = reserve.take(undefined) as unknown as TestingPool;
    taken.fail(new Error('the owner hears this one'));
    expect(logs).to.have.length(1);
  });

  it('close destroys every spare and boots nothing more', async () => {
    const { reserve, pools, bootAll } = setup(2);
    reserve.start(128);
    await bootAll();
    await reserve.close();
    expect(pools.every((p) => p.destroyed)).to.equal(true);
    reserve.released(128);
    await bootAll();
    expect(pools).to.have.length(2);
    expect(reserve.stats.spare).to.equal(0);
  });

  it('takes back a thread whose allocation ended and gives it to the next allocation first, of any job', async () => {
    const { reserve, pools, bootAll } = setup(2);
    reserve.start(128, slotsOf(reserve, 2));
    await bootAll();
    const first = reserve.take(128) as Piscina;
    await bootAll();
    expect(pools).to.have.length(2); // one slot left free, one spare for it: nothing boots
    reserve.released(128, { threads: first, after: IDLE });
    await bootAll();
    // Given back: a spare again, and no boot (two slots free, two spares).
    expect(pools).to.have.length(2);
    expect(reserve.stats).to.include({ inUse: 0, spare: 2, retired: 0 });
    expect(reserve.take(128)).to.equal(first); // the warmest first
    expect(reserve.stats).to.include({ served: 2, reused: 1 });
    expect(pools.some((p) => p.destroyed)).to.equal(false);
  });

  it(
    'keeps no more spares than `spare`: a thread given back to a full reserve ' +
      'takes the place of one that never ran a job, else retires',
    async () => {
      const { reserve, pools, bootAll } = setup(1);
      reserve.start(128);
      await bootAll();
      const taken = reserve.take(128) as Piscina;
      await bootAll();
      expect(reserve.stats.spare).to.equal(1); // booted in its place meanwhile
      const booted = pools[1]!;
      reserve.released(128, { threads: taken, after: IDLE });
      // The warm thread stays, the one booted ahead (cold, never used) retires.
      expect((taken as unknown as TestingPool).destroyed).to.equal(false);
      expect(booted.destroyed).to.equal(true);
      expect(reserve.stats).to.include({ spare: 1, retired: 1 });
      // Taken again and given back while the spare booted in its place never ran a job either: the same again.
      expect(reserve.take(128)).to.equal(taken);
      await bootAll();
      expect(pools).to.have.length(3);
      reserve.released(128, { threads: taken, after: IDLE });
      expect(pools[2]!.destroyed).to.equal(true);
      // A full reserve of threads that all ran jobs: the one given back retires.
      const other = reserve.take(128) as Piscina;
      expect(other).to.equal(taken);
      await bootAll();
      const third = pools[3]!;
      expect(reserve.take(128)).to.equal(third as unknown as Piscina);
      await bootAll();
      reserve.released(128, { threads: third as unknown as Piscina, after: IDLE });
      reserve.released(128, { threads: taken, after: IDLE });
      expect((taken as unknown as TestingPool).destroyed).to.equal(true);
      expect((third as unknown as TestingPool).destroyed).to.equal(false);
      expect(reserve.stats).to.include({ spare: 1 });
    },
  );

  it('retires a thread after max-jobs allocations; with 1, a thread never serves a second job', async () => {
    const { reserve, pools, bootAll } = setup(1, { maxJobs: 1 });
    reserve.start(128, slotsOf(reserve, 4));
    await bootAll();
    const taken = reserve.take(128) as Piscina;
    // The reserve is below `spare` while it boots the replacement: only max-jobs retires this one.
    reserve.released(128, { threads: taken, after: IDLE });
    expect((taken as unknown as TestingPool).destroyed).to.equal(true);
    await bootAll();
    expect(reserve.take(128)).to.not.equal(taken);
    expect(reserve.stats).to.include({ retired: 1, reused: 0 });
    expect(pools.filter((p) => !p.destroyed)).to.have.length(2);
  });

  it('counts a thread’s allocations across jobs: it retires at the max-jobs-th', async () => {
    const { reserve, bootAll } = setup(4, { maxJobs: 3 });
    reserve.start(128, slotsOf(reserve, 4));
    await bootAll();
    const thread = reserve.take(128) as Piscina;
    for (let job = 2; job <= 3; job++) {
      reserve.released(128, { threads: thread, after: IDLE });
      expect(reserve.take(128)).to.equal(thread);
    }
    reserve.released(128, { threads: thread, after: IDLE });
    expect((thread as unknown as TestingPool).destroyed).to.equal(true);
    expect(reserve.stats).to.include({ reused: 2, retired: 1 });
  });

  it('retires a thread whose heap after its job is over the bound, or whose job left something running', async () => {
    const { reserve, bootAll } = setup(4, { maxHeapAfterJobBytes: 64 * 2 ** 20 });
    reserve.start(128, slotsOf(reserve, 4));
    await bootAll();
    const heavy = reserve.take(128) as Piscina;
    const leaky = reserve.take(128) as Piscina;
    const fine = reserve.take(128) as Piscina;
    reserve.released(128, { threads: heavy, after: { heapUsedBytes: 65 * 2 ** 20, leftRunning: [] } });
    reserve.released(128, { threads: leaky, after: { heapUsedBytes: 1, leftRunning: ['Timeout'] } });
    reserve.released(128, { threads: fine, after: { heapUsedBytes: 64 * 2 ** 20, leftRunning: [] } });
    expect((heavy as unknown as TestingPool).destroyed).to.equal(true);
    expect((leaky as unknown as TestingPool).destroyed).to.equal(true);
    expect((fine as unknown as TestingPool).destroyed).to.equal(false);
    expect(reserve.stats).to.include({ retired: 2 });
    expect(reserve.take(128)).to.equal(fine);
  });

  it('follows what jobs use: a thread given back takes the place of the idle spare of another limit', async () => {
    const { reserve, pools, bootAll } = setup(1);
    reserve.start(128, slotsOf(reserve, 2));
    await bootAll();
    const big = (await reserve.take(512)) as Piscina;
    reserve.released(512, { threads: big, after: IDLE });
    // A job of default slots: its thread boots on demand (the spare is of 512), and given back takes the 512's place.
    const small = (await reserve.take(128)) as Piscina;
    await bootAll();
    reserve.released(128, { threads: small, after: IDLE });
    await bootAll();
    expect((big as unknown as TestingPool).destroyed).to.equal(true);
    expect(reserve.stats).to.include({ spare: 1, retired: 2 });
    expect(await reserve.take(128)).to.equal(small);
    await bootAll();
    // No thread of another limit around any more: a default spare boots ahead of need again.
    expect(pools.map((p) => p.heapLimitMb)).to.deep.equal([128, 512, 128, 128]);
  });

  it('a thread given back reports its errors as a spare’s again', async () => {
    const { reserve, pools, logs, bootAll } = setup(1);
    reserve.start(128, slotsOf(reserve, 4));
    await bootAll();
    const taken = reserve.take(128) as Piscina;
    reserve.released(128, { threads: taken, after: IDLE });
    // `spare` 1 and the replacement not booted yet when it came back: it is the spare now.
    expect(reserve.stats.spare).to.be.greaterThan(0);
    pools[0]!.fail(new Error('late'));
    expect(logs.some((line) => /reported an error: late/.test(line))).to.equal(true);
  });

  it('boots no spare for a slot whose thread is on its way back', async () => {
    const { reserve, pools, bootAll } = setup(2);
    let free = 2;
    reserve.start(128, () => free);
    await bootAll();
    free = 1;
    const a = reserve.lease(128);
    free = 0;
    const b = reserve.lease(128);
    await bootAll();
    expect(pools).to.have.length(2);
    // Both slots freed at once; their pools take a while to close.
    free = 2;
    let closeA!: () => void;
    const closedA = new Promise<void>((resolve) => (closeA = resolve));
    const releasedA = a.release(closedA);
    const releasedB = b.release(new Promise<void>(() => {}));
    await bootAll();
    expect(pools).to.have.length(2); // no boot while both are on their way back
    a.returnThreads(a.threads as Piscina, IDLE);
    closeA();
    await releasedA;
    expect(reserve.stats).to.include({ spare: 1, retired: 0 });
    void releasedB;
  });

  describe('an allocation that finds no spare while a thread is on its way back', () => {
    /** A 2-slot TaskExecutor with 2 spares: both slots taken, then both freed; their pools close when the test says. */
    async function bothOnTheirWayBack(limits: Parameters<typeof setup>[1] = {}) {
      const s = setup(2, limits);
      s.reserve.start(128, slotsOf(s.reserve, 2));
      await s.bootAll();
      const [a, b] = [s.reserve.lease(128), s.reserve.lease(128)];
      let closeA!: () => void;
      const releasedA = a.release(new Promise<void>((resolve) => (closeA = resolve)));
      void b.release(new Promise<void>(() => {}));
      return { ...s, a, closeA, releasedA };
    }

    it('waits for it and takes it: nothing booted, nothing retired', async () => {
      const { reserve, pools, bootAll, a, closeA, releasedA } = await bothOnTheirWayBack();
      const next = reserve.take(128);
      expect(next).to.be.instanceOf(Promise);
      await bootAll();
      expect(pools).to.have.length(2);
      a.returnThreads(a.threads as Piscina, IDLE);
      closeA();
      await releasedA;
      expect(await next).to.equal(a.threads);
      await bootAll();
      expect(pools).to.have.length(2);
      expect(reserve.stats).to.include({ bootedOnDemand: 0, retired: 0, inUse: 2, served: 3, reused: 1 });
    });

    it('boots its own when the thread it waited for retires, or was destroyed by its pool', async () => {
      const retiring = await bothOnTheirWayBack({ maxJobs: 1 });
      const next = retiring.reserve.take(128);
      retiring.a.returnThreads(retiring.a.threads as Piscina, IDLE);
      retiring.closeA();
      await retiring.releasedA;
      await retiring.bootAll();
      expect(await next).to.equal(retiring.pools[2]);
      expect(retiring.pools[0]!.destroyed).to.equal(true);
      expect(retiring.reserve.stats).to.include({ bootedOnDemand: 1, retired: 1 });

      const destroyed = await bothOnTheirWayBack();
      const other = destroyed.reserve.take(128);
      destroyed.closeA(); // nothing given back
      await destroyed.releasedA;
      await destroyed.bootAll();
      expect(await other).to.equal(destroyed.pools[2]);
      expect(destroyed.reserve.stats).to.include({ bootedOnDemand: 1, retired: 0 });
    });

    it('boots its own after returnWaitMs when the thread does not come; the thread is spare when it does', async () => {
      const clock = new SimulatedClock();
      const { reserve, pools, bootAll, a, closeA, releasedA } = await bothOnTheirWayBack({ clock, returnWaitMs: 500 });
      const next = reserve.take(128);
      clock.increment(499);
      await bootAll();
      expect(pools).to.have.length(2);
      clock.increment(1);
      await bootAll();
      expect(await next).to.equal(pools[2]);
      a.returnThreads(a.threads as Piscina, IDLE);
      closeA();
      await releasedA;
      expect(reserve.stats).to.include({ bootedOnDemand: 1, retired: 0, spare: 1 });
    });

    it('fails at once when the reserve closes, booting nothing for it and arming no boot for later', async () => {
      const clock = new SimulatedClock();
      const { reserve, pools, bootAll } = await bothOnTheirWayBack({ clock, returnWaitMs: 500 });
      const next = reserve.take(128);
      await reserve.close();
      const failure = await Promise.resolve(next).then(
        () => null,
        (error: unknown) => error,
      );
      expect(failure)
        .to.be.instanceOf(IllegalStateError)
        .with.property('message')
        .that.matches(/closing: no task/);
      clock.increment(500);
      await bootAll();
      expect(pools).to.have.length(2);
      expect(reserve.stats).to.include({ bootedOnDemand: 0 });
    });
  });

  it('after close, destroys a thread given back, and close waits for every destroy', async () => {
    const { reserve, pools, bootAll } = setup(2);
    reserve.start(128, slotsOf(reserve, 4));
    await bootAll();
    const taken = reserve.take(128) as Piscina;
    await bootAll();
    const closed = reserve.close();
    reserve.released(128, { threads: taken, after: IDLE });
    await closed;
    expect(pools.every((p) => p.destroyed)).to.equal(true);
    expect(reserve.stats).to.include({ spare: 0, retired: 1 });
  });

  it('lends an allocation its threads and, once its pool has closed, takes them back if given', async () => {
    const { reserve, bootAll } = setup(4);
    reserve.start(128, slotsOf(reserve, 4));
    await bootAll();
    const lease = reserve.lease(128);
    lease.returnThreads(lease.threads as Piscina, IDLE);
    await lease.release(Promise.resolve());
    expect(reserve.stats).to.include({ inUse: 0, retired: 0, spare: 4 });
    const destroyed = reserve.lease(128);
    const started = reserve.stats.started;
    await destroyed.release(Promise.resolve()); // its pool destroyed the thread: nothing given back
    expect(reserve.stats).to.include({ inUse: 0, retired: 0, started: started + 1 }); // a spare boots in its place
  });
});
