/**
 * Many keyed deadlines, one timer. The SlotManager holds up to 100,000 deadlines at once (slot
 * request timeouts, idle TaskExecutor timeouts); one clock timer per deadline would cost a timer
 * object each and a clearTimeout per reschedule. Here the deadlines sit in a binary min-heap and
 * exactly one clock timer is armed, for the earliest of them.
 *
 * - `schedule(key, at)` sets or replaces the key's deadline (an absolute time on the clock);
 *   `cancel(key)` drops it. Both are O(log n): a replaced or cancelled entry is not searched for
 *   in the heap but left there and recognised as stale by its generation (lazy deletion); the heap
 *   is rebuilt from its live entries when stale ones outnumber them.
 * - When the timer fires, every key whose deadline is ≤ `clock.now()` is removed and handed to
 *   `onDue(key, deadline)`, in deadline order, ties in scheduling order. A key is removed before
 *   its callback, so the callback may schedule it again.
 * - A deadline scheduled from inside a callback never fires in the same sweep, even when it is
 *   already due: it waits for the next timer (armed with delay 0), so a callback that keeps
 *   rescheduling at `now` cannot spin forever inside one timer turn.
 * - A deadline already in the past when scheduled fires on the next timer turn, never synchronously
 *   inside `schedule`.
 * - If a callback throws, the error propagates out of the timer callback; the scheduler stays
 *   consistent and the deadlines still due fire on the next timer turn (delay 0).
 */
import type { Clock, TimerHandle } from './clock.js';
import { IllegalArgumentError } from './errors.js';

/** setTimeout delays above 2^31-1 ms overflow to 1 ms in Node: arm at most this far ahead and re-arm. */
const MAX_TIMER_DELAY = 2_147_483_647;
/** Rebuild the heap once it holds more than this many stale entries and more stale than live ones. */
const COMPACT_MIN_STALE = 1024;

interface Entry {
  deadline: number;
  /** Generation of the key's current heap entry; also its scheduling order for ties. */
  seq: number;
}

export class DeadlineScheduler<K> {
  readonly #clock: Clock;
  readonly #onDue: (key: K, deadline: number) => void;
  readonly #entries = new Map<K, Entry>();

  // The heap, as parallel arrays (no object per entry): ordered by (deadline, seq).
  #heapDeadline: number[] = [];
  #heapSeq: number[] = [];
  #heapKey: K[] = [];
  #stale = 0;
  #nextSeq = 1;

  #timer: TimerHandle | undefined = undefined;
  /** The deadline the armed timer is for; undefined when no timer is armed. */
  #armedFor: number | undefined = undefined;
  /** Identifies the armed timer, so a callback that outlived its clearTimeout does nothing. */
  #timerToken = 0;
  /** True while a sweep runs callbacks: re-arming waits until the sweep ends. */
  #firing = false;
  /** Entries with seq ≥ this were scheduled during the current sweep and wait for the next one. */
  #sweepLimit = Infinity;

  /**
   * @param clock the time line and timers (a SimulatedClock in tests).
   * @param onDue called once per deadline that falls due, after the key has been removed.
   */
  constructor(clock: Clock, onDue: (key: K, deadline: number) => void) {
    if (
      typeof clock !== 'object' ||
      clock === null ||
      typeof clock.now !== 'function' ||
      typeof clock.setTimeout !== 'function' ||
      typeof clock.clearTimeout !== 'function'
    ) {
      throw new IllegalArgumentError(
        'invalid-type',
        'DeadlineScheduler: clock must be a Clock (now, setTimeout, clearTimeout)',
        { argument: 'clock' },
      );
    }
    if (typeof onDue !== 'function') {
      throw new IllegalArgumentError(
        'invalid-type',
        `DeadlineScheduler: onDue must be a function, got ${typeof onDue}`,
        { argument: 'onDue' },
      );
    }
    this.#clock = clock;
    this.#onDue = onDue;
  }

  /** Number of keys with a deadline. */
  get size(): number {
    return this.#entries.size;
  }

  has(key: K): boolean {
    return this.#entries.has(key);
  }

  /** The key's deadline, or undefined when it has none. */
  deadlineOf(key: K): number | undefined {
    return this.#entries.get(key)?.deadline;
  }

  /**
   * Sets `key`'s deadline to the absolute time `at` (clock milliseconds), replacing any deadline
   * it had. `at` must be a finite number; a time already past fires on the next timer turn.
   */
  schedule(key: K, at: number): void {
    if (typeof at !== 'number' || !Number.isFinite(at)) {
      throw new IllegalArgumentError(
        typeof at === 'number' ? 'invalid-value' : 'invalid-type',
        `DeadlineScheduler.schedule: at must be a finite number of milliseconds, got ${String(at)}`,
        {
          argument: 'at',
          value: typeof at === 'number' ? at : String(at),
        },
      );
    }
    const seq = this.#nextSeq++;
    const entry = this.#entries.get(key);
    if (entry === undefined) {
      this.#entries.set(key, { deadline: at, seq });
    } else {
      entry.deadline = at;
      entry.seq = seq;
      this.#stale++;
    }
    this.#push(at, seq, key);
    this.#afterChange();
  }

