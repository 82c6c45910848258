/**
 * A TaskManager's options (`startTaskManager`, the `slotwise taskmanager` flags) and their checks at
 * the door: the NATS URL, the cluster id, the runtime options the flags stand for (Flink's
 * taskmanager.* options), each refused with an IllegalArgumentError naming it before anything connects.
 */
import { isAbsolute } from 'node:path';
import { IllegalArgumentError } from '../core/errors.js';
import type { LogSink } from '../core/Logger.js';
import { resolveOptions, type ResolvedOptions, type SlotwiseOptions } from '../core/options.js';
import { checkClusterId, DEFAULT_CLUSTER_ID } from './clusterSubjects.js';
import { checkOptionKeys } from './jobManagerOptions.js';
import { checkNatsAuth, type NatsAuthOptions, type ResolvedNatsAuth } from './natsAuth.js';
import { checkNatsUrl, DEFAULT_NATS_URL } from './natsConnection.js';

export interface TaskManagerOptions {
  /** The NATS server (`--nats`). Default nats://127.0.0.1:4222. */
  readonly nats?: string;
  /**
   * Credentials and TLS for NATS (the `--nats-*` flags; natsAuth.ts). Default: none, the server must let anyone in.
   * In mode 'process' they reach the child over IPC, not on its command line.
   */
  readonly natsAuth?: NatsAuthOptions;
  /** The cluster to join (`--cluster-id`). Default 'default'. */
  readonly clusterId?: string;
  /** Static slots (`--slots`, taskmanager.numberOfTaskSlots). Default 1. */
  readonly slots?: number;
  /** CPU cores offered (`--cpu-cores`, taskmanager.cpu.cores). Default: the number of slots. */
  readonly cpuCores?: number;
  /** Task heap offered (`--task-heap 512m`, taskmanager.memory.task.heap.size). */
  readonly taskHeap?: number | string;
  /** Managed memory offered (`--managed-memory 256m`). */
  readonly managedMemory?: number | string;
  /** Network memory offered (`--network-memory 64m`). */
  readonly networkMemory?: number | string;
  /** Extended resources offered (`--resource gpu=2` → { gpu: 2 }). */
  readonly resources?: Readonly<Record<string, number>>;
  /**
   * How its TaskExecutor runs (`--mode`): 'thread' (default) in this process, its tasks on task
   * threads; 'process' in a child process whose heap limit is the task heap plus the runtime's.
   */
  readonly mode?: 'thread' | 'process';
  /** Any other runtime option (heartbeat.*, rpc.ask.timeout, task.cancellation.*, ...). */
  readonly configuration?: SlotwiseOptions;
  /** The host name it reports. Default os.hostname(). */
  readonly host?: string;
  /** Where fetched task code is cached. Default: a new directory under the OS tmpdir, removed at close. */
  readonly cacheDir?: string;
  /** Bound on the first connect to NATS. Default 5 s. */
  readonly connectTimeoutMs?: number;
  /** Log records of this TaskManager and its tasks. Default: warnings and errors to stderr. */
  readonly logger?: LogSink;
}

const OPTION_KEYS = [
  'nats',
  'natsAuth',
  'clusterId',
  'slots',
  'cpuCores',
  'taskHeap',
  'managedMemory',
  'networkMemory',
  'resources',
  'mode',
  'configuration',
  'host',
  'cacheDir',
  'connectTimeoutMs',
  'logger',
];

/** Every option checked at the door (no state yet): the URL, the cluster id, the runtime options. */
export function checkTaskManagerOptions(options: TaskManagerOptions): {
  url: string;
  auth: ResolvedNatsAuth;
  clusterId: string;
  configuration: ResolvedOptions;
} {
  checkOptionKeys(options, OPTION_KEYS, 'startTaskManager');
  const url = checkNatsUrl(options.nats ?? DEFAULT_NATS_URL, 'options.nats');
  const auth = checkNatsAuth(options.natsAuth);
  const clusterId = checkClusterId(options.clusterId ?? DEFAULT_CLUSTER_ID, 'options.clusterId');
  const configuration = resolveOptions(taskManagerConfiguration(options));
  if (options.mode !== undefined && options.mode !== 'thread' && options.mode !== 'process') {
    throw new IllegalArgumentError(
      'invalid-value',
      `options.mode must be 'thread' (the TaskExecutor in this process) or 'process' ` +
        `(in a child process with a hard heap limit), got ${JSON.stringify(options.mode)}`,
      {
        argument: 'options.mode',
        value: options.mode,
      },
    );
  }
  if (options.cacheDir !== undefined && (typeof options.cacheDir !== 'string' || !isAbsolute(options.cacheDir))) {
    throw new IllegalArgumentError(
      'invalid-value',
      `options.cacheDir must be an absolute path, got ${JSON.stringify(options.cacheDir)}`,
      { argument: 'options.cacheDir', value: options.cacheDir },
    );
  }
  if (options.host !== undefined && (typeof options.host !== 'string' || options.host === '')) {
    throw new IllegalArgumentError(
      'invalid-value',
      `options.host must be a non-empty string, got ${JSON.stringify(options.host)}`,
      { argument: 'options.host', value: options.host },
    );
  }
  if (
    options.connectTimeoutMs !== undefined &&
    !(Number.isFinite(options.connectTimeoutMs) && options.connectTimeoutMs > 0)
  ) {
    throw new IllegalArgumentError(
      'out-of-range',
      `options.connectTimeoutMs must be a number of ms > 0, got ${String(options.connectTimeoutMs)}`,
      { argument: 'options.connectTimeoutMs', value: options.connectTimeoutMs },
    );
  }
  return { url, auth, clusterId, configuration };
}

/** The runtime options a TaskManager's flags stand for, over `configuration` (resolveOptions checks each). */
function taskManagerConfiguration(o: TaskManagerOptions): SlotwiseOptions {
  if (o.configuration !== undefined && (typeof o.configuration !== 'object' || o.configuration === null)) {
    throw new IllegalArgumentError('invalid-type', 'options.configuration must be an object of runtime options', {
      argument: 'options.configuration',
    });
  }
  const flags: Record<string, unknown> = {
    'taskmanager.numberOfTaskSlots': o.slots,
    'taskmanager.cpu.cores': o.cpuCores,
    'taskmanager.memory.task.heap.size': o.taskHeap,
    'taskmanager.memory.managed.size': o.managedMemory,
    'taskmanager.memory.network.size': o.networkMemory,
    'taskmanager.extended-resources': o.resources,
  };
  const set = Object.fromEntries(Object.entries(flags).filter(([, value]) => value !== undefined));
  return { ...(o.configuration ?? {}), ...set } as SlotwiseOptions;
}
