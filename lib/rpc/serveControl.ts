/**
 * The serving side of a gateway's control methods: comlink's `expose` of the implementation's
 * control methods on the gateway's control channel (gatewayMethods.ts, controlChannel), so that
 * ControlCaller (ControlCaller.ts) can call them. Each call runs as a task of the endpoint's mailbox
 * when there is one (MainThreadExecutor), entered in the order calls arrive — the same queue as the
 * calls on the gateway's own channel. A thrown error travels by errorTransfer.ts (its own class); a
 * method not served is answered with IllegalArgumentError; a result that cannot be cloned is
 * answered with a TypeError instead of leaving the caller to wait out its deadline.
 *
 * comlink's `expose` stops listening for everyone when one caller releases its proxy (RELEASE): the
 * Endpoint it gets here does not let it — the channel is served until `stop()` or until it closes.
 */
import { expose, type Endpoint } from 'comlink';
import './errorTransfer.js';
import { unknownMethod } from './gatewayMethods.js';
import type { Channel, ChannelListener } from './Link.js';
import type { MainThreadExecutor } from './MainThreadExecutor.js';

export interface ServeControlOptions {
  readonly gateway: string;
  readonly mailbox?: MainThreadExecutor | undefined;
}

type Method = (...args: unknown[]) => unknown;

/** Serves `methods` of `implementation` on `channel` by comlink; returns the stop. */
export function serveControl(
  channel: Channel,
  implementation: object,
  methods: readonly string[],
  options: ServeControlOptions,
): () => void {
  const { gateway, mailbox } = options;
  const table = Object.create(null) as Record<string, Method>;
  for (const name of methods) {
    const method = (implementation as Record<string, Method>)[name]!;
    const run = (args: unknown[]) => method.apply(implementation, args);
    const sendable = (value: unknown) => checkSendable(value, gateway, name);
    table[name] =
      mailbox === undefined
        ? (...args) => Promise.resolve(run(args)).then(sendable)
        : (...args) => mailbox.callAsync(() => run(args)).then(sendable);
  }
  const allowed = [...methods].sort();
  // What comlink walks: the served methods, and for any other name a method that refuses.
  const served = new Proxy(table, {
    get: (target, property) => {
      if (typeof property !== 'string') return undefined;
      return Object.hasOwn(target, property)
        ? target[property]
        : () => {
            throw unknownMethod(gateway, property, allowed);
          };
    },
  });
  const listeners: ChannelListener[] = [];
  const endpoint: Endpoint = {
    postMessage: (message: unknown) => channel.postMessage(message),
    addEventListener: (type, listener) => {
      const forward = listener as ChannelListener;
      listeners.push(forward);
      channel.addEventListener(type, forward);
    },
    // Not on comlink's word (a caller's RELEASE): the channel stays served for its other callers.
    removeEventListener: () => {},
  };
  expose(served, endpoint);
  return () => {
    for (const listener of listeners) channel.removeEventListener('message', listener);
    listeners.length = 0;
  };
}

/** A result goes back only if it can be cloned; a TypeError naming the method goes back instead. */
function checkSendable(value: unknown, gateway: string, method: string): unknown {
  if ((typeof value !== 'object' && typeof value !== 'function') || value === null) return value;
  try {
    structuredClone(value);
  } catch (error) {
    throw new TypeError(
      `${gateway}: the result of a call could not be sent back (${gateway}.${method}: ` +
        `${error instanceof Error ? error.message : String(error)})`,
    );
  }
  return value;
}
