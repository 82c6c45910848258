/**
 * One named channel of a Link: the Endpoint a gateway talks through (`postMessage`,
 * `addEventListener('message')`, `removeEventListener` — the shape comlink's Endpoint has too),
 * plus close and delivery-failure notices. Messages that arrive while nobody listens wait in its
 * backlog (bounded by the link) and go, in order, to its first listener.
 */
import { IllegalArgumentError } from '../core/errors.js';

/** 'closed': this side closed it. 'lost': the peer closed it or went away. */
export type CloseKind = 'closed' | 'lost';

/** What a channel listener receives (the part of a MessageEvent comlink reads). */
export interface ChannelMessageEvent {
  readonly data: unknown;
}

export type ChannelListener =
  | ((event: ChannelMessageEvent) => void)
  | { handleEvent(event: ChannelMessageEvent): void };

/** One named channel of a Link: a comlink Endpoint plus close and delivery-failure notices. */
export interface Channel {
  readonly name: string;
  readonly closed: boolean;
  /** Message listeners attached now (leak checks). */
  readonly listenerCount: number;
  /**
   * Queues `message` for the next batch; dropped once closed. Transfer lists are refused: a Link carries cloneable data
   * only.
   */
  postMessage(message: unknown, transfer?: readonly unknown[]): void;
  /**
   * Queues `message` without sending a batch for it: it goes with the next batch the link sends (anything posted on any
   * channel), or alone after WITH_NEXT_MAX_WAIT_MS (Link.ts). Dropped once closed.
   */
  postWithNext(message: unknown): void;
  addEventListener(type: string, listener: ChannelListener): void;
  removeEventListener(type: string, listener: ChannelListener): void;
  /** `handler` is told once when the channel closes (with the link, or by `close()`); returns an unsubscribe. */
  onClose(handler: (reason: string, kind: CloseKind) => void): () => void;
  /** `handler` is told of each message of this channel that could not be sent (it could not be cloned). */
  onUndeliverable(handler: (message: unknown, error: unknown) => void): () => void;
  /** Drops this channel from the link (listeners removed, close handlers told, kind 'closed'); the link lives on. */
  close(reason?: string): void;
}

/** What a channel needs from its link. */
export interface LinkSide {
  post(name: string, message: unknown): void;
  postWithNext(name: string, message: unknown): void;
  detach(channel: LinkChannel): void;
  /** Reserves room for one buffered message; false when the link's buffer is full. */
  reserveBuffer(): boolean;
  releaseBuffer(count: number): void;
}

export class LinkChannel implements Channel {
  readonly #listeners: ChannelListener[] = [];
  readonly #closeHandlers = new Set<(reason: string, kind: CloseKind) => void>();
  readonly #undeliverableHandlers = new Set<(message: unknown, error: unknown) => void>();
  /** Messages that arrived while nobody listened, or behind ones that did (to keep the order). */
  #backlog: unknown[] = [];
  #closed = false;
  /** Someone called link.channel(name); until then it only holds arrivals. */
  opened = false;
  /** An onUnknownChannel handler has been given this name. */
  routed = false;

  constructor(
    readonly name: string,
    private readonly link: LinkSide,
  ) {}

  get closed(): boolean {
    return this.#closed;
  }

  get listenerCount(): number {
    return this.#listeners.length;
  }

  get backlogged(): number {
    return this.#backlog.length;
  }

  postMessage(message: unknown, transfer?: readonly unknown[]): void {
    if (transfer !== undefined && transfer.length > 0) {
      throw new IllegalArgumentError(
        'invalid-value',
        `channel "${this.name}": a Link carries structured-cloneable data only ` +
          `(it may cross to a child process); transfer lists are not supported`,
        {
          argument: 'transfer',
          value: transfer.length,
        },
      );
    }
    if (this.#closed) return;
    this.link.post(this.name, message);
  }

  postWithNext(message: unknown): void {
    if (this.#closed) return;
    this.link.postWithNext(this.name, message);
  }

  addEventListener(type: string, listener: ChannelListener): void {
    if (type !== 'message' || this.#closed) return;
    this.#listeners.push(listener);
    // The first listener gets what waited for it, in order, before anything newer.
    if (this.#backlog.length > 0) this.#drainBacklog();
  }

  removeEventListener(type: string, listener: ChannelListener): void {
    if (type !== 'message') return;
    const index = this.#listeners.indexOf(listener);
    if (index >= 0) this.#listeners.splice(index, 1);
  }

  onClose(handler: (reason: string, kind: CloseKind) => void): () => void {
    this.#closeHandlers.add(handler);
    return () => this.#closeHandlers.delete(handler);
  }

  onUndeliverable(handler: (message: unknown, error: unknown) => void): () => void {
    this.#undeliverableHandlers.add(handler);
    return () => this.#undeliverableHandlers.delete(handler);
  }

  close(reason = `channel "${this.name}" closed by this side`): void {
    if (this.#closed) return;
    this.link.detach(this);
    this.shutdown(reason, 'closed');
  }

  /** An incoming message: to the listeners now, or into the backlog. */
  deliver(message: unknown): void {
    if (this.#closed) return;
    if (this.#listeners.length > 0 && this.#backlog.length === 0) {
      this.#dispatch(message);
    } else if (this.link.reserveBuffer()) {
      this.#backlog.push(message);
    }
  }

  /** Tells the undeliverable handlers; false when there was none. */
  undeliverable(message: unknown, error: unknown): boolean {
    if (this.#undeliverableHandlers.size === 0) return false;
    for (const handler of [...this.#undeliverableHandlers]) handler(message, error);
    return true;
  }

  /** Closes without detaching from the link (the link is dropping all its channels). */
  shutdown(reason: string, kind: CloseKind): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#listeners.length = 0;
    this.link.releaseBuffer(this.#backlog.length);
    this.#backlog = [];
    this.#undeliverableHandlers.clear();
    const handlers = [...this.#closeHandlers];
    this.#closeHandlers.clear();
    for (const handler of handlers) {
      try {
        handler(reason, kind);
      } catch (error) {
        rethrowLater(error);
      }
    }
  }

  #drainBacklog(): void {
    const backlog = this.#backlog;
    let i = 0;
    while (i < backlog.length && this.#listeners.length > 0 && !this.#closed) this.#dispatch(backlog[i++]);
    this.link.releaseBuffer(i);
    if (this.#backlog === backlog) backlog.splice(0, i);
  }

  #dispatch(message: unknown): void {
    const event: ChannelMessageEvent = { data: message };
    // A listener may remove itself (or another) while we iterate: iterate over a snapshot then.
    const listeners = this.#listeners.length === 1 ? this.#listeners : [...this.#listeners];
    for (const listener of listeners) {
      try {
        if (typeof listener === 'function') listener(event);
        else listener.handleEvent(event);
      } catch (error) {
        rethrowLater(error);
      }
    }
  }
}

/** A listener or handler bug must not stop the rest of a batch; it surfaces as an uncaught error. */
export function rethrowLater(error: unknown): void {
  queueMicrotask(() => {
    throw error;
  });
}
