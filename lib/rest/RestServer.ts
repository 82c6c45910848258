/**
 * The REST endpoint of a JobManager, in Flink's shape (Flink's WebMonitorEndpoint): fastify with JSON
 * schema validation in front of a RestTarget. `startRestServer({ target })` listens on
 * 127.0.0.1:8081 by default (`port: 0`: a free port) and resolves with its URL once it listens.
 *
 * Anyone who can reach it can run code on the cluster (POST /jobs takes task code), so: it listens
 * on loopback unless told otherwise, and there answers only requests addressed to a loopback name
 * (no DNS rebinding). Beyond loopback it refuses to start unless it knows its callers: a `token`
 * every request must carry (`Authorization: Bearer`, compared in constant time; 401 with
 * `WWW-Authenticate: Bearer` and a typed body otherwise), or `tls` with `clientCaFile`, so that only
 * clients with a certificate that CA signed get through (TLS alone proves the server to its clients,
 * not the clients to it). With `tls` it serves https. A vertex can name only code uploaded with it,
 * never a path on the JobManager's host.
 *
 * With `dashboard` (a session cluster's JobManager gives its own), the same port serves the
 * dashboard plugin beside the API: the page at `/`, its streams and assets, and Prometheus text at
 * `GET /metrics`, behind the MiniCluster dashboard's rule: a token new at every start, in
 * `dashboardUrl` — or the configured `token`, which then guards every route alike and stays the same
 * across restarts (a Prometheus scrape configuration keeps working).
 */
import { readFileSync } from 'node:fs';
import { isAbsolute } from 'node:path';
import Fastify, { type FastifyInstance } from 'fastify';
import { IllegalArgumentError, RestError } from '../core/errors.js';
import {
  ACCESS_TOKEN,
  ACCESS_TOKEN_RULE,
  createAccessToken,
  givenToken,
  tokenMatches,
} from '../dashboard/accessToken.js';
import type { DashboardSource } from '../dashboard/ClusterDashboard.js';
import { dashboardPlugin } from '../dashboard/dashboardPlugin.js';
import { errorResponse } from './restErrors.js';
import { registerRoutes, ROUTES } from './restRoutes.js';
import { registerStandbyRedirect, type StandbyState } from './standbyRedirect.js';
import type { RestTarget } from './RestTarget.js';

export interface RestServerOptions {
  /** The cluster to serve: `miniClusterTarget(cluster)`, or a session cluster's JobManager. */
  readonly target: RestTarget;
  /** Default `'127.0.0.1'` (loopback only). */
  readonly address?: string;
  /** Default 8081 (Flink's `rest.port`); 0 picks a free port. */
  readonly port?: number;
  /** The largest request body taken, in bytes (default 64 MiB: POST /jobs carries bundled task code). */
  readonly bodyLimit?: number;
  /**
   * How long one request may wait for the cluster before it is answered 504 (default 60 s: a submit checks every task
   * module); also how long a streamed job result waits for its client to take the next chunk before it is cut off.
   */
  readonly requestTimeoutMs?: number;
  /** What the dashboard at `/` (and `/metrics`) shows; without it the server has the API only. */
  readonly dashboard?: DashboardSource;
  /** A JobManager that may stand by: while it does, the API redirects to the leader (standbyRedirect.ts). */
  readonly standby?: StandbyState;
  /**
   * A bearer token every request must carry, on every route (`Authorization: Bearer <token>`, or `?token=` as the
   * dashboard's page sends it): 16 to 512 letters, digits or `- . _ ~ + / =`. Default: none — the API open on
   * loopback, the dashboard and /metrics behind a token new at every start. Required beyond loopback (or `tls` with
   * `clientCaFile`).
   */
  readonly token?: string;
  /** Serve https with this certificate and key (PEM files); with `clientCaFile`, clients must show a certificate. */
  readonly tls?: RestTlsOptions;
}

