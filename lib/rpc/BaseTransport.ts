/**
 * The bookkeeping every Transport adapter shares: its handlers, its closed state, attaching the
 * carrier's listeners on first use and detaching them once. An adapter says how to attach, how to
 * send and how to close its pipe; `deliver` hands an incoming message on, `lost` reports the peer
 * gone (once, and never after our own `close()`).
 */
import type { Transport } from './Transport.js';

export type Detach = () => void;

/** The bookkeeping every adapter shares: handlers, closed state, detaching the Node listeners once. */
export abstract class BaseTransport implements Transport {
  readonly #messageHandlers: Array<(message: unknown) => void> = [];
  readonly #closeHandlers: Array<(reason: string) => void> = [];
  #detach: Detach | undefined;
  #closed = false;

  get closed(): boolean {
    return this.#closed;
  }

  abstract send(message: unknown): void;

  /** Attaches the Node listeners; called once, on the first `onMessage` (a port buffers until then). */
  protected abstract attach(): Detach;

  /** What `close()` does to the pipe beyond detaching (closing a port, disconnecting IPC). */
  protected abstract closePipe(): void;

  onMessage(handler: (message: unknown) => void): void {
    this.#messageHandlers.push(handler);
    this.#ensureAttached();
  }

  onClose(handler: (reason: string) => void): void {
    this.#closeHandlers.push(handler);
    this.#ensureAttached();
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#detach?.();
    this.closePipe();
  }

  protected deliver(message: unknown): void {
    if (this.#closed) return;
    for (const handler of this.#messageHandlers) handler(message);
  }

  /** The peer is gone: detach, then tell the handlers once. */
  protected lost(reason: string): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#detach?.();
    for (const handler of this.#closeHandlers) handler(reason);
  }

  #ensureAttached(): void {
    if (this.#detach === undefined && !this.#closed) this.#detach = this.attach();
  }
}
