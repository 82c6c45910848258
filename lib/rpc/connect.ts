/**
 * Gateways over a Link, in the small explicit protocol of protocol.ts (CallFrame → ResultFrame or
 * ErrorFrame): `serveGateway` (serveGateway.ts) answers the calls on a channel, `connectGateway`
 * makes them from the other side. What a call gets (docs/runtime.md, Gateways):
 *
 * - a deadline that measures a silent peer, not our own queue (callDeadline.ts): its clock starts
 *   when its frame has left; an answer already received wins over a timer that ran first; a peer
 *   that keeps sending keeps it alive, up to `maxWaitMs`; then `RpcTimeoutError` naming gateway,
 *   method and timeout;
 * - fail fast: when the link closes or is lost, every pending call rejects at once with
 *   `EndpointClosedError`, and later calls fail without sending;
 * - errors keep their class across the boundary (errorTransfer.ts);
 * - served calls run as tasks of the endpoint's mailbox (MainThreadExecutor), one at a time.
 *
 * Why not comlink's `wrap`/`expose` (comlink stays the library for exposing an arbitrary object
 * over a channel — a Channel is a comlink Endpoint — but gateways do not go through it): measured
 * over the same Link to a worker (bench/rpcCpu.ts, 64 in flight), comlink's expose + wrap cost
 * ~24 µs of CPU per call over every thread against ~15 µs for this path with its deadlines, its
 * calling side alone ~13.5 µs against ~5.3 µs (a request id from four `Math.random().toString(16)`,
 * a Proxy per property read registered with a FinalizationRegistry, four promises a call); and
 * what a gateway needs is what it lacks: its resolvers live in a map we cannot reach, so a call given up at its
 * deadline would
 * stay there until an answer that may never come; its collected proxies send RELEASE, which makes
 * the serving side stop listening for every caller of the channel; its requests cannot be told
 * apart from its answers without reading its private wire format. Here: one listener per gateway,
 * a numeric id, one map entry per call removed on answer, deadline, failed send or close.
 */
import { systemClock, type Clock } from '../core/clock.js';
import { IllegalArgumentError } from '../core/errors.js';
import { GatewayCaller } from './GatewayCaller.js';
import { NOT_METHODS } from './gatewayMethods.js';
import type { Link } from './Link.js';

export { serveGateway, type ServedGateway, type ServeOptions } from './serveGateway.js';

/** `T`'s methods, each returning a promise of what it returns. */
export type Gateway<T> = {
  readonly [K in keyof T as T[K] extends (...args: never[]) => unknown ? K : never]: T[K] extends (
    ...args: infer A
  ) => infer R
    ? (...args: A) => Promise<Awaited<R>>
    : never;
};

export interface ConnectOptions {
  /** The gateway's name, for errors: `GATEWAY.taskExecutor`, … */
  readonly gateway: string;
  /**
   * How long a call waits for its answer while the peer sends nothing at all, in ms on `clock`,
   * counted from when the call's frame left (`rpc.ask.timeout`).
   */
  readonly timeoutMs: number;
  /** The most a call waits, however much else the peer sends (≥ timeoutMs). Default: 3 × timeoutMs. */
  readonly maxWaitMs?: number;
  /** Default: the system clock. */
  readonly clock?: Clock;
  /** Who serves it, for messages (`TaskExecutor te-1a2b`). Default: the channel name. */
  readonly endpoint?: string;
}

/** maxWaitMs when none is given, as a multiple of timeoutMs. */
export const DEFAULT_MAX_WAIT_FACTOR = 3;

/** Per gateway, for tests and leak checks. */
const callers = new WeakMap<object, GatewayCaller>();

/** The calls of `gateway` still waiting for an answer, and whether its channel is closed. */
export function gatewayStatus(gateway: object): { readonly pendingCalls: number; readonly closed: boolean } {
  const caller = callers.get(gateway);
  if (caller === undefined)
    throw new IllegalArgumentError('invalid-value', 'gatewayStatus needs a gateway made by connectGateway', {
      argument: 'gateway',
    });
  return { pendingCalls: caller.pendingCalls, closed: caller.channel.closed };
}

const isDuration = (value: unknown): value is number =>
  typeof value === 'number' && Number.isFinite(value) && value > 0;

/**
 * A proxy for the gateway served on `link.channel(channel)` on the other side: an object whose
 * every method returns a promise. A call fails with RpcTimeoutError once the peer has sent nothing
 * for `timeoutMs` since the call left, or `maxWaitMs` after it left in any case; once the link or
 * channel closes, pending calls reject at once with EndpointClosedError ('lost' when the peer went
 * away, 'closed' when this side closed it) and later calls fail at once without sending. An error
 * the implementation throws arrives as its own class. A method the implementation does not have
 * rejects with IllegalArgumentError.
 */
export function connectGateway<T>(link: Link, channel: string, options: ConnectOptions): Gateway<T> {
  const { gateway, timeoutMs, clock = systemClock } = options ?? ({} as ConnectOptions);
  if (typeof gateway !== 'string' || gateway === '') {
    throw new IllegalArgumentError(
      'invalid-value',
      `options.gateway must name the gateway (e.g. 'TaskExecutorGateway'), got ${String(gateway)}`,
      { argument: 'options.gateway', value: gateway },
    );
  }
  if (!isDuration(timeoutMs)) {
    throw new IllegalArgumentError(
      'out-of-range',
      `options.timeoutMs must be a finite number of ms > 0, got ${String(timeoutMs)}`,
      { argument: 'options.timeoutMs', value: timeoutMs },
    );
  }
  const maxWaitMs = options.maxWaitMs ?? DEFAULT_MAX_WAIT_FACTOR * timeoutMs;
  if (!isDuration(maxWaitMs) || maxWaitMs < timeoutMs) {
    throw new IllegalArgumentError(
      'out-of-range',
      `options.maxWaitMs must be a finite number of ms >= options.timeoutMs (${timeoutMs}), got ${String(maxWaitMs)}`,
      {
        argument: 'options.maxWaitMs',
        value: maxWaitMs,
      },
    );
  }
  const endpoint = options.endpoint ?? channel;
  const caller = new GatewayCaller(link, link.channel(channel), { gateway, endpoint, timeoutMs, maxWaitMs, clock });

  type Method = (...args: unknown[]) => Promise<unknown>;
  const methods = new Map<string, Method>();
  const methodFor = (name: string): Method => {
    if (!NOT_METHODS.has(name)) return (...args) => caller.call(name, args);
    return () =>
      Promise.reject(
        new IllegalArgumentError(
          'unknown-key',
          `${gateway}.${name} is not a gateway method (it belongs to ` +
            `every object); call one of the methods ${endpoint} serves`,
          {
            argument: 'method',
            value: name,
            gateway,
          },
        ),
      );
  };
  const proxy = new Proxy(Object.create(null) as object, {
    get: (_target, property) => {
      if (typeof property !== 'string' || property === 'then') return undefined;
      let method = methods.get(property);
      if (method === undefined) methods.set(property, (method = methodFor(property)));
      return method;
    },
    set: () => false,
    defineProperty: () => false,
    deleteProperty: () => false,
  });
  callers.set(proxy, caller);
  return proxy as unknown as Gateway<T>;
}
