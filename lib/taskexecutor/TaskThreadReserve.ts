/**
 * Task threads booted ahead of need (`taskmanager.task-threads.spare`): a thread costs ~50 ms of
 * CPU to boot from `dist/` (V8 isolate, Node environment, the task worker loaded), more than
 * thousands of trivial tasks, so a TaskExecutor keeps some booted and a new slot allocation takes
 * one instead of waiting for it.
 *
 * - Per task-heap limit (a thread's heap limit is fixed when it boots): `spare` threads of the
 *   default slot's limit always; of another limit, only while a slot of that limit is allocated
 *   (a job using such slots probably asks for more of them), and dropped with the last one.
 * - A taken thread belongs to that one allocation and is destroyed with it: threads are never
 *   shared between jobs, so no job sees another's globals, prototypes or module state.
 * - Refilling boots one thread at a time, in the background, and never more spares than slots
 *   could still be allocated (`freeSlots`): while a job holds every slot, nothing boots to compete
 *   with its tasks for the CPU; the spares come back as its slots are freed.
 */
import type { Piscina } from 'piscina';
import { createTaskThreads, loadTaskThreads, threadsReady, type TaskThreadsOptions } from './taskThreads.js';

export interface TaskThreadReserveOptions {
  /** Spare threads per heap limit (0: none kept; every allocation boots its own). */
  readonly spare: number;
  /**
   * Makes a pool of one thread (default `createTaskThreads`, which loads piscina first if it must; tests pass doubles).
   */
  readonly create?: (options: TaskThreadsOptions) => Piscina | Promise<Piscina>;
  /** Loads what `create` needs before spares boot (default piscina itself; tests: nothing). */
  readonly load?: () => Promise<void>;
  /** Where errors of spare threads go (a spare has no task that could receive them). */
  readonly log: (message: string) => void;
}

export interface TaskThreadReserveStats {
  /** Threads booted so far, taken or spare. */
  readonly started: number;
  /** Allocations served by a spare (no boot to wait for). */
  readonly served: number;
  /** Allocations that booted their own thread (no spare of their heap limit). */
  readonly bootedOnDemand: number;
  /** Spare threads now, all heap limits. */
  readonly spare: number;
  /** Threads taken by slots and not released yet. */
  readonly inUse: number;
}

/** A heap limit as a map key ('none' for no limit). */
const keyOf = (heapLimitMb: number | undefined): string => (heapLimitMb === undefined ? 'none' : String(heapLimitMb));

export class TaskThreadReserve {
  readonly #o: TaskThreadReserveOptions;
  readonly #create: (options: TaskThreadsOptions) => Piscina | Promise<Piscina>;
  /** Spare pools by heap limit. */
  readonly #spares = new Map<string, Piscina[]>();
  /** Pools handed to a slot: their owner reports their errors. */
  readonly #taken = new WeakSet<Piscina>();
  /**
   * Allocated slots (taken threads) by heap limit: spares of a limit other than the default's are kept while this is >
   * 0.
   */
  readonly #inUse = new Map<string, number>();
  readonly #load: () => Promise<void>;
  /** Spares boot once what `create` needs is loaded. */
  #loaded = false;
  #booting = false;
  #running = false;
  /** The default slot's heap limit, once started. */
  #defaultKey: string | null = null;
  #freeSlots: () => number = () => Infinity;
  #closed = false;
  #started = 0;
  #served = 0;
  #bootedOnDemand = 0;

  constructor(options: TaskThreadReserveOptions) {
    this.#o = options;
    this.#create = options.create ?? createTaskThreads;
    this.#load = options.load ?? (options.create === undefined ? loadTaskThreads : () => Promise.resolve());
  }

