/**
 * The dashboard's live charts: one point a second of slots in use (pending + allocated) and total,
 * and of the slot allocation latency of the slots that came in that second (mean and max, ms).
 * Kept on the server so that a page opened late still sees the last POINTS seconds.
 */
import type { ClusterOverview } from '../ClusterOverview.js';

export const POINTS = 600;

export interface SeriesSnapshot {
  /** Unix seconds of each point. */
  readonly time: readonly number[];
  readonly slotsInUse: readonly number[];
  readonly slotsTotal: readonly number[];
  /** ms; null where no slot came in that second. */
  readonly allocationLatencyMean: ReadonlyArray<number | null>;
  readonly allocationLatencyMax: ReadonlyArray<number | null>;
}

export class SeriesRecorder {
  readonly #time: number[] = [];
  readonly #inUse: number[] = [];
  readonly #total: number[] = [];
  readonly #mean: Array<number | null> = [];
  readonly #max: Array<number | null> = [];
  #latencySum = 0;
  #latencyCount = 0;
  #latencyMax = 0;

  /** A slot came, `latencyMs` after it was asked for. */
  recordAllocation(latencyMs: number): void {
    this.#latencySum += latencyMs;
    this.#latencyCount++;
    this.#latencyMax = Math.max(this.#latencyMax, latencyMs);
  }

  /** Takes the point of the second that ends at `nowMs`. */
  sample(nowMs: number, overview: ClusterOverview): void {
    let inUse = 0;
    let total = 0;
    for (const te of overview.taskExecutors) {
      total += te.slots.length;
      for (const slot of te.slots) if (slot.state === 'pending' || slot.state === 'allocated') inUse++;
    }
    const counted = this.#latencyCount > 0;
    this.#push(
      nowMs / 1000,
      inUse,
      total,
      counted ? this.#latencySum / this.#latencyCount : null,
      counted ? this.#latencyMax : null,
    );
    this.#latencySum = this.#latencyCount = this.#latencyMax = 0;
  }

  snapshot(): SeriesSnapshot {
    return {
      time: [...this.#time],
      slotsInUse: [...this.#inUse],
      slotsTotal: [...this.#total],
      allocationLatencyMean: [...this.#mean],
      allocationLatencyMax: [...this.#max],
    };
  }

  #push(time: number, inUse: number, total: number, mean: number | null, max: number | null): void {
    this.#time.push(time);
    this.#inUse.push(inUse);
    this.#total.push(total);
    this.#mean.push(mean);
    this.#max.push(max);
    if (this.#time.length <= POINTS) return;
    for (const series of [this.#time, this.#inUse, this.#total, this.#mean, this.#max] as unknown[][]) series.shift();
  }
}
