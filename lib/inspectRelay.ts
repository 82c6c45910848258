/**
 * The local relay between a running cluster and the Stately inspector in a browser.
 *
 * http://localhost:<port>/ serves a page that embeds the inspector (https://stately.ai/inspect) and
 * opens a WebSocket back to this server; every inspection event the cluster publishes is sent to every
 * connected page as one JSON text message, which the page posts into the inspector's frame once the
 * frame says `@statelyai.connected`. A page that connects late first gets the announcements of the
 * live actors whose announcement left the history, then the last 10,000 events, so it still learns
 * of the actors started before it came (the SlotManager, every TaskSlotTable). Messages a client
 * sends are passed on to the other clients, so any Stately WebSocket inspector or receiver can join.
 * It listens on localhost only: the events carry task configs and outputs.
 *
 * `close()` ends every connection and both servers: an open browser tab never keeps the process
 * alive (the relay of `@statelyai/inspect/server` leaves its connections open, which did).
 */
import { createServer, type Server } from 'node:http';
import { WebSocketServer, WebSocket } from 'ws';
import { ConfigurationError } from './core/errors.js';

export interface StatelyRelayOptions {
  readonly port: number;
}

const INSPECTOR_URL = 'https://stately.ai/inspect';
/** How many past events a late page receives. */
const HISTORY_LIMIT = 10_000;

/** A kept event; `actor` is the session id when it announces an actor (`@xstate.actor`). */
interface Kept {
  readonly text: string;
  readonly actor?: string;
}

export class StatelyRelay {
  readonly url: string;
  readonly #http: Server;
  readonly #sockets: WebSocketServer;
  /** The last HISTORY_LIMIT events, oldest first. */
  readonly #history: Kept[] = [];
  /** Announcements of live actors that left the history, by session id (a late page needs them first). */
  readonly #olderActors = new Map<string, string>();
  /** The session ids of the actors announced and not ended. */
  readonly #live = new Set<string>();
  #closed: Promise<void> | null = null;

  private constructor(http: Server, sockets: WebSocketServer, port: number) {
    this.#http = http;
    this.#sockets = sockets;
    this.url = `http://localhost:${port}`;
    sockets.on('connection', (socket) => {
      for (const text of this.#olderActors.values()) socket.send(text);
      for (const { text } of this.#history) socket.send(text);
      socket.on('message', (data, isBinary) => {
        if (isBinary) return;
        const text = data.toString();
        this.#remember({ text });
        for (const other of sockets.clients) if (other !== socket && other.readyState === WebSocket.OPEN) other.send(text);
      });
      // A page that goes away mid-send must not take the relay with it.
      socket.on('error', () => socket.terminate());
    });
  }

  /** Listens on localhost:`port`; a port in use fails with ConfigurationError. */
  static async start(options: StatelyRelayOptions): Promise<StatelyRelay> {
    const { port } = options;
    const page = bridgePage(port, INSPECTOR_URL);
    const http = createServer((request, response) => {
      response.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' });
      response.end(page);
    });
    await new Promise<void>((resolve, reject) => {
      http.once('error', (error: NodeJS.ErrnoException) =>
        reject(new ConfigurationError('invalid-value', `inspect.stately.port ${port} is not free (${error.code ?? error.message}); choose another port`, { option: 'inspect.stately.port' })),
      );
      http.listen(port, 'localhost', () => resolve());
    });
    const sockets = new WebSocketServer({ server: http });
    return new StatelyRelay(http, sockets, port);
  }

  /** Sends one event to every connected client and keeps it for those that come later. */
  publish(event: unknown): void {
    if (this.#closed) return;
    const text = JSON.stringify(event);
    const { type, sessionId, snapshot } = (event ?? {}) as { type?: unknown; sessionId?: unknown; snapshot?: { status?: unknown } };
    const announces = type === '@xstate.actor' && typeof sessionId === 'string';
    if (announces) this.#live.add(sessionId);
    if (type === '@xstate.snapshot' && typeof sessionId === 'string' && typeof snapshot?.status === 'string' && snapshot.status !== 'active') {
      // An actor that ended (done, error, stopped) needs no announcement any more.
      this.#live.delete(sessionId);
      this.#olderActors.delete(sessionId);
    }
    this.#remember(announces ? { text, actor: sessionId } : { text });
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

  #remember(kept: Kept): void {
    this.#history.push(kept);
    if (this.#history.length <= HISTORY_LIMIT) return;
    const leaving = this.#history.shift()!;
    if (leaving.actor !== undefined && this.#live.has(leaving.actor)) this.#olderActors.set(leaving.actor, leaving.text);
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
