/**
 * The REST server over a TestingRestTarget (function fields, no cluster): how it answers a target
 * that is closing (503), one that never answers (504 at requestTimeoutMs), one that fails in an
 * unexpected way (500, still a typed body), and that it renders what the target returns.
 */
import { expect } from 'chai';
import { request } from 'node:http';
import { IllegalStateError } from '../../lib/core/errors.js';
import { startRestServer, type RestServer } from '../../lib/rest/RestServer.js';
import { call, testingTarget } from './support.js';

/** GET `path` with this Host header (fetch would send the URL's own). */
// biome-ignore lint/suspicious/noExplicitAny: the tests read the response's JSON by path
function getWithHost(url: string, path: string, host: string): Promise<{ status: number; body: any }> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const req = request({ hostname, port, path, headers: { host }, timeout: 10_000 }, (res) => {
      let text = '';
      res.on('data', (chunk: Buffer) => (text += chunk.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) }));
    });
    req.on('error', reject);
    req.on('timeout', () => req.destroy(new Error('no answer')));
    req.end();
  });
}

describe('REST API over a TestingRestTarget', function () {
  this.timeout(20_000);
  let server: RestServer | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  it('answers 503 with the IllegalStateError when the cluster is closing', async () => {
    const closed = new IllegalStateError('MiniCluster.overview: the cluster is closed', {
      component: 'MiniCluster',
      operation: 'overview',
      state: 'closed',
      allowed: ['started'],
    });
    server = await startRestServer({ target: testingTarget({ overview: () => Promise.reject(closed) }), port: 0 });
    const answer = await call(server.url, 'GET', '/overview');
    expect(answer.status).to.equal(503);
    expect(answer.json).to.include({
      _tag: 'IllegalStateError',
      reason: 'wrong-state',
      message: 'MiniCluster.overview: the cluster is closed',
    });
  });

  it('answers 504 when the target does not answer within requestTimeoutMs', async () => {
    server = await startRestServer({
      target: testingTarget({ listJobs: () => new Promise(() => {}) }),
      port: 0,
      requestTimeoutMs: 50,
    });
    const answer = await call(server.url, 'GET', '/jobs');
    expect(answer.status).to.equal(504);
    expect(answer.json).to.include({
      _tag: 'RestError',
      reason: 'timed-out',
      message: 'the cluster did not answer listJobs within 50 ms',
    });
  });

  it('answers an unexpected failure with 500 and a typed body', async () => {
    server = await startRestServer({
      target: testingTarget({ listJobs: () => Promise.reject(new TypeError('boom')) }),
      port: 0,
    });
    const answer = await call(server.url, 'GET', '/jobs');
    expect(answer.status).to.equal(500);
    expect(answer.json).to.deep.equal({
      _tag: 'TypeError',
      reason: 'internal',
      message: 'boom',
      details: {},
      errors: ['boom'],
    });
  });

  it(
    "renders a result's outputs as JSON data (BigInt as " + 'digits, Map as pairs) and a failure cause as Flink does',
    async () => {
      const jobId = 'ab'.repeat(16);
      server = await startRestServer({
        target: testingTarget({
          jobResult: async () => ({
            jobId: jobId as never,
            jobName: 'typed outputs',
            status: 'failed',
            outputs: { sink: [new Map([['a', 1n]])] },
            error: {
              _tag: 'TaskExecutionError',
              name: 'TaskExecutionError',
              reason: 'threw',
              message: 'it threw',
              stack: 'TaskExecutionError: it threw\n    at task',
            },
            restarts: 2,
            durationMs: 42,
          }),
        }),
        port: 0,
      });
      const answer = await call(server.url, 'GET', `/jobs/${jobId}/result`);
      expect(answer.status).to.equal(200);
      expect(answer.json).to.deep.equal({
        status: { id: 'COMPLETED' },
        'job-execution-result': {
          id: jobId,
          'application-status': 'FAILED',
          'accumulator-results': {},
          'net-runtime': 42,
          'failure-cause': { class: 'TaskExecutionError', 'stack-trace': 'TaskExecutionError: it threw\n    at task' },
          name: 'typed outputs',
          status: 'failed',
          outputs: { sink: [[['a', '1']]] },
          error: {
            _tag: 'TaskExecutionError',
            name: 'TaskExecutionError',
            reason: 'threw',
            message: 'it threw',
            stack: 'TaskExecutionError: it threw\n    at task',
          },
          restarts: 2,
        },
      });
    },
  );

  it('on loopback answers only requests addressed to a loopback name (403 otherwise: no DNS rebinding)', async () => {
    server = await startRestServer({ target: testingTarget({ listJobs: async () => [] }), port: 0 });
    const { port } = new URL(server.url);
    const foreign = await getWithHost(server.url, '/jobs', `evil.example:${port}`);
    expect(foreign.status).to.equal(403);
    expect(foreign.body).to.include({ _tag: 'RestError', reason: 'forbidden-host' });
    for (const host of [`localhost:${port}`, `127.0.0.1:${port}`, `[::1]:${port}`, 'localhost']) {
      const ok = await getWithHost(server.url, '/jobs', host);
      expect(ok.status, host).to.equal(200);
      expect(ok.body).to.deep.equal({ jobs: [] });
    }
  });

  it('answers HEAD on a GET route without a body', async () => {
    server = await startRestServer({ target: testingTarget({ listJobs: async () => [] }), port: 0 });
    const response = await fetch(`${server.url}/jobs`, { method: 'HEAD', signal: AbortSignal.timeout(10_000) });
    expect(response.status).to.equal(200);
    expect(await response.text()).to.equal('');
  });
});
