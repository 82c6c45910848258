import { expect } from 'chai';
import { request } from 'node:http';
import Fastify, { type FastifyInstance } from 'fastify';
import { IllegalArgumentError } from '../../lib/core/errors.js';
import { JobID } from '../../lib/core/ids.js';
import type { DashboardSource, DashboardView } from '../../lib/dashboard/ClusterDashboard.js';
import { dashboardPlugin } from '../../lib/dashboard/dashboardPlugin.js';
import { resolveDashboardOptions } from '../../lib/dashboard/DashboardOptions.js';
import { DashboardServer } from '../../lib/dashboard/DashboardServer.js';
import { ConfigurationError } from '../../lib/core/errors.js';
import type { ForwardedRecord } from '../../lib/rest/RestTarget.js';

const TOKEN = 'secret-token-123456789';
const job = JobID.generate();
const view: DashboardView = {
  overview: {
    taskExecutors: [],
    pendingWorkers: 0,
    pendingRequests: [],
    jobs: [{ jobId: job, name: 'j', status: 'running' }],
  },
  jobs: [],
  series: { time: [], slotsInUse: [], slotsTotal: [], allocationLatencyMean: [], allocationLatencyMax: [] },
  actors: null,
  partitions: {},
};

describe('the dashboard plugin (fastify, no browser)', () => {
  let server: FastifyInstance;
  let canceled: string[];

  beforeEach(async () => {
    canceled = [];
    const source: DashboardSource = {
      view: () => view,
      actor: () => undefined,
      watchActor: () => () => {},
      cancelJob: async (jobId) => {
        if (jobId !== job) throw new IllegalArgumentError('invalid-value', `no job ${jobId}`, { argument: 'jobId' });
        canceled.push(jobId);
        return 'canceling';
      },
      metrics: async () => ({ contentType: 'text/plain; version=0.0.4; charset=utf-8', text: '# TYPE x gauge\nx 1\n' }),
    };
    server = Fastify();
    await server.register(dashboardPlugin, { source, token: TOKEN, loopbackOnly: true });
    await server.listen({ port: 0, host: '127.0.0.1' });
  });
  afterEach(() => server.close());

  const port = () => (server.server.address() as { port: number }).port;
  const get = (path: string, headers: Record<string, string> = {}) =>
    fetch(`http://127.0.0.1:${port()}${path}`, { headers });

  it(
    'serves the page with its token in the asset URLs ' + 'and a policy that lets it reach only its own origin',
    async () => {
      const response = await get(`/?token=${TOKEN}`);
      expect(response.status).to.equal(200);
      expect(response.headers.get('content-security-policy')).to.match(
        /default-src 'none'; script-src 'self'.*connect-src 'self'/,
      );
      expect(response.headers.get('referrer-policy')).to.equal('no-referrer');
      const html = await response.text();
      expect(html).to.include(`/dashboard/assets/dashboard.js?token=${TOKEN}`);
      expect(html).to.not.match(/https?:\/\//, 'no absolute URL: nothing is loaded from elsewhere');
      for (const asset of [
        'dashboard.js',
        'dom.js',
        'jobPage.js',
        'jobGraph.js',
        'dashboard.css',
        'uPlot.iife.min.js',
      ]) {
        const served = await get(`/dashboard/assets/${asset}?token=${TOKEN}`);
        expect(served.status, asset).to.equal(200);
        expect((await served.text()).length, asset).to.be.greaterThan(500);
      }
      expect((await get(`/dashboard/assets/..%2Fpackage.json?token=${TOKEN}`)).status).to.equal(404);
    },
  );

  it('refuses every route without the token, with a wrong one, for another Host, and from another origin', async () => {
    for (const path of ['/', '/metrics', '/dashboard/view', '/dashboard/events', '/dashboard/assets/dashboard.js']) {
      const response = await get(path);
      expect(response.status, path).to.equal(403);
      expect(await response.text(), path).to.match(/cluster.dashboardUrl/);
    }
    expect((await get('/?token=secret-token-12345678X')).status).to.equal(403);
    // fetch may not set Host: a raw request does, as a DNS-rebinding page's would arrive.
    const rebound = await new Promise<number>((resolve, reject) =>
      request(
        { port: port(), host: '127.0.0.1', path: `/?token=${TOKEN}`, headers: { host: `evil.example:${port()}` } },
        (r) => (r.resume(), resolve(r.statusCode!)),
      )
        .on('error', reject)
        .end(),
    );
    expect(rebound).to.equal(403);
    expect((await get(`/?token=${TOKEN}`, { origin: 'http://evil.example' })).status).to.equal(403);
    const post = await fetch(`http://127.0.0.1:${port()}/dashboard/jobs/${job}/cancel?token=${TOKEN}`, {
      method: 'POST',
      headers: { origin: 'http://evil.example' },
    });
    expect(post.status).to.equal(403);
    expect(canceled, 'a refused cancel cancels nothing').to.deep.equal([]);
  });

  it(
    'takes the token as a bearer token too (a Prometheus ' + 'scraper) and serves /metrics as Prometheus text',
    async () => {
      const response = await get('/metrics', { authorization: `Bearer ${TOKEN}` });
      expect(response.status).to.equal(200);
      expect(response.headers.get('content-type')).to.match(/^text\/plain; version=0\.0\.4/);
      expect(await response.text()).to.equal('# TYPE x gauge\nx 1\n');
    },
  );

  it('cancels a job (202) and answers 404 naming the problem for a job it does not know', async () => {
    const cancel = (id: string) =>
      fetch(`http://127.0.0.1:${port()}/dashboard/jobs/${id}/cancel?token=${TOKEN}`, { method: 'POST' });
    const ok = await cancel(job);
    expect(ok.status).to.equal(202);
    expect(await ok.json()).to.deep.equal({ status: 'canceling' });
    const unknown = await cancel(JobID.generate());
    expect(unknown.status).to.equal(404);
    expect(await unknown.json()).to.deep.include({ error: 'IllegalArgumentError', reason: 'invalid-value' });
    expect(canceled).to.deep.equal([job]);
  });

  it("answers a subtask's log panel 404 saying where a MiniCluster's records go (it keeps none)", async () => {
    const response = await get(`/dashboard/jobs/${job}/logs?vertex=v&subtask=0&token=${TOKEN}`);
    expect(response.status).to.equal(404);
    const body = (await response.json()) as { error: string; message: string };
    expect(body.error).to.equal('no-task-logs');
    expect(body.message).to.match(/go to the logger given to MiniCluster\.start/);
  });

  it('streams the view as Server-Sent Events, the first at once', async () => {
    const controller = new AbortController();
    const response = await fetch(`http://127.0.0.1:${port()}/dashboard/events?token=${TOKEN}`, {
      signal: controller.signal,
    });
    expect(response.headers.get('content-type')).to.match(/^text\/event-stream/);
    const reader = response.body!.getReader();
    let text = '';
    while (!text.includes('event: view\n')) text += new TextDecoder().decode((await reader.read()).value);
    while (!text.includes('\n\n', text.indexOf('event: view')))
      text += new TextDecoder().decode((await reader.read()).value);
    const data = /event: view\ndata: (.*)\n/.exec(text)![1]!;
    expect(JSON.parse(data)).to.deep.equal(view);
    controller.abort();
  });

  it('ends open streams when the server closes, so close() does not wait for the pages', async () => {
    const response = await fetch(`http://127.0.0.1:${port()}/dashboard/events?token=${TOKEN}`);
    const reader = response.body!.getReader();
    await reader.read();
    await server.close();
    for (;;) if ((await reader.read()).done) break;
  });
});

describe("the dashboard plugin's log panels on a cluster that keeps its tasks' records", () => {
  let server: FastifyInstance;
  const asked: Array<[string, number, number]> = [];
  const record = (seq: number, vertexId: string, subtaskIndex: number, message: string): ForwardedRecord => ({
    seq,
    time: 1_700_000_000_000 + seq,
    level: 'info',
    source: 'task',
    jobId: job,
    vertexId,
    subtaskIndex,
    attemptNumber: 0,
    message,
  });
  const records = [
    record(0, 'map', 0, 'a'),
    record(1, 'map', 1, 'b'),
    record(2, 'sink', 0, 'c'),
    record(3, 'map', 0, 'd'),
  ];

  before(async () => {
    server = Fastify();
    await server.register(dashboardPlugin, {
      source: {
        view: () => view,
        actor: () => undefined,
        watchActor: () => () => {},
        cancelJob: async () => 'ended',
        metrics: async () => ({ contentType: 'text/plain', text: '' }),
      },
      token: TOKEN,
      loopbackOnly: true,
      jobLogs: async (jobId, from, limit) => {
        asked.push([jobId, from, limit]);
        if (jobId !== job) return undefined;
        const page = records.filter((r) => r.seq >= from).slice(0, limit);
        return { records: page, next: (page.at(-1)?.seq ?? from - 1) + 1, first: 0 };
      },
    });
    await server.listen({ port: 0, host: '127.0.0.1' });
  });
  after(() => server.close());

  const logs = async (id: string, query: string) => {
    const port = (server.server.address() as { port: number }).port;
    const response = await fetch(`http://127.0.0.1:${port}/dashboard/jobs/${id}/logs?${query}&token=${TOKEN}`);
    return { status: response.status, body: (await response.json()) as Record<string, unknown> };
  };

  it("gives one subtask's lines (every attempt's), and reads on from where the last read stopped", async () => {
    const first = await logs(job, 'vertex=map&subtask=0');
    expect(first.status).to.equal(200);
    expect((first.body.records as ForwardedRecord[]).map((r) => r.message)).to.deep.equal(['a', 'd']);
    expect(first.body.next).to.equal(4);
    const later = await logs(job, 'vertex=map&subtask=0&from=2');
    expect((later.body.records as ForwardedRecord[]).map((r) => r.message)).to.deep.equal(['d']);
    expect(asked.at(-1)).to.deep.equal([job, 2, 1_000]);
  });

  it('answers 404 for a job the cluster does not know, 400 for a bad JobID or query, asking nothing then', async () => {
    expect((await logs(JobID.generate(), 'vertex=map&subtask=0')).status).to.equal(404);
    const before = asked.length;
    for (const [id, query] of [
      ['not-a-job', 'vertex=map&subtask=0'],
      [job, 'vertex=map'],
      [job, 'vertex=map&subtask=-1'],
      [job, 'vertex=map&subtask=0&from=x'],
    ] as const) {
      const answer = await logs(id, query);
      expect(answer.status, `${id} ${query}`).to.equal(400);
      expect(answer.body.message, `${id} ${query}`).to.be.a('string');
    }
    expect(asked.length, 'a refused query reads no log').to.equal(before);
  });
});

describe('resolveDashboardOptions', () => {
  it("defaults to Flink's web UI port on 127.0.0.1; port 0 picks a free port", () => {
    expect(resolveDashboardOptions(true)).to.deep.equal({ port: 8081, host: '127.0.0.1' });
    expect(resolveDashboardOptions({ port: 0 })).to.deep.equal({ port: 0, host: '127.0.0.1' });
  });

  it('refuses a bad port or host and unknown keys, naming the option', () => {
    expect(() => resolveDashboardOptions({ port: 70_000 })).to.throw(
      ConfigurationError,
      /dashboard.port must be an integer in \[0, 65535\]/,
    );
    expect(() => resolveDashboardOptions({ port: -1 })).to.throw(ConfigurationError, /dashboard.port/);
    expect(() => resolveDashboardOptions({ host: '' })).to.throw(
      ConfigurationError,
      /dashboard.host must be a non-empty/,
    );
    expect(() => resolveDashboardOptions({ prot: 1 } as never)).to.throw(
      ConfigurationError,
      /unknown dashboard option 'prot'; known: port, host, token/,
    );
    expect(() => resolveDashboardOptions('yes' as never)).to.throw(
      ConfigurationError,
      /dashboard must be true or an object/,
    );
  });
});

describe("a MiniCluster's dashboard server with a configured token", () => {
  const source: DashboardSource = {
    view: () => view,
    actor: () => undefined,
    watchActor: () => () => {},
    cancelJob: async () => 'ended',
    metrics: async () => ({ contentType: 'text/plain; version=0.0.4; charset=utf-8', text: 'x 1\n' }),
  };

  it('keeps the token across a restart (a scrape of /metrics keeps working), and refuses a bad one', async () => {
    const fixed = 'scrape-token-0123456789abcdef';
    const options = resolveDashboardOptions({ port: 0, token: fixed });
    for (let start = 0; start < 2; start++) {
      const server = await DashboardServer.start(options, source);
      try {
        expect(server.url).to.equal(`http://127.0.0.1:${server.port}/?token=${fixed}`);
        const scrape = await fetch(`http://127.0.0.1:${server.port}/metrics`, {
          headers: { authorization: `Bearer ${fixed}` },
        });
        expect(scrape.status).to.equal(200);
        expect((await fetch(`http://127.0.0.1:${server.port}/metrics`)).status).to.equal(403);
      } finally {
        await server.close();
      }
    }
    for (const token of ['short', 'has spaces in it, sixteen+', 7]) {
      expect(() => resolveDashboardOptions({ token } as never))
        .to.throw(ConfigurationError, /dashboard\.token must be 16 to 512 letters/)
        .with.nested.property('details.option', 'dashboard.token');
    }
  });
});
