/**
 * RestClient.getLarge, the CLI's read of a job's result (streamed by the server): a body that comes in pieces is
 * decoded as it comes, a character split between two pieces included; one that stops coming fails `timed-out`,
 * saying that it stopped (not that nothing answered). A plain HTTP server on loopback stands in for the JobManager.
 */
import { expect } from 'chai';
import { once } from 'node:events';
import { createServer, type ServerResponse } from 'node:http';
import { RestError } from '../../lib/core/errors.js';
import { RestClient } from '../../lib/cli/RestClient.js';
import { rejection } from '../rpc/support/transports.js';

/** A server whose every answer `respond` writes. */
async function server(respond: (response: ServerResponse) => void) {
  const http = createServer((_request, response) => respond(response));
  http.listen(0, '127.0.0.1');
  await once(http, 'listening');
  const { port } = http.address() as { port: number };
  return {
    url: `http://127.0.0.1:${port}`,
    close: () => {
      http.closeAllConnections();
      return new Promise((resolve) => http.close(resolve));
    },
  };
}

describe('RestClient.getLarge (a streamed answer)', () => {
  const closers: Array<() => Promise<unknown>> = [];
  afterEach(async () => {
    for (const close of closers.splice(0)) await close();
  });

  it('decodes a body that comes in pieces, a character cut between two of them, into one JSON answer', async () => {
    const text = JSON.stringify({ name: 'é 日本 😀', bytes: { base64: 'A'.repeat(100_000) } });
    const bytes = Buffer.from(text);
    const cut = bytes.indexOf(Buffer.from('😀')) + 2;
    const up = await server((response) => {
      response.writeHead(200, { 'content-type': 'application/json' });
      response.write(bytes.subarray(0, cut), () => setImmediate(() => response.end(bytes.subarray(cut))));
    });
    closers.push(up.close);
    expect(await new RestClient(up.url).getLarge('/jobs/x/result', 5_000)).to.deep.equal(JSON.parse(text));
  });

  it('fails timed-out, saying the answer stopped coming, when its body stalls', async () => {
    const up = await server((response) => {
      response.writeHead(200, { 'content-type': 'application/json' });
      response.write('{"status":{"id":"COMPLETED"},'); // and nothing more
    });
    closers.push(up.close);
    const error = await rejection(new RestClient(up.url).getLarge('/jobs/x/result', 50));
    expect(error).to.be.instanceOf(RestError);
    expect(error).to.include({ reason: 'timed-out' });
    expect((error as Error).message).to.equal(
      `the JobManager at ${up.url} stopped sending its answer to GET /jobs/x/result: nothing came for 50 ms`,
    );
  });
});
