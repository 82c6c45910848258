/**
 * Transport: the bare pipe under a Link — one message in, one message out, and a single close
 * event. Two adapters: `portTransport` for a MessagePort, a Worker (main side) or `parentPort`
 * (worker side), and `processTransport` for a ChildProcess (parent side, forked with
 * `serialization: 'advanced'`) or `process` itself (child side). Everything Node-specific about
 * how a peer dies lives here: a Worker's `exit`/`error`, a port's `close`, a process's
 * `disconnect`/`exit` all become one `onClose(reason)`; the Link above never looks at Node objects.
 *
 * `send` serializes synchronously: a message that cannot be cloned throws there (the Link falls
 * back to sending frame by frame and reports the one that failed). After `close()`, or once the
 * peer is gone, sends are dropped silently: the Link has already told every pending call.
 */
import { ChildProcess } from 'node:child_process';
import { MessagePort, parentPort, Worker } from 'node:worker_threads';

export interface Transport {
  /** Sends one message (structured clone); throws synchronously if it cannot be cloned; dropped once closed. */
  send(message: unknown): void;
  /** Registers a receiver of every incoming message. */
  onMessage(handler: (message: unknown) => void): void;
  /** Registers a handler told once, with a reason, when the peer goes away (not after our own `close()`). */
  onClose(handler: (reason: string) => void): void;
  /** Stops sending and listening; see each adapter for what the peer sees. */
  close(): void;
  readonly closed: boolean;
}

type Detach = () => void;

/** The bookkeeping every adapter shares: handlers, closed state, detaching the Node listeners once. */
abstract class BaseTransport implements Transport {
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

class PortTransport extends BaseTransport {
  constructor(private readonly port: MessagePort | Worker) {
    super();
    // A Worker that has already exited reports threadId -1: its link is lost from the start.
    if (port instanceof Worker && port.threadId === -1) queueMicrotask(() => this.lost('the worker had already exited'));
  }

  send(message: unknown): void {
    if (this.closed) return;
    this.port.postMessage(message);
  }

  protected attach(): Detach {
    const port = this.port;
    const onMessage = (message: unknown) => this.deliver(message);
    port.on('message', onMessage);
    if (port instanceof Worker) {
      const onError = (error: Error) => this.lost(`the worker failed: ${error.message}`);
      const onExit = (code: number) => this.lost(`the worker exited with code ${code}`);
      port.on('error', onError);
      port.on('exit', onExit);
      return () => {
        // The 'error' listener stays: removing it would turn a later worker error into an
        // uncaught one in this thread if the owner has none (it is a no-op once closed).
        port.off('message', onMessage);
        port.off('exit', onExit);
      };
    }
    const onClose = () => this.lost('the message port was closed');
    port.on('close', onClose);
    return () => {
      // Without a 'message' listener the port no longer keeps the event loop alive.
      port.off('message', onMessage);
      port.off('close', onClose);
    };
  }

  protected closePipe(): void {
    // A Worker is ended by its owner (terminate), not by its link; parentPort stays open for the
    // rest of the worker. A plain MessagePort is closed: the other side sees 'close'.
    if (this.port instanceof MessagePort && this.port !== parentPort) this.port.close();
  }
}

/** The IPC side of a ChildProcess or of `process` in the child: the members both have. */
interface IpcPeer {
  readonly connected: boolean;
  send?(message: unknown, callback: (error: Error | null) => void): boolean;
  send?(message: unknown, sendHandle: undefined, options: undefined, callback: (error: Error | null) => void): boolean;
  disconnect?(): void;
  on(event: string, listener: (...args: never[]) => void): unknown;
  off(event: string, listener: (...args: never[]) => void): unknown;
}

class ProcessTransport extends BaseTransport {
  readonly #peer: IpcPeer;
  readonly #isChild: boolean;
  /** Sends whose write has not completed: disconnecting before they finish could cut them off. */
  #writing = 0;
  #disconnectWhenWritten = false;

  constructor(peer: ChildProcess | NodeJS.Process) {
    super();
    this.#peer = peer as unknown as IpcPeer;
    this.#isChild = !(peer instanceof ChildProcess);
    if (typeof this.#peer.send !== 'function') {
      throw new TypeError(`processTransport needs an IPC channel: ${this.#isChild ? 'this process was not started with fork()' : 'fork the child (or pass stdio with "ipc")'}`);
    }
    if (!this.#peer.connected) queueMicrotask(() => this.lost('the IPC channel was already disconnected'));
  }

  send(message: unknown): void {
    if (this.closed || !this.#peer.connected) return;
    this.#writing++;
    // The callback form: a write failing late (the channel closing under it) comes here instead of
    // as an 'error' event that would crash a process with no listener. 'disconnect' reports it.
    this.#peer.send!(message, (_error: Error | null) => {
      this.#writing--;
      if (this.#writing === 0 && this.#disconnectWhenWritten) this.#disconnect();
    });
  }

  protected attach(): Detach {
    const peer = this.#peer;
    const onMessage = (message: unknown) => this.deliver(message);
    const onDisconnect = () => this.lost(this.#isChild ? 'the parent process disconnected' : 'the child process disconnected');
    const onExit = (code: number | null, signal?: string | null) =>
      this.lost(`the ${this.#isChild ? '' : 'child '}process exited ${typeof signal === 'string' ? `on signal ${signal}` : `with code ${code}`}`);
    const onError = (error: Error) => this.lost(`the child process failed: ${error.message}`);
    peer.on('message', onMessage);
    peer.on('disconnect', onDisconnect);
    peer.on('exit', onExit);
    if (!this.#isChild) peer.on('error', onError);
    return () => {
      peer.off('message', onMessage);
      peer.off('disconnect', onDisconnect);
      peer.off('exit', onExit);
      // 'error' stays attached, as for a Worker: a late failed kill or send must not crash us.
    };
  }

  protected closePipe(): void {
    // Disconnecting is what the other side sees ('disconnect'); wait for our last writes first.
    if (this.#writing > 0) this.#disconnectWhenWritten = true;
    else this.#disconnect();
  }

  #disconnect(): void {
    this.#disconnectWhenWritten = false;
    if (this.#peer.connected) this.#peer.disconnect?.();
  }
}

/**
 * A Transport over a MessagePort (closing it closes the port: the other side sees 'close'), a
 * Worker seen from the main thread (its `exit` or `error` closes the transport at once; closing
 * it only stops listening — ending the thread is the owner's `terminate()`), or `parentPort`
 * inside a worker (closing stops listening).
 */
export function portTransport(port: MessagePort | Worker): Transport {
  return new PortTransport(port);
}

/**
 * A Transport over the IPC channel of a ChildProcess (parent side; fork it with
 * `serialization: 'advanced'` so Maps, Dates, BigInts and cycles cross as they do between
 * threads) or of `process` itself (child side). Its `disconnect`, `exit` or `error` closes the
 * transport at once; closing it disconnects the IPC channel once pending writes are done.
 */
export function processTransport(peer: ChildProcess | NodeJS.Process): Transport {
  return new ProcessTransport(peer);
}
