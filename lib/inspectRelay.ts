/**
 * The local relay between a running cluster and the Stately inspector in a browser.
 *
 * http://localhost:<port>/?token=<token> serves a page that embeds the inspector
 * (https://stately.ai/inspect) and opens a WebSocket back to this server; every inspection event
 * the cluster publishes is sent to every connected page as one JSON text message, which the page
 * posts into the inspector's frame once the frame says `@statelyai.connected`. A page that connects
 * late first gets the announcements of the live actors whose announcement left the history, then
 * the last 10,000 events, so it still learns of the actors started before it came (the
 * SlotManager, every TaskSlotTable). Messages a client sends are passed on to the other clients,
 * so any Stately WebSocket inspector or receiver can join.
 *
 * The events carry task configs and outputs, and what a client sends reaches every page, so only
 * holders of the relay's token get in: a random token, new at every start, shown only in its URL.
 * The page and the WebSocket (`ws://localhost:<port>/?token=<token>`) need it; a WebSocket from a
 * browser page of another origin is refused even with it, and so is a request naming another host
 * (DNS rebinding); any other path answers 404. It listens on localhost only; port 0 picks a free
 * port, which `url` names.
 *
 * `close()` sends every client a close frame (1001, going away), ends the connections still open
 * after a moment, and both servers: an open browser tab never keeps the process alive (the relay
 * of `@statelyai/inspect/server` leaves its connections open, which did).
 */
import { randomBytes, timingSafeEqual } from 'node:crypto';
import { createServer, STATUS_CODES, type IncomingMessage, type Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer, WebSocket } from 'ws';
import { ConfigurationError } from './core/errors.js';

export interface StatelyRelayOptions {
  /** The port on localhost; 0 picks a free one. */
  readonly port: number;
}

const INSPECTOR_URL = 'https://stately.ai/inspect';
/** How many past events a late page receives. */
const HISTORY_LIMIT = 10_000;
/** How long close() waits for clients to answer the close frame before cutting them off. */
const CLOSE_GRACE_MS = 1_000;

/** A kept event; `actor` is the session id when it announces an actor (`@xstate.actor`). */
interface Kept {
  readonly text: string;
  readonly actor?: string;
}

export class StatelyRelay {
  /** The page to open, token included: `http://localhost:<port>/?token=<token>`. */
  readonly url: string;
  /** The port it listens on (the one picked when 0 was asked). */
  readonly port: number;
  readonly #token: Buffer;
  readonly #hosts: ReadonlySet<string>;
  readonly #http: Server;
  readonly #sockets: WebSocketServer;
  /** The last HISTORY_LIMIT events, oldest first. */
  readonly #history: Kept[] = [];
  /** Announcements of live actors that left the history, by session id (a late page needs them first). */
  readonly #olderActors = new Map<string, string>();
  /** The session ids of the actors announced and not ended. */
  readonly #live = new Set<string>();
  #closed: Promise<void> | null = null;

