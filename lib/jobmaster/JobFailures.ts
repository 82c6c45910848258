/**
 * What a JobMaster does with a failure besides deciding on it: records it in the job's exception
 * history (ExceptionHistory) and tells the log, with the subtask and TaskExecutor it concerns — a
 * failed attempt at `warn`, its restart at `info` with the delay, the failed job at `error`.
 */
import type { Clock } from '../core/clock.js';
import { describeError } from '../core/errors.js';
import type { AllocationID, ResourceID } from '../core/ids.js';
import type { RuntimeLog, RuntimeLogFields } from '../core/Logger.js';
import type { SerializedError } from '../rpc/protocol.js';
import { ExceptionHistory, exceptionEntryOf, type JobExceptionHistory } from './ExceptionHistory.js';
import type { ExecutionRecord } from './ExecutionAttempts.js';
import type { JobMasterOptions } from './JobMasterOptions.js';

/** An attempt of a subtask: its current one, or a speculative one beside it. */
type AttemptOf = Pick<ExecutionRecord, 'vertex' | 'attemptNumber' | 'executionAttemptId'>;

export type SlotLocation = { readonly resourceId: ResourceID; readonly allocationId: AllocationID } | null;

export class JobFailures {
  readonly #history: ExceptionHistory;
  readonly #clock: Clock;
  readonly #log: RuntimeLog;
  readonly #jobName: string;

  /** The history keeps `web.exception-history-size` entries of the JobMaster's options. */
  constructor(options: Pick<JobMasterOptions, 'options' | 'jobGraph'>, clock: Clock, log: RuntimeLog) {
    this.#history = new ExceptionHistory(options.options['web.exception-history-size']);
    this.#jobName = options.jobGraph.name;
    this.#clock = clock;
    this.#log = log;
  }

  /** The job's failures, newest first, at most `web.exception-history-size` entries. */
  history(): JobExceptionHistory {
    return this.#history.snapshot();
  }

  /** A failed attempt; `duringRestart`: a restart is pending, which covers it (Flink's concurrent exception). */
  attemptFailed(record: AttemptOf, error: SerializedError, where: SlotLocation, duringRestart: boolean): void {
    const attempt = {
      vertexId: record.vertex.id.vertexId,
      subtaskIndex: record.vertex.id.subtaskIndex,
      parallelism: record.vertex.parallelism,
      attemptNumber: record.attemptNumber,
      resourceId: where?.resourceId ?? null,
      allocationId: where?.allocationId ?? null,
    };
    this.#history.add(exceptionEntryOf(error, this.#clock.now(), attempt), duringRestart);
    // The fields name the subtask and TaskExecutor (a text line shows them as its prefix).
    this.#log(`attempt ${record.attemptNumber} failed: ${error.message}`, fieldsOf(record, where), 'warn');
  }

  restartAnnounced(record: ExecutionRecord, where: SlotLocation, delayMs: number, restarts: number): void {
    this.#log(
      `restarts as attempt ${record.attemptNumber + 1} in ${delayMs} ms (restart ${restarts} of the job)`,
      fieldsOf(record, where),
      'info',
    );
  }

  /** A failure no attempt owns (the ResourceManager refused the job, its slots never came). */
  globalFailure(error: SerializedError): void {
    this.#history.add(exceptionEntryOf(error, this.#clock.now(), null), false);
  }

  /** The job ended: the error its result carries (`error` when it failed, else null), told at `error` level. */
  jobEnded(status: string, error: SerializedError | null, restarts: number): SerializedError | null {
    if (status !== 'failed' || error === null) return null;
    const what = `${error._tag ?? error.name}: ${error.message}`;
    this.#log(`job ${this.#jobName} failed after ${restarts} restart(s): ${what}`, {}, 'error');
    return error;
  }
}

/** The log fields of an attempt (and its TaskExecutor, when it had one). */
export function fieldsOf(record: AttemptOf, where: SlotLocation): RuntimeLogFields {
  return {
    vertexId: record.vertex.id.vertexId,
    subtaskIndex: record.vertex.id.subtaskIndex,
    attemptNumber: record.attemptNumber,
    executionAttemptId: record.executionAttemptId,
    ...(where === null ? {} : { resourceId: where.resourceId }),
  };
}

/**
 * Calls a listener with its argument; one that throws is logged as a warning and disturbs nothing. The argument is
 * passed, not closed over: a closure per call is ~80 bytes more for each of a large job's 100,000 subtasks' events.
 */
export function callListener<T>(log: RuntimeLog, what: string, listener: (value: T) => void, value: T): void {
  try {
    listener(value);
  } catch (error) {
    log(`${what} threw: ${describeError(error)}`, {}, 'warn');
  }
}