export interface RestTlsOptions {
  /** The server's certificate (chain), PEM; absolute path. */
  readonly certFile: string;
  /** Its private key, PEM; absolute path. */
  readonly keyFile: string;
  /** The CA that signs client certificates, PEM: with it, a client without one it signed is refused (mutual TLS). */
  readonly clientCaFile?: string;
}

/** What `checkRestAccess` resolved: the token and fastify's https options, files read. */
export interface RestAccess {
  readonly token: string | null;
  readonly https: {
    readonly cert: string;
    readonly key: string;
    readonly ca?: string;
    readonly requestCert: boolean;
    readonly rejectUnauthorized: boolean;
  } | null;
}

export interface RestServer {
  /** `http://127.0.0.1:8081`: where it listens, with the port it got. */
  readonly url: string;
  /** The dashboard's page with its token (`http://127.0.0.1:8081/?token=…`), or null without `dashboard`. */
  readonly dashboardUrl: string | null;
  /** Stops listening and ends every connection (bounded); the same promise every time. */
  close(): Promise<void>;
}

const TARGET_METHODS = [
  'storeTaskCode',
  'submitJob',
  'listJobs',
  'jobDetails',
  'jobResult',
  'jobEvents',
  'jobExceptions',
  'cancelJob',
  'overview',
] as const;
const ALL_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'];
const CLOSE_TIMEOUT_MS = 5_000;
const LOOPBACK: ReadonlySet<string> = new Set(['127.0.0.1', 'localhost', '::1']);
const LOOPBACK_NAMES: ReadonlySet<string> = new Set(['127.0.0.1', 'localhost', '[::1]']);

/** The host name of a Host header (`127.0.0.1:8081` → `127.0.0.1`, `[::1]:8081` → `[::1]`). */
function hostnameOf(header: string | undefined): string | undefined {
  if (header === undefined) return undefined;
  const match = /^(\[[^\]]*\]|[^:]*)(:\d+)?$/.exec(header.trim().toLowerCase());
  return match?.[1];
}

