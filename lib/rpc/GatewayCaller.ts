/**
 * The calling side of one gateway on one Link channel: its calls in flight, their answers, their
 * deadlines, and what happens when the channel closes or a call cannot be sent. connectGateway
 * puts a typed proxy in front of it.
 *
 * - One listener for every answer of this gateway; a call is one map entry from the moment it is
 *   made until its answer, its deadline, a failed send or the close — whichever comes first takes
 *   it out, so nothing outlives a call (no resolver left behind at a deadline).
 * - Deadlines (callDeadline.ts): the calls whose frames left in one transport send share one timer,
 *   armed when that send returned (Link.whenSent). When it fires, the messages already received are
 *   delivered first (Link.afterIncoming) — the answer may be sitting in our queue — and only then
 *   is the batch judged; frames from the peer since the calls left (Link.onReceived) extend them,
 *   up to `maxWaitMs`.
 * - Close: every pending call rejects at once with EndpointClosedError ('lost' when the peer went
 *   away, 'closed' when this side closed), later calls at once without sending.
 */
import type { Clock, TimerHandle } from '../core/clock.js';
import { EndpointClosedError, IllegalArgumentError, RpcTimeoutError } from '../core/errors.js';
import { judgeCallDeadline, type CallDeadlineVerdict } from './callDeadline.js';
import { deserializeThrown } from './errorTransfer.js';
import type { Channel, ChannelMessageEvent, CloseKind, Link } from './Link.js';
import type { CallFrame, GatewayFrame } from './protocol.js';

export interface GatewayCallerOptions {
  /** The gateway's name, for errors: `TaskExecutorGateway`. */
  readonly gateway: string;
  /** Who serves it, for errors: `taskexecutor-1a2b`. */
  readonly endpoint: string;
  /** How long a call waits while the peer sends nothing at all, from when its frame left. */
  readonly timeoutMs: number;
  /** How long a call waits at most, from when its frame left, however much the peer sends. */
  readonly maxWaitMs: number;
  readonly clock: Clock;
}

interface PendingCall {
  readonly frame: CallFrame;
  readonly resolve: (value: unknown) => void;
  readonly reject: (error: unknown) => void;
  /** Set once its frame has left. */
  batch: SentBatch | undefined;
  settled: boolean;
}

/** The calls whose frames left in one transport send: one deadline timer for all of them. */
interface SentBatch {
  readonly sentAt: number;
  readonly calls: readonly PendingCall[];
  /** Of `calls`, how many still wait. */
  waiting: number;
  timer: TimerHandle | undefined;
}

/** Call ids per channel: two gateways on one channel never take each other's answers. */
const channelIds = new WeakMap<Channel, { next: number }>();

export class GatewayCaller {
  readonly channel: Channel;
  readonly #link: Link;
  readonly #o: GatewayCallerOptions;
  readonly #ids: { next: number };
  readonly #pending = new Map<number, PendingCall>();
  readonly #batches = new Set<SentBatch>();
  /** Calls made whose frames are still in our outbox. */
  #unsent: PendingCall[] = [];
  #lastHeardAt = -Infinity;
  #closedBy: { readonly reason: string; readonly kind: CloseKind } | undefined;
  /**
   * Set while calls are in flight: a link may carry many idle gateways (one per JobMaster a TaskExecutor ever served).
   */
  #stopHearing: (() => void) | undefined;