  /** Drops `key`'s deadline. Returns whether it had one. */
  cancel(key: K): boolean {
    if (!this.#entries.delete(key)) return false;
    this.#stale++;
    this.#afterChange();
    return true;
  }

  /** Drops every deadline and disarms the timer. */
  clear(): void {
    this.#entries.clear();
    this.#heapDeadline = [];
    this.#heapSeq = [];
    this.#heapKey = [];
    this.#stale = 0;
    this.#disarm();
  }

  // ---------------------------------------------------------------------------- timer

  #afterChange(): void {
    if (this.#stale > COMPACT_MIN_STALE && this.#stale > this.#entries.size) this.#compact();
    if (!this.#firing) this.#rearm();
  }

  /** Arms the one timer for the earliest live deadline, unless it is armed for it already. */
  #rearm(): void {
    this.#dropStaleTop();
    if (this.#heapSeq.length === 0) {
      this.#disarm();
      return;
    }
    const earliest = this.#heapDeadline[0]!;
    if (this.#timer !== undefined && this.#armedFor === earliest) return;
    this.#disarm();
    const delay = Math.min(Math.max(0, earliest - this.#clock.now()), MAX_TIMER_DELAY);
    const token = ++this.#timerToken;
    this.#armedFor = earliest;
    this.#timer = this.#clock.setTimeout(() => this.#fire(token), delay);
  }

  #disarm(): void {
    if (this.#timer !== undefined) this.#clock.clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#armedFor = undefined;
  }

  #fire(token: number): void {
    if (token !== this.#timerToken || this.#firing) return;
    this.#timer = undefined;
    this.#armedFor = undefined;
    this.#firing = true;
    this.#sweepLimit = this.#nextSeq;
    try {
      const now = this.#clock.now();
      for (;;) {
        this.#dropStaleTop();
        if (this.#heapSeq.length === 0) break;
        const deadline = this.#heapDeadline[0]!;
        if (deadline > now || this.#heapSeq[0]! >= this.#sweepLimit) break;
        const key = this.#heapKey[0]!;
        this.#pop();
        this.#entries.delete(key);
        this.#onDue(key, deadline);
      }
    } finally {
      this.#firing = false;
      this.#sweepLimit = Infinity;
      this.#rearm();
    }
  }

  // ---------------------------------------------------------------------------- heap

  /** Whether heap slot `i` holds the key's current entry (not a replaced or cancelled one). */
  #isLive(i: number): boolean {
    return this.#entries.get(this.#heapKey[i]!)?.seq === this.#heapSeq[i];
  }

  #dropStaleTop(): void {
    while (this.#heapSeq.length > 0 && !this.#isLive(0)) {
      this.#pop();
      this.#stale--;
    }
  }

  #less(i: number, j: number): boolean {
    const a = this.#heapDeadline[i]!;
    const b = this.#heapDeadline[j]!;
    return a < b || (a === b && this.#heapSeq[i]! < this.#heapSeq[j]!);
  }

  #swap(i: number, j: number): void {
    const d = this.#heapDeadline;
    const s = this.#heapSeq;
    const k = this.#heapKey;
    const td = d[i]!;
    d[i] = d[j]!;
    d[j] = td;
    const ts = s[i]!;
    s[i] = s[j]!;
    s[j] = ts;
    const tk = k[i]!;
    k[i] = k[j]!;
    k[j] = tk;
  }

  #push(deadline: number, seq: number, key: K): void {
    this.#heapDeadline.push(deadline);
    this.#heapSeq.push(seq);
    this.#heapKey.push(key);
    this.#siftUp(this.#heapSeq.length - 1);
  }

  /** Removes the top of the heap. */
  #pop(): void {
    const last = this.#heapSeq.length - 1;
    if (last > 0) this.#swap(0, last);
    this.#heapDeadline.pop();
    this.#heapSeq.pop();
    this.#heapKey.pop();
    if (last > 0) this.#siftDown(0);
  }

  #siftUp(i: number): void {
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!this.#less(i, parent)) return;
      this.#swap(i, parent);
      i = parent;
    }
  }

  #siftDown(i: number): void {
    const n = this.#heapSeq.length;
    for (;;) {
      const left = 2 * i + 1;
      if (left >= n) return;
      const right = left + 1;
      const child = right < n && this.#less(right, left) ? right : left;
      if (!this.#less(child, i)) return;
      this.#swap(i, child);
      i = child;
    }
  }

  /** Rebuilds the heap from its live entries only (O(n)). */
  #compact(): void {
    const deadlines: number[] = [];
    const seqs: number[] = [];
    const keys: K[] = [];
    for (let i = 0; i < this.#heapSeq.length; i++) {
      if (!this.#isLive(i)) continue;
      deadlines.push(this.#heapDeadline[i]!);
      seqs.push(this.#heapSeq[i]!);
      keys.push(this.#heapKey[i]!);
    }
    this.#heapDeadline = deadlines;
    this.#heapSeq = seqs;
    this.#heapKey = keys;
    this.#stale = 0;
    for (let i = (keys.length >> 1) - 1; i >= 0; i--) this.#siftDown(i);
  }
}