export async function startRestServer(options: RestServerOptions): Promise<RestServer> {
  const { target, address, port, bodyLimit, requestTimeoutMs, dashboard, access, standby } = checkOptions(options);
  // fastify's types tell an https server from an http one; both serve the same routes here.
  const app = Fastify({
    ...(access.https === null ? {} : { https: access.https }),
    logger: false,
    bodyLimit,
    forceCloseConnections: true,
    // Refuse what the schemas do not allow instead of repairing it: no unknown fields dropped, no
    // strings turned into numbers; `verbose` hands the error formatter the schema and the value.
    ajv: {
      customOptions: {
        removeAdditional: false,
        coerceTypes: false,
        useDefaults: false,
        verbose: true,
        allErrors: false,
      },
    },
  });
  // JSON only: fastify also parses text/plain by default, which would turn a wrong content type into a schema error.
  app.removeContentTypeParser('text/plain');
  app.setErrorHandler((error, _request, reply) => {
    const { status, body } = errorResponse(error);
    void reply.code(status).type('application/json').send(body);
  });
  app.setNotFoundHandler((request, reply) => {
    const { status, body } = errorResponse(
      new RestError(
        'not-found',
        `no route ${request.method} ${request.url.split('?')[0]}; the API has ${Object.keys(ROUTES).join(', ')}`,
        { status: 404, method: request.method, path: request.url },
      ),
    );
    void reply.code(status).send(body);
  });
  const isLoopback = LOOPBACK.has(address);
  if (isLoopback) {
    // DNS rebinding: a web page whose name resolves to 127.0.0.1 could otherwise reach a loopback
    // server as its own origin and POST task code. Only loopback names may address it.
    app.addHook('onRequest', async (request) => {
      const host = hostnameOf(request.headers.host);
      if (host === undefined || !LOOPBACK_NAMES.has(host)) {
        throw new RestError(
          'forbidden-host',
          `this REST API listens on ${address} and answers only requests addressed to ` +
            `localhost, 127.0.0.1 or [::1], not to ${JSON.stringify(request.headers.host ?? '')}`,
          { status: 403, host: request.headers.host },
        );
      }
    });
  }
  const configured = access.token;
  if (configured !== null) {
    // Every route, the dashboard's too: one token for the API, the page and /metrics.
    app.addHook('onRequest', async (request, reply) => {
      const given = givenToken(request);
      if (given === null || given === '' || !tokenMatches(given, configured)) {
        void reply.header('www-authenticate', 'Bearer realm="slotwise"');
        throw new RestError(
          'unauthorized',
          given === null || given === ''
            ? 'this REST API asks for its token: send Authorization: Bearer <token> ' +
                '(slotwise --token-file FILE, or SLOTWISE_REST_TOKEN)'
            : "the token sent is not the REST API's token",
          { status: 401 },
        );
      }
    });
  }
  if (standby !== null) registerStandbyRedirect(app, standby);
  registerRoutes(app, target, requestTimeoutMs);
  refuseOtherMethods(app);
  const token = dashboard === null ? null : (configured ?? createAccessToken());
  // In a context of its own: the plugin's token hook guards its routes only, not the API's.
  if (dashboard !== null) {
    // A session cluster's forwarded task logs feed the job page's log panels.
    const jobLogs = target.jobLogs?.bind(target);
    await app.register(dashboardPlugin, {
      source: dashboard,
      token,
      loopbackOnly: isLoopback,
      ...(jobLogs === undefined ? {} : { jobLogs }),
    });
  }
  try {
    await app.listen({ host: address, port });
  } catch (error) {
    await app.close();
    const code = (error as { code?: string }).code;
    const why =
      code === 'EADDRINUSE'
        ? 'the port is in use'
        : code === 'EADDRNOTAVAIL'
          ? 'no interface has this address'
          : (error as Error).message;
    throw new IllegalArgumentError('invalid-value', `the REST server cannot listen on ${address}:${port}: ${why}`, {
      argument: code === 'EADDRNOTAVAIL' ? 'address' : 'port',
      address,
      port,
      code,
    });
  }
  const bound = app.server.address();
  const host = address.includes(':') ? `[${address}]` : address;
  const scheme = access.https === null ? 'http' : 'https';
  const url = `${scheme}://${host}:${typeof bound === 'object' && bound !== null ? bound.port : port}`;
  let closed: Promise<void> | null = null;
  return {
    url,
    dashboardUrl: token === null ? null : `${url}/?token=${encodeURIComponent(token)}`,
    close: () =>
      (closed ??= (async () => {
        let timer: NodeJS.Timeout | undefined;
        await Promise.race([app.close(), new Promise((resolve) => (timer = setTimeout(resolve, CLOSE_TIMEOUT_MS)))]);
        clearTimeout(timer);
      })()),
  };
}

/** Each path answers 405, with `Allow`, to the methods it does not have. */
function refuseOtherMethods(app: FastifyInstance): void {
  for (const [url, methods] of Object.entries(ROUTES)) {
    const allowed = methods.includes('GET') ? [...methods, 'HEAD'] : methods;
    const others = ALL_METHODS.filter((m) => !allowed.includes(m));
    app.route({
      method: others,
      url,
      handler: async (request, reply) => {
        void reply.header('allow', allowed.join(', '));
        throw new RestError(
          'method-not-allowed',
          `${request.method} is not allowed on ${url}; allowed: ${allowed.join(', ')}`,
          { status: 405, method: request.method, path: url, allowed },
        );
      },
    });
  }
}

interface CheckedOptions extends Required<Omit<RestServerOptions, 'dashboard' | 'token' | 'tls' | 'standby'>> {
  readonly dashboard: DashboardSource | null;
  readonly access: RestAccess;
  readonly standby: StandbyState | null;
}

const DASHBOARD_METHODS = ['view', 'actor', 'watchActor', 'cancelJob', 'metrics'] as const;

/** The methods of `names` that `value` does not have (all of them when it is not an object). */
function missingMethods<T extends string>(value: unknown, names: readonly T[]): readonly T[] {
  if (typeof value !== 'object' || value === null) return names;
  const record = value as Record<string, unknown>;
  return names.filter((name) => typeof record[name] !== 'function');
}

