/**
 * Fails a bulk of physical slot requests that stays unfulfillable for `slot.request.timeout`
 * (Flink's PhysicalSlotRequestBulkCheckerImpl), with the reason the slots did not come.
 *
 * As Flink: a bulk is marked unfulfillable when it is scheduled and checked one timeout later. A
 * bulk with nothing pending is done. A bulk whose pending requests could each be served by a slot
 * the job already holds (busy or idle: its subtasks give it back when they end, and the slot pool
 * hands it on) is fulfillable — it is only waiting for its turn, so it is not failed and is
 * checked again a timeout later. Any other bulk fails once it has been unfulfillable for a whole
 * timeout. Departure from Flink: Flink needs a distinct slot per pending request (a pipelined
 * region runs all at once); here a bulk's subtasks run in stages and never need to run together,
 * so one held slot that matches is enough for every request of its profile.
 *
 * The timer is cleared as soon as nothing is pending any more, so a finished job leaves no timer
 * behind (a real 5 min timer would keep the process alive).
 */
import type { Clock, TimerHandle } from '../../core/clock.js';
import { formatDuration } from '../../core/Duration.js';
import { IllegalArgumentError, SlotRequestError } from '../../core/errors.js';
import type { JobID } from '../../core/ids.js';
import type { ResourceProfile } from '../../core/ResourceProfile.js';

/** The checker's view of a bulk. */
export interface PhysicalSlotRequestBulk {
  /** The physical requests still waiting for a slot, in request order. */
  pendingRequestIds(): readonly string[];
  /** The profiles those requests ask for (one entry per distinct profile is enough). */
  pendingRequestProfiles(): readonly ResourceProfile[];
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
  /** The profiles of every slot the job holds, busy or idle (its slot pool's); default none. */
  readonly heldSlotProfiles?: () => Iterable<ResourceProfile>;
}

const NO_REASON = () => 'no slot was offered for it';
const NO_SLOTS = (): Iterable<ResourceProfile> => [];

interface TrackedBulk {
  readonly timeoutMs: number;
  timer: TimerHandle;
  /** Since when no held slot could serve it (Flink's unfulfillableSince); null while one could. */
  unfulfillableSince: number | null;
}

export class PhysicalSlotRequestBulkChecker {
  readonly #clock: Clock;
  readonly #jobId: JobID;
  readonly #reasonFor: (requestIds: readonly string[]) => string;
  readonly #heldSlotProfiles: () => Iterable<ResourceProfile>;
  readonly #timers = new Map<PhysicalSlotRequestBulk, TrackedBulk>();

  constructor(options: PhysicalSlotRequestBulkCheckerOptions) {
    this.#clock = options.clock;
    this.#jobId = options.jobId;
    this.#reasonFor = options.reasonFor ?? NO_REASON;
    this.#heldSlotProfiles = options.heldSlotProfiles ?? NO_SLOTS;
  }

  /** Bulks with a timer still armed. */
  get pendingBulks(): number {
    return this.#timers.size;
  }

  /**
   * Fails `bulk` with a SlotRequestError ('timed-out', `details.why` the reason) once it has been
   * unfulfillable for `timeoutMs` (see the module comment); the first check is `timeoutMs` from
   * now. A bulk with nothing pending gets no timer.
   */
  schedulePendingRequestBulkTimeoutCheck(bulk: PhysicalSlotRequestBulk, timeoutMs: number): void {
    if (typeof timeoutMs !== 'number' || !Number.isFinite(timeoutMs) || timeoutMs < 0) {
      throw new IllegalArgumentError(
        'invalid-value',
        `timeoutMs must be a finite number of milliseconds >= 0, got ${String(timeoutMs)}`,
        { argument: 'timeoutMs', value: String(timeoutMs) },
      );
    }
    if (bulk.pendingRequestIds().length === 0 || this.#timers.has(bulk)) return;
    const tracked: TrackedBulk = {
      timeoutMs,
      timer: this.#clock.setTimeout(() => this.#check(bulk), timeoutMs),
      unfulfillableSince: this.#clock.now(),
    };
    this.#timers.set(bulk, tracked);
    bulk.whenSettled(() => this.#forget(bulk));
  }

  /** Clears every timer: the job is over, its bulks are no one's concern. */
  close(): void {
    for (const bulk of [...this.#timers.keys()]) this.#forget(bulk);
  }

  #check(bulk: PhysicalSlotRequestBulk): void {
    const tracked = this.#timers.get(bulk);
    if (tracked === undefined) return;
    const pending = bulk.pendingRequestIds();
    if (pending.length === 0) return void this.#timers.delete(bulk);
    const { timeoutMs } = tracked;
    const now = this.#clock.now();
    if (this.#fulfillableWithHeldSlots(bulk)) {
      tracked.unfulfillableSince = null;
    } else {
      tracked.unfulfillableSince ??= now;
    }
    if (tracked.unfulfillableSince === null || tracked.unfulfillableSince + timeoutMs > now) {
      tracked.timer = this.#clock.setTimeout(() => this.#check(bulk), Math.max(1, timeoutMs));
      return;
    }
    this.#timers.delete(bulk);
    let why: string;
    try {
      why = this.#reasonFor(pending);
    } catch (error) {
      why = `the reason could not be told (${(error as Error)?.message ?? String(error)})`;
    }
    const message =
      `${pending.length} of ${bulk.size} slot request${bulk.size === 1 ? '' : 's'} of job ${this.#jobId} ` +
      `not fulfilled within slot.request.timeout (${formatDuration(timeoutMs)}): ${why}`;
    bulk.cancel(
      new SlotRequestError('timed-out', message, { jobId: this.#jobId, why, timeoutMs, requestIds: [...pending] }),
    );
  }

  /** Whether every pending request of the bulk matches a slot the job holds (ResourceProfile.isMatching). */
  #fulfillableWithHeldSlots(bulk: PhysicalSlotRequestBulk): boolean {
    const held = [...this.#heldSlotProfiles()];
    if (held.length === 0) return false;
    return bulk.pendingRequestProfiles().every((wanted) => held.some((slot) => slot.isMatching(wanted)));
  }

  #forget(bulk: PhysicalSlotRequestBulk): void {
    const tracked = this.#timers.get(bulk);
    if (tracked === undefined) return;
    this.#clock.clearTimeout(tracked.timer);
    this.#timers.delete(bulk);
  }
}
