/**
 * The options of `MiniCluster.start(options)`, checked at the door: one clause per option, each
 * refusal a ConfigurationError (or the ResourceProfileError of a bad `resources`) naming the option
 * and what is allowed, before anything starts.
 */
import { ConfigurationError, describeValue } from './core/errors.js';
import {
  createDefaultLogSink,
  formatLogRecord,
  LOG_LEVELS,
  toLogger,
  type Logger,
  type LogLevel,
  type LogSink,
} from './core/Logger.js';
import { resolveOptions, type ResolvedOptions, type SlotwiseOptions } from './core/options.js';
import { ResourceProfile, type ResourceSpec } from './core/ResourceProfile.js';
import {
  resolveDashboardOptions,
  type DashboardOptions,
  type ResolvedDashboardOptions,
} from './dashboard/DashboardOptions.js';
import type { InspectOption } from './InspectionRecord.js';
import { resolveMetricsOptions, type MetricsOptions, type ResolvedMetricsOptions } from './metrics/MetricsOptions.js';
import type { SlotMatchingPolicy } from './resourcemanager/slotmanager/SlotMatchingStrategy.js';

export interface MiniClusterOptions {
  /**
   * 'thread' (default): TaskExecutors on worker threads; 'process': each in a child process (hard memory isolation).
   */
  readonly mode?: 'thread' | 'process';
  /**
   * A fixed number of TaskExecutors started with the cluster (default 2), or 'on-demand': started as jobs need them.
   */
  readonly taskExecutors?: number | 'on-demand';
  /** Static slots per TaskExecutor (taskmanager.numberOfTaskSlots); default 2. */
  readonly slotsPerTaskExecutor?: number;
  /** What each TaskExecutor offers (default: 1 core per slot, 256 mb task heap, 128 mb managed, 64 mb network). */
  readonly resources?: ResourceSpec;
  /** Which TaskExecutor gets a slot (slotmanager.placement-policy); default 'first-fit'. */
  readonly placementPolicy?: SlotMatchingPolicy;
  /**
   * Any other option by its Flink name (timeouts, heartbeats, maxima, restart strategy, ...). The
   * TaskExecutor shape is set by `slotsPerTaskExecutor` and `resources`, not here.
   */
  readonly configuration?: SlotwiseOptions;
  /** Every statechart's inspection events: a callback, or `{ stately: { port } }` for the Stately inspector. */
  readonly inspect?: InspectOption;
  /**
   * Where every runtime message goes, with its fields (jobId, vertexId, subtaskIndex, resourceId,
   * level, …): the runtime's own messages, task pool warnings and tasks' `context.log(...)` lines.
   * pino's logger fits. Default: each distinct warning or error once to stderr, nothing else.
   */
  readonly logger?: Logger;
  /**
   * The same messages as lines of text (`[taskexecutor-…] message`), for a logger that takes
   * strings. Use `logger` for the fields; at most one of the two.
   */
  readonly log?: (message: string) => void;
  /** ms to wait for the fixed TaskExecutors to register (default 60 s). */
  readonly startTimeoutMs?: number;
  /** Where the cluster's metrics go: the app's prom-client Registry (default: one of its own) and their prefix. */
  readonly metrics?: MetricsOptions;
  /**
   * Serve the dashboard: `{ port, host, token }` (port 8081 by default, 0: a free one; host 127.0.0.1; token: a new
   * random one at each start unless given), or true for the defaults.
   */
  readonly dashboard?: DashboardOptions | true;
}

/** The options checked and filled in. */
export interface ResolvedMiniClusterOptions {
  readonly mode: 'thread' | 'process';
  /** The fixed TaskExecutors to start (0 with 'on-demand'). */
  readonly fixedExecutors: number;
  readonly workersOnDemand: boolean;
  readonly configuration: ResolvedOptions;
  readonly inspect: InspectOption | undefined;
  /** Where the records go. */
  readonly logSink: LogSink;
  /** The least level worth sending from a worker (the default logger shows warnings only). */
  readonly logLevel: LogLevel;
  readonly startTimeoutMs: number;
  readonly metrics: ResolvedMetricsOptions;
  /** null: no dashboard. */
  readonly dashboard: ResolvedDashboardOptions | null;
}

const KNOWN_OPTIONS = [
  'mode',
  'taskExecutors',
  'slotsPerTaskExecutor',
  'resources',
  'placementPolicy',
  'configuration',
  'inspect',
  'logger',
  'log',
  'startTimeoutMs',
  'metrics',
  'dashboard',
];

/** Options of `configuration` that the MiniCluster's own options set: refused there, naming the option to use. */
const SET_BY_OPTION: Readonly<Record<string, string>> = {
  'taskmanager.numberOfTaskSlots': 'slotsPerTaskExecutor',
  'taskmanager.cpu.cores': 'resources.cpuCores',
  'taskmanager.memory.task.heap.size': 'resources.taskHeapMemory',
  'taskmanager.memory.task.off-heap.size': 'resources.taskOffHeapMemory',
  'taskmanager.memory.managed.size': 'resources.managedMemory',
  'taskmanager.memory.network.size': 'resources.networkMemory',
  'taskmanager.extended-resources': 'resources.extendedResources',
};

