/**
 * A job's exception history (Flink's ExceptionHistoryEntry / RootExceptionHistoryEntry, kept by
 * Flink's SchedulerBase in a BoundedFIFOQueue): every failure of the job — a failed attempt with its
 * task, TaskExecutor and slot, or a global failure (the ResourceManager refused the job, its slots
 * never came) — newest first, at most `web.exception-history-size` root entries. As in Flink, a
 * failure that arrives while a restart is pending is not a root of its own: it joins the pending
 * restart's root as one of its `concurrent` failures (bounded the same way). `rootCause` is the
 * failure that ended the job (or the latest one while it runs).
 *
 * Plain data, owned by the JobMaster and read from its mailbox; what it returns is a snapshot that
 * survives `JSON.stringify` and stays readable after the job ended, for as long as the Dispatcher
 * lists the job.
 */
import type { SerializedError } from '../rpc/protocol.js';

/** One failure as the history keeps it. */
export interface ExceptionHistoryEntry {
  /** The error's class: its `_tag` for a slotwise error, else its `name` (`TypeError`, `SlotLost`). */
  readonly exceptionName: string;
  readonly message: string;
  /** The stack as the task's thread gave it, or `Name: message` when it had none. */
  readonly stacktrace: string;
  /** Epoch ms of the failure, on the JobMaster's clock. */
  readonly timestamp: number;
  /** Flink's task name, `<vertex> (<subtask + 1>/<parallelism>)#<attempt>`; null for a global failure. */
  readonly taskName: string | null;
  readonly vertexId: string | null;
  readonly subtaskIndex: number | null;
  readonly attemptNumber: number | null;
  /** The TaskExecutor the attempt ran on (its ResourceID), null when it had none (still waiting, or global). */
  readonly resourceId: string | null;
  /** The slot (AllocationID) the attempt held, null when it had none. */
  readonly allocationId: string | null;
}

/** A root failure: what started a failover (or ended the job), with the failures its restart covered. */
export interface RootExceptionEntry extends ExceptionHistoryEntry {
  readonly concurrent: readonly ExceptionHistoryEntry[];
}

/** A job's exception history now. */
export interface JobExceptionHistory {
  /** The failure that ended the job, or the latest while it runs; null when it never failed. */
  readonly rootCause: ExceptionHistoryEntry | null;
  /** Newest first, at most `web.exception-history-size`. */
  readonly entries: readonly RootExceptionEntry[];
  /** Entries (or concurrent failures) were dropped to keep the bound. */
  readonly truncated: boolean;
}

/** Where a failed attempt was, when the failure concerns one. */
export interface FailedAttempt {
  readonly vertexId: string;
  readonly subtaskIndex: number;
  readonly parallelism: number;
  readonly attemptNumber: number;
  readonly resourceId: string | null;
  readonly allocationId: string | null;
}

export const EMPTY_EXCEPTION_HISTORY: JobExceptionHistory = Object.freeze({
  rootCause: null,
  entries: Object.freeze([]) as readonly RootExceptionEntry[],
  truncated: false,
});

/** The entry for `error`, of `attempt` (or a global failure without one). */
export function exceptionEntryOf(
  error: SerializedError,
  timestamp: number,
  attempt: FailedAttempt | null,
): ExceptionHistoryEntry {
  const exceptionName = error._tag ?? error.name;
  const stack = typeof error.stack === 'string' && error.stack.length > 0 ? error.stack : null;
  // A task's own error travels as the cause of its TaskExecutionError (details.stack): that stack names the user's
  // code; the wrapper's frames are the TaskExecutor's, so only its headline is kept (Java's "Caused by:" form).
  const causeStack = error.details?.['stack'];
  const stacktrace =
    typeof causeStack === 'string' && causeStack.length > 0
      ? `${exceptionName}: ${error.message}\nCaused by: ${causeStack}`
      : (stack ?? `${error.name}: ${error.message}`);
  return {
    exceptionName,
    message: error.message,
    stacktrace,
    timestamp,
    taskName:
      attempt === null
        ? null
        : `${attempt.vertexId} (${attempt.subtaskIndex + 1}/${attempt.parallelism})#${attempt.attemptNumber}`,
    vertexId: attempt?.vertexId ?? null,
    subtaskIndex: attempt?.subtaskIndex ?? null,
    attemptNumber: attempt?.attemptNumber ?? null,
    resourceId: attempt?.resourceId ?? null,
    allocationId: attempt?.allocationId ?? null,
  };
}

export class ExceptionHistory {
  readonly #size: number;
  /** Oldest first (appended); rendered newest first. */
  #roots: Array<{ entry: ExceptionHistoryEntry; concurrent: ExceptionHistoryEntry[] }> = [];
  #rootCause: ExceptionHistoryEntry | null = null;
  #truncated = false;

  /** `size`: `web.exception-history-size` (Flink's default 16). */
  constructor(size: number) {
    this.#size = size;
  }

  /**
   * Records a failure. `concurrent`: a restart is pending already, so it joins the latest root (a
   * root of its own when there is none yet).
   */
  add(entry: ExceptionHistoryEntry, concurrent: boolean): void {
    this.#rootCause = entry;
    const last = this.#roots.at(-1);
    if (concurrent && last !== undefined) {
      if (last.concurrent.length < this.#size) last.concurrent.push(entry);
      else this.#truncated = true;
      return;
    }
    this.#roots.push({ entry, concurrent: [] });
    if (this.#roots.length > this.#size) {
      this.#roots.shift();
      this.#truncated = true;
    }
  }

  snapshot(): JobExceptionHistory {
    if (this.#rootCause === null) return EMPTY_EXCEPTION_HISTORY;
    return {
      rootCause: this.#rootCause,
      entries: this.#roots.map(({ entry, concurrent }) => ({ ...entry, concurrent: [...concurrent] })).reverse(),
      truncated: this.#truncated,
    };
  }
}
