/**
 * A TaskExecutor's task threads between slot allocations: booted ahead of need
 * (`taskmanager.task-threads.spare`), given to allocations, and taken back when an allocation ends
 * to serve the next one — of any job, as a Flink TaskManager's threads outlive its jobs. A thread
 * costs ~20–50 ms of CPU to boot (V8 isolate, Node environment, the task worker loaded), more than
 * thousands of trivial tasks; a job pays its own module instances instead (jobModules.ts: each job
 * imports its task modules afresh, so no job sees another's module state).
 *
 * - Spares follow demand, per task-heap limit (a thread's heap limit is fixed when it boots): at most
 *   `spare` in all, and none booted ahead beyond the slots that could still be allocated. Only the default slot's limit
 *   boots spares ahead of need, and only while no thread of another limit is around (spare or in
 *   use); a slot of another limit boots its thread on demand. A thread given back stays a spare
 *   whatever its limit — jobs back to back ask for the same slots again (a thread booted for each
 *   slot was most of a job's CPU on a session cluster whose jobs ask for fine-grained resources; spares
 *   booted ahead for such a job were retired when its own threads came back) — and when the spares
 *   are at their bound, it takes the place of the spare given back longest ago of another limit no
 *   slot uses, else of a spare of its own limit booted ahead that never ran a job (a warm isolate is
 *   worth more than a cold one: see #retireUnusedSpare). Spares booted ahead wait beneath those given
 *   back, which are taken first.
 * - A thread given back (idle, its jobs let go: SlotTaskPool's `returnThreads`) becomes a spare
 *   again, taken first by the next allocation (the warmest), unless it must retire: it has served
 *   `maxJobs` allocations (`taskmanager.task-threads.max-jobs`; 1: a thread never serves a second
 *   job, and no job sees another's globals or prototypes either), its heap in use when it was given
 *   back is over `maxHeapAfterJobBytes` (`taskmanager.task-threads.max-heap-after-job`: a job's
 *   leftovers), its job left something running (a timer, a socket: code of a job that ended must
 *   not run beside the next one), or spares of its limit are not wanted. A retired thread is
 *   destroyed, and a spare boots in its place in the background.
 * - An allocation that finds no spare while a thread of its limit is on its way back waits for it (threadWaits.ts)
 *   rather than booting one that the returning thread would make surplus.
 * - Refilling boots one thread at a time, in the background, and never more spares than slots
 *   could still be allocated (`freeSlots`): while a job holds every slot, nothing boots to compete
 *   with its tasks for the CPU.
 */
import type { Piscina } from 'piscina';
import { systemClock, type Clock } from '../core/clock.js';
import { IllegalStateError } from '../core/errors.js';
import type { ResolvedOptions } from '../core/options.js';
import type { TaskExecutorMetricsWire } from '../rpc/protocol.js';
import type { ThreadAfterJobs } from './taskThreadProtocol.js';
import { createTaskThreads, loadTaskThreads, threadsReady, type TaskThreadsOptions } from './taskThreads.js';
import { ThreadWaits } from './threadWaits.js';

export interface TaskThreadReserveOptions {
  /** Spare threads per heap limit (0: none kept; every allocation boots its own). */
  readonly spare: number;
  /** Allocations a thread serves before it retires (1: a thread never serves a second job); default unbounded. */
  readonly maxJobs?: number;
  /** A thread given back with more heap in use than this (bytes) retires; default unbounded. */
  readonly maxHeapAfterJobBytes?: number;
  /**
   * Makes a pool of one thread (default `createTaskThreads`, which loads piscina first if it must; tests pass doubles).
   */
  readonly create?: (options: TaskThreadsOptions) => Piscina | Promise<Piscina>;
  /** Loads what `create` needs before spares boot (default piscina itself; tests: nothing). */
  readonly load?: () => Promise<void>;
  /** Where errors of spare threads go (a spare has no task that could receive them). */
  readonly log: (message: string) => void;
  /**
   * How long an allocation that found no spare waits for a thread of its heap limit on its way back before it boots one
   * (threadWaits.ts; default RETURN_WAIT_MS), on `clock` (default the system clock).
   */
  readonly returnWaitMs?: number;
  readonly clock?: Pick<Clock, 'setTimeout' | 'clearTimeout'>;
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
  /** Of `served`, the allocations whose thread had served an earlier one. */
  readonly reused: number;
  /** Threads given back that were destroyed instead of kept (see the module comment). */
  readonly retired: number;
  /** Each spare thread that has served an allocation: how many, and its heap in use when it was last given back. */
  readonly servedSpares: readonly SpareThreadHeap[];
}

