/**
 * Two Transports joined in memory: Links — and the gateways over them — running in one thread,
 * as the real ones do across a port, with nothing Node-specific underneath. What one end sends the
 * other receives as a structured clone (a message that cannot be cloned throws in `send`, as with
 * a port), on a later event-loop turn (a port delivers in the poll phase; here a `setImmediate`),
 * in order. Closing one end tells the other once it has received what was sent before.
 *
 * For tests it also says what waits: `waiting` counts the messages that arrived and were not
 * delivered yet, so a test can stage "the answer sits in our queue while our timer fires".
 */
import type { Transport } from './Transport.js';

export interface MemoryTransport extends Transport {
  /** Messages that arrived at this end and wait for their turn to be delivered. */
  readonly waiting: number;
  /** Delivers every message that has arrived, then calls `callback` (see Transport.afterIncoming). */
  afterIncoming(callback: () => void): void;
}

class MemoryEnd implements MemoryTransport {
  peer!: MemoryEnd;
  readonly #messageHandlers: Array<(message: unknown) => void> = [];
  readonly #closeHandlers: Array<(reason: string) => void> = [];
  #inbox: unknown[] = [];
  #closed = false;
  #turnScheduled = false;
  #delivering = false;
  /** afterIncoming callbacks asked for while a delivery was running: they run once it is over. */
  #afterDelivery: Array<() => void> = [];
  /** The peer closed: told to the close handlers once the inbox is delivered. */
  #peerGone: string | undefined;

  get closed(): boolean {
    return this.#closed;
  }

  get waiting(): number {
    return this.#inbox.length;
  }

  send(message: unknown): void {
    if (this.#closed || this.peer.#closed) return;
    this.peer.#arrive(structuredClone(message));
  }

  onMessage(handler: (message: unknown) => void): void {
    this.#messageHandlers.push(handler);
  }

  onClose(handler: (reason: string) => void): void {
    this.#closeHandlers.push(handler);
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#inbox = [];
    this.peer.#peerClosed('the peer closed the memory transport');
  }

  afterIncoming(callback: () => void): void {
    // Inside a delivery (a handler that fires a timer): delivering the rest now would run later
    // messages before the one being handled has finished. Wait for the delivery to end.
    if (this.#delivering) {
      this.#afterDelivery.push(callback);
      return;
    }
    this.#deliver();
    callback();
  }

  #arrive(message: unknown): void {
    if (this.#closed) return;
    this.#inbox.push(message);
    this.#scheduleTurn();
  }

  #peerClosed(reason: string): void {
    if (this.#closed) return;
    this.#peerGone = reason;
    this.#scheduleTurn();
  }

  #scheduleTurn(): void {
    if (this.#turnScheduled) return;
    this.#turnScheduled = true;
    setImmediate(() => {
      this.#turnScheduled = false;
      this.#deliver();
    });
  }

  #deliver(): void {
    if (this.#delivering) return;
    this.#delivering = true;
    try {
      while (this.#inbox.length > 0 && !this.#closed) {
        const message = this.#inbox.shift();
        for (const handler of this.#messageHandlers) handler(message);
      }
    } finally {
      this.#delivering = false;
    }
    if (this.#peerGone !== undefined && !this.#closed) {
      this.#closed = true;
      for (const handler of this.#closeHandlers) handler(this.#peerGone);
    }
    const callbacks = this.#afterDelivery;
    this.#afterDelivery = [];
    for (const callback of callbacks) callback();
  }
}

/** Two joined ends: what `a` sends, `b` receives, and the other way round. */
export function memoryTransportPair(): [MemoryTransport, MemoryTransport] {
  const a = new MemoryEnd();
  const b = new MemoryEnd();
  a.peer = b;
  b.peer = a;
  return [a, b];
}
