/**
 * Why a task attempt on a slot's pool failed, as the error its caller gets: TaskExecutionError
 * with a reason (`threw`, `bad-module`, `bad-output`, `out-of-memory`, `thread-exited`,
 * `canceled`), or IllegalArgumentError when its invocation cannot be sent to a thread.
 *
 * Two sources:
 * - the run's own outcome from its thread (taskThreadProtocol.ts): the task threw, its module did
 *   not load, its output cannot cross threads — {@link outcomeFailure};
 * - a batch that failed on its thread's port (TaskThreadPort.ts) — {@link classifyPoolFailure}. It
 *   reads what piscina 5 and Node put on the error by name or code, never its message text:
 *   `AbortError`, Node's `ERR_WORKER_OUT_OF_MEMORY` code (the thread's 'error'
 *   before its exit, which piscina emits as a pool 'error'), the `DataCloneError` name (the
 *   invocation could not be posted). A thread that exited or was terminated as the pool was
 *   destroyed comes as facts instead: the exit code the pool saw on the thread's own 'exit'
 *   event, and whether the pool is closing.
 */
import { IllegalArgumentError, TaskExecutionError } from '../core/errors.js';
import type { TaskInvocationContext, TaskWorkerOutcome } from './taskThreadProtocol.js';

/** Why an attempt failed: TaskExecutionError's reasons. */
export type TaskFailureReason = ConstructorParameters<typeof TaskExecutionError>[0];

/** How a canceled run stopped: it never ran, it stopped on its signal, or its thread was terminated. */
export type StoppedBy = 'before-start' | 'cooperative' | 'forced';

/** Which pool a failure happened on, and the settings its messages name. */
export interface FailureScope {
  /** The pool's name (the slot). */
  readonly pool: string;
  readonly heapLimitMb: number | undefined;
  readonly cancelGraceMs: number;
}

/** What the pool knows of a pool call that rejected, besides its error. */
export interface PoolCallFailure {
  readonly error: unknown;
  /** The run's cancel, if it was canceled. */
  readonly cancelReason: string | null;
  readonly stoppedBy: StoppedBy | null;
  /** The pool is closing (its threads are being terminated). */
  readonly poolClosing: boolean;
  /** The exit code of the thread that ended under the call (seen on its 'exit' event), or null. */
  readonly threadExitCode: number | null;
}

/** What piscina and Node name their errors by, read without trusting the value's type. */
interface ErrorFacts {
  readonly name: string;
  readonly message: string;
  readonly code: string | undefined;
  readonly stack: string | undefined;
}

export function errorFacts(error: unknown): ErrorFacts {
  const e = (typeof error === 'object' && error !== null ? error : {}) as {
    name?: unknown;
    message?: unknown;
    code?: unknown;
    stack?: unknown;
  };
  return {
    name: typeof e.name === 'string' ? e.name : 'Error',
    message: typeof e.message === 'string' ? e.message : String(error),
    code: typeof e.code === 'string' ? e.code : undefined,
    stack: typeof e.stack === 'string' ? e.stack : undefined,
  };
}

/** The invocation (or a batch of them) could not be posted to a thread: a structured clone failed. */
export function isDataCloneError(error: unknown): boolean {
  return errorFacts(error).name === 'DataCloneError';
}

/** `vertex (2/4) attempt 0 [<ExecutionAttemptID>]`. */
export function label(ctx: TaskInvocationContext): string {
  return (
    `${ctx.vertexName} (${ctx.subtaskIndex + 1}/${ctx.parallelism}) ` +
    `attempt ${ctx.attemptNumber} [${ctx.executionAttemptId}]`
  );
}

/** `task <label> on slot pool <pool> <what>`, with the attempt's identity in its details. */
export function taskError(
  scope: FailureScope,
  reason: TaskFailureReason,
  ctx: TaskInvocationContext,
  what: string,
  details: Record<string, unknown>,
): TaskExecutionError {
  return new TaskExecutionError(reason, `task ${label(ctx)} on slot pool ${scope.pool} ${what}`, {
    executionAttemptId: ctx.executionAttemptId,
    vertexName: ctx.vertexName,
    subtaskIndex: ctx.subtaskIndex,
    attemptNumber: ctx.attemptNumber,
    cause: what,
    ...details,
  });
}

/** Whether an error a run rejected with counts as canceled. */
export function isCanceledError(error: unknown): boolean {
  return error instanceof TaskExecutionError && error.reason === 'canceled';
}