/** A spare thread's allocations so far and its heap in use (bytes) when it last went idle (taskWorker's afterBatch). */
export interface SpareThreadHeap {
  readonly allocations: number;
  readonly heapUsedBytes: number;
}

/** A thread given back at the end of an allocation, and what it held when it last went idle (null: it ran nothing). */
export interface ReturnedThreads {
  readonly threads: Piscina;
  readonly after: ThreadAfterJobs | null;
}

/** See {@link TaskThreadReserve.lease}. */
export interface ThreadLease {
  readonly threads: Piscina | Promise<Piscina>;
  readonly returnThreads: (threads: Piscina, after: ThreadAfterJobs | null) => void;
  readonly release: (closed: Promise<void>) => Promise<void>;
}

/** The reserve a TaskExecutor's options ask for (`taskmanager.task-threads.*`). */
export function taskThreadReserve(
  options: Pick<
    ResolvedOptions,
    | 'taskmanager.task-threads.spare'
    | 'taskmanager.numberOfTaskSlots'
    | 'taskmanager.task-threads.max-jobs'
    | 'taskmanager.task-threads.max-heap-after-job'
  >,
  log: (message: string) => void,
): TaskThreadReserve {
  return new TaskThreadReserve({
    spare: options['taskmanager.task-threads.spare'] ?? options['taskmanager.numberOfTaskSlots'],
    maxJobs: options['taskmanager.task-threads.max-jobs'],
    maxHeapAfterJobBytes: options['taskmanager.task-threads.max-heap-after-job'],
    log,
  });
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
  /** Leased threads whose pools are closing, by heap limit: on their way back. */
  readonly #returning = new Map<string, number>();
  /** Allocations waiting for one of those (no spare when they came). */
  readonly #waiting: ThreadWaits<Piscina>;
  /** Pools being destroyed (retired, unwanted, or at close). */
  readonly #destroying = new Set<Promise<unknown>>();
  /** Allocations each pool has served. */
  readonly #jobsServed = new WeakMap<Piscina, number>();
  /** The heap in use each pool given back answered, in bytes. */
  readonly #heapAfterJobs = new WeakMap<Piscina, number>();
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
  #reused = 0;
  #retired = 0;

  constructor(options: TaskThreadReserveOptions) {
    this.#o = options;
    this.#create = options.create ?? createTaskThreads;
    this.#waiting = new ThreadWaits(options.clock ?? systemClock, options.returnWaitMs);
    this.#load = options.load ?? (options.create === undefined ? loadTaskThreads : () => Promise.resolve());
  }

  get stats(): TaskThreadReserveStats {
    let spare = 0;
    const servedSpares: SpareThreadHeap[] = [];
    for (const list of this.#spares.values()) {
      spare += list.length;
      for (const pool of list) {
        const heapUsedBytes = this.#heapAfterJobs.get(pool);
        if (heapUsedBytes !== undefined)
          servedSpares.push({ allocations: this.#jobsServed.get(pool) ?? 0, heapUsedBytes });
      }
    }
    let inUse = 0;
    for (const count of this.#inUse.values()) inUse += count;
    return {
      started: this.#started,
      served: this.#served,
      bootedOnDemand: this.#bootedOnDemand,
      spare,
      inUse,
      reused: this.#reused,
      retired: this.#retired,
      servedSpares,
    };
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
   * A pool of one task thread with this heap limit, for one slot allocation: the spare given back
   * last when there is one, else one booting now (a promise of it while piscina is still loading).
   * The caller owns it from now on: it listens for its 'error' events, and when the slot closes
   * calls `released`, giving it back or having destroyed it.
   */
  take(heapLimitMb: number | undefined): Piscina | Promise<Piscina> {
    const key = keyOf(heapLimitMb);
    this.#inUse.set(key, (this.#inUse.get(key) ?? 0) + 1);
    const spare = this.#spares.get(key)?.pop();
    if (spare !== undefined) {
      this.#serve(spare);
      this.#refill();
      return spare;
    }
    // None spare, but one of this limit on its way back, not yet promised: waiting for it (a round trip) costs far less
    // than booting one (~20–50 ms of CPU), which the thread coming back would then make one too many of, retired.
    if (!this.#closed && (this.#returning.get(key) ?? 0) > this.#waiting.count(key))
      return this.#waiting.wait(key, () => this.#bootOnDemand(heapLimitMb));
    const booting = this.#bootOnDemand(heapLimitMb);
    this.#refill();
    return booting;
  }

  /** A spare or a thread given back goes to an allocation. */
  #serve(pool: Piscina): void {
    this.#served++;
    const served = this.#jobsServed.get(pool) ?? 0;
    if (served > 0) this.#reused++;
    this.#jobsServed.set(pool, served + 1);
    this.#taken.add(pool);
  }

  #bootOnDemand(heapLimitMb: number | undefined): Piscina | Promise<Piscina> {
    this.#bootedOnDemand++;
    return this.#boot(heapLimitMb, true);
  }

  /**
   * One allocation's threads as a SlotTaskPool takes them: `threads` and `returnThreads` are its
   * options of those names; `release(pool.close())` when its slot has gone: no spare boots for it
   * while its thread may come back, and once the pool has closed, `released` (with the threads if
   * the pool gave them back). Resolves then.
   */
  lease(heapLimitMb: number | undefined): ThreadLease {
    const key = keyOf(heapLimitMb);
    let returned: ReturnedThreads | undefined;
    return {
      threads: this.take(heapLimitMb),
      returnThreads: (threads, after) => {
        returned = { threads, after };
      },
      release: (closed) => {
        // On its way back from now on: its slot is free, no spare boots for it meanwhile.
        this.#returning.set(key, (this.#returning.get(key) ?? 0) + 1);
        const end = () => {
          const left = (this.#returning.get(key) ?? 1) - 1;
          if (left > 0) this.#returning.set(key, left);
          else this.#returning.delete(key);
          this.released(heapLimitMb, returned);
        };
        return closed.then(end, end);
      },
    };
  }

  /**
   * A slot that took a thread of this heap limit has closed: its owner gives the thread back
   * (`returned`) or has destroyed it. A thread given back becomes a spare again or retires (see the
   * module comment).
   */
  released(heapLimitMb: number | undefined, returned?: ReturnedThreads): void {
    const key = keyOf(heapLimitMb);
    const left = (this.#inUse.get(key) ?? 1) - 1;
    if (left > 0) this.#inUse.set(key, left);
    else this.#inUse.delete(key);
    const waiter = this.#waiting.next(key);
    if (waiter !== undefined) {
      // An allocation waits for this thread: it goes there, or, retiring or destroyed, the allocation boots its own.
      if (returned !== undefined) this.#taken.delete(returned.threads);
      if (returned !== undefined && !this.#closed && this.#mayServeAgain(returned)) {
        if (returned.after !== null) this.#heapAfterJobs.set(returned.threads, returned.after.heapUsedBytes);
        this.#serve(returned.threads);
        waiter(returned.threads);
      } else {
        if (returned !== undefined) {
          this.#retired++;
          this.#destroy(returned.threads);
        }
        waiter(this.#bootOnDemand(heapLimitMb));
      }
    } else if (returned !== undefined) {
      const { threads } = returned;
      this.#taken.delete(threads);
      const spares = this.#spares.get(key) ?? [];
      // At most `spare` in all: at the bound it takes the place of an idle limit's spare, if there is one, else of one
      // of its own limit that never ran a job. (Not bounded by free slots here, unlike a boot: this thread's slot may
      // not count as free yet, and keeping it costs nothing.)
      const room = () =>
        this.#spareCount() < this.#o.spare || this.#retireIdleSpare(key) || this.#retireUnusedSpare(spares);
      if (!this.#closed && this.#mayServeAgain(returned) && room()) {
        // One that ran nothing keeps the figure it had.
        if (returned.after !== null) this.#heapAfterJobs.set(threads, returned.after.heapUsedBytes);
        spares.push(threads);
        this.#spares.set(key, spares);
      } else {
        this.#retired++;
        this.#destroy(threads);
      }
    }
    this.#refill();
  }

  /** Spares of every heap limit, and threads on their way back (their slots are free already). */
  #spareCount(): number {
    let total = 0;
    for (const list of this.#spares.values()) total += list.length;
    for (const [key, count] of this.#returning) total += count - this.#waiting.count(key);
    return total;
  }

  /**
   * Retires the bottom spare (booted ahead, or given back longest ago) of a heap limit other than `keep` that no slot
   * uses; false if none.
   */
  #retireIdleSpare(keep: string): boolean {
    for (const [key, list] of this.#spares) {
      if (key === keep || this.#inUse.has(key) || list.length === 0) continue;
      this.#destroy(list.shift()!);
      if (list.length === 0) this.#spares.delete(key);
      this.#retired++;
      return true;
    }
    return false;
  }

  /**
   * Retires a spare of `spares` that was booted ahead and never ran a job (at the bottom: refill puts them there),
   * so that a thread given back — its isolate warm, its code compiled and optimized — stays instead; false if none.
   * A fresh isolate runs its first few hundred jobs with the runtime's code interpreted and optimizes it on V8's
   * threads as it goes: more CPU than its boot.
   */
  #retireUnusedSpare(spares: Piscina[]): boolean {
    const coldest = spares[0];
    if (coldest === undefined || this.#jobsServed.has(coldest)) return false;
    spares.shift();
    this.#destroy(coldest);
    this.#retired++;
    return true;
  }

  /** Destroys a pool; close() waits for it. */
  #destroy(pool: Piscina): void {
    const destroyed: Promise<unknown> = pool.destroy().then(
      () => this.#destroying.delete(destroyed),
      () => this.#destroying.delete(destroyed),
    );
    this.#destroying.add(destroyed);
  }

  /** Whether a thread given back may serve another allocation (not retiring: see the module comment). */
  #mayServeAgain({ threads, after }: ReturnedThreads): boolean {
    return (
      (this.#jobsServed.get(threads) ?? 1) < (this.#o.maxJobs ?? Infinity) &&
      (after === null ||
        (after.heapUsedBytes <= (this.#o.maxHeapAfterJobBytes ?? Infinity) && after.leftRunning.length === 0))
    );
  }

  /**
   * Destroys every spare, and resolves once they and every thread it retired are gone; later takes
   * boot on demand, threads given back are destroyed, nothing is refilled.
   */
  async close(): Promise<void> {
    this.#closed = true;
    // An allocation still waiting for a returning thread gets none: its slot is closing with the TaskExecutor.
    this.#waiting.failAll(
      new IllegalStateError('the TaskExecutor is closing: no task thread for this slot', {
        component: 'TaskThreadReserve',
        operation: 'take',
        state: 'closed',
        allowed: ['open'],
      }),
    );
    for (const pool of [...this.#spares.values()].flat()) this.#destroy(pool);
    this.#spares.clear();
    await Promise.allSettled([...this.#destroying]);
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
      if (taken) {
        this.#taken.add(made);
        this.#jobsServed.set(made, 1);
      }
      return made;
    };
    return made instanceof Promise ? made.then(keep) : keep(made);
  }

  /**
   * The heap limit whose spares are furthest below their target, if any is: `spare` each, no more in all than slots are
   * free.
   */
  #mostNeeded(): number | undefined | null {
    if (this.#spareCount() >= Math.min(this.#o.spare, this.#freeSlots())) return null;
    let best: { key: string; have: number } | null = null;
    const consider = (key: string) => {
      const have = (this.#spares.get(key)?.length ?? 0) + (this.#returning.get(key) ?? 0) - this.#waiting.count(key);
      if (have < this.#o.spare && (best === null || have < best.have)) best = { key, have };
    };
    // The default limit's only while no thread of another limit is around: spares follow what jobs use.
    const othersAround =
      this.#anyOtherThan(this.#spares) || this.#anyOtherThan(this.#inUse) || this.#anyOtherThan(this.#returning);
    if (this.#defaultKey !== null && !othersAround) consider(this.#defaultKey);
    if (best === null) return null;
    const { key } = best as { key: string };
    return key === 'none' ? undefined : Number(key);
  }

  /** Whether `byKey` holds anything of a heap limit other than the default slot's. */
  #anyOtherThan(byKey: ReadonlyMap<string, number | readonly unknown[]>): boolean {
    for (const [key, value] of byKey)
      if (key !== this.#defaultKey && (typeof value === 'number' ? value > 0 : value.length > 0)) return true;
    return false;
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
    // Beneath the threads given back: a take pops the one given back last, whose isolate has run jobs (its code
    // compiled, optimized) — not one booted ahead, cold and maybe still booting.
    list.unshift(pool);
    this.#booting = true;
    // Up (its worker file loaded) once a first call went through it; then the next one.
    const ready = () => {
      this.#booting = false;
      this.#refill();
    };
    threadsReady(pool).then(ready, ready);
  }
}

/** A TaskThreadReserve's figures as a TaskExecutor reports them (null without a reserve). */
export function taskThreadsWire(threads: TaskThreadReserveStats | undefined): TaskExecutorMetricsWire['taskThreads'] {
  if (threads === undefined) return null;
  return {
    started: threads.started,
    servedFromSpare: threads.served,
    bootedOnDemand: threads.bootedOnDemand,
    spare: threads.spare,
    inUse: threads.inUse,
    reusedAcrossAllocations: threads.reused,
    retired: threads.retired,
    servedSpares: threads.servedSpares,
  };
}
