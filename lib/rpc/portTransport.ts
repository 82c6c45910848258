/**
 * The Transport over a MessagePort, a Worker seen from the main thread, or `parentPort` inside a
 * worker. Everything Node-specific about how such a peer dies lives here: a Worker's `exit` or
 * `error` and a port's `close` all become one `onClose(reason)`.
 */
import { MessagePort, parentPort, Worker } from 'node:worker_threads';
import { BaseTransport, type Detach } from './BaseTransport.js';
import type { Transport } from './Transport.js';

class PortTransport extends BaseTransport {
  constructor(private readonly port: MessagePort | Worker) {
    super();
    // A Worker that has already exited reports threadId -1: its link is lost from the start.
    if (port instanceof Worker && port.threadId === -1)
      queueMicrotask(() => this.lost('the worker had already exited'));
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

/**
 * A Transport over a MessagePort (closing it closes the port: the other side sees 'close'), a
 * Worker seen from the main thread (its `exit` or `error` closes the transport at once; closing
 * it only stops listening — ending the thread is the owner's `terminate()`), or `parentPort`
 * inside a worker (closing stops listening).
 */
export function portTransport(port: MessagePort | Worker): Transport {
  return new PortTransport(port);
}
