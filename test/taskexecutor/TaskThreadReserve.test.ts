/**
 * TaskThreadReserve with pools the test plays (no threads): spares per heap limit, booted one at a
 * time, taken by slots and never handed to anyone else, refilled, and all destroyed on close.
 */
import { expect } from 'chai';
import type { Piscina } from 'piscina';
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

function setup(spare = 2) {
  const pools: TestingPool[] = [];
  const logs: string[] = [];
  const loads: string[] = [];
  const reserve = new TaskThreadReserve({
    spare,
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
    expect(reserve.stats).to.deep.equal({ started: 2, served: 0, bootedOnDemand: 0, spare: 2, inUse: 0 });
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
      expect(reserve.stats).to.deep.equal({ started: 1, served: 0, bootedOnDemand: 1, spare: 0, inUse: 1 });
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
      // A new spare in its place; the taken one is never handed out again.
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

  it('keeps spares of another heap limit only while a slot of that limit is allocated', async () => {
    const { reserve, pools, bootAll } = setup(1);
    reserve.start(128);
    await bootAll();
    reserve.take(512);
    await bootAll();
    const spares512 = pools.filter((p) => p.heapLimitMb === 512);
    expect(spares512).to.have.length(2); // the one taken and a spare
    reserve.released(512);
    await bootAll();
    expect(spares512[1]!.destroyed).to.equal(true);
    expect(pools.filter((p) => p.heapLimitMb === 512)).to.have.length(2);
    expect(reserve.stats).to.include({ spare: 1, inUse: 0 });
  });

  it('reports errors of spares, and leaves those of a taken pool to its owner', async () => {
    const { reserve, pools, logs, bootAll } = setup(2);
    reserve.start(undefined);
    await bootAll();
    pools[0]!.fail(new Error('stray rejection'));
    expect(logs).to.have.length(1);
    expect(logs[0]).to.match(/a spare task thread \(heap limit none MB\) reported an error: stray rejection/);
    reserve.take(undefined);
    pools[0]!.fail(new Error('the owner hears this one'));
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
});