export function resolveMiniClusterOptions(options: MiniClusterOptions): ResolvedMiniClusterOptions {
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    throw new ConfigurationError(
      'invalid-value',
      `MiniCluster options must be an object, got ${describeValue(options)}`,
      {
        option: '(options)',
      },
    );
  }
  const unknown = Object.keys(options).find((key) => !KNOWN_OPTIONS.includes(key));
  if (unknown !== undefined)
    throw new ConfigurationError(
      'unknown-option',
      `unknown MiniCluster option '${unknown}'; known: ${KNOWN_OPTIONS.join(', ')}`,
      { option: unknown },
    );

  // Only undefined means "unset": null is a value, and refused like any other wrong one.
  const mode = options.mode === undefined ? 'thread' : options.mode;
  if (mode !== 'thread' && mode !== 'process')
    throw invalid('mode', `mode must be 'thread' or 'process', got ${String(mode)}`);

  const executors = options.taskExecutors === undefined ? 2 : options.taskExecutors;
  if (executors !== 'on-demand' && (!Number.isSafeInteger(executors) || executors < 0)) {
    throw invalid(
      'taskExecutors',
      `taskExecutors must be an integer >= 0 or 'on-demand', got ${describeValue(executors)}`,
    );
  }

  const slots = options.slotsPerTaskExecutor === undefined ? 2 : options.slotsPerTaskExecutor;
  if (!Number.isSafeInteger(slots) || slots < 1) {
    throw invalid(
      'slotsPerTaskExecutor',
      `slotsPerTaskExecutor (taskmanager.numberOfTaskSlots) must be an integer >= 1, got ${describeValue(slots)}`,
    );
  }

  const configuration = options.configuration === undefined ? {} : options.configuration;
  if (typeof configuration !== 'object' || configuration === null || Array.isArray(configuration)) {
    throw invalid(
      'configuration',
      `configuration must be an object of option name -> value (see OPTIONS), got ${describeValue(configuration)}`,
    );
  }
  for (const [name, option] of Object.entries(SET_BY_OPTION)) {
    if (Object.hasOwn(configuration, name))
      throw invalid(
        `configuration['${name}']`,
        `configuration['${name}'] is set by the MiniCluster option ${option}: set that instead`,
      );
  }
  const policy = (configuration as Record<string, unknown>)['slotmanager.placement-policy'];
  if (options.placementPolicy !== undefined && policy !== undefined && policy !== options.placementPolicy) {
    throw invalid(
      'placementPolicy',
      `placementPolicy '${String(options.placementPolicy)}' and ` +
        `configuration['slotmanager.placement-policy'] '${String(policy)}' disagree: set one of them`,
    );
  }

  const resources = ResourceProfile.fromSpec(
    options.resources !== undefined
      ? options.resources
      : { cpuCores: slots, taskHeapMemory: '256m', managedMemory: '128m', networkMemory: '64m' },
  );
  const resolved = resolveOptions({
    ...configuration,
    'taskmanager.numberOfTaskSlots': slots,
    'taskmanager.cpu.cores': resources.cpuCores,
    'taskmanager.memory.task.heap.size': resources.taskHeapMemory,
    'taskmanager.memory.task.off-heap.size': resources.taskOffHeapMemory,
    'taskmanager.memory.managed.size': resources.managedMemory,
    'taskmanager.memory.network.size': resources.networkMemory,
    'taskmanager.extended-resources': resources.extendedResources,
    ...(options.placementPolicy === undefined ? {} : { 'slotmanager.placement-policy': options.placementPolicy }),
  });

  const { logSink, logLevel } = resolveLogging(options.logger, options.log);

  const startTimeoutMs = options.startTimeoutMs === undefined ? 60_000 : options.startTimeoutMs;
  if (typeof startTimeoutMs !== 'number' || !Number.isFinite(startTimeoutMs) || startTimeoutMs <= 0) {
    throw invalid(
      'startTimeoutMs',
      `startTimeoutMs must be a finite number of ms > 0, got ${describeValue(startTimeoutMs)}`,
    );
  }

  const metrics = resolveMetricsOptions(options.metrics);
  const dashboard = options.dashboard === undefined ? null : resolveDashboardOptions(options.dashboard);

  return {
    mode,
    metrics,
    dashboard,
    fixedExecutors: executors === 'on-demand' ? 0 : executors,
    workersOnDemand: executors === 'on-demand',
    configuration: resolved,
    inspect: options.inspect,
    logSink,
    logLevel,
    startTimeoutMs,
  };
}

function resolveLogging(
  logger: Logger | undefined,
  log: ((message: string) => void) | undefined,
): { logSink: LogSink; logLevel: LogLevel } {
  if (logger !== undefined && log !== undefined)
    throw invalid('logger', 'logger and log are two forms of the same thing: pass one of them');
  if (log !== undefined) {
    if (typeof log !== 'function')
      throw invalid('log', `log must be a function (message: string) => void, got ${describeValue(log)}`);
    return { logSink: (record) => log(formatLogRecord(record)), logLevel: 'debug' };
  }
  if (logger === undefined) return { logSink: createDefaultLogSink(), logLevel: 'warn' };
  if (typeof logger !== 'object' || logger === null) {
    throw invalid(
      'logger',
      `logger must be an object with ${LOG_LEVELS.join(', ')} methods ` +
        `(fields, message) — pino's logger fits —, got ${describeValue(logger)}`,
    );
  }
  const missing = LOG_LEVELS.filter(
    (level) => typeof (logger as unknown as Record<string, unknown>)[level] !== 'function',
  );
  if (missing.length > 0)
    throw invalid(
      'logger',
      `logger must have the methods ${LOG_LEVELS.join(', ')} (fields, message); missing: ${missing.join(', ')}`,
    );
  return { logSink: toLogger(logger), logLevel: 'debug' };
}

function invalid(option: string, message: string): ConfigurationError {
  return new ConfigurationError('invalid-value', message, { option });
}
