/**
 * startJobManager's options (JobManagerOptions), and their checks shared with startTaskManager's: unknown keys refused
 * (`checkOptionKeys`), and the JobManager's REST server — where it listens and who may call it —
 * checked before anything connects (`checkRestOptions`).
 */
import { IllegalArgumentError } from '../core/errors.js';
import type { LogSink } from '../core/Logger.js';
import type { SlotwiseOptions } from '../core/options.js';
import type { InspectOption } from '../InspectionRecord.js';
import type { MetricsOptions } from '../metrics/MetricsOptions.js';
import { checkListenAddress, checkRestAccess, type RestTlsOptions } from '../rest/RestServer.js';
import type { NatsAuthOptions } from './natsAuth.js';

export interface JobManagerOptions {
  /** The NATS server (`--nats`). Default nats://127.0.0.1:4222. */
  readonly nats?: string;
  /** Credentials and TLS for NATS (the `--nats-*` flags; natsAuth.ts). Default: none, the server must let anyone in. */
  readonly natsAuth?: NatsAuthOptions;
  /** The cluster's id (`--cluster-id`): its subjects and object store buckets. Default 'default'. */
  readonly clusterId?: string;
  /** Runtime options (heartbeat.*, rpc.ask.timeout, slotmanager.*, restart-strategy, ...). */
  readonly configuration?: SlotwiseOptions;
  /**
   * Where the JobManager keeps its copy of task code. Default: a new directory under the OS tmpdir, removed at close.
   */
  readonly cacheDir?: string;
  /** Bound on the first connect to NATS. Default 5 s. */
  readonly connectTimeoutMs?: number;
  /** Log records of the JobManager and of every TaskExecutor. Default: warnings and errors to stderr. */
  readonly logger?: LogSink;
  /** Its metrics' prom-client registry and prefix, as a MiniCluster's (default: a registry of its own, `slotwise`). */
  readonly metrics?: MetricsOptions;
  /**
   * Its REST server (API, dashboard at `/`, `/metrics`), as `slotwise jobmanager` starts it. Default: none
   * (`startRestServer` may serve it later). `port` default 8081 (0: a free port), `address` default '127.0.0.1'.
   */
  readonly rest?: JobManagerRestOptions;
  /**
   * Every statechart's inspection events — its SlotManager's and jobs', and every TaskManager's TaskSlotTable and
   * TaskSlots (they send theirs only while someone watches): a callback, or `{ stately: { port } }` for the Stately
   * inspector (a local relay: `inspectorUrl`), as a MiniCluster's `inspect`. Default: none.
   */
  readonly inspect?: InspectOption;
}

export const JOB_MANAGER_OPTION_KEYS = [
  'nats',
  'natsAuth',
  'clusterId',
  'configuration',
  'cacheDir',
  'connectTimeoutMs',
  'logger',
  'metrics',
  'rest',
  'inspect',
];

export interface JobManagerRestOptions {
  readonly port?: number;
  readonly address?: string;
  /**
   * A bearer token every route asks for, the dashboard's and /metrics too, the same at every start
   * (`SLOTWISE_REST_TOKEN`, `--rest-token-file`). Default: none (the API open on loopback; the
   * dashboard behind a token new at every start). Needed beyond loopback, unless `tls.clientCaFile`.
   */
  readonly token?: string;
  /** Serve https: `{ certFile, keyFile, clientCaFile? }` (RestServer.ts). */
  readonly tls?: RestTlsOptions;
}

const REST_KEYS = ['port', 'address', 'token', 'tls'];

export function checkRestOptions(rest: unknown): JobManagerRestOptions & { port: number; address: string } {
  checkOptionKeys(rest, REST_KEYS, 'startJobManager options.rest');
  const { port = 8081, address = '127.0.0.1', token, tls } = rest as JobManagerRestOptions;
  checkListenAddress(address, port, 'options.rest', 'options.rest.');
  // Who may call it, before anything connects (startRestServer checks again when it starts).
  checkRestAccess({ address, token, tls }, 'options.rest', 'options.rest.');
  return { port, address, ...(token === undefined ? {} : { token }), ...(tls === undefined ? {} : { tls }) };
}

export function checkOptionKeys(options: unknown, known: readonly string[], where: string): void {
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    throw new IllegalArgumentError(
      'invalid-type',
      `${where} takes an options object, ` +
        `got ${options === null ? 'null' : Array.isArray(options) ? 'an array' : typeof options}`,
      { argument: 'options' },
    );
  }
  const unknown = Object.keys(options).find((key) => !known.includes(key));
  if (unknown !== undefined)
    throw new IllegalArgumentError('unknown-key', `${where}: unknown option '${unknown}'; known: ${known.join(', ')}`, {
      argument: `options.${unknown}`,
    });
}
