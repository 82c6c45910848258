/**
 * JobEventLog: one job's events with sequence numbers, so a REST client can page through them
 * (`GET /jobs/:jobid/events?from=N`) and miss none while the log has them. Bounded: past `capacity`
 * events the oldest half of the task events is dropped in one pass (status events and parallelism decisions, a
 * handful per job, always stay), and `first` tells a client that came late where the log now starts.
 */
import { randomUUID } from 'node:crypto';
import type { JobClient } from '../dispatcher/Dispatcher.js';
import type { JobEvent, JobResult } from '../jobmaster/JobMaster.js';
import type { JobEventPage, SequencedJobEvent } from './RestTarget.js';

/** Events kept per job by default. */
export const DEFAULT_EVENT_LOG_CAPACITY = 10_000;

export class JobEventLog {
  readonly #capacity: number;
  /** Ascending by seq, with gaps where task events were dropped. */
  #events: SequencedJobEvent[] = [];
  #nextSeq = 0;
  readonly #id = randomUUID();
  #result: JobResult | null = null;

  /**
   * Subscribes to the job: it first gets the status changes so far (JobClient.onEvent replays them),
   * then everything as it happens. It stays subscribed: a log lives as long as its job is kept.
   */
  constructor(job: JobClient, capacity = DEFAULT_EVENT_LOG_CAPACITY) {
    this.#capacity = capacity;
    job.onEvent((event) => this.#append(event));
    void job.result.then((result) => {
      this.#result = result;
    });
  }

  /** The job's result once it settled (null before). */
  get result(): JobResult | null {
    return this.#result;
  }

  /** Status events kept, oldest first (never dropped). */
  statusEvents(): Array<Extract<SequencedJobEvent, { type: 'status' }>> {
    return this.#events.filter(
      (event): event is Extract<SequencedJobEvent, { type: 'status' }> => event.type === 'status',
    );
  }

  /** Events with seq ≥ `from`, at most `limit` of them. */
  page(from: number, limit: number): JobEventPage {
    const start = this.#indexOf(from);
    const events = this.#events.slice(start, start + limit);
    const next = events.length > 0 ? events[events.length - 1]!.seq + 1 : Math.max(from, this.#firstSeq());
    const complete = this.#result !== null && next >= this.#nextSeq;
    return { events, next, first: this.#firstSeq(), complete, log: this.#id };
  }

  #firstSeq(): number {
    return this.#events[0]?.seq ?? this.#nextSeq;
  }

  /** The index of the first event with seq ≥ from (binary search: seqs ascend). */
  #indexOf(from: number): number {
    let low = 0;
    let high = this.#events.length;
    while (low < high) {
      const mid = (low + high) >>> 1;
      if (this.#events[mid]!.seq < from) low = mid + 1;
      else high = mid;
    }
    return low;
  }

  #append(event: JobEvent): void {
    this.#events.push({ ...event, seq: this.#nextSeq++ });
    if (this.#events.length <= this.#capacity) return;
    let toDrop = Math.ceil(this.#capacity / 2);
    // Task events go first: a job's status changes and parallelism decisions are few and kept.
    this.#events = this.#events.filter((kept) => kept.type !== 'task' || toDrop-- <= 0);
  }
}
