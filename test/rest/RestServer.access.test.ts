/**
 * Who may call the REST server: beyond loopback it refuses to start without a token or client
 * certificates; with a token every route — the API's, the dashboard's, /metrics, even an unknown
 * path — answers 401 with `WWW-Authenticate: Bearer` and a typed body unless the request carries it,
 * and the token stays what was configured across a restart (a Prometheus scrape keeps working).
 * Then https with a throwaway CA, the CLI's REST client sending the token, and client certificates.
 */
import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import { IllegalArgumentError, RestError } from '../../lib/core/errors.js';
import type { DashboardSource } from '../../lib/dashboard/ClusterDashboard.js';
import { startRestServer, type RestServer } from '../../lib/rest/RestServer.js';
import { ROUTES } from '../../lib/rest/restRoutes.js';
import type { RestTarget } from '../../lib/rest/RestTarget.js';
import { RestClient, RestRefusal } from '../../lib/cli/RestClient.js';
import { type Certificates, certificatesOrSkip } from '../support/certificates.js';
import { freePort } from '../support/natsServer.js';
import { rejection } from '../rpc/support/transports.js';
import { testingTarget } from './support.js';

const TOKEN = 'fixed-token_for.the~tests+0123456789';
const JOB = '0123456789abcdef0123456789abcdef';

const target: RestTarget = testingTarget({ listJobs: async () => [] });
const dashboard: DashboardSource = {
  view: () => ({}) as ReturnType<DashboardSource['view']>,
  actor: () => undefined,
  watchActor: () => () => {},
  cancelJob: async () => 'ended',
  metrics: async () => ({ contentType: 'text/plain; version=0.0.4; charset=utf-8', text: '# TYPE x gauge\nx 1\n' }),
};

/** Every path the server has, its parameters filled in, and what the dashboard plugin serves, and one it does not. */
const PATHS = [
  ...Object.keys(ROUTES).map((path) =>
    path.replace(':jobid', JOB).replace(':taskmanagerid', 'taskmanager-1').replace(':vertexid', JOB),
  ),
  '/',
  '/metrics',
  '/dashboard/view',
  '/dashboard/assets/dashboard.js',
  '/no/such/path',
];

