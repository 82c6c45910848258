/** Transport doubles for the RPC tests: a transport that delegates to another and watches its sends. */
import type { Transport } from '../../../lib/rpc/Transport.js';

/** Delegates everything to `inner`; `onSend(message)` runs after each send returned. */
export function watched(inner: Transport, onSend: (message: unknown) => void): Transport {
  return {
    send: (message) => {
      inner.send(message);
      onSend(message);
    },
    onMessage: (handler) => inner.onMessage(handler),
    onClose: (handler) => inner.onClose(handler),
    close: () => inner.close(),
    get closed() {
      return inner.closed;
    },
    ...(inner.afterIncoming === undefined
      ? {}
      : { afterIncoming: (callback: () => void) => inner.afterIncoming!(callback) }),
  };
}

/** Settles with the rejection of `promise`; fails if it resolves. */
export const rejection = (promise: Promise<unknown>): Promise<Error> =>
  promise.then(
    (value) => {
      throw new Error(`expected a rejection, got ${JSON.stringify(value)}`);
    },
    (error: unknown) => error as Error,
  );
