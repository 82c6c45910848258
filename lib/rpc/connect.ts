/**
 * Gateways over a Link: `serveGateway` exposes an implementation on a channel with comlink's
 * `expose`; `connectGateway` calls it from the other side in comlink's wire protocol (APPLY
 * requests, RAW / HANDLER answers, comlink's transfer handlers). What this adds (STYLE.md §6):
 *
 * - a deadline on every call, on the injected clock: `RpcTimeoutError` naming gateway, method and
 *   timeout — comlink's calls otherwise wait forever;
 * - fail fast: when the link closes or is lost, every pending call is rejected at once with
 *   `EndpointClosedError`, and later calls fail without sending;
 * - errors keep their class across the boundary (errorTransfer.ts);
 * - served calls run as tasks of the endpoint's mailbox (MainThreadExecutor), one at a time;
 * - only the implementation's own methods can be called (not `constructor`, `toString`, … nor
 *   comlink's GET/SET of properties).
 *
 * Why the caller does not use comlink's `wrap`: per call it builds a request id from four
 * `Math.random().toString(16)` (measured: ~40 % of a call's CPU over a Link), reads the method
 * through a fresh Proxy registered with a FinalizationRegistry, and keeps the resolver in a map we
 * cannot reach — a call abandoned at its deadline would stay there until an answer that may never
 * come, and when the proxies are collected it sends RELEASE, which makes the serving side stop
 * listening for every other caller of that channel. Here: one listener per gateway, a numeric id,
 * one map entry per call removed on answer, deadline, undeliverable request or close.
 */
import { expose, transferHandlers, type Endpoint } from 'comlink';
import { systemClock, type Clock, type TimerHandle } from '../core/clock.js';
import { EndpointClosedError, IllegalArgumentError, IllegalStateError, RpcTimeoutError } from '../core/errors.js';
import { serializeThrown } from './errorTransfer.js';
import type { Channel, ChannelListener, ChannelMessageEvent, CloseKind, Link } from './Link.js';
import type { MainThreadExecutor } from './MainThreadExecutor.js';

/** `T`'s methods, each returning a promise of what it returns. */
export type Gateway<T> = {
  readonly [K in keyof T as T[K] extends (...args: never[]) => unknown ? K : never]: T[K] extends (...args: infer A) => infer R ? (...args: A) => Promise<Awaited<R>> : never;
};

export interface ServeOptions<T = object> {
  /** When given, every call runs as a task of this mailbox (`mailbox.callAsync`). */
  readonly mailbox?: MainThreadExecutor;
  /**
   * The methods callers may use, when the implementation has more than the gateway's (a class
   * with lifecycle methods of its own). Default: every method of the implementation and its class.
   */
  readonly methods?: ReadonlyArray<keyof T & string>;
  /** The gateway's name, for messages (e.g. `GATEWAY.taskExecutor`). Default: the channel name. */
  readonly gateway?: string;
}

export interface ServedGateway {
  readonly channel: string;
  /** The method names callers may use. */
  readonly methods: readonly string[];
  /** Stops answering calls on the channel (the link lives on). */
  stop(): void;
}

export interface ConnectOptions {
  /** The gateway's name, for errors: `GATEWAY.taskExecutor`, … */
  readonly gateway: string;
  /** Every call's deadline, in ms on `clock`. */
  readonly timeoutMs: number;
  /** Default: the system clock. */
  readonly clock?: Clock;
  /** Who serves it, for messages (`TaskExecutor te-1a2b`). Default: the channel name. */
  readonly endpoint?: string;
}

type AnyMethod = (...args: unknown[]) => unknown;

/** Names no gateway serves (Object.prototype's) — and `then`, so a gateway is never mistaken for a promise. */
const NOT_METHODS = new Set<string>([...Object.getOwnPropertyNames(Object.prototype), 'then']);

/** The method names of `implementation`: its own function properties and its class's, up to Object.prototype. */
function methodNames(implementation: object): string[] {
  const names = new Set<string>();
  for (let o: object | null = implementation; o !== null && o !== Object.prototype; o = Object.getPrototypeOf(o) as object | null) {
    for (const name of Object.getOwnPropertyNames(o)) {
      if (NOT_METHODS.has(name) || names.has(name)) continue;
      const descriptor = Object.getOwnPropertyDescriptor(o, name);
      if (descriptor !== undefined && typeof descriptor.value === 'function') names.add(name);
    }
  }
  return [...names].sort();
}

