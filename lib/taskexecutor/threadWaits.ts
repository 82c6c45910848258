/**
 * Allocations waiting for a task thread on its way back (TaskThreadReserve.take found no spare of their heap limit
 * while a thread of that limit was returning from a slot that closed), per heap limit, oldest first. Each takes the
 * next thread given back of its limit, or boots its own at its deadline: a thread comes back within a round trip to
 * it (its pool asks it to let go of its jobs), and one that has not come by then is held by a job's leftovers.
 * Waiting is what saves the boot: under concurrent jobs an allocation often comes while the last job's thread is
 * still on its way, and a thread booted for it (~20–50 ms of CPU) made the returning one surplus, retired.
 */
import type { Clock, TimerHandle } from '../core/clock.js';

/** How long an allocation waits for a thread on its way back before it boots its own (ms). */
export const RETURN_WAIT_MS = 1_000;

interface Waiter<T> {
  readonly take: (threads: T | Promise<T>) => void;
  readonly deadline: TimerHandle;
}

export class ThreadWaits<T> {
  readonly #clock: Pick<Clock, 'setTimeout' | 'clearTimeout'>;
  readonly #waitMs: number;
  readonly #byKey = new Map<string, Array<Waiter<T>>>();

  constructor(clock: Pick<Clock, 'setTimeout' | 'clearTimeout'>, waitMs = RETURN_WAIT_MS) {
    this.#clock = clock;
    this.#waitMs = waitMs;
  }

  /** How many allocations wait for a thread of this heap limit. */
  count(key: string): number {
    return this.#byKey.get(key)?.length ?? 0;
  }

  /** The threads the next one of this limit given back brings (see {@link next}), or `boot()`'s at the deadline. */
  wait(key: string, boot: () => T | Promise<T>): Promise<T> {
    return new Promise<T>((resolve) => {
      const waiting = this.#byKey.get(key) ?? [];
      this.#byKey.set(key, waiting);
      const waiter: Waiter<T> = {
        take: resolve,
        deadline: this.#clock.setTimeout(() => {
          const at = waiting.indexOf(waiter);
          if (at < 0) return;
          waiting.splice(at, 1);
          if (waiting.length === 0 && this.#byKey.get(key) === waiting) this.#byKey.delete(key);
          resolve(boot());
        }, this.#waitMs),
      };
      waiting.push(waiter);
    });
  }

  /** Every allocation still waiting is told `cause` at once (its deadline canceled): nothing boots for it any more. */
  failAll(cause: Error): void {
    const waiters = [...this.#byKey.values()].flat();
    this.#byKey.clear();
    for (const waiter of waiters) {
      this.#clock.clearTimeout(waiter.deadline);
      waiter.take(Promise.reject(cause));
    }
  }

  /** The oldest allocation waiting for this limit, taken off its queue (its deadline canceled): hand it its threads. */
  next(key: string): ((threads: T | Promise<T>) => void) | undefined {
    const waiting = this.#byKey.get(key);
    const waiter = waiting?.shift();
    if (waiting?.length === 0) this.#byKey.delete(key);
    if (waiter === undefined) return undefined;
    this.#clock.clearTimeout(waiter.deadline);
    return waiter.take;
  }
}
