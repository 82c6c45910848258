/**
 * The closed family of slotwise errors.
 *
 * Every error has a `_tag` (its class name, stable across threads and versions) and a `reason`
 * (a short kebab-case code naming which rule was broken). Callers branch on `_tag` and `reason`,
 * never on the message text. `details` holds the plain data the message was built from, so an
 * error can be rebuilt on the far side of a thread boundary (see `toJSON` / `reviveError`).
 */
import type { Mutable } from './Mutable.js';

export abstract class SlotwiseError extends Error {
  abstract readonly _tag: string;
  readonly reason: string;
  readonly details: Readonly<Record<string, unknown>>;

  protected constructor(
    reason: string,
    message: string,
    details: Record<string, unknown> = {},
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.reason = reason;
    this.details = Object.freeze({ ...details });
  }

  override get name(): string {
    return this._tag;
  }

  toJSON(): SerializedSlotwiseError {
    return { _tag: this._tag, reason: this.reason, message: this.message, details: { ...this.details } };
  }
}

/** The wire form of a {@link SlotwiseError}: plain data, structured-cloneable and JSON-safe. */
export interface SerializedSlotwiseError {
  readonly _tag: string;
  readonly reason: string;
  readonly message: string;
  readonly details: Record<string, unknown>;
}

/** An argument broke a rule: `details.argument` names it, the message says what is allowed. */
export class IllegalArgumentError extends SlotwiseError {
  readonly _tag = 'IllegalArgumentError' as const;
  constructor(
    reason: 'invalid-type' | 'invalid-value' | 'out-of-range' | 'unknown-key' | 'missing',
    message: string,
    details: { argument: string } & Record<string, unknown>,
  ) {
    super(reason, message, details);
  }
}

/** An operation was called in a lifecycle state that does not allow it. */
export class IllegalStateError extends SlotwiseError {
  readonly _tag = 'IllegalStateError' as const;
  constructor(
    message: string,
    details: { component: string; operation: string; state: string; allowed: readonly string[] },
  ) {
    super('wrong-state', message, details);
  }
}

/** A configuration option has an unknown name or a value outside its rule. */
export class ConfigurationError extends SlotwiseError {
  readonly _tag = 'ConfigurationError' as const;
  constructor(
    reason: 'unknown-option' | 'invalid-value',
    message: string,
    details: { option: string } & Record<string, unknown>,
  ) {
    super(reason, message, details);
  }
}

/** A ResourceProfile could not be built or an operation on profiles has no meaning. */
export class ResourceProfileError extends SlotwiseError {
  readonly _tag = 'ResourceProfileError' as const;
  constructor(
    reason:
      | 'negative-amount'
      | 'not-finite'
      | 'not-integer'
      | 'invalid-name'
      | 'unknown-field'
      | 'invalid-size'
      | 'insufficient-resources'
      | 'unknown-profile'
      | 'invalid-multiplier'
      | 'invalid-divisor',
    message: string,
    details: { field: string } & Record<string, unknown>,
  ) {
    super(reason, message, details);
  }
}

/** A reservation against a {@link ResourceBudgetManager} did not fit, or a release exceeded what was reserved. */
export class ResourceBudgetError extends SlotwiseError {
  readonly _tag = 'ResourceBudgetError' as const;
  constructor(reason: 'insufficient-budget' | 'over-release', message: string, details: Record<string, unknown>) {
    super(reason, message, details);
  }
}

/** A slot could not be allocated in a TaskSlotTable; nothing changed. */
export class SlotAllocationError extends SlotwiseError {
  readonly _tag = 'SlotAllocationError' as const;
  constructor(
    reason: 'index-out-of-range' | 'index-taken' | 'allocation-conflict' | 'insufficient-resources',
    message: string,
    details: Record<string, unknown>,
  ) {
    super(reason, message, details);
  }
}