function unknownMethod(gateway: string, method: string, allowed: readonly string[]): IllegalArgumentError {
  return new IllegalArgumentError('unknown-key', `${gateway} has no method "${method}"; its methods are ${allowed.join(', ')}`, {
    argument: 'method',
    value: method,
    gateway,
    allowed,
  });
}

/**
 * Serves `implementation` on `link.channel(channel)`. With a mailbox, each call runs as one of its
 * tasks (the implementation may assert it runs in its main thread); without one, where the message
 * arrives. A call naming anything but one of its methods is answered with an IllegalArgumentError.
 */
export function serveGateway<T extends object>(link: Link, channel: string, implementation: T, options: ServeOptions<T> = {}): ServedGateway {
  if (typeof implementation !== 'object' || implementation === null) {
    throw new IllegalArgumentError('invalid-type', `serveGateway needs an object implementing the gateway, got ${implementation === null ? 'null' : typeof implementation}`, { argument: 'implementation' });
  }
  const gateway = options.gateway ?? channel;
  const available = methodNames(implementation);
  const methods = options.methods === undefined ? available : [...options.methods].sort();
  for (const name of methods) {
    if (!available.includes(name)) {
      throw new IllegalArgumentError('unknown-key', `serveGateway(${gateway}): options.methods names "${name}", which is not a method of the implementation (it has ${available.join(', ')})`, {
        argument: 'options.methods',
        value: name,
      });
    }
  }
  if (methods.length === 0) {
    throw new IllegalArgumentError('invalid-value', `serveGateway(${gateway}): the implementation has no methods`, { argument: 'implementation' });
  }
  if (link.closed) {
    throw new IllegalStateError(`cannot serve ${gateway} on ${link.name}: the link is closed (${link.closeReason})`, {
      component: link.name,
      operation: 'serveGateway',
      state: 'closed',
      allowed: ['open'],
    });
  }
  const { mailbox } = options;
  const table = Object.create(null) as Record<string, AnyMethod>;
  for (const name of methods) {
    const method = (implementation as Record<string, AnyMethod>)[name]!;
    table[name] = mailbox === undefined ? (...args) => method.apply(implementation, args) : (...args) => mailbox.callAsync(() => method.apply(implementation, args));
  }
  // comlink walks `path` through whatever it is given and can also GET and SET: give it a view
  // that only ever yields our methods (anything else: a method that throws IllegalArgumentError).
  const exposed = new Proxy(table, {
    get: (target, property) => (typeof property === 'string' && Object.hasOwn(target, property) ? target[property] : () => {
      throw unknownMethod(gateway, String(property), methods);
    }),
    set: () => false,
  });

  const endpoint = link.channel(channel);
  const listeners: ChannelListener[] = [];
  const served: Endpoint = {
    postMessage: (message: unknown) => endpoint.postMessage(message),
    addEventListener: (type: string, listener: unknown) => {
      const comlinkListener = listener as (event: ChannelMessageEvent) => void;
      // A comlink `wrap` client sends RELEASE when its proxies are collected, and comlink then
      // stops serving the channel for everyone: a gateway lives as long as the link, so drop it.
      const filtered = (event: ChannelMessageEvent) => {
        if ((event.data as { type?: unknown } | null)?.type !== 'RELEASE') comlinkListener(event);
      };
      listeners.push(filtered);
      endpoint.addEventListener(type, filtered);
    },
    removeEventListener: () => {},
  };
  // An answer that cannot be cloned fails at the batch's send, after comlink has let go of it:
  // answer the call with an error instead, so the caller does not wait out its deadline.
  const stopUndeliverable = endpoint.onUndeliverable((message, error) => {
    const id = (message as Answer | null)?.id;
    if (id === undefined) return;
    const failure = new TypeError(`${gateway}: the result of a call could not be sent back (${error instanceof Error ? error.message : String(error)})`);
    endpoint.postMessage({ id, type: 'HANDLER', name: 'throw', value: serializeThrown(failure) });
  });
  expose(exposed, served);
  return {
    channel,
    methods,
    stop: () => {
      stopUndeliverable();
      for (const listener of listeners.splice(0)) endpoint.removeEventListener('message', listener);
    },
  };
}

