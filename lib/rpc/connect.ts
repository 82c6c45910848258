/**
 * Gateways over a Link: `serveGateway` (serveGateway.ts) answers the calls on a channel,
 * `connectGateway` makes them from the other side. What a call gets (docs/runtime.md, Gateways):
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
 * Two carriers, one contract. A gateway's *control* methods (a TaskExecutor's registration,
 * heartbeats, slot reports — the `control` option, CONTROL_METHODS in gateways.ts) travel
 * by comlink's `wrap`/`expose` on the gateway's control channel (ControlCaller.ts, serveControl.ts):
 * few calls, where comlink's generality costs nothing that matters. The *hot path* (every call a
 * job makes: slot requests, offers, frees, submitTask, task states, cancel) stays on our own
 * frames (GatewayCaller.ts): over the same Link to a worker, 64 in flight, a control call costs
 * ~25 µs of CPU over every thread against ~8 µs for a frame call (bench/rpcCpu.ts), most of the
 * difference on the calling side
 * (comlink's request id from four `Math.random().toString(16)` leads its profile; its wire objects,
 * four promises a call). Both carriers share the CallTable (CallTable.ts), so a call behaves the
 * same whichever carries it.
 */
import { systemClock, type Clock } from '../core/clock.js';
import { IllegalArgumentError } from '../core/errors.js';
import { ControlCaller } from './ControlCaller.js';
import { GatewayCaller } from './GatewayCaller.js';
import { controlChannel, NOT_METHODS } from './gatewayMethods.js';
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
  /**
   * The methods carried by comlink on the gateway's control channel (`controlChannel(channel)`);
   * the serving side must serve them there (serveGateway's `control`). The others go as frames on
   * the channel. Default: none (every method as frames).
   */
  readonly control?: readonly string[];
}

/** maxWaitMs when none is given, as a multiple of timeoutMs. */
export const DEFAULT_MAX_WAIT_FACTOR = 3;

/** Per gateway, for tests and leak checks. */
const callers = new WeakMap<object, { readonly frames: GatewayCaller; readonly control: ControlCaller | undefined }>();

export interface GatewayStatus {
  /** Calls waiting for an answer, both carriers together. */
  readonly pendingCalls: number;
  readonly closed: boolean;
  /**
   * With control methods: the calls waiting on comlink, and the `wrap`s in use (1 while calls flow;
   * 2 for a while after one was given up, until the old one's other calls are done and it is
   * released with the resolvers it held; 0 once closed).
   */
  readonly control?: { readonly pendingCalls: number; readonly generations: number };
}

/** The calls of `gateway` still waiting for an answer, and whether its channel is closed. */
export function gatewayStatus(gateway: object): GatewayStatus {
  const caller = callers.get(gateway);
  if (caller === undefined)
    throw new IllegalArgumentError('invalid-value', 'gatewayStatus needs a gateway made by connectGateway', {
      argument: 'gateway',
    });
  const { frames, control } = caller;
  if (control === undefined) return { pendingCalls: frames.pendingCalls, closed: frames.channel.closed };
  return {
    pendingCalls: frames.pendingCalls + control.pendingCalls,
    closed: frames.channel.closed,
    control: { pendingCalls: control.pendingCalls, generations: control.generations },
  };
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
  const control = options.control ?? [];
  if (!Array.isArray(control) || control.some((name) => typeof name !== 'string' || NOT_METHODS.has(name))) {
    throw new IllegalArgumentError(
      'invalid-value',
      `options.control must list method names of ${gateway}, got ${String(control)}`,
      { argument: 'options.control', value: String(control) },
    );
  }
  const endpoint = options.endpoint ?? channel;
  const callerOptions = { gateway, endpoint, timeoutMs, maxWaitMs, clock };
  const caller = new GatewayCaller(link, link.channel(channel), callerOptions);
  const controlCaller =
    control.length === 0 ? undefined : new ControlCaller(link, link.channel(controlChannel(channel)), callerOptions);
  const controlled = new Set(control);

  type Method = (...args: unknown[]) => Promise<unknown>;
  const methods = new Map<string, Method>();
  const methodFor = (name: string): Method => {
    if (controlled.has(name)) return (...args) => controlCaller!.call(name, args);
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
  callers.set(proxy, { frames: caller, control: controlCaller });
  return proxy as unknown as Gateway<T>;
}

/**
 * Lets go of a gateway's channels on `link` — the channel and its control channel — on this side only (the link
 * lives on): a JobMaster's once its job is over, on either side of a TaskExecutor's Link.
 */
export function closeGatewayChannels(link: Link, channel: string, reason: string): void {
  if (link.closed) return;
  for (const name of [channel, controlChannel(channel)]) link.channel(name).close(reason);
}
