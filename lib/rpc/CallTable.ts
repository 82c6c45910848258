/**
 * The calls of one gateway on one Link channel that wait for an answer, whatever carries them (our
 * own frames, GatewayCaller; comlink, ControlCaller): their deadlines, and what happens when the
 * channel closes or a call cannot be sent. The carrier sends the call and reports its answer; this
 * table decides when the call gives up.
 *
 * - A call is one entry from the moment it is made until its answer, its deadline, a failed send or
 *   the close — whichever comes first takes it out, so nothing outlives a call.
 * - Deadlines (callDeadline.ts): the calls whose messages left in one transport send share one
 *   timer, armed when that send returned (Link.whenSent). When it fires, the messages already
 *   received are delivered first (Link.afterIncoming) — the answer may be sitting in our queue —
 *   and only then is the batch judged; messages from the peer since the calls left
 *   (Link.onReceived) extend them, up to `maxWaitMs`.
 * - Close: every pending call rejects at once with EndpointClosedError ('lost' when the peer went
 *   away, 'closed' when this side closed), later calls at once without sending.
 */
import type { Clock, TimerHandle } from '../core/clock.js';
import { EndpointClosedError, IllegalArgumentError, RpcTimeoutError } from '../core/errors.js';
import { judgeCallDeadline, type CallDeadlineVerdict } from './callDeadline.js';
import type { Channel, CloseKind, Link } from './Link.js';

export interface CallTableOptions {
  /** The gateway's name, for errors: `TaskExecutorGateway`. */
  readonly gateway: string;
  /** Who serves it, for errors: `taskexecutor-1a2b`. */
  readonly endpoint: string;
  /** How long a call waits while the peer sends nothing at all, from when its message left. */
  readonly timeoutMs: number;
  /** How long a call waits at most, from when its message left, however much the peer sends. */
  readonly maxWaitMs: number;
  readonly clock: Clock;
}

export interface PendingCall {
  readonly key: number;
  readonly method: string;
  readonly resolve: (value: unknown) => void;
  readonly reject: (error: unknown) => void;
  /** What was posted on the channel for it (to match a delivery failure); set by the carrier. */
  message: unknown;
  /** Set once its message has left. */
  batch: SentBatch | undefined;
  settled: boolean;
}

/** The calls whose messages left in one transport send: one deadline timer for all of them. */
interface SentBatch {
  readonly sentAt: number;
  readonly calls: readonly PendingCall[];
  /** Of `calls`, how many still wait. */
  waiting: number;
  timer: TimerHandle | undefined;
}

/** Why a call left the table without its answer (the carrier may have to forget it too). */
export type GiveUp = 'deadline' | 'undeliverable' | 'closed';

export class CallTable {
  readonly channel: Channel;
  readonly #link: Link;
  readonly #o: CallTableOptions;
  readonly #pending = new Map<number, PendingCall>();
  readonly #batches = new Set<SentBatch>();
  /** Calls made whose messages are still in our outbox. */
  #unsent: PendingCall[] = [];
  #lastHeardAt = -Infinity;
  #closedBy: { readonly reason: string; readonly kind: CloseKind } | undefined;
  /**
   * Set while calls are in flight: a link may carry many idle gateways (one per JobMaster a
   * TaskExecutor ever served).
   */
  #stopHearing: (() => void) | undefined;
  /** Told of each call that left the table without its answer, after it was rejected. */
  onGiveUp: ((call: PendingCall, why: GiveUp) => void) | undefined;
  /** Told once the channel closed, after every pending call was rejected. */
  onClosed: (() => void) | undefined;

  constructor(link: Link, channel: Channel, options: CallTableOptions) {
    this.#link = link;
    this.channel = channel;
    this.#o = options;
    channel.onClose(this.#onClose);
    channel.onUndeliverable(this.#onUndeliverable);
  }

  /** Calls waiting for an answer. */
  get pendingCalls(): number {
    return this.#pending.size;
  }

  /**
   * Enters a call under `key` (unique among the pending ones); the carrier posts its message right
   * after, in the same job, and sets `message` to what it posted.
   */
  add(key: number, method: string, resolve: (value: unknown) => void, reject: (error: unknown) => void): PendingCall {
    const call: PendingCall = { key, method, resolve, reject, message: undefined, batch: undefined, settled: false };
    if (this.#pending.size === 0) this.#stopHearing = this.#link.onReceived(this.#heard);
    this.#pending.set(key, call);
    if (this.#unsent.push(call) === 1) this.#link.whenSent(this.#sent);
    return call;
  }

  /** The pending call under `key`, taken out of the table; undefined if it is gone (answered, given up). */
  take(key: number): PendingCall | undefined {
    const call = this.#pending.get(key);
    return call !== undefined && this.#settle(call) ? call : undefined;
  }

  /** The error for a call made after the channel closed (not sent). */
  closedError(method: string): EndpointClosedError {
    return this.#closedError(method, false);
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

  readonly #heard = (): void => {
    this.#lastHeardAt = this.#o.clock.now();
  };

  /** Takes `call` out of every table; false if it was settled already. */
  #settle(call: PendingCall): boolean {
    if (call.settled) return false;
    call.settled = true;
    this.#pending.delete(call.key);
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
      if (!this.#settle(call)) continue;
      call.reject(this.#timeoutError(call.method, verdict, now - batch.sentAt));
      this.onGiveUp?.(call, 'deadline');
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
      call.reject(this.#closedError(call.method, true));
    }
    for (const call of calls) this.onGiveUp?.(call, 'closed');
    this.onClosed?.();
  };

  /** A call's message could not be cloned (the Link tells us while it sends the batch). */
  readonly #onUndeliverable = (message: unknown, error: unknown): void => {
    const call = this.#unsent.find((c) => c.message === message);
    if (call === undefined || !this.#settle(call)) return;
    const { gateway, endpoint } = this.#o;
    const method = call.method;
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
    this.onGiveUp?.(call, 'undeliverable');
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
