/**
 * The local relay between a running cluster and the Stately inspector in a browser.
 *
 * http://localhost:<port>/ serves a page that embeds the inspector (https://stately.ai/inspect) and
 * opens a WebSocket back to this server; every inspection event the cluster publishes is sent to every
 * connected page as one JSON text message, which the page posts into the inspector's frame once the
 * frame says `@statelyai.connected`. A page that connects late first gets the events kept so far (the
 * last `historyLimit`), so it still learns of the actors started before it came. Messages a client
 * sends are passed on to the other clients, so any Stately WebSocket inspector or receiver can join.
 *
 * `close()` ends every connection and both servers: an open browser tab never keeps the process
 * alive (the relay of `@statelyai/inspect/server` leaves its connections open, which did).
 */
import { createServer, type Server } from 'node:http';
import { WebSocketServer, WebSocket } from 'ws';
import { ConfigurationError } from './core/errors.js';

export interface StatelyRelayOptions {
  readonly port: number;
  /** The inspector the page embeds. */
  readonly inspectorUrl?: string;
  /** How many past events a late page receives first (default 10,000). */
  readonly historyLimit?: number;
}

export const DEFAULT_INSPECTOR_URL = 'https://stately.ai/inspect';
const DEFAULT_HISTORY_LIMIT = 10_000;

export class StatelyRelay {
  readonly url: string;
  readonly #http: Server;
  readonly #sockets: WebSocketServer;
  readonly #history: string[] = [];
  readonly #historyLimit: number;
  #closed: Promise<void> | null = null;

  private constructor(http: Server, sockets: WebSocketServer, port: number, historyLimit: number) {
    this.#http = http;
    this.#sockets = sockets;
    this.#historyLimit = historyLimit;
    this.url = `http://localhost:${port}`;
    sockets.on('connection', (socket) => {
      for (const message of this.#history) socket.send(message);
      socket.on('message', (data, isBinary) => {
        if (isBinary) return;
        const text = data.toString();
        this.#remember(text);
        for (const other of sockets.clients) if (other !== socket && other.readyState === WebSocket.OPEN) other.send(text);
      });
      // A page that goes away mid-send must not take the relay with it.
      socket.on('error', () => socket.terminate());
    });
  }

  /** Listens on `port` (all interfaces' localhost); a port in use fails with ConfigurationError. */
  static async start(options: StatelyRelayOptions): Promise<StatelyRelay> {
    const { port } = options;
    const inspectorUrl = options.inspectorUrl ?? DEFAULT_INSPECTOR_URL;
    const historyLimit = options.historyLimit ?? DEFAULT_HISTORY_LIMIT;
    const page = bridgePage(port, inspectorUrl);
    const http = createServer((request, response) => {
      response.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' });
      response.end(page);
    });
    await new Promise<void>((resolve, reject) => {
      http.once('error', (error: NodeJS.ErrnoException) =>
        reject(new ConfigurationError('invalid-value', `inspect.stately.port ${port} is not free (${error.code ?? error.message}); choose another port`, { option: 'inspect.stately.port' })),
      );
      http.listen(port, () => resolve());
    });
    const sockets = new WebSocketServer({ server: http });
    return new StatelyRelay(http, sockets, port, historyLimit);
  }

  /** How many pages (or other WebSocket clients) are connected. */
  get clients(): number {
    return this.#sockets.clients.size;
  }

  /** Sends one event to every connected client and keeps it for those that come later. */
  publish(event: unknown): void {
    if (this.#closed) return;
    const text = JSON.stringify(event);
    this.#remember(text);
    for (const client of this.#sockets.clients) if (client.readyState === WebSocket.OPEN) client.send(text);
  }

  /** Ends every connection and both servers; resolves when the port is free. Idempotent. */
  close(): Promise<void> {
    this.#closed ??= (async () => {
      // Let what was sent on the last ticks reach the pages before they are cut off.
      await Promise.all([...this.#sockets.clients].map((client) => flushed(client)));
      for (const client of this.#sockets.clients) client.terminate();
      await new Promise<void>((resolve) => this.#sockets.close(() => resolve()));
      this.#http.closeAllConnections();
      await new Promise<void>((resolve) => this.#http.close(() => resolve()));
    })();
    return this.#closed;
  }

  #remember(text: string): void {
    this.#history.push(text);
    if (this.#history.length > this.#historyLimit) this.#history.splice(0, this.#history.length - this.#historyLimit);
  }
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

function bridgePage(port: number, inspectorUrl: string): string {
  const frameUrl = JSON.stringify(inspectorUrl);
  return `<!doctype html>
<html>
<head>
<meta charset="utf-8">
<title>slotwise · Stately inspector</title>
<style>html, body, iframe { margin: 0; width: 100%; height: 100%; border: 0; }</style>
</head>
<body>
<iframe id="inspector"></iframe>
<script>
  const frame = document.getElementById('inspector');
  frame.src = ${frameUrl};
  const waiting = [];
  let ready = false;
  addEventListener('message', (message) => {
    if (message.data?.type !== '@statelyai.connected' || ready) return;
    ready = true;
    for (const event of waiting.splice(0)) frame.contentWindow.postMessage(event, '*');
  });
  const socket = new WebSocket('ws://' + location.hostname + ':${port}');
  socket.onmessage = (message) => {
    const event = JSON.parse(message.data);
    if (ready) frame.contentWindow.postMessage(event, '*');
    else waiting.push(event);
  };
  socket.onclose = () => { document.title = 'slotwise · cluster closed'; };
</script>
</body>
</html>
`;
}