interface PendingCall {
  readonly method: string;
  readonly resolve: (value: unknown) => void;
  readonly reject: (error: unknown) => void;
  timer: TimerHandle;
}

/** A comlink answer: `{ id, type: 'RAW', value }` or `{ id, type: 'HANDLER', name, value }`. */
interface Answer {
  readonly id?: unknown;
  readonly type?: unknown;
  readonly name?: unknown;
  readonly value?: unknown;
}

/** Per gateway, for tests and leak checks. */
const states = new WeakMap<object, { readonly pending: Map<number, PendingCall>; readonly channel: Channel }>();

/** The calls of `gateway` still waiting for an answer, and whether its channel is closed. */
export function gatewayStatus(gateway: object): { readonly pendingCalls: number; readonly closed: boolean } {
  const state = states.get(gateway);
  if (state === undefined) throw new IllegalArgumentError('invalid-value', 'gatewayStatus needs a gateway made by connectGateway', { argument: 'gateway' });
  return { pendingCalls: state.pending.size, closed: state.channel.closed };
}

/** An argument in comlink's wire form: through a transfer handler that claims it, else RAW. */
function toWire(value: unknown): unknown {
  if (typeof value === 'object' && value !== null) {
    for (const [name, handler] of transferHandlers) {
      if (!handler.canHandle(value)) continue;
      const [serialized, transferables] = handler.serialize(value);
      if (transferables.length > 0) {
        throw new TypeError(`an argument needs transfer handler "${name}", which transfers objects (a proxy's MessagePort); a Link carries structured-cloneable data only`);
      }
      return { type: 'HANDLER', name, value: serialized };
    }
  }
  return { type: 'RAW', value };
}

/** An answer's value; throws what the implementation threw (revived by the 'throw' handler). */
function fromWire(answer: Answer): unknown {
  if (answer.type === 'HANDLER') {
    const handler = typeof answer.name === 'string' ? transferHandlers.get(answer.name) : undefined;
    if (handler === undefined) throw new TypeError(`the answer needs comlink transfer handler "${String(answer.name)}", which is not installed on this side`);
    return handler.deserialize(answer.value);
  }
  return answer.value;
}

/**
 * A proxy for the gateway served on `link.channel(channel)` on the other side: an object whose
 * every method returns a promise. Each call races a deadline of `timeoutMs` on the clock
 * (RpcTimeoutError); once the link or channel closes, pending calls reject at once with
 * EndpointClosedError ('lost' when the peer went away, 'closed' when this side closed it) and later
 * calls fail at once without sending. An error the implementation throws arrives as its own class.
 * A method the implementation does not have rejects with IllegalArgumentError.
 */
