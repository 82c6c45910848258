/**
 * Time, injected. Every timeout in slotwise (slot timeouts, heartbeats, request timeouts) is
 * scheduled on a Clock, so tests cross 10 s, 30 s or 5 min deadlines with a SimulatedClock
 * instead of sleeping. The shape is a superset of XState's `Clock`, so the same clock can be
 * passed to `createActor(machine, { clock })` and drives the machines' `after` delays too.
 */
export type TimerHandle = unknown;

export interface Clock {
  /** Milliseconds on this clock's time line (wall time for the system clock). */
  now(): number;
  setTimeout(fn: () => void, delayMs: number): TimerHandle;
  clearTimeout(handle: TimerHandle): void;
}

/**
 * `now - since` in ms, as a small integer while it fits in 32 bits (24 days): the difference of two timestamps is a
 * double that V8 boxes in a heap number wherever it is kept (a field, a Map entry), one per record in a large job.
 */
export function msSince(since: number, now: number): number {
  const ms = now - since;
  return ms === (ms | 0) ? ms | 0 : ms;
}

/** The real clock: `Date.now()` and the global timers. */
export const systemClock: Clock = {
  now: () => Date.now(),
  setTimeout: (fn, delayMs) => globalThis.setTimeout(fn, delayMs),
  clearTimeout: (handle) => globalThis.clearTimeout(handle as ReturnType<typeof globalThis.setTimeout>),
};

/**
 * `clock` with its timers fired through `execute` (an endpoint's mailbox): a timeout of a component
 * that lives in a mailbox runs there, like every other call it gets (Flink's MainThreadExecutor;
 * docs/runtime.md).
 */
export function mailboxClock(clock: Clock, execute: (fn: () => void) => void): Clock {
  return {
    now: () => clock.now(),
    setTimeout: (fn, delayMs) => clock.setTimeout(() => execute(fn), delayMs),
    clearTimeout: (handle) => clock.clearTimeout(handle),
  };
}

interface PendingTimer {
  readonly id: number;
  readonly due: number;
  readonly fn: () => void;
}

/**
 * A clock that only moves when told to. `increment(ms)` runs every timer that falls due on the
 * way, in due order (ties in scheduling order), each at its own due time — so a timer that
 * schedules another timer inside the window sees it fire in the same call.
 */
export class SimulatedClock implements Clock {
  #now: number;
  #nextId = 1;
  #timers = new Map<number, PendingTimer>();

  constructor(start = 0) {
    this.#now = start;
  }

  now(): number {
    return this.#now;
  }

  setTimeout(fn: () => void, delayMs: number): TimerHandle {
    const id = this.#nextId++;
    const delay = Number.isFinite(delayMs) && delayMs > 0 ? delayMs : 0;
    this.#timers.set(id, { id, due: this.#now + delay, fn });
    return id;
  }

  clearTimeout(handle: TimerHandle): void {
    this.#timers.delete(handle as number);
  }

  /** Timers still waiting to fire. */
  get pendingTimers(): number {
    return this.#timers.size;
  }

  /** Moves time forward by `ms`, firing every timer due up to the new time. */
  increment(ms: number): void {
    if (!Number.isFinite(ms) || ms < 0)
      throw new RangeError(`SimulatedClock.increment needs a finite ms >= 0, got ${ms}`);
    this.advanceTo(this.#now + ms);
  }

  /** Moves time forward to `time`, firing every timer due up to it. */
  advanceTo(time: number): void {
    // NaN would slip past `time < now` and poison now(); Infinity would never return while a
    // periodic timer (a heartbeat) keeps rescheduling itself.
    if (!Number.isFinite(time)) throw new RangeError(`SimulatedClock.advanceTo needs a finite time, got ${time}`);
    if (time < this.#now) throw new RangeError(`SimulatedClock cannot go back from ${this.#now} to ${time}`);
    for (;;) {
      const next = this.#earliestDue(time);
      if (next === undefined) break;
      this.#timers.delete(next.id);
      // A timer left late by stall() fires at the time it is, not back at its due time.
      this.#now = Math.max(this.#now, next.due);
      next.fn();
    }
    this.#now = time;
  }

  /**
   * Moves time forward by `ms` as a blocked event loop lives it (a long synchronous computation):
   * nothing runs on the way; then every timer that fell due fires, late, all at the new time, in
   * due order. A timer one of them schedules counts from the new time (it fires now only with delay 0).
   */
  stall(ms: number): void {
    if (!Number.isFinite(ms) || ms < 0) throw new RangeError(`SimulatedClock.stall needs a finite ms >= 0, got ${ms}`);
    this.#now += ms;
    this.flush();
  }

  /** Fires the timers that are due now (delay 0), without moving time. */
  flush(): void {
    this.advanceTo(this.#now);
  }

  #earliestDue(limit: number): PendingTimer | undefined {
    let best: PendingTimer | undefined;
    for (const timer of this.#timers.values()) {
      if (
        timer.due <= limit &&
        (best === undefined || timer.due < best.due || (timer.due === best.due && timer.id < best.id))
      ) {
        best = timer;
      }
    }
    return best;
  }
}

/** The system clock with timers that do not keep the process alive (`unref`). */
export function unrefClock(clock: Clock = systemClock): Clock {
  return {
    now: () => clock.now(),
    setTimeout: (fn, delayMs) => {
      const handle = clock.setTimeout(fn, delayMs);
      (handle as { unref?: () => void }).unref?.();
      return handle;
    },
    clearTimeout: (handle) => clock.clearTimeout(handle),
  };
}