  constructor(link: Link, channel: Channel, options: GatewayCallerOptions) {
    this.#link = link;
    this.channel = channel;
    this.#o = options;
    let ids = channelIds.get(channel);
    if (ids === undefined) channelIds.set(channel, (ids = { next: 1 }));
    this.#ids = ids;
    channel.addEventListener('message', this.#onMessage);
    channel.onClose(this.#onClose);
    channel.onUndeliverable(this.#onUndeliverable);
  }

  /** Calls waiting for an answer. */
  get pendingCalls(): number {
    return this.#pending.size;
  }

  call(method: string, args: unknown[]): Promise<unknown> {
    if (this.channel.closed) return Promise.reject(this.#closedError(method, false));
    return new Promise<unknown>((resolve, reject) => {
      const frame: CallFrame = { kind: 'call', id: this.#ids.next++, method, args };
      const call: PendingCall = { frame, resolve, reject, batch: undefined, settled: false };
      if (this.#pending.size === 0) this.#stopHearing = this.#link.onReceived(this.#heard);
      this.#pending.set(frame.id, call);
      if (this.#unsent.push(call) === 1) this.#link.whenSent(this.#sent);
      this.channel.postMessage(frame);
    });
  }

  /** The frames of `#unsent` have left: their deadline starts now. */
  readonly #sent = (): void => {
    const calls = this.#unsent;
    this.#unsent = [];
    const batch: SentBatch = { sentAt: this.#o.clock.now(), calls, waiting: 0, timer: undefined };
    for (const call of calls) {
      if (call.settled) continue;
      call.batch = batch;
      batch.waiting++;
    }
    if (batch.waiting === 0) return;
    this.#batches.add(batch);
    batch.timer = this.#o.clock.setTimeout(() => this.#due(batch), this.#o.timeoutMs);
  };

  readonly #onMessage = (event: ChannelMessageEvent): void => {
    const frame = event.data as GatewayFrame | null;
    const kind = frame?.kind;
    if (kind !== 'result' && kind !== 'error') return;
    // Answers to other gateways of this channel, and late ones to calls given up, find no entry.
    const call = this.#pending.get(frame!.id);
    if (call === undefined || !this.#settle(call)) return;
    if (frame!.kind === 'result') call.resolve(frame!.value);
    else call.reject(deserializeThrown(frame!.thrown));
  };

  readonly #heard = (): void => {
    this.#lastHeardAt = this.#o.clock.now();
  };

  /** Takes `call` out of every table; false if it was settled already. */
  #settle(call: PendingCall): boolean {
    if (call.settled) return false;
    call.settled = true;
    this.#pending.delete(call.frame.id);
    if (this.#pending.size === 0) this.#stopHearing?.();
    const batch = call.batch;
    if (batch !== undefined && --batch.waiting === 0) {
      if (batch.timer !== undefined) this.#o.clock.clearTimeout(batch.timer);
      this.#batches.delete(batch);
    }
    return true;
  }

  /** A batch's timer fired: first let what has arrived be delivered, then judge. */
  #due(batch: SentBatch): void {
    batch.timer = undefined;
    this.#link.afterIncoming(() => this.#judge(batch));
  }

  #judge(batch: SentBatch): void {
    if (batch.waiting === 0) return;
    const { clock, timeoutMs, maxWaitMs } = this.#o;
    const now = clock.now();
    const verdict = judgeCallDeadline({
      sentAt: batch.sentAt,
      lastHeardAt: this.#lastHeardAt,
      now,
      timeoutMs,
      maxWaitMs,
    });
    if (verdict.kind === 'wait') {
      batch.timer = clock.setTimeout(() => this.#due(batch), verdict.until - now);
      return;
    }
    for (const call of batch.calls) {
      if (this.#settle(call)) call.reject(this.#timeoutError(call.frame.method, verdict, now - batch.sentAt));
    }
  }

  #timeoutError(
    method: string,
    verdict: Exclude<CallDeadlineVerdict, { kind: 'wait' }>,
    waitedMs: number,
  ): RpcTimeoutError {
    const { gateway, endpoint, timeoutMs, maxWaitMs } = this.#o;
    const call = `${gateway}.${method} to ${endpoint}`;
    const message =
      verdict.kind === 'max-wait'
        ? `${call} got no answer within ${maxWaitMs} ms, the most a call waits (${endpoint} kept sending other frames)`
        : verdict.heardSinceSent
          ? `${call} got no answer within ${waitedMs} ms: ${endpoint} sent nothing for the last ${timeoutMs} ms`
          : `${call} got no answer within ${timeoutMs} ms`;
    return new RpcTimeoutError(message, {
      gateway,
      method,
      timeoutMs,
      maxWaitMs,
      waitedMs,
      endpoint,
      expired: verdict.kind,
    });
  }

  readonly #onClose = (reason: string, kind: CloseKind): void => {
    this.#closedBy = { reason, kind };
    this.#stopHearing?.();
    for (const batch of this.#batches) {
      if (batch.timer !== undefined) this.#o.clock.clearTimeout(batch.timer);
    }
    this.#batches.clear();
    this.#unsent = [];
    const calls = [...this.#pending.values()];
    this.#pending.clear();
    for (const call of calls) {
      call.settled = true;
      call.reject(this.#closedError(call.frame.method, true));
    }
  };

  /** A call's frame could not be cloned (the Link tells us while it sends the batch). */
  readonly #onUndeliverable = (message: unknown, error: unknown): void => {
    const call = this.#unsent.find((c) => c.frame === message);
    if (call === undefined || !this.#settle(call)) return;
    const { gateway, endpoint } = this.#o;
    const method = call.frame.method;
    call.reject(
      new IllegalArgumentError(
        'invalid-value',
        `${gateway}.${method}: its arguments could not be sent to ${endpoint} ` +
          `(${error instanceof Error ? error.message : String(error)}); gateways carry structured-cloneable data only`,
        {
          argument: 'args',
          gateway,
          method,
        },
      ),
    );
  };

  #closedError(method: string, wasPending: boolean): EndpointClosedError {
    const { gateway, endpoint } = this.#o;
    const { reason, kind } = this.#closedBy ?? {
      reason: this.#link.closeReason ?? `channel "${this.channel.name}" closed`,
      kind: this.#link.closeKind ?? 'closed',
    };
    return new EndpointClosedError(
      wasPending
        ? `${gateway}.${method} to ${endpoint}: the ` +
            `connection ${kind === 'lost' ? 'was lost' : 'was closed by this side'} ` +
            `before an answer came (${reason}); the call may or may not have run`
        : `${gateway}.${method} to ${endpoint} was not sent: the ` +
            `connection is ${kind === 'lost' ? 'lost' : 'closed'} (${reason})`,
      { endpoint, gateway, method, cause: reason },
      kind,
    );
  }
}