  get stats(): TaskThreadReserveStats {
    let spare = 0;
    for (const list of this.#spares.values()) spare += list.length;
    let inUse = 0;
    for (const count of this.#inUse.values()) inUse += count;
    return { started: this.#started, served: this.#served, bootedOnDemand: this.#bootedOnDemand, spare, inUse };
  }

  /**
   * Starts filling the reserve, in the background: spares of the default slot's heap limit (MB;
   * undefined: no limit) are kept always, as many as `freeSlots()` says slots could still be
   * allocated (default: no bound beyond `spare`). Idempotent (the first call's settings stay).
   */
  start(defaultHeapLimitMb: number | undefined, freeSlots: () => number = () => Infinity): void {
    if (!this.#running) {
      this.#defaultKey = keyOf(defaultHeapLimitMb);
      this.#freeSlots = freeSlots;
    }
    if (this.#running) return this.#refill();
    this.#running = true;
    // piscina is loaded now, after registration, not while the TaskExecutor starts; with no spare
    // wanted, not before a slot's first take needs it (createTaskThreads loads it then).
    if (this.#o.spare === 0) return;
    this.#load().then(
      () => {
        this.#loaded = true;
        this.#refill();
      },
      (error: unknown) =>
        this.#o.log(`task threads cannot be made: ${error instanceof Error ? error.message : String(error)}`),
    );
  }

  /**
   * A pool of one task thread with this heap limit, for one slot allocation: a spare when there is
   * one, else one booting now (a promise of it while piscina is still loading). The caller owns it
   * from now on: it listens for its 'error' events, destroys it when the slot closes and then calls
   * `released`.
   */
  take(heapLimitMb: number | undefined): Piscina | Promise<Piscina> {
    const key = keyOf(heapLimitMb);
    this.#inUse.set(key, (this.#inUse.get(key) ?? 0) + 1);
    const spare = this.#spares.get(key)?.shift();
    if (spare !== undefined) {
      this.#served++;
      this.#taken.add(spare);
      this.#refill();
      return spare;
    }
    this.#bootedOnDemand++;
    const booting = this.#boot(heapLimitMb, true);
    this.#refill();
    return booting;
  }

  /** A slot that took a thread of this heap limit has closed (its owner destroyed the thread). */
  released(heapLimitMb: number | undefined): void {
    const key = keyOf(heapLimitMb);
    const left = (this.#inUse.get(key) ?? 1) - 1;
    if (left > 0) this.#inUse.set(key, left);
    else this.#inUse.delete(key);
    if (left === 0 && key !== this.#defaultKey) {
      // No slot of this size any more: its spares go too.
      for (const pool of this.#spares.get(key) ?? []) void pool.destroy();
      this.#spares.delete(key);
    }
    this.#refill();
  }

  /** Destroys every spare; later takes boot on demand and nothing is refilled. */
  async close(): Promise<void> {
    this.#closed = true;
    const spares = [...this.#spares.values()].flat();
    this.#spares.clear();
    await Promise.allSettled(spares.map((pool) => pool.destroy()));
  }

  /** A pool booting now (a promise of it while what it needs loads); `taken` for a slot, else a spare. */
  #boot(heapLimitMb: number | undefined, taken: boolean): Piscina | Promise<Piscina> {
    this.#started++;
    let pool: Piscina | undefined;
    const made = this.#create({
      ...(heapLimitMb === undefined ? {} : { heapLimitMb }),
      // Spare, nobody's task can receive it; taken, its owner's listener reports it.
      onError: (error) => {
        if (pool === undefined || !this.#taken.has(pool))
          this.#o.log(
            `a spare task thread (heap limit ${keyOf(heapLimitMb)} MB) reported ` +
              `an error: ${error instanceof Error ? error.message : String(error)}`,
          );
      },
    });
    const keep = (made: Piscina) => {
      pool = made;
      if (taken) this.#taken.add(made);
      return made;
    };
    return made instanceof Promise ? made.then(keep) : keep(made);
  }

  /**
   * The heap limit whose spares are furthest below their target, if any is: `spare` each, no more in all than slots are
   * free.
   */
  #mostNeeded(): number | undefined | null {
    let total = 0;
    for (const list of this.#spares.values()) total += list.length;
    if (total >= this.#freeSlots()) return null;
    let best: { key: string; have: number } | null = null;
    const consider = (key: string) => {
      const have = this.#spares.get(key)?.length ?? 0;
      if (have < this.#o.spare && (best === null || have < best.have)) best = { key, have };
    };
    if (this.#defaultKey !== null) consider(this.#defaultKey);
    for (const key of this.#inUse.keys()) consider(key);
    if (best === null) return null;
    const { key } = best as { key: string };
    return key === 'none' ? undefined : Number(key);
  }

  /** Boots the next spare once the one booting is up: one at a time, while any limit is short. */
  #refill(): void {
    if (this.#booting || !this.#running || !this.#loaded || this.#closed) return;
    const heapLimitMb = this.#mostNeeded();
    if (heapLimitMb === null) return;
    const key = keyOf(heapLimitMb);
    // Loaded: made at once (a double may hand a promise; spares are plain pools then).
    const pool = this.#boot(heapLimitMb, false) as Piscina;
    let list = this.#spares.get(key);
    if (list === undefined) this.#spares.set(key, (list = []));
    list.push(pool);
    this.#booting = true;
    // Up (its worker file loaded) once a first call went through it; then the next one.
    const ready = () => {
      this.#booting = false;
      this.#refill();
    };
    threadsReady(pool).then(ready, ready);
  }
}
