/**
 * The dashboard as a fastify plugin: register it on any fastify 5 server (a MiniCluster's own, or
 * the JobManager's REST server) with a DashboardSource. Its routes, all behind the access rule of
 * accessToken.ts (the plugin's hook is encapsulated: the server's other routes are not touched):
 *
 * - `GET /` — the page; `GET /dashboard/assets/<file>` — its script, style and uPlot, all from the
 *   package (no CDN: the page's Content-Security-Policy lets it reach only its own origin);
 * - `GET /dashboard/events` — Server-Sent Events: a `view` event at once and whenever the view
 *   changes (checked every `pushIntervalMs`, only while a page listens);
 * - `GET /dashboard/view` — the view now, as JSON;
 * - `GET /dashboard/actors/<id>/events` — Server-Sent Events: the actor's `actor` detail at once,
 *   then an `actor-event` per event of it;
 * - `POST /dashboard/jobs/<jobId>/cancel` — 202 `{ status: 'canceling' | 'ended' }`, 404 for a job
 *   the cluster does not know;
 * - `GET /dashboard/jobs/<jobId>/logs?vertex=<id>&subtask=<n>&from=<seq>` — what that subtask's tasks
 *   logged (every attempt), from the records a session cluster's TaskManagers forward (`jobLogs`):
 *   `{ records, next, first }`; 404 `no-task-logs` where the server keeps none (a MiniCluster: its
 *   records go to its logger), 404 for an unknown job, 400 for a bad query;
 * - `GET /metrics` — the Prometheus text.
 */
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { isSlotwiseError } from '../core/errors.js';
import { JobID } from '../core/ids.js';
import type { LogPage } from '../rest/RestTarget.js';
import { refusal, type AccessRule } from './accessToken.js';
import type { DashboardSource } from './ClusterDashboard.js';
import { ServerSentEvents } from './ServerSentEvents.js';

export interface DashboardPluginOptions extends AccessRule {
  readonly source: DashboardSource;
  /** How often the view is compared with the last one sent, while a page listens (default 250 ms). */
  readonly pushIntervalMs?: number;
  /**
   * A job's kept task log records from `from` on (at most `limit`), undefined for an unknown job: a session cluster's
   * JobManager gives its forwarded ones. Without it the log panels say the records go to the application's logger.
   */
  readonly jobLogs?: (jobId: JobID, from: number, limit: number) => Promise<LogPage | undefined>;
}

/** Records a log panel asks for at once: as many as a job keeps (forwardedLogs.ts RECORDS_KEPT). */
const LOG_PAGE_LIMIT = 1_000;
/** What a log panel says where the server keeps no task records. */
const NO_TASK_LOGS =
  "this cluster keeps no task logs: a MiniCluster's records (a task's context.log lines among them) go to the " +
  'logger given to MiniCluster.start (the console without one)';

const require = createRequire(import.meta.url);
const PAGE_DIR = fileURLToPath(new URL('./page/', import.meta.url));
/** The files a page may load: name → where it is and what it is. */
const ASSETS: Readonly<Record<string, { readonly path: string; readonly type: string }>> = {
  'dashboard.js': { path: `${PAGE_DIR}dashboard.js`, type: 'text/javascript; charset=utf-8' },
  'dom.js': { path: `${PAGE_DIR}dom.js`, type: 'text/javascript; charset=utf-8' },
  'jobPage.js': { path: `${PAGE_DIR}jobPage.js`, type: 'text/javascript; charset=utf-8' },
  'jobGraph.js': { path: `${PAGE_DIR}jobGraph.js`, type: 'text/javascript; charset=utf-8' },
  'dashboard.css': { path: `${PAGE_DIR}dashboard.css`, type: 'text/css; charset=utf-8' },
  'uPlot.iife.min.js': {
    path: require.resolve('uplot/dist/uPlot.iife.min.js'),
    type: 'text/javascript; charset=utf-8',
  },
  'uPlot.min.css': { path: require.resolve('uplot/dist/uPlot.min.css'), type: 'text/css; charset=utf-8' },
};
/** Nothing but this origin: a page that tried to reach the internet would be stopped by the browser. */
const CONTENT_SECURITY_POLICY =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
  "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

