/**
 * Link: many named channels over one Transport, with outgoing messages batched.
 *
 * Each channel is a comlink Endpoint (`postMessage`, `addEventListener('message')`,
 * `removeEventListener`), so a gateway can be exposed on one and wrapped on the other side. On the
 * wire a batch is one flat array `[name, message, name, message, …]`; the name `0` carries control
 * frames (only `bye`, a graceful close).
 *
 * Why batch: a cross-thread hop costs 100–300 µs of wake-up here (TOOLCHAIN.md), and a transport
 * message costs a clone and a native call whatever its size. Everything posted during one job — the
 * synchronous code and all the promise continuations it sets off — goes out as a single
 * `transport.send`: the first post queues a microtask that queues a `process.nextTick`, and a tick
 * queued from inside a microtask runs only once the microtask queue is empty. So 64 calls made in
 * a loop, or 64 answers produced by 64 promise chains, cross as one message, and no event-loop
 * turn is added to any of them.
 *
 * Messages for a channel nobody listens to yet are buffered (bounded) and delivered, in order, to
 * its first listener; `onUnknownChannel(prefix, handler)` lets a side open channels lazily (the
 * main thread serving `jm:<address>` when a TaskExecutor first calls that JobMaster). Closing —
 * ours, the peer's `bye`, or the transport dying — closes every channel, tells their close
 * handlers at once, and drops later sends.
 */
import { IllegalArgumentError } from '../core/errors.js';
import type { Transport } from './Transport.js';

/** 'closed': this side closed it. 'lost': the peer closed it or went away. */
export type CloseKind = 'closed' | 'lost';

/** What a channel listener receives (the part of a MessageEvent comlink reads). */
export interface ChannelMessageEvent {
  readonly data: unknown;
}

export type ChannelListener = ((event: ChannelMessageEvent) => void) | { handleEvent(event: ChannelMessageEvent): void };

/** One named channel of a Link: a comlink Endpoint plus close and delivery-failure notices. */
export interface Channel {
  readonly name: string;
  readonly closed: boolean;
  /** Message listeners attached now (leak checks). */
  readonly listenerCount: number;
  /** Queues `message` for the next batch; dropped once closed. Transfer lists are refused: a Link carries cloneable data only. */
  postMessage(message: unknown, transfer?: readonly unknown[]): void;
  addEventListener(type: string, listener: ChannelListener): void;
  removeEventListener(type: string, listener: ChannelListener): void;
  /** `handler` is told once when the channel closes (with the link, or by `close()`); returns an unsubscribe. */
  onClose(handler: (reason: string, kind: CloseKind) => void): () => void;
  /** `handler` is told of each message of this channel that could not be sent (it could not be cloned). */
  onUndeliverable(handler: (message: unknown, error: unknown) => void): () => void;
  /** Drops this channel from the link (listeners removed, close handlers told, kind 'closed'); the link lives on. */
  close(reason?: string): void;
}

export interface LinkOptions {
  /** Messages kept, over all channels, for channels with no listener yet; beyond that they are dropped. Default 10,000. */
  readonly maxBuffered?: number;
}

const CONTROL = 0;

interface ControlFrame {
  readonly bye?: string;
}

/** What a channel needs from its link. */
interface LinkSide {
  post(name: string, message: unknown): void;
  detach(channel: LinkChannel): void;
  /** Reserves room for one buffered message; false when the link's buffer is full. */
  reserveBuffer(): boolean;
  releaseBuffer(count: number): void;
}

