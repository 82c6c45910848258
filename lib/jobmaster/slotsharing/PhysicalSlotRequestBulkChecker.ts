/**
 * Fails a bulk of physical slot requests that is still not fulfilled after `slot.request.timeout`
 * (Flink's PhysicalSlotRequestBulkCheckerImpl), with the reason the slots did not come.
 *
 * Flink checks a bulk at its deadline and, while the slot pool could still fulfil it ("pending"),
 * checks again later; it fails the bulk only once it has been unfulfillable for a whole timeout.
 * slotwise keeps it simple, as the issue asks: one timer per bulk, and at the deadline a bulk with
 * any request still unfulfilled fails. The timer is cleared as soon as nothing is pending any more,
 * so a finished job leaves no timer behind (a real 5 min timer would keep the process alive).
 */
import type { Clock, TimerHandle } from '../../core/clock.js';
import { formatDuration } from '../../core/Duration.js';
import { IllegalArgumentError, SlotRequestError } from '../../core/errors.js';
import type { JobID } from '../../core/ids.js';

/** The checker's view of a bulk. */
export interface PhysicalSlotRequestBulk {
  /** The physical requests still waiting for a slot, in request order. */
  pendingRequestIds(): readonly string[];
  /** How many physical requests the bulk started with. */
  readonly size: number;
  /** Fails every logical slot request of the bulk still waiting, with `cause`. */
  cancel(cause: Error): void;
  /** Runs `listener` once, as soon as no request is pending (all fulfilled, failed or given up). */
  whenSettled(listener: () => void): void;
}

export interface PhysicalSlotRequestBulkCheckerOptions {
  readonly clock: Clock;
  readonly jobId: JobID;
  /**
   * Why these requests still wait: the SlotManager's WaitReason, as text. Asked only when a bulk
   * times out. Default: a sentence saying no slot was offered.
   */
  readonly reasonFor?: (requestIds: readonly string[]) => string;
}

const NO_REASON = () => 'no slot was offered for it';

export class PhysicalSlotRequestBulkChecker {
  readonly #clock: Clock;
  readonly #jobId: JobID;
  readonly #reasonFor: (requestIds: readonly string[]) => string;
  readonly #timers = new Map<PhysicalSlotRequestBulk, TimerHandle>();

  constructor(options: PhysicalSlotRequestBulkCheckerOptions) {
    this.#clock = options.clock;
    this.#jobId = options.jobId;
    this.#reasonFor = options.reasonFor ?? NO_REASON;
  }

  /** Bulks with a timer still armed. */
  get pendingBulks(): number {
    return this.#timers.size;
  }

  /**
   * Fails `bulk` with a SlotRequestError ('timed-out', `details.why` the reason) if some request
   * is still pending `timeoutMs` from now. A bulk with nothing pending gets no timer.
   */
  schedulePendingRequestBulkTimeoutCheck(bulk: PhysicalSlotRequestBulk, timeoutMs: number): void {
    if (typeof timeoutMs !== 'number' || !Number.isFinite(timeoutMs) || timeoutMs < 0) {
      throw new IllegalArgumentError('invalid-value', `timeoutMs must be a finite number of milliseconds >= 0, got ${String(timeoutMs)}`, { argument: 'timeoutMs', value: String(timeoutMs) });
    }
    if (bulk.pendingRequestIds().length === 0 || this.#timers.has(bulk)) return;
    this.#timers.set(bulk, this.#clock.setTimeout(() => this.#check(bulk, timeoutMs), timeoutMs));
    bulk.whenSettled(() => this.#forget(bulk));
  }

  /** Clears every timer: the job is over, its bulks are no one's concern. */
  close(): void {
    for (const bulk of [...this.#timers.keys()]) this.#forget(bulk);
  }

  #check(bulk: PhysicalSlotRequestBulk, timeoutMs: number): void {
    if (!this.#timers.delete(bulk)) return;
    const pending = bulk.pendingRequestIds();
    if (pending.length === 0) return;
    let why: string;
    try {
      why = this.#reasonFor(pending);
    } catch (error) {
      why = `the reason could not be told (${(error as Error)?.message ?? String(error)})`;
    }
    const message = `${pending.length} of ${bulk.size} slot request${bulk.size === 1 ? '' : 's'} of job ${this.#jobId} not fulfilled within slot.request.timeout (${formatDuration(timeoutMs)}): ${why}`;
    bulk.cancel(new SlotRequestError('timed-out', message, { jobId: this.#jobId, why, timeoutMs, requestIds: [...pending] }));
  }

  #forget(bulk: PhysicalSlotRequestBulk): void {
    const timer = this.#timers.get(bulk);
    if (timer === undefined) return;
    this.#clock.clearTimeout(timer);
    this.#timers.delete(bulk);
  }
}
