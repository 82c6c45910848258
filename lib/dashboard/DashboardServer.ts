/**
 * A MiniCluster's own dashboard server: fastify on `host`:`port` (port 0: a free one) with the
 * dashboard plugin and a new token (or the configured one); `url` is the page with its token. A
 * port in use fails with a ConfigurationError naming the option. `close()` ends the page streams
 * and frees the port; an open browser tab never keeps the process alive.
 */
import Fastify, { type FastifyInstance } from 'fastify';
import { ConfigurationError } from '../core/errors.js';
import { createAccessToken, isLoopback } from './accessToken.js';
import type { DashboardSource } from './ClusterDashboard.js';
import { dashboardPlugin } from './dashboardPlugin.js';
import type { ResolvedDashboardOptions } from './DashboardOptions.js';

export class DashboardServer {
  /** The page to open, token included: `http://127.0.0.1:<port>/?token=<token>`. */
  readonly url: string;
  readonly port: number;
  readonly #fastify: FastifyInstance;
  #closed: Promise<void> | null = null;

  private constructor(fastify: FastifyInstance, url: string, port: number) {
    this.#fastify = fastify;
    this.url = url;
    this.port = port;
  }

  static async start(options: ResolvedDashboardOptions, source: DashboardSource): Promise<DashboardServer> {
    const fastify = Fastify({ logger: false, forceCloseConnections: true });
    const token = options.token ?? createAccessToken();
    await fastify.register(dashboardPlugin, { source, token, loopbackOnly: isLoopback(options.host) });
    try {
      await fastify.listen({ port: options.port, host: options.host });
    } catch (error) {
      await fastify.close().catch(() => {});
      const code = (error as NodeJS.ErrnoException).code ?? (error as Error).message;
      throw new ConfigurationError(
        'invalid-value',
        `dashboard: cannot listen on ${options.host}:${options.port} ` +
          `(${code}); choose another dashboard.port, or 0 for any free one`,
        { option: 'dashboard.port' },
      );
    }
    const address = fastify.server.address();
    const port = typeof address === 'object' && address !== null ? address.port : options.port;
    return new DashboardServer(
      fastify,
      `http://${urlHost(options.host)}:${port}/?token=${encodeURIComponent(token)}`,
      port,
    );
  }

  close(): Promise<void> {
    this.#closed ??= this.#fastify.close();
    return this.#closed;
  }
}

function urlHost(host: string): string {
  if (host === '0.0.0.0' || host === '::') return 'localhost';
  return host.includes(':') && !host.startsWith('[') ? `[${host}]` : host;
}
