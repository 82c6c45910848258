/**
 * JobEventLog: one job's events with sequence numbers, so a REST client can page through them
 * (`GET /jobs/:jobid/events?from=N`) and miss none while the log has them. Bounded: past `capacity`
 * events the oldest half of the task events is dropped in one pass (status events, a handful per
 * job, always stay), and `first` tells a client that came late where the log now starts.
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
   * Where each subtask attempt last ran, by `vertex#subtask#attempt` (kept when task events are dropped: one per
   * attempt).
   */
  readonly #placements = new Map<string, { readonly resourceId: string; readonly allocationId: string | null }>();
  /** When each subtask attempt started deploying and ended (epoch ms, -1 before), by `vertex#subtask#attempt`. */
  readonly #timings = new Map<string, { startTime: number; endTime: number }>();
  readonly #unsubscribe: () => void;

  /**
   * Subscribes to the job: it first gets the status changes so far (JobClient.onEvent replays them),
   * then everything as it happens.
   */
  constructor(job: JobClient, capacity = DEFAULT_EVENT_LOG_CAPACITY) {
    this.#capacity = capacity;
    this.#unsubscribe = job.onEvent((event) => this.#append(event));
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

  /**
   * Where a subtask attempt ran (its last task event that named a TaskExecutor), or undefined: a
   * finished attempt gave its slot back, so the JobMaster no longer knows.
   */
  placementOf(
    vertexId: string,
    subtaskIndex: number,
    attemptNumber: number,
  ): { readonly resourceId: string; readonly allocationId: string | null } | undefined {
    return this.#placements.get(`${vertexId}#${subtaskIndex}#${attemptNumber}`);
  }

  /**
   * When a subtask attempt started (its `deploying`, as Flink's start-time) and ended (its final state), epoch ms,
   * -1 for what has not happened (or happened before the log saw the job).
   */
  timingOf(vertexId: string, subtaskIndex: number, attemptNumber: number): { startTime: number; endTime: number } {
    return this.#timings.get(`${vertexId}#${subtaskIndex}#${attemptNumber}`) ?? { startTime: -1, endTime: -1 };
  }

  /** Events with seq ≥ `from`, at most `limit` of them. */
  page(from: number, limit: number): JobEventPage {
    const start = this.#indexOf(from);
    const events = this.#events.slice(start, start + limit);
    const next = events.length > 0 ? events[events.length - 1]!.seq + 1 : Math.max(from, this.#firstSeq());
    const complete = this.#result !== null && next >= this.#nextSeq;
    return { events, next, first: this.#firstSeq(), complete, log: this.#id };
  }

  close(): void {
    this.#unsubscribe();
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
    if (event.type === 'task') {
      const key = `${event.vertexId}#${event.subtaskIndex}#${event.attemptNumber}`;
      let timing = this.#timings.get(key);
      if (timing === undefined) this.#timings.set(key, (timing = { startTime: -1, endTime: -1 }));
      if (event.state === 'deploying' && timing.startTime < 0) timing.startTime = event.timestamp;
      if (event.state === 'finished' || event.state === 'failed' || event.state === 'canceled')
        timing.endTime = event.timestamp;
    }
    if (event.type === 'task' && event.resourceId !== null)
      this.#placements.set(`${event.vertexId}#${event.subtaskIndex}#${event.attemptNumber}`, {
        resourceId: event.resourceId,
        allocationId: event.allocationId,
      });
    this.#events.push({ ...event, seq: this.#nextSeq++ });
    if (this.#events.length <= this.#capacity) return;
    let toDrop = Math.ceil(this.#capacity / 2);
    this.#events = this.#events.filter((kept) => kept.type === 'status' || toDrop-- <= 0);
  }
}