/** No slot with the given AllocationID is in the table. */
export class SlotNotFoundError extends SlotwiseError {
  readonly _tag = 'SlotNotFoundError' as const;
  constructor(message: string, details: { allocationId: string } & Record<string, unknown>) {
    super('unknown-allocation', message, details);
  }
}

/** A task was offered to a slot that is not active (still only allocated, or releasing). */
export class SlotNotActiveError extends SlotwiseError {
  readonly _tag = 'SlotNotActiveError' as const;
  constructor(reason: 'slot-allocated' | 'slot-releasing', message: string, details: Record<string, unknown>) {
    super(reason, message, details);
  }
}

/** A task names a slot that belongs to another job or allocation. */
export class SlotOwnerMismatchError extends SlotwiseError {
  readonly _tag = 'SlotOwnerMismatchError' as const;
  constructor(reason: 'job-mismatch' | 'allocation-mismatch', message: string, details: Record<string, unknown>) {
    super(reason, message, details);
  }
}

/** A task with this ExecutionAttemptID is already in the table. */
export class DuplicateTaskError extends SlotwiseError {
  readonly _tag = 'DuplicateTaskError' as const;
  constructor(message: string, details: { executionAttemptId: string } & Record<string, unknown>) {
    super('duplicate-execution-attempt', message, details);
  }
}

/** No task with this ExecutionAttemptID is in the table. */
export class TaskNotFoundError extends SlotwiseError {
  readonly _tag = 'TaskNotFoundError' as const;
  constructor(message: string, details: { executionAttemptId: string } & Record<string, unknown>) {
    super('unknown-execution-attempt', message, details);
  }
}

/** A slot's MemoryManager could not serve a request. */
export class MemoryAllocationError extends SlotwiseError {
  readonly _tag = 'MemoryAllocationError' as const;
  constructor(
    reason: 'insufficient-memory' | 'shut-down' | 'invalid-request' | 'not-owner',
    message: string,
    details: Record<string, unknown>,
  ) {
    super(reason, message, details);
  }
}

/** A wait outlived its deadline. */
export class TimeoutError extends SlotwiseError {
  readonly _tag = 'TimeoutError' as const;
  constructor(message: string, details: { operation: string; timeoutMs: number } & Record<string, unknown>) {
    super('deadline-exceeded', message, details);
  }
}

/** A call names a TaskExecutor that is not registered (or no longer is). */
export class UnknownTaskExecutorError extends SlotwiseError {
  readonly _tag = 'UnknownTaskExecutorError' as const;
  constructor(message: string, details: { resourceId: string } & Record<string, unknown>) {
    super('not-registered', message, details);
  }
}

/** A resource requirement or slot request was refused, failed or timed out; `details.why` says why it waited. */
export class SlotRequestError extends SlotwiseError {
  readonly _tag = 'SlotRequestError' as const;
  constructor(
    reason: 'never-satisfiable' | 'duplicate-request' | 'timed-out' | 'canceled' | 'suspended',
    message: string,
    details: { jobId: string } & Record<string, unknown>,
  ) {
    super(reason, message, details);
  }
}

/** A call to another endpoint got no answer within its deadline. */
export class RpcTimeoutError extends SlotwiseError {
  readonly _tag = 'RpcTimeoutError' as const;
  constructor(
    message: string,
    details: { gateway: string; method: string; timeoutMs: number } & Record<string, unknown>,
  ) {
    super('no-answer', message, details);
  }
}

/** The endpoint (its mailbox) or the connection to it is closed or lost: the call was not run. */
export class EndpointClosedError extends SlotwiseError {
  readonly _tag = 'EndpointClosedError' as const;
  constructor(
    message: string,
    details: { endpoint: string } & Record<string, unknown>,
    reason: 'closed' | 'lost' = 'closed',
  ) {
    super(reason, message, details);
  }
}

/**
 * A task attempt did not produce an output: it threw, outgrew its thread's heap, ended its thread,
 * was canceled, named a module without a default export function, or returned something that
 * cannot cross threads. Only that attempt failed: the slot and its pool live on.
 * `details.cause` is the original message.
 */
