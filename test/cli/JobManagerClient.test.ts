/**
 * The CLI's client of several JobManagers (`--jobmanager URL1,URL2`): a call goes to the one that answered last and
 * on to the next when that one cannot be reached; a standby's 307 is followed to the leader with the call's method,
 * body and token; a POST that timed out is not sent again elsewhere (it may have been taken); a refusal is the
 * answer, not a reason to try another. Plain HTTP servers on loopback stand in for the JobManagers.
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { once } from 'node:events';
import { expect } from 'chai';
import { RestError } from '../../lib/core/errors.js';
import { JobManagerClient } from '../../lib/cli/JobManagerClient.js';
import { RestRefusal } from '../../lib/cli/RestClient.js';
import { rejection } from '../rpc/support/transports.js';
import { closedPort } from './support.js';

interface Seen {
  readonly method: string;
  readonly url: string;
  readonly authorization: string | undefined;
  readonly body: string;
}

/** A server that records each request and answers with `answer`. */
async function server(
  answer: (request: IncomingMessage, body: string) => { status: number; body?: unknown; location?: string } | null,
) {
  const seen: Seen[] = [];
  const http: Server = createServer((request, response) => {
    let body = '';
    request.on('data', (chunk: Buffer) => (body += chunk.toString()));
    request.on('end', () => {
      seen.push({ method: request.method!, url: request.url!, authorization: request.headers.authorization, body });
      const reply = answer(request, body);
      if (reply === null) return; // never answers
      response.writeHead(reply.status, {
        'content-type': 'application/json',
        ...(reply.location === undefined ? {} : { location: reply.location }),
      });
      response.end(reply.body === undefined ? '' : JSON.stringify(reply.body));
    });
  });
  http.listen(0, '127.0.0.1');
  await once(http, 'listening');
  const { port } = http.address() as { port: number };
  return { url: `http://127.0.0.1:${port}`, seen, close: () => new Promise((resolve) => http.close(resolve)) };
}

describe('JobManagerClient (several JobManagers)', () => {
  const closers: Array<() => Promise<unknown>> = [];
  afterEach(async () => {
    for (const close of closers.splice(0)) await close();
  });

  it('goes on to the next JobManager when one cannot be reached, and stays with the one that answered', async () => {
    const up = await server(() => ({ status: 200, body: { jobs: [] } }));
    closers.push(up.close);
    const down = `http://127.0.0.1:${await closedPort()}`;
    const client = new JobManagerClient([down, up.url]);
    expect(await client.get('/jobs')).to.deep.equal({ jobs: [] });
    expect(client.baseUrl).to.equal(up.url);
    await client.get('/jobs');
    expect(up.seen).to.have.length(2);
  });

  it("follows a standby's redirect to the leader with the call's method, body and token", async () => {
    const leader = await server((request) =>
      request.method === 'POST' ? { status: 200, body: { jobid: 'abc' } } : { status: 404 },
    );
    closers.push(leader.close);
    const standby = await server((request) => ({ status: 307, location: `${leader.url}${request.url}` }));
    closers.push(standby.close);
    const client = new JobManagerClient([standby.url], { token: 'a-token-of-sixteen-chars' });
    expect(await client.post('/jobs', { name: 'j' })).to.deep.equal({ jobid: 'abc' });
    expect(standby.seen.map((s) => s.method)).to.deep.equal(['POST']);
    expect(leader.seen).to.deep.equal([
      { method: 'POST', url: '/jobs', authorization: 'Bearer a-token-of-sixteen-chars', body: '{"name":"j"}' },
    ]);
  });

  it('does not send a POST that timed out to another JobManager, and takes a refusal as the answer', async () => {
    const silent = await server(() => null);
    closers.push(silent.close);
    const other = await server(() => ({ status: 200, body: {} }));
    closers.push(other.close);
    const timedOut = await rejection(new JobManagerClient([silent.url, other.url]).post('/jobs', {}, 300));
    expect(timedOut).to.be.instanceOf(RestError);
    expect((timedOut as RestError).reason).to.equal('timed-out');
    expect(other.seen).to.deep.equal([]);

    const refusing = await server(() => ({
      status: 404,
      body: { _tag: 'RestError', reason: 'unknown-job', message: 'no job 42' },
    }));
    closers.push(refusing.close);
    const refused = await rejection(new JobManagerClient([refusing.url, other.url]).get('/jobs/42'));
    expect(refused).to.be.instanceOf(RestRefusal);
    expect(other.seen).to.deep.equal([]);
  });

  it('names every JobManager it tried when none answers', async () => {
    const [a, b] = [await closedPort(), await closedPort()];
    const error = await rejection(
      new JobManagerClient([`http://127.0.0.1:${a}`, `http://127.0.0.1:${b}`]).get('/overview'),
    );
    expect(error).to.be.instanceOf(RestError);
    expect((error as RestError).reason).to.equal('unreachable');
    expect((error as RestError).message).to.match(/^no JobManager answered: cannot reach the JobManager at .*; cannot/);
    expect((error as RestError).details['urls']).to.have.length(2);
  });
});
