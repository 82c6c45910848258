/**
 * The serving side of a gateway on a Link channel: each CallFrame (protocol.ts) names one method of
 * the implementation and carries its arguments; it runs — as a task of the endpoint's mailbox
 * when there is one — and its outcome goes back as a ResultFrame or an ErrorFrame. A thrown error
 * travels by errorTransfer.ts, so it arrives as its own class. Only the implementation's own
 * methods can be called (not `constructor`, `toString`, …); anything else is answered with an
 * IllegalArgumentError.
 */
import { IllegalArgumentError, IllegalStateError } from '../core/errors.js';
import { serializeThrown } from './errorTransfer.js';
import { controlChannel, methodNames, unknownMethod } from './gatewayMethods.js';
import type { ChannelMessageEvent, Link } from './Link.js';
import type { MainThreadExecutor } from './MainThreadExecutor.js';
import type { AnswerFrame, ErrorFrame, GatewayFrame, ResultFrame } from './protocol.js';
import { serveControl } from './serveControl.js';

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
  /**
   * Of the methods, those also served by comlink on the gateway's control channel
   * (`controlChannel(channel)`, serveControl.ts), for callers connected with the same `control`
   * list (CONTROL_METHODS in gateways.ts). They stay callable on the gateway's channel too. Default: none.
   */
  readonly control?: readonly string[];
  /**
   * Of the methods, those whose results go with the next batch the link sends, or within WITH_NEXT_MAX_WAIT_MS
   * (`Channel.postWithNext`), not in a batch of their own: an acknowledgement its caller does not wait on, where what
   * the call sets off follows soon (a TaskExecutor's submitTask, its task's states). Their errors go at once.
   */
  readonly answerWithNext?: ReadonlyArray<keyof T & string>;
}

export interface ServedGateway {
  readonly channel: string;
  /** The method names callers may use. */
  readonly methods: readonly string[];
  /** Stops answering calls on the channel and its control channel (the link lives on). */
  stop(): void;
}

type Invoke = (args: readonly unknown[]) => unknown;

/** A served method: how it is called, and how its result is answered (at once, or with the next batch). */
interface Served {
  readonly invoke: Invoke;
  readonly answer: (id: number, value: unknown) => void;
}

const isThenable = (value: unknown): value is PromiseLike<unknown> =>
  typeof (value as { then?: unknown } | null)?.then === 'function';

/**
 * Serves `implementation` on `link.channel(channel)`. With a mailbox, each call runs as one of its
 * tasks (the implementation may assert it runs in its main thread); without one, where the frame
 * arrives. A call naming anything but one of its methods is answered with an IllegalArgumentError.
 */
export function serveGateway<T extends object>(
  link: Link,
  channel: string,
  implementation: T,
  options: ServeOptions<T> = {},
): ServedGateway {
  if (typeof implementation !== 'object' || implementation === null) {
    throw new IllegalArgumentError(
      'invalid-type',
      `serveGateway needs an object implementing the gateway, ` +
        `got ${implementation === null ? 'null' : typeof implementation}`,
      { argument: 'implementation' },
    );
  }
  const gateway = options.gateway ?? channel;
  const available = methodNames(implementation);
  const methods = options.methods === undefined ? available : [...options.methods].sort();
  const control = options.control ?? [];
  const withNext: readonly string[] = options.answerWithNext ?? [];
  for (const [option, names] of [
    ['methods', methods],
    ['control', control],
    ['answerWithNext', withNext],
  ] as const) {
    const unknown = names.find((name) => !available.includes(name));
    if (unknown === undefined) continue;
    throw new IllegalArgumentError(
      'unknown-key',
      `serveGateway(${gateway}): options.${option} names "${unknown}", which is ` +
        `not a method of the implementation (it has ${available.join(', ')})`,
      { argument: `options.${option}`, value: unknown },
    );
  }
  if (methods.length === 0) {
    throw new IllegalArgumentError('invalid-value', `serveGateway(${gateway}): the implementation has no methods`, {
      argument: 'implementation',
    });
  }
  if (link.closed) {
    throw new IllegalStateError(`cannot serve ${gateway} on ${link.name}: the link is closed (${link.closeReason})`, {
      component: link.name,
      operation: 'serveGateway',
      state: 'closed',
      allowed: ['open'],
    });
  }
  const endpoint = link.channel(channel);
  const answer = (id: number, value: unknown) =>
    endpoint.postMessage({ kind: 'result', id, value } satisfies ResultFrame);
  const answerWithNext = (id: number, value: unknown) =>
    endpoint.postWithNext({ kind: 'result', id, value } satisfies ResultFrame);

  const { mailbox } = options;
  const table = Object.create(null) as Record<string, Served>;
  for (const name of methods) {
    const method = (implementation as Record<string, (...args: unknown[]) => unknown>)[name]!;
    table[name] = {
      invoke:
        mailbox === undefined
          ? (args) => method.apply(implementation, args as unknown[])
          : (args) => mailbox.callAsync(() => method.apply(implementation, args as unknown[])),
      answer: withNext.includes(name) ? answerWithNext : answer,
    };
  }

  const fail = (id: number, thrown: unknown) =>
    endpoint.postMessage({ kind: 'error', id, thrown: serializeThrown(thrown) } satisfies ErrorFrame);

  const listener = (event: ChannelMessageEvent): void => {
    const frame = event.data as GatewayFrame | null;
    if (frame?.kind !== 'call') return;
    const { id, method, args } = frame;
    const served = typeof method === 'string' && Object.hasOwn(table, method) ? table[method]! : undefined;
    if (served === undefined) return fail(id, unknownMethod(gateway, String(method), methods));
    if (!Array.isArray(args))
      return fail(
        id,
        new IllegalArgumentError('invalid-type', `${gateway}.${method}: a call's arguments must be an array`, {
          argument: 'args',
          gateway,
          method,
        }),
      );
    let result: unknown;
    try {
      result = served.invoke(args);
    } catch (error) {
      return fail(id, error);
    }
    const ok = served.answer;
    if (isThenable(result)) {
      result.then(
        (value) => ok(id, value),
        (error: unknown) => fail(id, error),
      );
    } else {
      ok(id, result);
    }
  };
  endpoint.addEventListener('message', listener);
  // An answer that cannot be cloned fails when its batch is sent: answer the call with an error
  // instead, so the caller does not wait out its deadline.
  const stopUndeliverable = endpoint.onUndeliverable((message, error) => {
    const frame = message as AnswerFrame | null;
    if (frame?.kind !== 'result' && frame?.kind !== 'error') return;
    const what = frame.kind === 'result' ? 'the result of a call' : 'the error a call threw';
    fail(
      frame.id,
      new TypeError(
        `${gateway}: ${what} could not be sent back (${error instanceof Error ? error.message : String(error)})`,
      ),
    );
  });
  const stopControl =
    control.length === 0
      ? undefined
      : serveControl(link.channel(controlChannel(channel)), implementation, control, { gateway, mailbox });
  return {
    channel,
    methods,
    stop: () => {
      stopUndeliverable();
      endpoint.removeEventListener('message', listener);
      stopControl?.();
    },
  };
}
