/**
 * `MiniCluster.start({ dashboard })`, checked at the door: where the dashboard listens. Port 8081 by
 * default (Flink's web UI port); 0 picks a free port, which `cluster.dashboardUrl` names. Bound to
 * 127.0.0.1 unless told otherwise; every request needs the token in the URL the cluster gives.
 */
import { ConfigurationError } from '../core/errors.js';
import { ACCESS_TOKEN, ACCESS_TOKEN_RULE } from './accessToken.js';

export interface DashboardOptions {
  /** The TCP port (default 8081, Flink's web UI port); 0 picks a free one. */
  readonly port?: number;
  /** The interface to listen on (default '127.0.0.1': this machine only). */
  readonly host?: string;
  /**
   * The token every request needs, the same at every start (a Prometheus scrape of `/metrics` keeps working). Default:
   * a new random one at each start, in `cluster.dashboardUrl`.
   */
  readonly token?: string;
}

export interface ResolvedDashboardOptions {
  readonly port: number;
  readonly host: string;
  readonly token?: string;
}

const KNOWN = ['port', 'host', 'token'];

export function resolveDashboardOptions(options: DashboardOptions | true): ResolvedDashboardOptions {
  if (options === true) return { port: 8081, host: '127.0.0.1' };
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    throw invalid(
      'dashboard',
      `dashboard must be true or an object { port?, host?, token? }, ` +
        `got ${options === null ? 'null' : Array.isArray(options) ? 'an array' : typeof options}`,
    );
  }
  const unknown = Object.keys(options).find((key) => !KNOWN.includes(key));
  if (unknown !== undefined)
    throw new ConfigurationError(
      'unknown-option',
      `unknown dashboard option '${unknown}'; known: ${KNOWN.join(', ')}`,
      { option: `dashboard.${unknown}` },
    );
  const port = options.port === undefined ? 8081 : options.port;
  if (!Number.isSafeInteger(port) || port < 0 || port > 65535)
    throw invalid(
      'dashboard.port',
      `dashboard.port must be an integer in [0, 65535] (0: any free port), got ${String(port)}`,
    );
  const host = options.host === undefined ? '127.0.0.1' : options.host;
  if (typeof host !== 'string' || host.trim() === '')
    throw invalid(
      'dashboard.host',
      `dashboard.host must be a non-empty host name or address ('127.0.0.1', ` +
        `'localhost', '::1', '0.0.0.0'), got ${JSON.stringify(host)}`,
    );
  const { token } = options;
  if (token !== undefined && (typeof token !== 'string' || !ACCESS_TOKEN.test(token)))
    throw invalid(
      'dashboard.token',
      `dashboard.token must be ${ACCESS_TOKEN_RULE}, ` +
        `got ${typeof token === 'string' ? `${token.length} characters` : typeof token}`,
    );
  return { port, host, ...(token === undefined ? {} : { token }) };
}

function invalid(option: string, message: string): ConfigurationError {
  return new ConfigurationError('invalid-value', message, { option });
}
