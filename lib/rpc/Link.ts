/**
 * Link: many named channels over one Transport, with outgoing messages batched.
 *
 * Each channel is an Endpoint (`postMessage`, `addEventListener('message')`,
 * `removeEventListener` — comlink's Endpoint shape too): a gateway is served on one and called
 * from the other side (connect.ts). On the wire a batch is one flat array
 * `[name, message, name, message, …]`; the name `0` carries control frames (only `bye`, a
 * graceful close). The Link knows nothing of what a channel carries, and nothing of the carrier
 * beyond the Transport contract.
 *
 * Why batch: a cross-thread hop costs 100–300 µs of wake-up here, and a transport
 * message costs a clone and a native call whatever its size. Everything posted during one job — the
 * synchronous code and all the promise continuations it sets off — goes out as a single
 * `transport.send`: the first post queues a microtask that queues a `process.nextTick`, and a tick
 * queued from inside a microtask runs only once the microtask queue is empty. So 64 calls made in
 * a loop, or 64 answers produced by 64 promise chains, cross as one message, and no event-loop
 * turn is added to any of them.
 *
 * For deadlines that measure the peer, not our own queue, it tells what it sees: `whenSent` once a
 * batch has been handed to the transport (a call's clock starts there), `onReceived` after each
 * message from the peer (the peer is alive), `afterIncoming` once what has arrived is delivered
 * (so a timer that ran first does not judge a call whose answer is already here).
 *
 * Messages for a channel nobody listens to yet are buffered (bounded) and delivered, in order, to
 * its first listener; `onUnknownChannel(prefix, handler)` lets a side open channels lazily (the
 * main thread serving `jm:<address>` when a TaskExecutor first calls that JobMaster). Closing —
 * ours, the peer's `bye`, or the transport dying — closes every channel, tells their close
 * handlers at once, and drops later sends.
 */
import { systemClock, type Clock, type TimerHandle } from '../core/clock.js';
import { IllegalArgumentError } from '../core/errors.js';
import { LinkChannel, rethrowLater, type Channel, type CloseKind, type LinkSide } from './LinkChannel.js';
import type { Transport } from './Transport.js';

export type { Channel, ChannelListener, ChannelMessageEvent, CloseKind } from './LinkChannel.js';

export interface LinkOptions {
  /**
   * Messages kept, over all channels, for channels with no listener yet; beyond that they are dropped. Default 10,000.
   */
  readonly maxBuffered?: number;
  /** Times how long a message posted with the next batch waits for one ({@link WITH_NEXT_MAX_WAIT_MS}). */
  readonly clock?: Pick<Clock, 'setTimeout' | 'clearTimeout'>;
}

/**
 * How long a message posted to go with the next batch (`Channel.postWithNext`) waits for one before it goes alone: an
 * answer nobody waits on in a hurry (a TaskExecutor's acceptance of a task, whose states follow within microseconds
 * when the task is short) then rides with what comes next instead of waking the peer's thread on its own.
 */
export const WITH_NEXT_MAX_WAIT_MS = 2;

const CONTROL = 0;

interface ControlFrame {
  readonly bye?: string;
}

