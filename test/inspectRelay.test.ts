/**
 * The Stately relay on its own: who gets in (the token, the origin, the host), what a page that
 * connects late receives first, and how it closes.
 */
import { expect } from 'chai';
import { request } from 'node:http';
import { WebSocket } from 'ws';
import { StatelyRelay } from '../lib/inspectRelay.js';
import { eventually } from './support/eventually.js';

/** The relay's WebSocket URL: its page's URL with ws: (token included). */
const socketUrl = (relay: StatelyRelay) => relay.url.replace(/^http:/, 'ws:');

/** Opens a WebSocket and resolves with the client, or with the HTTP status it was refused with. */
function connect(url: string, headers: Record<string, string> = {}): Promise<WebSocket | number> {
  return new Promise((resolve, reject) => {
    const client = new WebSocket(url, { headers });
    client.once('open', () => resolve(client));
    client.once('unexpected-response', (_request, response) => {
      resolve(response.statusCode ?? 0);
      client.terminate();
    });
    client.once('error', reject);
  });
}

/** A GET with the given Host header (fetch cannot set one). */
function getWithHost(port: number, path: string, host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    request({ host: 'localhost', port, path, headers: { host } }, (response) => {
      response.resume();
      resolve(response.statusCode ?? 0);
    })
      .once('error', reject)
      .end();
  });
}

describe('StatelyRelay', function () {
  this.timeout(20_000);
  let relay: StatelyRelay;

  beforeEach(async () => {
    // Port 0: the relay picks a free one and names it in its URL.
    relay = await StatelyRelay.start({ port: 0 });
  });

  afterEach(async () => {
    await relay.close();
  });

  it('picks a free port for port 0 and shows it, with a random token, in its URL', async () => {
    expect(relay.port).to.be.above(0);
    expect(relay.url).to.match(new RegExp(`^http://localhost:${relay.port}/\\?token=[A-Za-z0-9_-]{24}$`));
    const other = await StatelyRelay.start({ port: 0 });
    try {
      expect(new URL(other.url).searchParams.get('token')).not.to.equal(new URL(relay.url).searchParams.get('token'));
    } finally {
      await other.close();
    }
  });

  it('serves its page only with its token, answers 404 elsewhere and refuses other hosts', async () => {
    const page = await fetch(relay.url);
    expect(page.status).to.equal(200);
    expect(page.headers.get('referrer-policy')).to.equal('no-referrer');
    const html = await page.text();
    expect(html).to.contain('https://stately.ai/inspect').and.to.contain(new URL(relay.url).searchParams.get('token')!);
    const base = `http://localhost:${relay.port}`;
    expect((await fetch(`${base}/`)).status, 'no token').to.equal(403);
    expect((await fetch(`${base}/?token=guess`)).status, 'a wrong token').to.equal(403);
    expect((await fetch(`${base}/favicon.ico`)).status).to.equal(404);
    expect((await fetch(`${base}/events${new URL(relay.url).search}`)).status).to.equal(404);
    expect((await fetch(relay.url, { method: 'POST' })).status).to.equal(405);
    // DNS rebinding: a page of evil.example resolved to 127.0.0.1 sends Host: evil.example.
    expect(await getWithHost(relay.port, `/${new URL(relay.url).search}`, `evil.example:${relay.port}`)).to.equal(403);
    // A path that is no URL is a bad request, not a crash.
    expect(await getWithHost(relay.port, '//x:99999', `localhost:${relay.port}`)).to.equal(400);
    expect((await fetch(relay.url)).status).to.equal(200);
  });

  it('lets in WebSocket clients with the token, from its own page or no browser, and refuses the rest', async () => {
    const token = new URL(relay.url).search;
    expect(await connect(`ws://localhost:${relay.port}/`), 'no token').to.equal(403);
    expect(await connect(`ws://localhost:${relay.port}/?token=guess`), 'a wrong token').to.equal(403);
    expect(await connect(`ws://localhost:${relay.port}/other${token}`), 'another path').to.equal(404);
    expect(await connect(socketUrl(relay), { origin: 'https://evil.example' }), 'another origin').to.equal(403);
    expect(
      await connect(socketUrl(relay), { origin: `http://localhost:${relay.port}.evil.example` }),
      'a look-alike origin',
    ).to.equal(403);
    const ownPage = await connect(socketUrl(relay), { origin: `http://localhost:${relay.port}` });
    const tool = await connect(socketUrl(relay));
    expect(ownPage).to.be.instanceOf(WebSocket);
    expect(tool).to.be.instanceOf(WebSocket);
    // What one client sends reaches the others: only token holders can inject events.
    const received: string[] = [];
    (ownPage as WebSocket).on('message', (data) => received.push(data.toString()));
    (tool as WebSocket).send(JSON.stringify({ type: '@xstate.event', sessionId: 'x:1' }));
    await eventually(() => received.length === 1, 'the event from the other client');
  });

  it('sends every client a close frame 1001 (going away) when it closes, then frees the port', async () => {
    const client = (await connect(socketUrl(relay))) as WebSocket;
    const closed = new Promise<number>((resolve) => client.once('close', (code) => resolve(code)));
    await relay.close();
    expect(await closed).to.equal(1001);
    expect(
      await fetch(relay.url).then(
        () => 'served',
        () => 'refused',
      ),
    ).to.equal('refused');
  });

  it(
    'gives a late page the announcements of live actors that left its ' +
      '10,000-event history, not those of ended ones, then the history',
    async () => {
      relay.publish({ type: '@xstate.actor', sessionId: 'x:long', name: 'slotManager' });
      relay.publish({ type: '@xstate.actor', sessionId: 'x:short', name: 'jobStatus' });
      relay.publish({ type: '@xstate.snapshot', sessionId: 'x:short', snapshot: { status: 'done' } });
      for (let i = 0; i < 10_000; i++) relay.publish({ type: '@xstate.event', sessionId: 'x:long', n: i });
      const received: Array<{ type: string; sessionId: string; n?: number }> = [];
      const client = new WebSocket(socketUrl(relay));
      client.on('message', (data) => received.push(JSON.parse(data.toString())));
      await new Promise((resolve, reject) => client.once('open', resolve).once('error', reject));
      await eventually(() => received.length === 10_001, 'the late page to receive what the relay kept');
      expect(received[0]).to.deep.include({ type: '@xstate.actor', sessionId: 'x:long' });
      expect(received.filter((e) => e.type === '@xstate.actor')).to.have.length(1);
      expect(received[1]).to.deep.include({ n: 0 });
      expect(received.at(-1)).to.deep.include({ n: 9_999 });
    },
  );
});
