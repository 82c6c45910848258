/**
 * Connecting to NATS for a cluster process: the URL checked at the door, the first connect bounded
 * (an unreachable server is an error within `timeoutMs`, never a hang), and after that the client
 * reconnects by itself for as long as the process lives (a TaskManager comes back when the network
 * does). Credentials and TLS: natsAuth.ts.
 */
import {
  AuthorizationError,
  connect,
  type NatsConnection,
  UserAuthenticationExpiredError,
} from '@nats-io/transport-node';
import { ClusterError, IllegalArgumentError } from '../core/errors.js';
import { NO_NATS_AUTH, type ResolvedNatsAuth } from './natsAuth.js';

export const DEFAULT_NATS_URL = 'nats://127.0.0.1:4222';
export const DEFAULT_CONNECT_TIMEOUT_MS = 5_000;

/**
 * Throws an IllegalArgumentError unless `url` is a nats:// (or tls://) URL with a host, or several of them
 * comma-separated (the servers of one NATS cluster: the client connects to any and fails over to the others).
 */
export function checkNatsUrl(url: unknown, argument = 'nats'): string {
  const servers = typeof url === 'string' ? url.split(',').map((one) => one.trim()) : [undefined];
  for (const server of servers) {
    let parsed: URL | undefined;
    try {
      parsed = server === undefined ? undefined : new URL(server);
    } catch {
      parsed = undefined;
    }
    if (parsed === undefined || !['nats:', 'tls:'].includes(parsed.protocol) || parsed.hostname === '') {
      throw new IllegalArgumentError(
        'invalid-value',
        `${argument} must be a NATS URL like ${DEFAULT_NATS_URL} (several: comma-separated), ` +
          `got ${JSON.stringify(url)}`,
        { argument, value: url },
      );
    }
  }
  return url as string;
}

/**
 * Calls `report` when the client gives up on the connection by itself — not at our `close()`: the
 * client stops reconnecting when the server refuses its credentials twice in a row (revoked, or
 * expired), and the process is then cut off from its cluster for good.
 */
export function onConnectionLost(connection: NatsConnection, url: string, report: (message: string) => void): void {
  void connection.closed().then((error) => {
    if (error instanceof Error)
      report(
        `the NATS connection to ${url} is closed for good: ${error.message}` +
          (error instanceof AuthorizationError || error instanceof UserAuthenticationExpiredError
            ? ' (the server refused our credentials: were they revoked?); restart with valid ones'
            : ''),
      );
  });
}

export interface ConnectNatsOptions {
  readonly url: string;
  /** The connection's name as the server lists it (`slotwise taskmanager <clusterId>`). */
  readonly name: string;
  /** The cluster it serves: a refusal names it. */
  readonly clusterId: string;
  /** Credentials and TLS, checked by `checkNatsAuth`. Default: none. */
  readonly auth?: ResolvedNatsAuth;
  /** Bound on the first connect. Default 5 s. */
  readonly timeoutMs?: number;
  /** Ping period; the connection counts as lost after two unanswered pings. Default 10 s. */
  readonly pingIntervalMs?: number;
}

/**
 * Connects to `url`. The first connect fails fast: a ClusterError('credentials-refused') naming the
 * server when it refuses our credentials (or wants some), an IllegalArgumentError naming the server
 * when it cannot be reached (or its TLS not agreed) within `timeoutMs`. The client pings every
 * `pingIntervalMs` and counts the connection lost after two unanswered pings (the client's default
 * is 2 minutes): a cut network shows within seconds.
 */
export async function connectNats(options: ConnectNatsOptions): Promise<NatsConnection> {
  const { url, name, clusterId, auth = NO_NATS_AUTH } = options;
  const timeoutMs = options.timeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS;
  checkNatsUrl(url);
  try {
    return await connect({
      servers: url.split(',').map((server) => server.trim()),
      name,
      timeout: timeoutMs,
      maxReconnectAttempts: -1,
      reconnectTimeWait: 500,
      waitOnFirstConnect: false,
      pingInterval: options.pingIntervalMs ?? 10_000,
      maxPingOut: 2,
      ...auth.connectOptions,
    });
  } catch (error) {
    const cause = error instanceof Error ? error.message : String(error);
    if (error instanceof AuthorizationError || error instanceof UserAuthenticationExpiredError) {
      throw new ClusterError(
        'credentials-refused',
        `the NATS server at ${url} refused the credentials of ${name} (${auth.description}): ${cause}; ` +
          `give the ones its authorization names (natsAuth, the --nats-* flags: docs/cluster.md, Credentials)`,
        { clusterId, server: url, credentials: auth.description, cause },
      );
    }
    throw new IllegalArgumentError(
      'invalid-value',
      `cannot connect to the NATS server at ${url} within ${timeoutMs} ms (${auth.description}): ${cause}`,
      { argument: 'nats', value: url },
    );
  }
}
