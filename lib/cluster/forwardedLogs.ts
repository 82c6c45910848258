/**
 * Log lines from a session cluster's TaskManagers to its JobManagers (Flink's TaskManager logs as the
 * web UI shows them, here as records): each TaskManager prints its records where its logger says and
 * forwards them — every line a task logs with `context.log(...)`, and the runtime's warnings and errors
 * — in batches on `slotwise.<clusterId>.logs` (core NATS, at most one message per FLUSH_MS; a batch
 * over MAX_BATCH records drops its oldest and says how many). Every JobManager of the cluster, standbys
 * included, keeps the last RECORDS_KEPT of each job and of each TaskManager (ForwardedLogs), numbered so
 * a client reads on from where it stopped: `GET /jobs/:id/logs`, `GET /taskmanagers/:id/logs`,
 * `slotwise logs JOBID [--follow]`.
 */
import type { NatsConnection, Subscription } from '@nats-io/transport-node';
import { IllegalArgumentError } from '../core/errors.js';
import type { LogRecord, LogSink } from '../core/Logger.js';
import type { ForwardedRecord, LogPage } from '../rest/RestTarget.js';

/** How often a TaskManager sends what it logged. */
const FLUSH_MS = 200;
/** The most records in one message; older ones of a burst are dropped (and counted). */
const MAX_BATCH = 500;
/** A record's message is cut to this many characters. */
const MAX_MESSAGE = 8_192;
/** Records kept per job and per TaskManager. */
export const RECORDS_KEPT = 1_000;
/** Jobs whose records are kept (the oldest job's go first). */
const JOBS_KEPT = 200;

const encoder = new TextEncoder();
const decoder = new TextDecoder();

export const logsSubject = (clusterId: string) => `slotwise.${clusterId}.logs`;

/**
 * A TaskManager's sink: `sink` first (its own console or logger), then — for a task's lines and the runtime's
 * warnings and errors — a batch for the JobManagers. `close()` sends what is left.
 */
export function forwardingLogSink(
  connection: NatsConnection,
  clusterId: string,
  sink: LogSink,
): LogSink & { close(): void } {
  let batch: Array<LogRecord & { time: number }> = [];
  let dropped = 0;
  let timer: ReturnType<typeof setTimeout> | null = null;
  const flush = () => {
    timer = null;
    if (batch.length === 0 || connection.isClosed()) return;
    const records = batch;
    batch = [];
    try {
      connection.publish(logsSubject(clusterId), encoder.encode(JSON.stringify({ records, dropped })));
    } catch {
      // Draining or closed: these lines stay on the TaskManager's own output.
    }
    dropped = 0;
  };
  const forward: LogSink & { close(): void } = Object.assign(
    (record: LogRecord) => {
      sink(record);
      if (record.source !== 'task' && record.level !== 'warn' && record.level !== 'error') return;
      const message = record.message.length > MAX_MESSAGE ? `${record.message.slice(0, MAX_MESSAGE)}…` : record.message;
      batch.push({ ...record, message, time: Date.now() });
      if (batch.length > MAX_BATCH) {
        batch.shift();
        dropped++;
      }
      if (timer === null) {
        timer = setTimeout(flush, FLUSH_MS);
        timer.unref();
      }
    },
    {
      close: () => {
        if (timer !== null) clearTimeout(timer);
        flush();
      },
    },
  );
  return forward;
}

/** One bounded, numbered log. */
class Ring {
  readonly #records: ForwardedRecord[] = [];
  #next = 0;

  add(record: LogRecord & { time: number }): void {
    this.#records.push({ ...record, seq: this.#next++ });
    if (this.#records.length > RECORDS_KEPT) this.#records.shift();
  }

  page(from: number, limit: number): LogPage {
    const first = this.#records[0]?.seq ?? this.#next;
    const start = Math.max(0, from - first);
    const records = this.#records.slice(start, start + limit);
    return { records, next: records.length > 0 ? records.at(-1)!.seq + 1 : Math.max(from, first), first };
  }
}

/** What a JobManager keeps of its TaskManagers' forwarded records: per job and per TaskManager. */
export class ForwardedLogs {
  readonly #byJob = new Map<string, Ring>();
  readonly #byTaskManager = new Map<string, Ring>();
  readonly #subscription: Subscription;

  constructor(connection: NatsConnection, clusterId: string) {
    this.#subscription = connection.subscribe(logsSubject(clusterId), {
      callback: (error, msg) => {
        if (error === null) this.#take(msg.data);
      },
    });
  }

  /**
   * The job's records from `from` on (at most `limit`); an empty page for a job no record came for.
   * IllegalArgumentError unless `from` is an integer ≥ 0 and `limit` one ≥ 1.
   */
  jobLogs(jobId: string, from: number, limit: number): LogPage {
    checkPage(from, limit);
    return (this.#byJob.get(jobId) ?? new Ring()).page(from, limit);
  }

  /** The TaskManager's records from `from` on, or undefined when none came from it (bad bounds refused as above). */
  taskManagerLogs(resourceId: string, from = 0, limit = RECORDS_KEPT): LogPage | undefined {
    checkPage(from, limit);
    return this.#byTaskManager.get(resourceId)?.page(from, limit);
  }

  close(): void {
    this.#subscription.unsubscribe();
  }

  #take(data: Uint8Array): void {
    let records: unknown;
    try {
      records = (JSON.parse(decoder.decode(data)) as { records?: unknown }).records;
    } catch {
      return; // not ours
    }
    if (!Array.isArray(records)) return;
    for (const record of records as Array<LogRecord & { time: number }>) {
      if (typeof record?.message !== 'string' || typeof record.time !== 'number') continue;
      if (typeof record.jobId === 'string') ring(this.#byJob, record.jobId, JOBS_KEPT).add(record);
      if (typeof record.resourceId === 'string') ring(this.#byTaskManager, record.resourceId, Infinity).add(record);
    }
  }
}

function checkPage(from: unknown, limit: unknown): void {
  const whole = (n: unknown, min: number) => typeof n === 'number' && Number.isSafeInteger(n) && n >= min;
  if (!whole(from, 0) || !whole(limit, 1))
    throw new IllegalArgumentError(
      'out-of-range',
      `a log page needs an integer from ≥ 0 and an integer limit ≥ 1, got from ${String(from)}, limit ${String(limit)}`,
      { argument: whole(from, 0) ? 'limit' : 'from' },
    );
}

function ring(rings: Map<string, Ring>, key: string, most: number): Ring {
  let found = rings.get(key);
  if (found === undefined) {
    rings.set(key, (found = new Ring()));
    if (rings.size > most) rings.delete(rings.keys().next().value!);
  }
  return found;
}