export function connectGateway<T>(link: Link, channel: string, options: ConnectOptions): Gateway<T> {
  const { gateway, timeoutMs, clock = systemClock } = options ?? ({} as ConnectOptions);
  if (typeof gateway !== 'string' || gateway === '') {
    throw new IllegalArgumentError('invalid-value', `options.gateway must name the gateway (e.g. 'TaskExecutorGateway'), got ${String(gateway)}`, { argument: 'options.gateway', value: gateway });
  }
  if (typeof timeoutMs !== 'number' || !Number.isFinite(timeoutMs) || timeoutMs <= 0) {
    throw new IllegalArgumentError('out-of-range', `options.timeoutMs must be a finite number of ms > 0, got ${String(timeoutMs)}`, { argument: 'options.timeoutMs', value: timeoutMs });
  }
  const endpointName = options.endpoint ?? channel;
  const endpoint = link.channel(channel);
  const pending = new Map<number, PendingCall>();
  let nextId = 1;

  const settle = (id: number): PendingCall | undefined => {
    const call = pending.get(id);
    if (call === undefined) return undefined;
    pending.delete(id);
    clock.clearTimeout(call.timer);
    return call;
  };

  // One listener for every answer of this gateway. Answers to other callers of the channel, and
  // late answers to calls already timed out, find no entry and are ignored.
  endpoint.addEventListener('message', (event: ChannelMessageEvent) => {
    const answer = event.data as Answer | null;
    if (typeof answer?.id !== 'number') return;
    const call = settle(answer.id);
    if (call === undefined) return;
    let value: unknown;
    try {
      value = fromWire(answer);
    } catch (error) {
      call.reject(error);
      return;
    }
    call.resolve(value);
  });

  const closedError = (method: string, reason: string, kind: CloseKind, wasPending: boolean) =>
    new EndpointClosedError(
      wasPending
        ? `${gateway}.${method} to ${endpointName}: the connection ${kind === 'lost' ? 'was lost' : 'was closed by this side'} before an answer came (${reason}); the call may or may not have run`
        : `${gateway}.${method} to ${endpointName} was not sent: the connection is ${kind === 'lost' ? 'lost' : 'closed'} (${reason})`,
      { endpoint: endpointName, gateway, method, cause: reason },
      kind,
    );

  let closedBy: { readonly reason: string; readonly kind: CloseKind } | undefined;
  endpoint.onClose((reason, kind) => {
    closedBy = { reason, kind };
    const calls = [...pending.values()];
    pending.clear();
    for (const call of calls) {
      clock.clearTimeout(call.timer);
      call.reject(closedError(call.method, reason, kind, true));
    }
  });

  endpoint.onUndeliverable((message, error) => {
    const id = (message as Answer | null)?.id;
    const call = typeof id === 'number' ? settle(id) : undefined;
    if (call === undefined) return;
    call.reject(
      new IllegalArgumentError('invalid-value', `${gateway}.${call.method}: its arguments could not be sent to ${endpointName} (${error instanceof Error ? error.message : String(error)}); gateways carry structured-cloneable data only`, {
        argument: 'args',
        gateway,
        method: call.method,
      }),
    );
  });

  const call = (method: string, args: unknown[]): Promise<unknown> => {
    if (endpoint.closed) {
      const { reason, kind } = closedBy ?? { reason: link.closeReason ?? `channel "${channel}" closed`, kind: link.closeKind ?? 'closed' };
      return Promise.reject(closedError(method, reason, kind, false));
    }
    let argumentList: unknown[];
    try {
      argumentList = args.map(toWire);
    } catch (error) {
      return Promise.reject(new IllegalArgumentError('invalid-value', `${gateway}.${method}: ${error instanceof Error ? error.message : String(error)}`, { argument: 'args', gateway, method }));
    }
    return new Promise<unknown>((resolve, reject) => {
      const id = nextId++;
      const timer = clock.setTimeout(() => {
        if (settle(id) === undefined) return;
        reject(new RpcTimeoutError(`${gateway}.${method} to ${endpointName} got no answer within ${timeoutMs} ms`, { gateway, method, timeoutMs, endpoint: endpointName }));
      }, timeoutMs);
      pending.set(id, { method, resolve, reject, timer });
      endpoint.postMessage({ id, type: 'APPLY', path: [method], argumentList });
    });
  };

  const methods = new Map<string, AnyMethod>();
  const target = Object.create(null) as Record<string, AnyMethod>;
  const proxy = new Proxy(target, {
    get: (_target, property) => {
      if (typeof property !== 'string' || property === 'then') return undefined;
      let method = methods.get(property);
      if (method === undefined) {
        if (NOT_METHODS.has(property)) {
          const error = () =>
            new IllegalArgumentError('unknown-key', `${gateway}.${property} is not a gateway method (it belongs to every object); call one of the methods ${endpointName} serves`, {
              argument: 'method',
              value: property,
              gateway,
            });
          method = () => Promise.reject(error());
        } else {
          method = (...args: unknown[]) => call(property, args);
        }
        methods.set(property, method);
      }
      return method;
    },
    set: () => false,
    defineProperty: () => false,
    deleteProperty: () => false,
  });
  states.set(proxy, { pending, channel: endpoint });
  return proxy as unknown as Gateway<T>;
}
