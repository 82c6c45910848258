/**
 * A run's started flag: an Int32 of a SharedArrayBuffer that a slot's pool and the pool's thread
 * both change with Atomics — queued (set by the pool), started (claimed by the thread), canceled
 * before it started (claimed by the pool). Whoever claims a queued flag first decides: the thread
 * runs the run, or the pool cancels it and the thread skips it. No message says that a run started.
 *
 * The constants are all a task thread needs (taskWorker.ts imports nothing else from here);
 * {@link RunFlags} hands the flags out on the pool's side.
 */
export const RUN_QUEUED = 0;
export const RUN_STARTED = 1;
export const RUN_CANCELED = 2;

/** Where a run's started flag is. */
export interface RunFlag {
  readonly flags: Int32Array;
  readonly index: number;
}

/** Started flags in the first shared buffer; a pool with more runs outstanding gets a buffer twice as large. */
const INITIAL_RUN_FLAGS = 64;

/** Whether the thread has claimed the run (it runs, or ran). */
export function isStarted(flag: RunFlag): boolean {
  return Atomics.load(flag.flags, flag.index) === RUN_STARTED;
}

/** Whether the pool claimed the run before its thread did (the thread skips it). */
export function isCanceled(flag: RunFlag): boolean {
  return Atomics.load(flag.flags, flag.index) === RUN_CANCELED;
}

/** Claims a queued run for its cancel; false when its thread claimed it first (it has started). */
export function cancelQueued(flag: RunFlag): boolean {
  return Atomics.compareExchange(flag.flags, flag.index, RUN_QUEUED, RUN_CANCELED) === RUN_QUEUED;
}

/**
 * The pool's started flags: one shared buffer at a time, its flags reused as runs let go of them,
 * a new buffer twice as large when every flag is taken (runs still holding flags of the old one
 * keep it; those flags are not reused).
 */
export class RunFlags {
  #flags: Int32Array;
  #free: number[] = [];
  #unused = 0;

  constructor(initial = INITIAL_RUN_FLAGS) {
    if (!Number.isInteger(initial) || initial < 1)
      throw new RangeError(`RunFlags needs an integer initial size >= 1, got ${initial}`);
    this.#flags = new Int32Array(new SharedArrayBuffer(initial * Int32Array.BYTES_PER_ELEMENT));
  }

  /** The buffer new flags come from now (the one a thread must have been sent). */
  get buffer(): SharedArrayBuffer {
    return this.#flags.buffer as SharedArrayBuffer;
  }

  /** A flag for a new run, cleared to queued: a free one, or one of a new, larger buffer when all are taken. */
  claim(): RunFlag {
    let index = this.#free.pop();
    if (index === undefined) {
      if (this.#unused === this.#flags.length) {
        this.#flags = new Int32Array(new SharedArrayBuffer(this.#flags.length * 2 * Int32Array.BYTES_PER_ELEMENT));
        this.#free = [];
        this.#unused = 0;
      }
      index = this.#unused++;
    }
    Atomics.store(this.#flags, index, RUN_QUEUED);
    return { flags: this.#flags, index };
  }

  /**
   * Gives a flag back for reuse, once no thread can read it any more. A flag of an older buffer is
   * dropped. (A run whose thread was lost never gives its flag back: a terminated thread may run on
   * for a moment and must find nothing there to claim.)
   */
  release(flag: RunFlag): void {
    if (flag.flags === this.#flags) this.#free.push(flag.index);
  }
}