describe('REST access: tokens beyond loopback, TLS', function () {
  this.timeout(30_000);
  let server: RestServer | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  it('refuses to listen beyond loopback without a token or client certificates, and listens on nothing', async () => {
    const port = await freePort();
    for (const address of ['0.0.0.0', '::', '192.0.2.1']) {
      const error = await rejection(startRestServer({ target, address, port }));
      expect(error, address).to.be.instanceOf(IllegalArgumentError);
      expect((error as IllegalArgumentError).details['argument']).to.equal('address');
      expect(error.message).to.contain(`address ${address} reaches beyond this machine`);
    }
    // Nothing was left listening: the port is free.
    server = await startRestServer({ target, port });
    expect(server.url).to.equal(`http://127.0.0.1:${port}`);
  });

  it('refuses a token that is too short or not token characters, and unknown tls options', async () => {
    for (const [options, argument] of [
      [{ token: 'short' }, 'token'],
      [{ token: 'a token with spaces in it' }, 'token'],
      [{ token: 42 }, 'token'],
      [{ tls: { certFile: '/nonexistent/cert.pem', keyFile: '/nonexistent/key.pem' } }, 'tls.certFile'],
      [{ tls: { cert: 'x' } }, 'tls.cert'],
    ] as const) {
      const error = await rejection(startRestServer({ target, port: 0, ...(options as object) }));
      expect(error, JSON.stringify(options)).to.be.instanceOf(IllegalArgumentError);
      expect((error as IllegalArgumentError).details['argument']).to.equal(argument);
    }
  });

  it('with a token, answers every route 401 with WWW-Authenticate and a typed body without it', async () => {
    server = await startRestServer({ target, address: '0.0.0.0', port: 0, token: TOKEN, dashboard });
    const base = `http://127.0.0.1:${new URL(server.url).port}`;
    for (const path of PATHS) {
      const attempts: Array<Record<string, string>> = [
        {},
        { authorization: 'Bearer not-the-token-but-as-long-as-it' },
        { authorization: TOKEN },
      ];
      for (const headers of attempts) {
        const response = await fetch(`${base}${path}`, { headers });
        expect(response.status, `${path} ${JSON.stringify(headers)}`).to.equal(401);
        expect(response.headers.get('www-authenticate')).to.match(/^Bearer /);
        expect(await response.json()).to.include({ _tag: 'RestError', reason: 'unauthorized' });
      }
      const response = await fetch(`${base}${path}`, { headers: { authorization: `Bearer ${TOKEN}` } });
      expect(response.status, path).not.to.equal(401);
      expect(response.status, path).not.to.equal(403);
    }
    expect((await fetch(`${base}/jobs`, { headers: { authorization: `Bearer ${TOKEN}` } })).status).to.equal(200);
    // The dashboard's page asks with ?token=, as an EventSource must.
    expect((await fetch(`${base}/dashboard/view?token=${encodeURIComponent(TOKEN)}`)).status).to.equal(200);
    // Nothing reached the cluster without the token: a POST /jobs without it never ran.
    const post = await fetch(`${base}/jobs`, {
      method: 'POST',
      body: '{}',
      headers: { 'content-type': 'application/json' },
    });
    expect(post.status).to.equal(401);
  });

  it('keeps the configured token for /metrics across a restart, and the dashboard URL carries it', async () => {
    const port = await freePort();
    for (let start = 0; start < 2; start++) {
      server = await startRestServer({ target, port, token: TOKEN, dashboard });
      expect(server.dashboardUrl).to.equal(`http://127.0.0.1:${port}/?token=${encodeURIComponent(TOKEN)}`);
      const scrape = await fetch(`http://127.0.0.1:${port}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } });
      expect(scrape.status).to.equal(200);
      expect(await scrape.text()).to.contain('x 1');
      await server.close();
      server = undefined;
    }
  });

  describe('over https (a throwaway CA)', () => {
    let certificates: Certificates | undefined;
    before(function () {
      certificates = certificatesOrSkip(this, 'REST over https');
    });
    after(() => certificates?.remove());

    it("serves https; the CLI's client sends the token, trusts the CA given, says why it is refused", async () => {
      const c = certificates!;
      server = await startRestServer({
        target,
        port: 0,
        token: TOKEN,
        tls: { certFile: c.serverCert, keyFile: c.serverKey },
      });
      expect(server.url).to.match(/^https:\/\/127\.0\.0\.1:\d+$/);
      const ca = readFileSync(c.ca, 'utf8');
      expect(await new RestClient(server.url, { token: TOKEN, ca }).get('/jobs')).to.deep.equal({ jobs: [] });
      const noToken = await rejection(new RestClient(server.url, { ca }).get('/jobs'));
      expect(noToken).to.be.instanceOf(RestRefusal);
      expect((noToken as RestRefusal).status).to.equal(401);
      expect(noToken.message).to.contain('SLOTWISE_REST_TOKEN');
      const noCa = await rejection(new RestClient(server.url, { token: TOKEN }).get('/jobs'));
      expect(noCa.message).to.contain('--ca FILE names the CA that signed it');
    });

    it('beyond loopback without a token, asks every client for a certificate its CA signed', async () => {
      const c = certificates!;
      server = await startRestServer({
        target,
        address: '0.0.0.0',
        port: 0,
        tls: { certFile: c.serverCert, keyFile: c.serverKey, clientCaFile: c.ca },
      });
      const ca = readFileSync(c.ca, 'utf8');
      const cert = readFileSync(c.clientCert, 'utf8');
      const key = readFileSync(c.clientKey, 'utf8');
      // Bound to 0.0.0.0; the certificate names 127.0.0.1.
      const url = `https://127.0.0.1:${new URL(server.url).port}`;
      expect(await new RestClient(url, { ca, cert, key }).get('/jobs')).to.deep.equal({ jobs: [] });
      const refused = await rejection(new RestClient(url, { ca }).get('/jobs'));
      expect(refused).to.be.instanceOf(RestError);
      expect((refused as RestError).reason).to.equal('unreachable');
    });
  });
});