/** The error of a pool call that rejected (see the module comment for what it reads). */
export function classifyPoolFailure(scope: FailureScope, ctx: TaskInvocationContext, failure: PoolCallFailure): Error {
  const { name, message, code, stack } = errorFacts(failure.error);
  const extra = {
    cause: message,
    causeName: name,
    ...(code === undefined ? {} : { code }),
    ...(stack === undefined ? {} : { stack }),
  };
  if (name === 'DataCloneError') {
    // piscina could not post the invocation: the caller's inputs or config, not the task.
    return new IllegalArgumentError(
      'invalid-value',
      `task ${label(ctx)}: its invocation cannot be sent to a thread ` +
        `(inputs and config must be structured-cloneable): ${message}`,
      {
        argument: 'invocation',
        executionAttemptId: ctx.executionAttemptId,
        cause: message,
      },
    );
  }
  const { cancelReason, stoppedBy } = failure;
  // Forced: its thread terminated under it (it exited), or an AbortError (no batch carries a signal since batches go on
  // the thread's port; one can still come as a pool 'error' a task left behind).
  if (cancelReason !== null && (name === 'AbortError' || stoppedBy === 'forced')) {
    const grace = stoppedBy === 'forced' && scope.cancelGraceMs > 0 ? `a ${scope.cancelGraceMs} ms grace` : 'no grace';
    const how = stoppedBy === 'before-start' ? 'it had not started' : `its thread was terminated after ${grace}`;
    return taskError(scope, 'canceled', ctx, `canceled (${cancelReason}); ${how}`, {
      ...extra,
      stoppedBy: stoppedBy ?? 'forced',
      graceMs: scope.cancelGraceMs,
    });
  }
  if (code === 'ERR_WORKER_OUT_OF_MEMORY') {
    const limit = scope.heapLimitMb === undefined ? '' : ` (its thread's limit is ${scope.heapLimitMb} MB)`;
    return taskError(scope, 'out-of-memory', ctx, `ran out of heap${limit}; the thread was replaced: ${message}`, {
      ...extra,
      heapLimitMb: scope.heapLimitMb ?? null,
    });
  }
  if (failure.threadExitCode !== null) {
    const exitCode = failure.threadExitCode;
    return taskError(scope, 'thread-exited', ctx, `ended its thread (exit code ${exitCode}); the thread was replaced`, {
      ...extra,
      exitCode,
    });
  }
  if (failure.poolClosing) {
    // piscina's destroy terminates the threads and fails what they held.
    return taskError(scope, 'canceled', ctx, `canceled: the slot's task pool ${scope.pool} was closed while it ran`, {
      ...extra,
      stoppedBy: 'pool-closed',
    });
  }
  // An uncaught error in the thread (a stray timer or rejection of the task's) killed it.
  return taskError(scope, 'thread-exited', ctx, `lost its thread to an uncaught ${name}: ${message}`, extra);
}

/**
 * The failure a run's thread reported for it (the task threw, its module did not load, its output cannot cross
 * threads).
 */
export function outcomeFailure(
  scope: FailureScope,
  ctx: TaskInvocationContext,
  taskModule: string,
  outcome: Extract<TaskWorkerOutcome, { ok: false }>,
): TaskExecutionError {
  const { error } = outcome;
  const what =
    outcome.failure === 'bad-module'
      ? `could not load its task module ${taskModule}`
      : outcome.failure === 'bad-output'
        ? 'returned an output that cannot cross threads'
        : 'threw';
  return taskError(scope, outcome.failure, ctx, `${what}: ${error.name}: ${error.message}`, {
    cause: error.message,
    causeName: error.name,
    ...(error.stack === undefined ? {} : { stack: error.stack }),
    ...(error.code === undefined ? {} : { code: error.code }),
    ...(error.tag === undefined ? {} : { causeTag: error.tag, causeReason: error.reason, causeDetails: error.details }),
    leakedPagesReleased: outcome.leakedPagesReleased,
    pagesLeft: outcome.pagesLeft,
  });
}

/** A run that ended on its own after its cancel (on its signal, or by finishing): canceled either way. */
export function canceledAfterOutcome(
  scope: FailureScope,
  ctx: TaskInvocationContext,
  cancelReason: string,
  outcome: TaskWorkerOutcome,
): TaskExecutionError {
  const how = outcome.ok
    ? 'it returned after the cancel'
    : `it stopped: ${outcome.error.name}: ${outcome.error.message}`;
  return taskError(scope, 'canceled', ctx, `canceled (${cancelReason}); ${how}`, {
    stoppedBy: 'cooperative',
    leakedPagesReleased: outcome.leakedPagesReleased,
    ...(outcome.ok ? {} : { pagesLeft: outcome.pagesLeft }),
  });
}