/**
 * Where a REST server listens, checked before anything starts: `address` a host name or IP address, `port` an integer
 * from 0 (any free port) to 65535. `where` prefixes the message (`startRestServer options`), `argumentPrefix` the
 * argument the error names (`options.rest.` for startJobManager's `rest`).
 */
export function checkListenAddress(address: unknown, port: unknown, where: string, argumentPrefix: string): void {
  if (typeof address !== 'string' || !/^[\w.:-]+$/.test(address))
    throw new IllegalArgumentError(
      'invalid-value',
      `${where}.address must be a host name or IP address such as '127.0.0.1', got ${JSON.stringify(address)}`,
      { argument: `${argumentPrefix}address`, value: address },
    );
  if (!Number.isInteger(port) || (port as number) < 0 || (port as number) > 65535)
    throw new IllegalArgumentError(
      'out-of-range',
      `${where}.port must be an integer from 0 (any free port) to 65535, got ${String(port)}`,
      { argument: `${argumentPrefix}port`, value: port },
    );
}

function checkOptions(options: RestServerOptions): CheckedOptions {
  if (typeof options !== 'object' || options === null)
    throw new IllegalArgumentError(
      'invalid-type',
      `startRestServer takes { target, address?, port?, bodyLimit?, ` +
        `requestTimeoutMs?, dashboard?, token?, tls? }, got ${options === null ? 'null' : typeof options}`,
      { argument: 'options' },
    );
  const known = ['target', 'address', 'port', 'bodyLimit', 'requestTimeoutMs', 'dashboard', 'token', 'tls', 'standby'];
  const unknown = Object.keys(options).find((key) => !known.includes(key));
  if (unknown !== undefined)
    throw new IllegalArgumentError(
      'unknown-key',
      `unknown startRestServer option '${unknown}'; known: ${known.join(', ')}`,
      { argument: unknown },
    );
  const {
    target,
    address = '127.0.0.1',
    port = 8081,
    bodyLimit = 64 * 1024 * 1024,
    requestTimeoutMs = 60_000,
    dashboard,
  } = options;
  const missing = missingMethods(target, TARGET_METHODS);
  if (missing.length > 0)
    throw new IllegalArgumentError(
      'invalid-type',
      `startRestServer options.target must be a RestTarget ` +
        `(miniClusterTarget(cluster)); it lacks ${missing.join(', ')}`,
      { argument: 'target', missing },
    );
  checkListenAddress(address, port, 'startRestServer options', '');
  const access = checkRestAccess(options, 'startRestServer options', '');
  if (!Number.isInteger(bodyLimit) || bodyLimit < 1)
    throw new IllegalArgumentError(
      'out-of-range',
      `startRestServer options.bodyLimit must be an integer number of bytes >= 1, got ${String(bodyLimit)}`,
      { argument: 'bodyLimit' },
    );
  if (!Number.isFinite(requestTimeoutMs) || requestTimeoutMs <= 0)
    throw new IllegalArgumentError(
      'out-of-range',
      `startRestServer options.requestTimeoutMs must be a number of ms > 0, got ${String(requestTimeoutMs)}`,
      { argument: 'requestTimeoutMs' },
    );
  if (dashboard !== undefined) {
    const lacks = missingMethods(dashboard, DASHBOARD_METHODS);
    if (lacks.length > 0)
      throw new IllegalArgumentError(
        'invalid-type',
        `startRestServer options.dashboard must be a DashboardSource ` +
          `(observability.dashboardFor(dispatcher)); it lacks ${lacks.join(', ')}`,
        { argument: 'dashboard', missing: lacks },
      );
  }
  const { standby } = options;
  if (standby !== undefined && typeof standby !== 'function')
    throw new IllegalArgumentError(
      'invalid-type',
      `startRestServer options.standby must be a function () => { leader } | null, got ${typeof standby}`,
      { argument: 'standby' },
    );
  return {
    target,
    address,
    port,
    bodyLimit,
    requestTimeoutMs,
    dashboard: dashboard ?? null,
    access,
    standby: standby ?? null,
  };
}

