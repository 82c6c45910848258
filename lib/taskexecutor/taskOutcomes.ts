/**
 * A run's outcome made fit to cross from its task thread to the pool: an error as plain data
 * ({@link errorInfoOf}: the message, stack, code and a slotwise error's tag/reason/details survive the
 * trip, where a structured clone of an Error keeps only its name, message and stack), and an outcome
 * that cannot be cloned turned into the `bad-output` failure it is.
 */
import { describeValue } from '../core/errors.js';
import type { TaskWorkerOutcome, WorkerErrorInfo } from './taskThreadProtocol.js';
import type { Mutable } from '../core/Mutable.js';

/** The outcome, or its bad-output failure when it cannot be cloned (an output of a primitive always can). */
export function cloneable(outcome: TaskWorkerOutcome): TaskWorkerOutcome {
  if (
    outcome.ok &&
    (typeof outcome.output !== 'object' || outcome.output === null) &&
    typeof outcome.output !== 'function' &&
    typeof outcome.output !== 'symbol'
  )
    return outcome;
  try {
    structuredClone(outcome);
    return outcome;
  } catch (error) {
    return badOutput(outcome, error);
  }
}

/** An outcome whose output (or error details) cannot cross threads, as the failure it is. */
export function badOutput(outcome: TaskWorkerOutcome, error: unknown): TaskWorkerOutcome {
  const info = errorInfoOf(error);
  if (!outcome.ok) {
    // Only the error's details can fail to clone: send it without them.
    const { details: _dropped, ...plain } = outcome.error;
    return { ...outcome, error: plain };
  }
  return {
    ok: false,
    failure: 'bad-output',
    error: {
      ...info,
      message: `the task's output cannot cross threads (${describeValue(outcome.output)}): ${info.message}`,
    },
    aborted: false,
    leakedPagesReleased: outcome.leakedPagesReleased,
    pagesLeft: 0,
  };
}

/**
 * The error a task threw (or its module's load, or a clone) as plain, cloneable data. Not core's
 * describeError, which says an error in one line for a log: this keeps its parts apart (name,
 * message, stack, string code, a slotwise error's tag, reason and cloneable details) for the pool
 * to rebuild the failure from (taskFailure.ts).
 */
export function errorInfoOf(error: unknown): WorkerErrorInfo {
  if (typeof error !== 'object' || error === null) {
    return { name: 'Error', message: `the task threw a non-error value: ${describeValue(error)}` };
  }
  const e = error as {
    name?: unknown;
    message?: unknown;
    stack?: unknown;
    code?: unknown;
    _tag?: unknown;
    reason?: unknown;
    details?: unknown;
  };
  const info: Mutable<WorkerErrorInfo> = {
    name: typeof e.name === 'string' ? e.name : 'Error',
    message: typeof e.message === 'string' ? e.message : String(error),
  };
  if (typeof e.stack === 'string') info.stack = e.stack;
  // String codes only: a DOMException's numeric legacy code (25 for DataCloneError) says nothing.
  if (typeof e.code === 'string') info.code = e.code;
  if (typeof e._tag === 'string' && typeof e.reason === 'string') {
    info.tag = e._tag;
    info.reason = e.reason;
    if (typeof e.details === 'object' && e.details !== null) {
      try {
        info.details = structuredClone({ ...(e.details as Record<string, unknown>) });
      } catch {
        // Details that cannot cross threads are dropped; the message still says what happened.
      }
    }
  }
  return info;
}