export class TaskExecutionError extends SlotwiseError {
  readonly _tag = 'TaskExecutionError' as const;
  constructor(
    reason: 'threw' | 'out-of-memory' | 'thread-exited' | 'canceled' | 'bad-module' | 'bad-output',
    message: string,
    details: { executionAttemptId: string; vertexName: string; cause: string; stack?: string; code?: string } & Record<
      string,
      unknown
    >,
  ) {
    super(reason, message, details);
  }
}

/**
 * A job graph was refused: `reason` names the rule, the message names what is wrong (the vertex,
 * the edge, the cycle) and what is allowed. Nothing was submitted.
 */
export class JobGraphError extends SlotwiseError {
  readonly _tag = 'JobGraphError' as const;
  constructor(
    reason:
      | 'no-vertices'
      | 'duplicate-vertex'
      | 'unknown-vertex'
      | 'cycle'
      | 'invalid-parallelism'
      | 'incompatible-parallelism'
      | 'invalid-co-location'
      | 'invalid-resources'
      | 'invalid-task-module'
      | 'invalid-name'
      | 'invalid-restart-strategy'
      | 'invalid-edge'
      | 'invalid-config'
      | 'invalid-scheduler'
      | 'unknown-field',
    message: string,
    details: Record<string, unknown> = {},
  ) {
    super(reason, message, details);
  }
}

/**
 * A REST request was refused, or a REST call could not be made: `reason` names which, `details`
 * holds the HTTP `status` and what the request named (`method`, `path`, the `jobId`, the `url`).
 * The server sends it as its error body; the CLI's client raises it for a refused or failed call.
 */
export class RestError extends SlotwiseError {
  readonly _tag = 'RestError' as const;
  constructor(
    reason:
      | 'bad-request'
      | 'unknown-job'
      | 'unknown-taskmanager'
      | 'unknown-vertex'
      | 'not-found'
      | 'method-not-allowed'
      | 'job-ended'
      | 'forbidden-host'
      | 'unauthorized'
      | 'body-too-large'
      | 'unsupported-media-type'
      | 'unavailable'
      | 'not-leader'
      | 'unreachable'
      | 'timed-out'
      | 'bad-response',
    message: string,
    details: Record<string, unknown> = {},
  ) {
    super(reason, message, details);
  }
}

/**
 * A session cluster refused to do what was asked: `not-leader`, a JobManager that stands by (another
 * leads its cluster id) asked to run or change jobs (`details`: the `clusterId` and the `leader` —
 * its host, pid, start and REST URL — or null while nobody leads); `credentials-refused`, the NATS
 * server refused this process's credentials (or their absence) when it connected (`details`: the
 * `clusterId`, the `server` URL and the `credentials` described, never the secret).
 */
export class ClusterError extends SlotwiseError {
  readonly _tag = 'ClusterError' as const;
  constructor(
    reason: 'not-leader' | 'credentials-refused',
    message: string,
    details: { clusterId: string } & Record<string, unknown>,
  ) {
    super(reason, message, details);
  }
}

/**
 * A consumer could not read a producer's result partition (Flink's PartitionNotFoundException):
 * `not-found` — the TaskExecutor that produced it no longer holds it (released, or started afresh);
 * `timed-out` — it did not answer (or, over NATS, a chunk did not come) within `rpc.ask.timeout`;
 * `unreachable` — no way to reach it from here; `chunk-lost` — over NATS, a chunk never came while a
 * later one did (lib/cluster/PartitionStreamReader.ts). `details`: the `partitionId` (the producing
 * attempt), `subpartition` and `resourceId`.
 */