class LinkChannel implements Channel {
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
      throw new IllegalArgumentError('invalid-value', `channel "${this.name}": a Link carries structured-cloneable data only (it may cross to a child process); transfer lists are not supported`, {
        argument: 'transfer',
        value: transfer.length,
      });
    }
    if (this.#closed) return;
    this.link.post(this.name, message);
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
function rethrowLater(error: unknown): void {
  queueMicrotask(() => {
    throw error;
  });
}

export class Link {
  readonly name: string;
  readonly #transport: Transport;
  readonly #maxBuffered: number;
  readonly #channels = new Map<string, LinkChannel>();
  readonly #unknownHandlers = new Map<string, (name: string) => void>();
  readonly #closedHandlers = new Set<(reason: string, kind: CloseKind) => void>();
  readonly #side: LinkSide;
  #outbox: unknown[] = [];
  #flushScheduled = false;
  #buffered = 0;
  #dropped = 0;
  #closeReason: string | undefined;
  #closeKind: CloseKind | undefined;

  /**
   * Takes over `transport`: its messages are this link's from now on (anything that is not a batch
   * — a bootstrap message sent before the link existed — is ignored). `name` is for messages:
   * `TaskExecutor te-1a2b`, `thread te-1a2b`.
   */
  constructor(name: string, transport: Transport, options: LinkOptions = {}) {
    const { maxBuffered = 10_000 } = options;
    if (typeof name !== 'string' || name === '') {
      throw new IllegalArgumentError('invalid-value', `a Link's name must be a non-empty string, got ${String(name)}`, { argument: 'name', value: name });
    }
    if (!Number.isInteger(maxBuffered) || maxBuffered < 0) {
      throw new IllegalArgumentError('out-of-range', `options.maxBuffered must be a non-negative integer, got ${maxBuffered}`, { argument: 'options.maxBuffered', value: maxBuffered });
    }
    this.name = name;
    this.#transport = transport;
    this.#maxBuffered = maxBuffered;
    this.#side = {
      post: (channelName, message) => this.#post(channelName, message),
      detach: (channel) => {
        if (this.#channels.get(channel.name) === channel) this.#channels.delete(channel.name);
      },
      reserveBuffer: () => this.#reserveBuffer(),
      releaseBuffer: (count) => {
        this.#buffered -= count;
      },
    };
    transport.onMessage((batch) => this.#receive(batch));
    transport.onClose((reason) => this.#shutdown(reason, 'lost'));
    if (transport.closed) queueMicrotask(() => this.#shutdown('the transport was already closed', 'lost'));
  }

  get closed(): boolean {
    return this.#closeKind !== undefined;
  }

  /** Why the link closed; undefined while open. */
  get closeReason(): string | undefined {
    return this.#closeReason;
  }

  /** 'closed' (by this side) or 'lost' (by the peer, or the transport died); undefined while open. */
  get closeKind(): CloseKind | undefined {
    return this.#closeKind;
  }

  /** Messages held for channels nobody listens to yet. */
  get buffered(): number {
    return this.#buffered;
  }

  /** Messages dropped because the buffer was full (see `maxBuffered`). */
  get dropped(): number {
    return this.#dropped;
  }

  /**
   * The channel `name` (the same object for the same name until it is closed). Messages that
   * arrived for it before are delivered to its first listener. On a closed link the channel
   * comes back closed.
   */
  channel(name: string): Channel {
    if (typeof name !== 'string' || name === '') {
      throw new IllegalArgumentError('invalid-value', `a channel name must be a non-empty string, got ${JSON.stringify(name)}`, { argument: 'name', value: name });
    }
    let channel = this.#channels.get(name);
    if (channel === undefined) {
      channel = new LinkChannel(name, this.#side);
      if (this.closed) channel.shutdown(this.#closeReason!, this.#closeKind!);
      else this.#channels.set(name, channel);
    }
    channel.opened = true;
    return channel;
  }

  /**
   * `handler(name)` is called, once per name, for the first message on a channel whose name starts
   * with `prefix` and that nobody opened — also for such messages already buffered. It is meant to
   * open the channel and listen on it (e.g. serve a gateway); the message that triggered it is
   * delivered right after it returns (or kept until a listener comes). The longest matching
   * prefix wins. Returns an unsubscribe.
   */
  onUnknownChannel(prefix: string, handler: (name: string) => void): () => void {
    if (typeof prefix !== 'string' || typeof handler !== 'function') {
      throw new IllegalArgumentError('invalid-type', 'onUnknownChannel(prefix, handler) needs a string prefix and a function', { argument: 'prefix', value: prefix });
    }
    this.#unknownHandlers.set(prefix, handler);
    for (const channel of [...this.#channels.values()]) {
      if (!channel.opened && !channel.routed && channel.name.startsWith(prefix)) this.#route(channel);
    }
    return () => {
      if (this.#unknownHandlers.get(prefix) === handler) this.#unknownHandlers.delete(prefix);
    };
  }

  /** `handler(reason, kind)` is told once when the link closes (at once, on a microtask, if it already has). Returns an unsubscribe. */
  onClosed(handler: (reason: string, kind: CloseKind) => void): () => void {
    if (this.closed) {
      const reason = this.#closeReason!;
      const kind = this.#closeKind!;
      queueMicrotask(() => handler(reason, kind));
      return () => {};
    }
    this.#closedHandlers.add(handler);
    return () => this.#closedHandlers.delete(handler);
  }

  /**
   * Closes the link: what is queued goes out, followed by a `bye` so the peer's link closes too
   * (kind 'lost' there); the transport is closed; every channel closes (kind 'closed') and its
   * close handlers are told at once. Later sends are dropped. Idempotent.
   */
  close(reason = `${this.name} closed by this side`): void {
    if (this.closed) return;
    this.#outbox.push(CONTROL, { bye: reason } satisfies ControlFrame);
    this.#flushNow();
    this.#shutdown(reason, 'closed');
    this.#transport.close();
  }

  #post(name: string, message: unknown): void {
    if (this.closed) return;
    this.#outbox.push(name, message);
    if (!this.#flushScheduled) {
      this.#flushScheduled = true;
      queueMicrotask(this.#queueFlush);
    }
  }

  /** From inside a microtask, a tick runs after the whole microtask queue has drained. */
  readonly #queueFlush = (): void => {
    process.nextTick(this.#flush);
  };

  readonly #flush = (): void => {
    this.#flushScheduled = false;
    this.#flushNow();
  };

  #flushNow(): void {
    if (this.closed || this.#outbox.length === 0) return;
    const batch = this.#outbox;
    this.#outbox = [];
    try {
      this.#transport.send(batch);
      return;
    } catch (error) {
      if (this.#transport.closed) return;
      if (batch.length === 2) {
        this.#undeliverable(batch[0], batch[1], error);
        return;
      }
    }
    // One message in the batch cannot be cloned: send them one by one so only that one fails.
    for (let i = 0; i < batch.length; i += 2) {
      try {
        this.#transport.send([batch[i], batch[i + 1]]);
      } catch (error) {
        if (this.#transport.closed) return;
        this.#undeliverable(batch[i], batch[i + 1], error);
      }
    }
  }

  #undeliverable(name: unknown, message: unknown, error: unknown): void {
    const channel = typeof name === 'string' ? this.#channels.get(name) : undefined;
    if (channel?.undeliverable(message, error)) return;
    process.emitWarning(`${this.name}: a message on channel ${String(name)} could not be sent and was dropped: ${error instanceof Error ? error.message : String(error)}`, 'SlotwiseLinkWarning');
  }

  #receive(batch: unknown): void {
    // Anything but a batch is not ours (another user of the same port): ignore it.
    if (!Array.isArray(batch)) return;
    for (let i = 0; i + 1 < batch.length; i += 2) {
      if (this.closed) return;
      const name: unknown = batch[i];
      const message: unknown = batch[i + 1];
      if (name === CONTROL) {
        this.#control(message as ControlFrame);
      } else if (typeof name === 'string' && name !== '') {
        let channel = this.#channels.get(name);
        if (channel === undefined) {
          channel = new LinkChannel(name, this.#side);
          this.#channels.set(name, channel);
          this.#route(channel);
          // The handler may have closed it (or the whole link).
          if (this.#channels.get(name) !== channel) continue;
        }
        channel.deliver(message);
      }
    }
  }

  #control(frame: ControlFrame): void {
    if (typeof frame?.bye === 'string') {
      this.#shutdown(`the peer closed the link: ${frame.bye}`, 'lost');
      this.#transport.close();
    }
  }

  #route(channel: LinkChannel): void {
    let best: string | undefined;
    for (const prefix of this.#unknownHandlers.keys()) {
      if (channel.name.startsWith(prefix) && (best === undefined || prefix.length > best.length)) best = prefix;
    }
    if (best === undefined) return;
    channel.routed = true;
    try {
      this.#unknownHandlers.get(best)!(channel.name);
    } catch (error) {
      rethrowLater(error);
    }
  }

  #reserveBuffer(): boolean {
    if (this.#buffered >= this.#maxBuffered) {
      if (this.#dropped++ === 0) {
        process.emitWarning(`${this.name}: more than ${this.#maxBuffered} messages wait for channels nobody listens to; dropping the rest (their calls will time out)`, 'SlotwiseLinkWarning');
      }
      return false;
    }
    this.#buffered++;
    return true;
  }

  #shutdown(reason: string, kind: CloseKind): void {
    if (this.closed) return;
    this.#closeReason = reason;
    this.#closeKind = kind;
    this.#outbox = [];
    const channels = [...this.#channels.values()];
    this.#channels.clear();
    for (const channel of channels) channel.shutdown(reason, kind);
    const handlers = [...this.#closedHandlers];
    this.#closedHandlers.clear();
    for (const handler of handlers) {
      try {
        handler(reason, kind);
      } catch (error) {
        rethrowLater(error);
      }
    }
  }
}