  private constructor(http: Server, port: number, token: string) {
    this.#http = http;
    this.port = port;
    this.#token = Buffer.from(token);
    this.#hosts = new Set([`localhost:${port}`, `127.0.0.1:${port}`, `[::1]:${port}`]);
    this.url = `http://localhost:${port}/?token=${token}`;
    const sockets = (this.#sockets = new WebSocketServer({ noServer: true }));
    const page = bridgePage(token, INSPECTOR_URL);
    http.on('request', (request, response) => {
      const refused = this.#refusal(request, false);
      if (refused !== null) {
        response.writeHead(refused.status, { 'content-type': 'text/plain; charset=utf-8' });
        response.end(`${refused.text}\n`);
        return;
      }
      // The page's URL holds the token: no Referer may carry it to the inspector's frame.
      response.writeHead(200, {
        'content-type': 'text/html; charset=utf-8',
        'cache-control': 'no-store',
        'referrer-policy': 'no-referrer',
        'x-content-type-options': 'nosniff',
      });
      response.end(request.method === 'HEAD' ? undefined : page);
    });
    http.on('upgrade', (request: IncomingMessage, socket: Duplex, head: Buffer) => {
      const refused = this.#refusal(request, true);
      if (refused !== null) {
        socket.end(
          `HTTP/1.1 ${refused.status} ${STATUS_CODES[refused.status]}\r\nconnection: close\r\ncontent-type: ` +
            `text/plain; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(refused.text)}\r\n\r\n${refused.text}`,
        );
        return;
      }
      sockets.handleUpgrade(request, socket, head, (client) => sockets.emit('connection', client, request));
    });
    sockets.on('connection', (socket: WebSocket) => {
      for (const text of this.#olderActors.values()) socket.send(text);
      for (const { text } of this.#history) socket.send(text);
      socket.on('message', (data, isBinary) => {
        if (isBinary) return;
        const text = data.toString();
        this.#remember({ text });
        for (const other of sockets.clients)
          if (other !== socket && other.readyState === WebSocket.OPEN) other.send(text);
      });
      // A page that goes away mid-send must not take the relay with it.
      socket.on('error', () => socket.terminate());
    });
  }

  /** Listens on localhost:`port` (0: a free port) with a new token; a port in use fails with ConfigurationError. */
  static async start(options: StatelyRelayOptions): Promise<StatelyRelay> {
    const { port } = options;
    const http = createServer();
    await new Promise<void>((resolve, reject) => {
      http.once('error', (error: NodeJS.ErrnoException) =>
        reject(
          new ConfigurationError(
            'invalid-value',
            `inspect.stately.port ${port} is not free ` +
              `(${error.code ?? error.message}); choose another port, or 0 for any free one`,
            { option: 'inspect.stately.port' },
          ),
        ),
      );
      http.listen(port, 'localhost', () => resolve());
    });
    const address = http.address();
    const listening = typeof address === 'object' && address !== null ? address.port : port;
    return new StatelyRelay(http, listening, randomBytes(18).toString('base64url'));
  }

  /** Why a request may not have the page or a WebSocket, or null when it may. */
  #refusal(request: IncomingMessage, upgrade: boolean): { status: number; text: string } | null {
    if (!this.#hosts.has(request.headers.host ?? ''))
      return { status: 403, text: 'Forbidden: this relay answers to localhost only' };
    let url: URL;
    try {
      url = new URL(request.url ?? '/', 'http://localhost');
    } catch {
      return { status: 400, text: 'Bad Request' };
    }
    if (url.pathname !== '/') return { status: 404, text: 'Not Found' };
    if (!upgrade && request.method !== 'GET' && request.method !== 'HEAD')
      return { status: 405, text: 'Method Not Allowed' };
    const token = Buffer.from(url.searchParams.get('token') ?? '');
    if (token.length !== this.#token.length || !timingSafeEqual(token, this.#token)) {
      return {
        status: 403,
        text: "Forbidden: open the relay's URL with its token, as the cluster printed it (cluster.inspectorUrl)",
      };
    }
    // A browser always names the page's origin: only the relay's own page may connect.
    const origin = request.headers.origin;
    if (
      upgrade &&
      origin !== undefined &&
      !(origin.startsWith('http://') && this.#hosts.has(origin.slice('http://'.length)))
    ) {
      return { status: 403, text: 'Forbidden: another origin' };
    }
    return null;
  }

  /** Sends one event to every connected client and keeps it for those that come later. */
  publish(event: unknown): void {
    if (this.#closed) return;
    const text = JSON.stringify(event);
    const { type, sessionId, snapshot } = (event ?? {}) as {
      type?: unknown;
      sessionId?: unknown;
      snapshot?: { status?: unknown };
    };
    const announces = type === '@xstate.actor' && typeof sessionId === 'string';
    if (announces) this.#live.add(sessionId);
    if (
      type === '@xstate.snapshot' &&
      typeof sessionId === 'string' &&
      typeof snapshot?.status === 'string' &&
      snapshot.status !== 'active'
    ) {
      // An actor that ended (done, error, stopped) needs no announcement any more.
      this.#live.delete(sessionId);
      this.#olderActors.delete(sessionId);
    }
    this.#remember(announces ? { text, actor: sessionId } : { text });
    for (const client of this.#sockets.clients) if (client.readyState === WebSocket.OPEN) client.send(text);
  }

  /**
   * Sends every client a close frame (1001), ends the connections and both servers; resolves when the port is free.
   * Idempotent.
   */
  close(): Promise<void> {
    this.#closed ??= (async () => {
      // Let what was sent on the last ticks reach the pages before they are told to go.
      const clients = [...this.#sockets.clients];
      await Promise.all(clients.map((client) => flushed(client)));
      await Promise.all(clients.map((client) => closed(client)));
      await new Promise<void>((resolve) => this.#sockets.close(() => resolve()));
      this.#http.closeAllConnections();
      await new Promise<void>((resolve) => this.#http.close(() => resolve()));
    })();
    return this.#closed;
  }

  #remember(kept: Kept): void {
    this.#history.push(kept);
    if (this.#history.length <= HISTORY_LIMIT) return;
    const leaving = this.#history.shift()!;
    if (leaving.actor !== undefined && this.#live.has(leaving.actor))
      this.#olderActors.set(leaving.actor, leaving.text);
  }
}

/**
 * Sends the client a close frame (1001: going away) and resolves when it is closed, cutting it off after
 * CLOSE_GRACE_MS.
 */
function closed(client: WebSocket): Promise<void> {
  if (client.readyState === WebSocket.CLOSED) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(() => client.terminate(), CLOSE_GRACE_MS);
    client.once('close', () => {
      clearTimeout(timer);
      resolve();
    });
    client.close(1001, 'the cluster is closing');
  });
}

/** Resolves when the client's queued sends have left (or after a short grace). */
function flushed(client: WebSocket): Promise<void> {
  return new Promise((resolve) => {
    const started = Date.now();
    const poll = () => {
      if (client.bufferedAmount === 0 || client.readyState !== WebSocket.OPEN || Date.now() - started > 500) resolve();
      else setTimeout(poll, 10);
    };
    poll();
  });
}

function bridgePage(token: string, inspectorUrl: string): string {
  const frameUrl = JSON.stringify(inspectorUrl);
  const frameOrigin = JSON.stringify(new URL(inspectorUrl).origin);
  return `<!doctype html>
<html>
<head>
<meta charset="utf-8">
<meta name="referrer" content="no-referrer">
<title>slotwise · Stately inspector</title>
<style>html, body, iframe { margin: 0; width: 100%; height: 100%; border: 0; }</style>
</head>
<body>
<iframe id="inspector"></iframe>
<script>
  const frame = document.getElementById('inspector');
  frame.src = ${frameUrl};
  // The events go to the inspector's origin only, whatever the frame may have navigated to.
  const post = (event) => frame.contentWindow.postMessage(event, ${frameOrigin});
  const waiting = [];
  let ready = false;
  addEventListener('message', (message) => {
    if (message.origin !== ${frameOrigin} || message.data?.type !== '@statelyai.connected' || ready) return;
    ready = true;
    for (const event of waiting.splice(0)) post(event);
  });
  const socket = new WebSocket('ws://' + location.host + '/?token=' + ${JSON.stringify(encodeURIComponent(token))});
  socket.onmessage = (message) => {
    const event = JSON.parse(message.data);
    if (ready) post(event);
    else waiting.push(event);
  };
  socket.onclose = () => { document.title = 'slotwise · cluster closed'; };
</script>
</body>
</html>
`;
}