export class PartitionError extends SlotwiseError {
  readonly _tag = 'PartitionError' as const;
  constructor(
    reason: 'not-found' | 'timed-out' | 'unreachable' | 'chunk-lost' | 'spill-limit' | 'spill-failed',
    message: string,
    details: { partitionId: string; subpartition: number; resourceId: string } & Record<string, unknown>,
  ) {
    super(reason, message, details);
  }
}

/** Every concrete error class, by tag: the closed family. */
export const ERROR_CLASSES = {
  IllegalArgumentError,
  IllegalStateError,
  ConfigurationError,
  ResourceProfileError,
  ResourceBudgetError,
  SlotAllocationError,
  SlotNotFoundError,
  SlotNotActiveError,
  SlotOwnerMismatchError,
  DuplicateTaskError,
  TaskNotFoundError,
  MemoryAllocationError,
  TimeoutError,
  UnknownTaskExecutorError,
  SlotRequestError,
  RpcTimeoutError,
  EndpointClosedError,
  TaskExecutionError,
  JobGraphError,
  RestError,
  ClusterError,
  PartitionError,
} as const;

export type SlotwiseErrorTag = keyof typeof ERROR_CLASSES;
export type AnySlotwiseError = InstanceType<(typeof ERROR_CLASSES)[SlotwiseErrorTag]>;

export function isSlotwiseError(value: unknown): value is AnySlotwiseError {
  return value instanceof SlotwiseError;
}

/**
 * A plain Error that only says why something ended (a slot given back because its job finished):
 * made without a stack, which would show the runtime's own frames and costs more to capture
 * (~50 µs from deep in a mailbox turn) than the rest of a small job's end.
 */
export function endCause(message: string): Error {
  const limit = Error.stackTraceLimit;
  Error.stackTraceLimit = 0;
  try {
    return new Error(message);
  } finally {
    Error.stackTraceLimit = limit;
  }
}

/**
 * An error as a log line says it: `Tag(reason): message` for a slotwise error, else its message (or its string form).
 */
export function describeError(error: unknown): string {
  if (isSlotwiseError(error)) return `${error._tag}(${error.reason}): ${error.message}`;
  return error instanceof Error ? error.message : String(error);
}

/**
 * A refused value as an error message shows it, never throwing (JSON.stringify does on a BigInt): a
 * string quoted, a number as written, a URL by its href, a function or an array named, an object by
 * its tag, else its type and value (`boolean true`).
 */
export function describeValue(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'number' || value === null || value === undefined) return String(value);
  if (typeof value === 'bigint') return `${value}n`;
  if (value instanceof URL) return value.href;
  if (typeof value === 'function') return 'a function';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'object') return Object.prototype.toString.call(value);
  return `${typeof value} ${String(value)}`;
}

/**
 * Rebuilds an error from its wire form, as the same class with the same reason and details.
 * An unknown tag (a newer peer) comes back as a plain Error whose name is the tag.
 */
export function reviveError(serialized: SerializedSlotwiseError): Error {
  // hasOwn: a tag such as 'constructor' must not find Object.prototype's members.
  const cls = (
    Object.hasOwn(ERROR_CLASSES, serialized._tag)
      ? (ERROR_CLASSES as Record<string, unknown>)[serialized._tag]
      : undefined
  ) as (abstract new (...args: never[]) => SlotwiseError) | undefined;
  if (cls === undefined) {
    const error = new Error(serialized.message);
    error.name = serialized._tag;
    return error;
  }
  // Rebuild without running the constructor's argument checks: the fields were valid when sent.
  const error = Object.create(cls.prototype) as Mutable<SlotwiseError>;
  Object.defineProperties(error, {
    message: { value: serialized.message, writable: true, configurable: true },
    reason: { value: serialized.reason, enumerable: true },
    details: { value: Object.freeze({ ...serialized.details }), enumerable: true },
    _tag: { value: serialized._tag, enumerable: true },
    stack: {
      value: `${serialized._tag}: ${serialized.message}\n    (revived from another thread)`,
      writable: true,
      configurable: true,
    },
  });
  return error;
}
