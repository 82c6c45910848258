/**
 * The runs of a slot's pool waiting for a thread, in submit order, and how they are cut into
 * batches: a run re-queued after its thread was lost goes back ahead of the runs submitted after
 * it; the waiting runs are split over the free places (of the two batches the thread keeps out), 16
 * at most per batch; one batch shares one flags buffer and one managed memory, so a run whose differ
 * starts the next; a run marked `solo` (its batch could not be cloned) goes alone.
 */
import type { PendingRun } from './PendingRun.js';

/** At most this many runs per pool call (batch). */
const MAX_BATCH = 16;

export class RunQueue {
  #runs: PendingRun[] = [];

  get length(): number {
    return this.#runs.length;
  }

  /** A new run, last. */
  push(run: PendingRun): void {
    this.#runs.push(run);
  }

  /** A run back from a lost batch: ahead of the runs submitted after it (re-queued runs keep their order). */
  requeue(run: PendingRun): void {
    let at = 0;
    while (at < this.#runs.length && this.#runs[at]!.number < run.number) at++;
    this.#runs.splice(at, 0, run);
  }

  /** Takes every run out (to fail them). */
  drain(): PendingRun[] {
    const runs = this.#runs;
    this.#runs = [];
    return runs;
  }

  /**
   * The next batch for one of `places` free places (runs settled while waiting are dropped first), or null when none
   * waits.
   */
  takeBatch(places: number): PendingRun[] | null {
    if (this.#runs.some((run) => run.settled)) this.#runs = this.#runs.filter((run) => !run.settled);
    if (this.#runs.length === 0) return null;
    const size = Math.min(MAX_BATCH, Math.ceil(this.#runs.length / places));
    const first = this.#runs[0]!;
    let take = 1;
    if (!first.solo) {
      while (take < size) {
        const run = this.#runs[take]!;
        if (
          run.solo ||
          run.flags.buffer !== first.flags.buffer ||
          run.invocation.memory?.data !== first.invocation.memory?.data
        )
          break;
        take++;
      }
    }
    return this.#runs.splice(0, take);
  }
}