export class Link {
  readonly name: string;
  readonly #transport: Transport;
  readonly #maxBuffered: number;
  readonly #clock: Pick<Clock, 'setTimeout' | 'clearTimeout'>;
  readonly #channels = new Map<string, LinkChannel>();
  readonly #unknownHandlers = new Map<string, (name: string) => void>();
  readonly #closedHandlers = new Set<(reason: string, kind: CloseKind) => void>();
  readonly #side: LinkSide;
  readonly #receivedHandlers = new Set<() => void>();
  #outbox: unknown[] = [];
  /** Told once the batch being gathered has been handed to the transport. */
  #sentCallbacks: Array<() => void> = [];
  #flushScheduled = false;
  /** Sends what waits in the outbox for a batch to go with (postWithNext) once it has waited long enough. */
  #lateFlush: TimerHandle | null = null;
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
      throw new IllegalArgumentError('invalid-value', `a Link's name must be a non-empty string, got ${String(name)}`, {
        argument: 'name',
        value: name,
      });
    }
    if (!Number.isInteger(maxBuffered) || maxBuffered < 0) {
      throw new IllegalArgumentError(
        'out-of-range',
        `options.maxBuffered must be a non-negative integer, got ${maxBuffered}`,
        { argument: 'options.maxBuffered', value: maxBuffered },
      );
    }
    this.name = name;
    this.#transport = transport;
    this.#maxBuffered = maxBuffered;
    this.#clock = options.clock ?? systemClock;
    this.#side = {
      post: (channelName, message) => this.#post(channelName, message),
      postWithNext: (channelName, message) => this.#postWithNext(channelName, message),
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
  /** The names of its open channels (what it holds on to, for leak checks and diagnostics). */
  get channelNames(): string[] {
    return [...this.#channels.keys()];
  }

  channel(name: string): Channel {
    if (typeof name !== 'string' || name === '') {
      throw new IllegalArgumentError(
        'invalid-value',
        `a channel name must be a non-empty string, got ${JSON.stringify(name)}`,
        { argument: 'name', value: name },
      );
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
      throw new IllegalArgumentError(
        'invalid-type',
        'onUnknownChannel(prefix, handler) needs a string prefix and a function',
        { argument: 'prefix', value: prefix },
      );
    }
    this.#unknownHandlers.set(prefix, handler);
    for (const channel of [...this.#channels.values()]) {
      if (!channel.opened && !channel.routed && channel.name.startsWith(prefix)) this.#route(channel);
    }
    return () => {
      if (this.#unknownHandlers.get(prefix) === handler) this.#unknownHandlers.delete(prefix);
    };
  }

  /**
   * `handler(reason, kind)` is told once when the link closes (at once, on a microtask, if it already has). Returns an
   * unsubscribe.
   */
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
   * Calls `callback` once the messages posted so far have been handed to the transport — right
   * after the send of the batch they travel in has returned — or never if the link closes first.
   * Until then a message waits in our own outbox: a caller starts a call's deadline here.
   */
  whenSent(callback: () => void): void {
    if (!this.closed) this.#sentCallbacks.push(callback);
  }

  /**
   * `handler` is told after each transport message from the peer has been delivered (the peer is alive). Returns an
   * unsubscribe.
   */
  onReceived(handler: () => void): () => void {
    this.#receivedHandlers.add(handler);
    return () => this.#receivedHandlers.delete(handler);
  }

  /**
   * Calls `callback` once every message from the peer that has arrived by now has been delivered
   * (Transport.afterIncoming, else two event-loop turns) — at once, on a later turn, if the link is
   * closed. A timer that ran first must not judge a call whose answer is already here.
   */
  afterIncoming(callback: () => void): void {
    if (!this.closed && this.#transport.afterIncoming !== undefined) this.#transport.afterIncoming(callback);
    else setImmediate(() => setImmediate(callback));
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

  /** Queued without a flush of its own: it goes with the next batch, or alone after WITH_NEXT_MAX_WAIT_MS. */
  #postWithNext(name: string, message: unknown): void {
    if (this.closed) return;
    this.#outbox.push(name, message);
    if (!this.#flushScheduled) this.#lateFlush ??= this.#clock.setTimeout(this.#flushLate, WITH_NEXT_MAX_WAIT_MS);
  }

  readonly #flushLate = (): void => {
    this.#lateFlush = null;
    this.#flushNow();
  };

  /** From inside a microtask, a tick runs after the whole microtask queue has drained. */
  readonly #queueFlush = (): void => {
    process.nextTick(this.#flush);
  };

  readonly #flush = (): void => {
    this.#flushScheduled = false;
    this.#flushNow();
  };

  #flushNow(): void {
    if (this.#lateFlush !== null) {
      this.#clock.clearTimeout(this.#lateFlush);
      this.#lateFlush = null;
    }
    if (this.closed || this.#outbox.length === 0) return;
    const batch = this.#outbox;
    this.#outbox = [];
    this.#send(batch);
    const callbacks = this.#sentCallbacks;
    if (callbacks.length === 0 || this.closed) return;
    this.#sentCallbacks = [];
    for (const callback of callbacks) {
      try {
        callback();
      } catch (error) {
        rethrowLater(error);
      }
    }
  }

  #send(batch: unknown[]): void {
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
    process.emitWarning(
      `${this.name}: a message on channel ${String(name)} could not be sent ` +
        `and was dropped: ${error instanceof Error ? error.message : String(error)}`,
      'SlotwiseLinkWarning',
    );
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
    for (const handler of this.#receivedHandlers) {
      try {
        handler();
      } catch (error) {
        rethrowLater(error);
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
        process.emitWarning(
          `${this.name}: more than ${this.#maxBuffered} messages wait for channels ` +
            `nobody listens to; dropping the rest (their calls will time out)`,
          'SlotwiseLinkWarning',
        );
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
    if (this.#lateFlush !== null) this.#clock.clearTimeout(this.#lateFlush);
    this.#lateFlush = null;
    this.#sentCallbacks = [];
    this.#receivedHandlers.clear();
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
