/**
 * What a TaskExecutor worker is told when it starts: the contract between a driver (main side) and
 * the worker entry (worker side), which otherwise share nothing. On a thread it is the workerData;
 * in a child process it is the first IPC message, under BOOTSTRAP_MESSAGE, before any Link frame.
 */
import type { InspectionDetail } from '../InspectionRecord.js';
import type { ResourceID } from '../core/ids.js';
import type { LogLevel } from '../core/Logger.js';
import type { ResolvedOptions } from '../core/options.js';

export interface WorkerBootstrap {
  readonly resourceId: ResourceID;
  readonly pendingWorkerId: string | null;
  readonly mode: 'thread' | 'process';
  /** Whether the worker sends its statecharts' inspection events on {@link INSPECT_CHANNEL}. */
  readonly inspect: boolean;
  /** How much of each (default 'full'). */
  readonly inspectDetail?: InspectionDetail;
  /**
   * Whether the worker sends its log records (runtime messages, task pool warnings, task logs) on {@link LOG_CHANNEL}.
   */
  readonly log: boolean;
  /** The least level it sends (default 'debug': every record); the cluster's default logger needs only warnings. */
  readonly logLevel?: LogLevel;
  readonly configuration: ResolvedOptions;
  /**
   * How it reads the other TaskExecutors' result partitions and serves its own (ResultPartitions.ts): `in-process` —
   * threads of this process (a thread-mode MiniCluster's), over BroadcastChannels; `sockets` — processes of this host,
   * over Unix sockets in `directory`. Absent: it keeps none (its outputs go to the JobMaster).
   */
  readonly partitions?: { readonly kind: 'in-process' } | { readonly kind: 'sockets'; readonly directory: string };
}

export const BOOTSTRAP_MESSAGE = 'slotwiseBootstrap';

/** The Link channel on which a worker sends its inspection events (plain Stately inspection events). */
export const INSPECT_CHANNEL = 'inspect';

/**
 * The Link channel on which a worker sends its log records (plain `LogRecord`s of lib/core/Logger.ts, without its
 * ResourceID).
 */
export const LOG_CHANNEL = 'log';
