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
 * - `GET /metrics` — the Prometheus text.
 */
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { isSlotwiseError } from '../core/errors.js';
import { refusal, type AccessRule } from './accessToken.js';
import type { DashboardSource } from './ClusterDashboard.js';
import { ServerSentEvents } from './ServerSentEvents.js';

export interface DashboardPluginOptions extends AccessRule {
  readonly source: DashboardSource;
  /** How often the view is compared with the last one sent, while a page listens (default 250 ms). */
  readonly pushIntervalMs?: number;
}

const require = createRequire(import.meta.url);
const PAGE_DIR = fileURLToPath(new URL('./page/', import.meta.url));
/** The files a page may load: name → where it is and what it is. */
const ASSETS: Readonly<Record<string, { readonly path: string; readonly type: string }>> = {
  'dashboard.js': { path: `${PAGE_DIR}dashboard.js`, type: 'text/javascript; charset=utf-8' },
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
