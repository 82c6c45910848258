/**
 * Connecting to NATS for a cluster process: the URL checked at the door, the first connect bounded
 * (an unreachable server is an error within `timeoutMs`, never a hang), and after that the client
 * reconnects by itself for as long as the process lives (a TaskManager comes back when the network
 * does).
 */
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { IllegalArgumentError } from '../core/errors.js';

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
 * Connects to `url`; an IllegalArgumentError naming the server when it cannot be reached within
 * `timeoutMs`. The client pings every `pingIntervalMs` and counts the connection lost after two
 * unanswered pings (the client's default is 2 minutes): a cut network shows within seconds.
 */
export async function connectNats(
  url: string,
  name: string,
  timeoutMs = DEFAULT_CONNECT_TIMEOUT_MS,
  pingIntervalMs = 10_000,
): Promise<NatsConnection> {
  checkNatsUrl(url);
  try {
    return await connect({
      servers: url.split(',').map((server) => server.trim()),
      name,
      timeout: timeoutMs,
      maxReconnectAttempts: -1,
      reconnectTimeWait: 500,
      waitOnFirstConnect: false,
      pingInterval: pingIntervalMs,
      maxPingOut: 2,
    });
  } catch (error) {
    throw new IllegalArgumentError(
      'invalid-value',
      `cannot connect to the NATS server at ${url} within ${timeoutMs} ` +
        `ms: ${error instanceof Error ? error.message : String(error)}`,
      { argument: 'nats', value: url },
    );
  }
}