export async function dashboardPlugin(fastify: FastifyInstance, options: DashboardPluginOptions): Promise<void> {
  const { source } = options;
  const rule: AccessRule = { token: options.token, loopbackOnly: options.loopbackOnly };
  const query = options.token === null ? '' : `?token=${encodeURIComponent(options.token)}`;
  const assets = new Map<string, Buffer>();
  const load = async (name: string) => {
    let body = assets.get(name);
    if (body === undefined) assets.set(name, (body = await readFile(ASSETS[name]!.path)));
    return body;
  };
  const page = (await readFile(`${PAGE_DIR}index.html`, 'utf8')).replaceAll(
    '{{query}}',
    query.replaceAll('&', '&amp;'),
  );

  fastify.addHook('onRequest', async (request, reply) => {
    const refused = refusal({ url: request.url, headers: request.headers, localPort: request.socket.localPort }, rule);
    if (refused !== null) return reply.code(refused.status).type('text/plain; charset=utf-8').send(`${refused.text}\n`);
  });

  fastify.get('/', async (_request, reply) =>
    reply
      .headers({
        'cache-control': 'no-store',
        'referrer-policy': 'no-referrer',
        'x-content-type-options': 'nosniff',
        'content-security-policy': CONTENT_SECURITY_POLICY,
      })
      .type('text/html; charset=utf-8')
      .send(page),
  );

  fastify.get<{ Params: { file: string } }>('/dashboard/assets/:file', async (request, reply) => {
    const asset = Object.hasOwn(ASSETS, request.params.file) ? ASSETS[request.params.file] : undefined;
    if (asset === undefined)
      return reply
        .code(404)
        .type('text/plain; charset=utf-8')
        .send(`no asset ${request.params.file}; the page has ${Object.keys(ASSETS).join(', ')}\n`);
    return reply
      .headers({ 'cache-control': 'no-store', 'x-content-type-options': 'nosniff' })
      .type(asset.type)
      .send(await load(request.params.file));
  });

  fastify.get('/dashboard/view', async (_request, reply) =>
    reply.header('cache-control', 'no-store').send(source.view()),
  );

  const streams = new ServerSentEvents(options.pushIntervalMs ?? 250, () => JSON.stringify(source.view()));
  fastify.addHook('preClose', async () => streams.close());
  fastify.get('/dashboard/events', (request, reply) =>
    streams.open(request, reply, (client) => {
      streams.followView(client);
      return undefined;
    }),
  );

  fastify.get<{ Params: { id: string } }>('/dashboard/actors/:id/events', (request, reply) => {
    const detail = source.actor(request.params.id);
    if (detail === undefined)
      return void reply
        .code(404)
        .type('text/plain; charset=utf-8')
        .send(`no actor ${request.params.id} (the cluster was started without inspection, or it stopped long ago)\n`);
    streams.open(request, reply, (client) => {
      client.send('actor', JSON.stringify(detail));
      return source.watchActor(request.params.id, (event) => client.send('actor-event', JSON.stringify(event)));
    });
  });

  fastify.post<{ Params: { jobId: string } }>('/dashboard/jobs/:jobId/cancel', async (request, reply) => {
    try {
      return reply.code(202).send({ status: await source.cancelJob(request.params.jobId) });
    } catch (error) {
      return failed(reply, error);
    }
  });

  fastify.get<{ Params: { jobId: string }; Querystring: Record<string, string | undefined> }>(
    '/dashboard/jobs/:jobId/logs',
    async (request, reply) => {
      const { jobId } = request.params;
      const { vertex, subtask, from = '0' } = request.query;
      const whole = (text: string | undefined) => (text !== undefined && /^\d{1,9}$/.test(text) ? Number(text) : null);
      const bad = (message: string) =>
        reply.code(400).send({ error: 'IllegalArgumentError', reason: 'invalid-value', message });
      if (!JobID.is(jobId)) return bad(`${JSON.stringify(jobId)} is not a JobID (32 hex digits)`);
      if (whole(from) === null) return bad(`from must be a sequence number (an integer ≥ 0), got ${from}`);
      if ((vertex === undefined) !== (subtask === undefined) || (subtask !== undefined && whole(subtask) === null))
        return bad('name a subtask with both vertex=<vertex id> and subtask=<index ≥ 0>, or neither');
      if (options.jobLogs === undefined) return reply.code(404).send({ error: 'no-task-logs', message: NO_TASK_LOGS });
      const page = await options.jobLogs(jobId, whole(from)!, LOG_PAGE_LIMIT);
      if (page === undefined)
        return reply.code(404).send({ error: 'unknown-job', message: `no job ${jobId} in this cluster` });
      const index = whole(subtask);
      const records =
        vertex === undefined
          ? page.records
          : page.records.filter((r) => r.vertexId === vertex && r.subtaskIndex === index);
      return reply.header('cache-control', 'no-store').send({ records, next: page.next, first: page.first });
    },
  );

  fastify.get('/metrics', async (_request, reply) => {
    const { contentType, text } = await source.metrics();
    return reply.header('cache-control', 'no-store').type(contentType).send(text);
  });
}

function failed(reply: FastifyReply, error: unknown): FastifyReply {
  if (isSlotwiseError(error) && error._tag === 'IllegalArgumentError')
    return reply.code(404).send({ error: error._tag, reason: error.reason, message: error.message });
  throw error;
}
