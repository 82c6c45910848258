/**
 * Transport: the bare pipe under a Link — one message in, one message out, and a single close
 * event. This is the whole contract a carrier implements; nothing in it is about MessagePorts,
 * processes or sockets, and the Link above never looks at the carrier. Adapters: `portTransport`
 * (a MessagePort, a Worker from the main thread, `parentPort` inside a worker), `processTransport`
 * (a child process's IPC channel, or `process` itself in the child), `memoryTransportPair` (two
 * ends in one thread, for tests). A NATS transport (a subject per direction) plugs in here too.
 *
 * `send` serializes synchronously: a message that cannot be cloned throws there (the Link falls
 * back to sending frame by frame and reports the one that failed). After `close()`, or once the
 * peer is gone, sends are dropped silently: the Link has already told every pending call.
 */

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
  /**
   * Calls `callback` once every message that had arrived when it was called has been handed to
   * the `onMessage` handlers (the Link asks before it judges a call's deadline: an answer already
   * received must win over a timer that happened to run first). Optional: without it the Link waits
   * two event-loop turns, which is enough for a carrier whose messages Node delivers in its poll
   * phase (a MessagePort, an IPC pipe, a socket) — between two `setImmediate` callbacks lies a
   * whole poll phase that began after the call. It must call back; it must not deliver messages
   * in the middle of another delivery.
   */
  afterIncoming?(callback: () => void): void;
}

// The Node adapters, re-exported so that code importing them from here keeps working.
export { portTransport } from './portTransport.js';
export { processTransport } from './processTransport.js';