const TLS_KEYS = ['certFile', 'keyFile', 'clientCaFile'];

/**
 * Who may call a REST server, checked before anything starts: `token` 16 to 512 token characters; `tls` its
 * certificate and key (and the clients' CA) readable PEM files, read here; and an `address` beyond loopback only with
 * a token or client certificates. `where` prefixes the message, `argumentPrefix` the argument the error names.
 */
export function checkRestAccess(
  options: { readonly address?: unknown; readonly token?: unknown; readonly tls?: unknown },
  where: string,
  argumentPrefix: string,
): RestAccess {
  const { address = '127.0.0.1', token, tls } = options;
  if (token !== undefined && (typeof token !== 'string' || !ACCESS_TOKEN.test(token)))
    throw new IllegalArgumentError(
      'invalid-value',
      `${where}.token must be ${ACCESS_TOKEN_RULE}, ` +
        `got ${typeof token === 'string' ? `${token.length} characters` : typeof token}`,
      { argument: `${argumentPrefix}token` },
    );
  let https: RestAccess['https'] = null;
  if (tls !== undefined) {
    if (typeof tls !== 'object' || tls === null || Array.isArray(tls))
      throw new IllegalArgumentError(
        'invalid-type',
        `${where}.tls must be an object { certFile, keyFile, clientCaFile? }`,
        {
          argument: `${argumentPrefix}tls`,
        },
      );
    const unknown = Object.keys(tls).find((key) => !TLS_KEYS.includes(key));
    if (unknown !== undefined)
      throw new IllegalArgumentError(
        'unknown-key',
        `${where}.tls: unknown option '${unknown}'; known: ${TLS_KEYS.join(', ')}`,
        { argument: `${argumentPrefix}tls.${unknown}` },
      );
    const t = tls as Partial<RestTlsOptions>;
    const pem = (key: keyof RestTlsOptions, block: string) => {
      const argument = `${argumentPrefix}tls.${key}`;
      const path = t[key];
      if (typeof path !== 'string' || !isAbsolute(path))
        throw new IllegalArgumentError(
          path === undefined ? 'missing' : 'invalid-value',
          `${where}.tls.${key} must be an absolute path to a PEM file, got ${JSON.stringify(path)}`,
          { argument },
        );
      let text: string;
      try {
        text = readFileSync(path, 'utf8');
      } catch (error) {
        throw new IllegalArgumentError(
          'invalid-value',
          `${where}.tls.${key} ${path} cannot be read: ` +
            `${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`,
          { argument },
        );
      }
      if (!text.includes('-----BEGIN ') || !text.includes(block))
        throw new IllegalArgumentError(
          'invalid-value',
          `${where}.tls.${key} ${path} must be a PEM file holding a ${block}`,
          {
            argument,
          },
        );
      return text;
    };
    const clientCa = t.clientCaFile === undefined ? undefined : pem('clientCaFile', 'CERTIFICATE');
    https = {
      cert: pem('certFile', 'CERTIFICATE'),
      key: pem('keyFile', 'PRIVATE KEY'),
      ...(clientCa === undefined ? {} : { ca: clientCa }),
      requestCert: clientCa !== undefined,
      rejectUnauthorized: clientCa !== undefined,
    };
  }
  if (typeof address === 'string' && !LOOPBACK.has(address) && token === undefined && https?.ca === undefined)
    throw new IllegalArgumentError(
      'invalid-value',
      `${where}.address ${address} reaches beyond this machine, and anyone who reaches this REST API can run code on ` +
        `the cluster: give it a token (${where}.token; slotwise jobmanager: SLOTWISE_REST_TOKEN or ` +
        `--rest-token-file), ` +
        `or TLS with client certificates (${where}.tls.clientCaFile), or listen on 127.0.0.1`,
      { argument: `${argumentPrefix}address`, value: address },
    );
  return { token: (token as string | undefined) ?? null, https };
}
