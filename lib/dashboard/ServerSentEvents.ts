/**
 * The dashboard's Server-Sent Event streams over fastify: each stream takes over its reply
 * (`reply.hijack()`), gets a comment every KEEPALIVE_MS so proxies and browsers keep it open, and
 * ends when the page goes or the server closes. Streams that follow the view share one timer: every
 * `intervalMs` while any listens, the view is built once, and sent to each only when it changed
 * since that stream's last one (a quiet cluster costs one JSON string a tick, and no bytes).
 */
import type { FastifyReply, FastifyRequest } from 'fastify';

const KEEPALIVE_MS = 15_000;

export interface EventStream {
  send(event: string, data: string): void;
}

interface Client extends EventStream {
  last: string | null;
  end(): void;
}

export class ServerSentEvents {
  readonly #intervalMs: number;
  readonly #render: () => string;
  readonly #clients = new Set<Client>();
  readonly #followers = new Set<Client>();
  #timer: ReturnType<typeof setInterval> | null = null;
  #keepalive: ReturnType<typeof setInterval> | null = null;
  #closed = false;

  constructor(intervalMs: number, render: () => string) {
    this.#intervalMs = intervalMs;
    this.#render = render;
  }

  /** Opens a stream on `reply`; `start` sends what comes first and returns what stops its feed. */
  open(request: FastifyRequest, reply: FastifyReply, start: (client: EventStream) => (() => void) | undefined): void {
    if (this.#closed) return void reply.code(503).send('the dashboard is closing\n');
    reply.hijack();
    const raw = reply.raw;
    raw.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-store',
      connection: 'keep-alive',
      'x-accel-buffering': 'no',
    });
    raw.write(': slotwise dashboard\n\n');
    let stop: (() => void) | undefined;
    const client: Client = {
      last: null,
      send: (event, data) => void raw.write(`event: ${event}\ndata: ${data}\n\n`),
      end: () => {
        if (!this.#clients.delete(client)) return;
        this.#followers.delete(client);
        stop?.();
        raw.end();
        this.#idle();
      },
    };
    this.#clients.add(client);
    request.raw.once('close', () => client.end());
    raw.once('error', () => client.end());
    stop = start(client);
    this.#keepalive ??= setInterval(() => {
      for (const c of this.#clients) c.send('ping', '{}');
    }, KEEPALIVE_MS).unref();
  }

  /** The client receives the view now and each time it changes. */
  followView(client: EventStream): void {
    const c = client as Client;
    this.#followers.add(c);
    this.#push(c, this.#render());
    this.#timer ??= setInterval(() => this.#tick(), this.#intervalMs).unref();
  }

  /** Ends every stream (the server is closing) and stops the timers. */
  close(): void {
    this.#closed = true;
    for (const client of [...this.#clients]) client.end();
    this.#idle();
  }

  #tick(): void {
    if (this.#followers.size === 0) return;
    const view = this.#render();
    for (const client of this.#followers) this.#push(client, view);
  }

  #push(client: Client, view: string): void {
    if (client.last === view) return;
    client.last = view;
    client.send('view', view);
  }

  #idle(): void {
    if (this.#followers.size === 0 && this.#timer !== null) {
      clearInterval(this.#timer);
      this.#timer = null;
    }
    if (this.#clients.size === 0 && this.#keepalive !== null) {
      clearInterval(this.#keepalive);
      this.#keepalive = null;
    }
  }
}
