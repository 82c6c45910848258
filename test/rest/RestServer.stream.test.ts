/**
 * GET /jobs/:id/result with a large result, through real HTTP over a TestingRestTarget: the body comes chunked and is
 * the document JSON.stringify(jobResultView) would have been; it goes out as the client takes it, so a client that
 * stops reading stops the encoding, and GET /overview is answered meanwhile. The encoder on its own:
 * jsonStream.test.ts.
 */
import { expect } from 'chai';
import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { get, type IncomingMessage } from 'node:http';
import type { ClusterOverview } from '../../lib/ClusterOverview.js';
import type { JobID } from '../../lib/core/ids.js';
import type { JobResult } from '../../lib/jobmaster/JobResult.js';
import { jsonChunks } from '../../lib/rest/jsonStream.js';
import { startRestServer, type RestServer } from '../../lib/rest/RestServer.js';
import { jobResultBody, jobResultView } from '../../lib/rest/restViews.js';
import { call, testingTarget } from './support.js';

const MB = 1 << 20;
const JOB = 'cd'.repeat(16) as JobID;
const EMPTY_OVERVIEW: ClusterOverview = { taskExecutors: [], pendingWorkers: 0, pendingRequests: [], jobs: [] };

const finished = (outputs: Record<string, unknown[]>): JobResult => ({
  jobId: JOB,
  jobName: 'large result',
  status: 'finished',
  outputs,
  error: null,
  restarts: 0,
  durationMs: 7,
});

/** GET `path`: the response once its headers came, its body not read yet (the caller reads it, or not). */
async function open(url: string, path: string): Promise<IncomingMessage> {
  const request = get(`${url}${path}`);
  const [response] = (await once(request, 'response')) as [IncomingMessage];
  return response;
}

async function bodyOf(response: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of response) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

describe('GET /jobs/:id/result streams a large result', function () {
  this.timeout(60_000);
  let server: RestServer | undefined;
  afterEach(async () => {
    await server?.close();
    server = undefined;
  });

  it('sends a 24 MB output chunked, as the document jobResultView gives, on both paths', async () => {
    const bytes = Uint8Array.from({ length: 24 * MB }, (_, i) => (i * 7) % 256);
    const result = finished({ sink: [bytes, 'after the bytes'] });
    server = await startRestServer({ target: testingTarget({ jobResult: async () => result }), port: 0 });
    const expected = JSON.parse(JSON.stringify(jobResultView(result)));
    for (const path of [`/jobs/${JOB}/result`, `/jobs/${JOB}/execution-result`]) {
      const response = await open(server.url, path);
      expect(response.statusCode).to.equal(200);
      expect(response.headers['transfer-encoding']).to.equal('chunked');
      expect(response.headers['content-length']).to.equal(undefined);
      expect(response.headers['content-type']).to.equal('application/json; charset=utf-8');
      const json = JSON.parse(await bodyOf(response));
      expect(json).to.deep.equal(expected);
      const sent = Buffer.from(json['job-execution-result'].outputs.sink[0].base64, 'base64');
      expect(sent.equals(bytes)).to.equal(true);
    }
  });

  it('sends a small result in one write with its Content-Length, and IN_PROGRESS and 404 as before', async () => {
    const result = finished({ sink: [new Uint8Array([1, 2, 3])] });
    let ended: JobResult | null = null;
    server = await startRestServer({
      target: testingTarget({ jobResult: async (jobId) => (jobId === JOB ? ended : undefined) }),
      port: 0,
    });
    const running = await call(server.url, 'GET', `/jobs/${JOB}/result`);
    expect(running.json).to.deep.equal({ status: { id: 'IN_PROGRESS' } });
    ended = result;
    const response = await open(server.url, `/jobs/${JOB}/result`);
    const text = await bodyOf(response);
    expect(text).to.equal(JSON.stringify(jobResultView(result)));
    expect(response.headers['content-length']).to.equal(String(Buffer.byteLength(text)));
    expect(response.headers['transfer-encoding']).to.equal(undefined);
    const unknown = await call(server.url, 'GET', `/jobs/${'0'.repeat(32)}/result`);
    expect(unknown.status).to.equal(404);
    expect(unknown.json).to.include({ _tag: 'RestError', reason: 'unknown-job' });
  });

  it('answers GET /overview while a large result waits for its reader, the encoder only a little ahead', async () => {
    // 16 references to one 4 MB array: 85 MB of JSON, far more than the sockets between the two ends hold. The
    // proxy tells how far the encoder got.
    const block = new Uint8Array(4 * MB).fill(9);
    const blocks = Array.from({ length: 16 }, () => block);
    let reached = -1;
    const watched = new Proxy(blocks, {
      get(target, key, receiver) {
        if (typeof key === 'string' && /^\d+$/.test(key)) reached = Math.max(reached, Number(key));
        return Reflect.get(target, key, receiver);
      },
    });
    const result = finished({ sink: watched });
    server = await startRestServer({
      target: testingTarget({ jobResult: async () => result, overview: async () => EMPTY_OVERVIEW }),
      port: 0,
    });
    const response = await open(server.url, `/jobs/${JOB}/result`);
    let resultEnded = false;
    response.once('end', () => (resultEnded = true));
    expect(response.headers['transfer-encoding']).to.equal('chunked');

    const overview = await call(server.url, 'GET', '/overview');
    expect(overview.status).to.equal(200);
    expect(overview.json).to.include({ taskmanagers: 0, 'jobs-running': 0 });
    expect(resultEnded, 'the result ended before /overview answered').to.equal(false);
    // What the encoder wrote sits in the sockets and the streams' buffers, a fraction of the body.
    const reachedWhileWaiting = reached;
    expect(reachedWhileWaiting, 'the encoder ran ahead of its client').to.be.below(blocks.length - 1);

    // The client reads: the rest comes, and it is the document the encoder gives.
    const received = createHash('sha256');
    let length = 0;
    for await (const chunk of response) {
      received.update(chunk as Buffer);
      length += (chunk as Buffer).length;
    }
    expect(resultEnded).to.equal(true);
    expect(reached).to.equal(blocks.length - 1);
    const expected = createHash('sha256');
    let expectedLength = 0;
    for (const chunk of jsonChunks(jobResultBody(finished({ sink: blocks })))) {
      expected.update(chunk);
      expectedLength += Buffer.byteLength(chunk);
    }
    expect(length).to.equal(expectedLength);
    expect(received.digest('hex')).to.equal(expected.digest('hex'));
  });
});
