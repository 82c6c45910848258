/**
 * The Transport over the IPC channel of a child process (parent side) or of `process` itself
 * (child side). A process's `disconnect`, `exit` or `error` becomes one `onClose(reason)`.
 */
import type { ChildProcess } from 'node:child_process';
import { BaseTransport, type Detach } from './BaseTransport.js';
import type { Transport } from './Transport.js';

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
    // The child's side is `process` itself (not an import of node:child_process: a worker has no use for it).
    this.#isChild = (peer as unknown) === process;
    if (typeof this.#peer.send !== 'function') {
      throw new TypeError(
        `processTransport needs an IPC channel: ${
          this.#isChild ? 'this process was not started with fork()' : 'fork the child (or pass stdio with "ipc")'
        }`,
      );
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
    const onDisconnect = () =>
      this.lost(this.#isChild ? 'the parent process disconnected' : 'the child process disconnected');
    const onExit = (code: number | null, signal?: string | null) =>
      this.lost(
        `the ${this.#isChild ? '' : 'child '}process ` +
          `exited ${typeof signal === 'string' ? `on signal ${signal}` : `with code ${code}`}`,
      );
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
 * A Transport over the IPC channel of a ChildProcess (parent side; fork it with
 * `serialization: 'advanced'` so Maps, Dates, BigInts and cycles cross as they do between
 * threads) or of `process` itself (child side). Its `disconnect`, `exit` or `error` closes the
 * transport at once; closing it disconnects the IPC channel once pending writes are done.
 */
export function processTransport(peer: ChildProcess | NodeJS.Process): Transport {
  return new ProcessTransport(peer);
}
