/**
 * Logging through the application's logger. A {@link Logger} has the shape pino, bunyan-style
 * loggers and most others share: `debug/info/warn/error(fields, message)`. Every message of the
 * runtime becomes one {@link LogRecord} — the endpoints' own messages, a slot's task pool warnings
 * and a task's `context.log(...)` lines, from whichever thread they came — and reaches the logger as
 * `logger[record.level](fields, record.message)`, the fields without the level.
 *
 * Records cross threads as plain data (a TaskExecutor worker sends its records on its Link's log
 * channel); the main side adds the fields it knows (the worker's ResourceID, the job).
 */

export type LogLevel = 'debug' | 'info' | 'warn' | 'error';

export const LOG_LEVELS: readonly LogLevel[] = ['debug', 'info', 'warn', 'error'];

/** The structured fields of a record, beside its message. Only the fields that apply are set. */
export interface LogFields {
  readonly level: LogLevel;
  /** 'runtime': an endpoint's own message; 'pool': a slot's task pool; 'task': a task's `context.log(...)`. */
  readonly source: 'runtime' | 'pool' | 'task';
  /** The TaskExecutor it came from (absent for the main thread's endpoints). */
  readonly resourceId?: string;
  /** The slot whose task pool or task it concerns (`<ResourceID>/<index>`). */
  readonly slotId?: string;
  readonly jobId?: string;
  readonly jobName?: string;
  readonly vertexId?: string;
  readonly vertexName?: string;
  readonly subtaskIndex?: number;
  /** The attempt of the subtask (0 for its first run). */
  readonly attemptNumber?: number;
  readonly executionAttemptId?: string;
}

/** The fields an endpoint adds to its own message (the level and source are the runtime's). */
export type RuntimeLogFields = Omit<LogFields, 'level' | 'source'>;

/**
 * How an endpoint on the main thread reports: a message, the fields that apply (the job, the
 * TaskExecutor, the subtask), and its level (default `info`; failures are `warn`, a job that failed
 * `error`).
 */
export type RuntimeLog = (message: string, fields?: RuntimeLogFields, level?: LogLevel) => void;

/** One message of the runtime with its fields: what a worker sends, what a {@link Logger} receives split in two. */
export interface LogRecord extends LogFields {
  readonly message: string;
}

/**
 * What a {@link Logger} receives beside the message: the record's fields without `level`, which the
 * method called says (pino writes its own numeric `level`; a second, textual one would break tools
 * that filter on it).
 */
export type LoggerFields = Omit<LogFields, 'level'>;

/** A logger: pino's `logger` fits as it is (`MiniCluster.start({ logger: pino() })`). */
export interface Logger {
  debug(fields: LoggerFields, message: string): void;
  info(fields: LoggerFields, message: string): void;
  warn(fields: LoggerFields, message: string): void;
  error(fields: LoggerFields, message: string): void;
}

/** Where the runtime hands its records. */
export type LogSink = (record: LogRecord) => void;

export function isLogLevel(value: unknown): value is LogLevel {
  return typeof value === 'string' && (LOG_LEVELS as readonly string[]).includes(value);
}

/** Whether `level` is at least `threshold` ('warn' ≥ 'info'). */
export function atLeast(level: LogLevel, threshold: LogLevel): boolean {
  return LOG_LEVELS.indexOf(level) >= LOG_LEVELS.indexOf(threshold);
}

/**
 * A record as one line of text: `[taskexecutor-…] [job] vertex#2 warn: message` (the parts that
 * apply; info and debug carry no level word). The form the plain `log` option and stderr receive.
 */
export function formatLogRecord(record: LogRecord): string {
  const where: string[] = [];
  if (record.resourceId !== undefined) where.push(`[${record.resourceId}]`);
  if (record.jobName !== undefined) where.push(`[${record.jobName}]`);
  const vertex = record.vertexName ?? record.vertexId;
  if (vertex !== undefined) where.push(record.subtaskIndex === undefined ? vertex : `${vertex}#${record.subtaskIndex}`);
  else if (record.slotId !== undefined && record.resourceId === undefined) where.push(`[${record.slotId}]`);
  const level = record.level === 'warn' || record.level === 'error' ? `${record.level}: ` : '';
  return `${where.length > 0 ? `${where.join(' ')} ` : ''}${level}${record.message}`;
}

/** Splits a record into a logger's two arguments and calls the method of its level (the level goes only there). */
export function toLogger(logger: Logger): LogSink {
  return (record) => {
    const { message, level, ...fields } = record;
    logger[level](fields, message);
  };
}

/** Most distinct warnings the default logger remembers (it writes each once). */
const MAX_REMEMBERED = 1_000;

/**
 * The logger of a cluster that was given none: silent for debug and info; each distinct warning or
 * error is written once to stderr (`write`), the first with a hint on how to see everything.
 */
export function createDefaultLogSink(
  write: (line: string) => void = (line) => void process.stderr.write(line),
): LogSink {
  const seen = new Set<string>();
  return (record) => {
    if (!atLeast(record.level, 'warn')) return;
    const line = formatLogRecord(record);
    if (seen.has(line)) return;
    if (seen.size >= MAX_REMEMBERED) return;
    const hint =
      seen.size === 0
        ? ' (slotwise writes each warning once; pass `logger` to MiniCluster.start to receive every message)'
        : '';
    seen.add(line);
    write(`slotwise ${line}${hint}\n`);
  };
}
