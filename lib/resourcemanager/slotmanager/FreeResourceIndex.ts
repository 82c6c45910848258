/**
 * The hot path of matching: for a requirement, the best TaskExecutor that can take it, without
 * looking at every executor or slot.
 *
 * For every distinct requirement profile asked for (UNKNOWN counts as "each executor's own default
 * slot"), optionally narrowed to one host, the index keeps a candidate set: the executors whose
 * available resources cover the requirement, in a binary heap ordered by the cluster's policy.
 * Sets are built on first use (one pass over the executors) and then kept in step: whenever an
 * executor's capacity changes, it is marked in each tracked set, and a set re-checks its marked
 * executors when it is next asked (O(log n) each; a set asked after many changes is re-heaped in
 * O(n) instead). An executor changed many times between two questions is re-checked once, and sets
 * nobody asks about meanwhile (the other profiles of a job being placed) do no work per change.
 * Each executor has at most one entry per set, and the entry knows its place in the heap: an
 * executor that leaves the set is taken out, and one whose utilisation changed (spread, pack)
 * moves up or down in place, so the top of the heap is the answer and nothing stale piles up.
 */
import type { ResourceProfile } from '../../core/ResourceProfile.js';
import { type CandidateOrder, precedes, utilizationSign } from './SlotMatchingStrategy.js';

/**
 * What the index reads of an executor: a registered TaskManagerRegistration, or a strategy's
 * planned copy of one (RegisteredResourcePlan), which keeps its own index of the executors it touched.
 */
export interface IndexedExecutor {
  readonly host: string;
  /** Registration order: first fit walks executors in this order; ties elsewhere break on it. */
  readonly seq: number;
  readonly utilization: number;
  /** Whether it takes `requirement` now (UNKNOWN: its default slot), blocked executors never. */
  canFit(requirement: ResourceProfile): boolean;
}

interface Entry<T extends IndexedExecutor> {
  readonly taskManager: T;
  /** The executor's utilisation when it last moved in the heap (its key). */
  utilization: number;
  readonly seq: number;
  /**
   * `member`: in the set, at `pos` in the heap; `outside`: its executor does not fit now (the entry
   * stays, see #entries); `removed`: its executor unregistered (an entry still in the list of
   * changed ones is then skipped).
   */
  state: EntryState;
  /** Its index in the heap while a member. */
  pos: number;
  /** Changed since the set last looked (it is in the set's list of changed entries). */
  dirty: boolean;
}

type EntryState = 'member' | 'outside' | 'removed';

class CandidateSet<T extends IndexedExecutor> {
  /**
   * Every executor the set has seen, in it or not. A registered executor's entry is never deleted
   * (only on removal): deleting and re-adding the same key leaves dead entries in a Map's hash
   * chain, and the executor first fit keeps picking leaves and rejoins on every allocate and free.
   */
  readonly #entries = new Map<T, Entry<T>>();
  #heap: Entry<T>[] = [];
  /**
   * The entries of executors whose capacity changed since the set last looked, the first
   * `#changedCount` of this array (a list and a flag per entry, not a Set: no hash insert per change,
   * no new table per clear).
   */
  readonly #changed: Entry<T>[] = [];
  #changedCount = 0;
  /** When the index last handed this set out (its LRU stamp). */
  lastUsed = 0;

  constructor(
    readonly requirement: ResourceProfile,
    readonly host: string | null,
    /** The policy's order (utilizationSign); 0, first fit: an entry never moves while its executor stays in. */
    readonly sign: -1 | 0 | 1,
  ) {}

  /** The executors in the set (built on demand: for explanations and tests, not the hot path). */
  get members(): ReadonlySet<T> {
    this.#refresh();
    const out = new Set<T>();
    for (const [taskManager, entry] of this.#entries) if (entry.state === 'member') out.add(taskManager);
    return out;
  }

  covers(taskManager: T): boolean {
    return this.host === null || taskManager.host === this.host;
  }

  /** The executor's capacity changed: it is re-checked when the set is next asked. */
  changed(taskManager: T): void {
    const entry = this.#entryOf(taskManager);
    if (entry.dirty) return;
    entry.dirty = true;
    this.#changed[this.#changedCount++] = entry;
  }

  /** Re-checks the executor now (while the set is built). */
  update(taskManager: T): void {
    this.#recheck(this.#entryOf(taskManager));
  }

  #entryOf(taskManager: T): Entry<T> {
    let entry = this.#entries.get(taskManager);
    if (entry === undefined) {
      entry = {
        taskManager,
        utilization: taskManager.utilization,
        seq: taskManager.seq,
        state: 'outside',
        pos: -1,
        dirty: false,
      };
      this.#entries.set(taskManager, entry);
    }
    return entry;
  }

  #recheck(entry: Entry<T>): void {
    const { taskManager } = entry;
    if (taskManager.canFit(this.requirement)) {
      if (entry.state !== 'member') {
        entry.utilization = taskManager.utilization;
        entry.state = 'member';
        entry.pos = this.#heap.length;
        this.#heap.push(entry);
        this.#siftUp(entry.pos);
      } else if (this.sign !== 0 && entry.utilization !== taskManager.utilization) {
        entry.utilization = taskManager.utilization;
        if (!this.#siftUp(entry.pos)) this.#siftDown(entry.pos);
      }
    } else if (entry.state === 'member') {
      this.#removeAt(entry.pos);
    }
  }

  remove(taskManager: T): void {
    const entry = this.#entries.get(taskManager);
    if (entry === undefined) return;
    if (entry.state === 'member') this.#removeAt(entry.pos);
    entry.state = 'removed';
    this.#entries.delete(taskManager);
  }

  best(): T | undefined {
    this.#refresh();
    return this.#heap[0]?.taskManager;
  }

  ranked(): RankedCandidates<T> {
    this.#refresh();
    return new RankedCandidates(this.#heap, this.sign);
  }

  #refresh(): void {
    const count = this.#changedCount;
    if (count === 0) return;
    const changed = this.#changed;
    this.#changedCount = 0;
    // Re-heaping costs ~n steps, re-checking one by one ~log n each: take the cheaper.
    const reheap = count > 8 && count * Math.log2(this.#heap.length + 2) > this.#heap.length + 64;
    for (let i = 0; i < count; i++) {
      const entry = changed[i]!;
      changed[i] = undefined!; // no entry of a removed executor kept alive here
      entry.dirty = false;
      if (entry.state === 'removed') continue;
      if (reheap) this.#recheckWithoutOrder(entry);
      else this.#recheck(entry);
    }
    if (reheap) {
      this.#heap = this.#heap.filter((e) => e.state === 'member');
      this.#heap.forEach((e, i) => (e.pos = i));
      for (let i = (this.#heap.length >> 1) - 1; i >= 0; i--) this.#siftDown(i);
    }
  }

  /** For a re-heap: the entry's membership and key, its heap order left to the re-heap (a leaver is only marked). */
  #recheckWithoutOrder(entry: Entry<T>): void {
    const { taskManager } = entry;
    if (taskManager.canFit(this.requirement)) {
      entry.utilization = taskManager.utilization;
      if (entry.state !== 'member') {
        entry.state = 'member';
        entry.pos = this.#heap.length;
        this.#heap.push(entry);
      }
    } else {
      entry.state = 'outside';
    }
  }

  #removeAt(pos: number): void {
    const heap = this.#heap;
    const entry = heap[pos]!;
    entry.state = 'outside';
    const last = heap.pop()!;
    if (last === entry) return;
    heap[pos] = last;
    last.pos = pos;
    if (!this.#siftUp(pos)) this.#siftDown(pos);
  }

  /** Moves the entry at `start` up while it goes before its parent; whether it moved. */
  #siftUp(start: number): boolean {
    const heap = this.#heap;
    const entry = heap[start]!;
    let i = start;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      const p = heap[parent]!;
      if (!precedes(entry, p, this.sign)) break;
      heap[i] = p;
      p.pos = i;
      i = parent;
    }
    heap[i] = entry;
    entry.pos = i;
    return i !== start;
  }

  #siftDown(start: number): void {
    const heap = this.#heap;
    const entry = heap[start]!;
    const n = heap.length;
    let i = start;
    for (;;) {
      const left = 2 * i + 1;
      if (left >= n) break;
      const right = left + 1;
      const child = right < n && precedes(heap[right]!, heap[left]!, this.sign) ? right : left;
      const c = heap[child]!;
      if (!precedes(c, entry, this.sign)) break;
      heap[i] = c;
      c.pos = i;
      i = child;
    }
    heap[i] = entry;
    entry.pos = i;
  }
}

/**
 * The members of a set best first, read without changing the set: a best-first walk of its heap
 * (a small heap of the positions whose parents were handed out), O(log k) for the k-th. Valid while
 * no executor's capacity changes: a plan reads the registered executors this way and keeps what it
 * sets aside to itself (RegisteredResourcePlan).
 */
export class RankedCandidates<T extends IndexedExecutor> {
  readonly #heap: readonly Entry<T>[];
  readonly #sign: number;
  /** The position handed out now; -1 once every member was. */
  #at: number;
  /** Positions not handed out whose parent was, as a min-heap under the order (built on the first advance). */
  readonly #frontier: number[] = [];

  constructor(heap: readonly Entry<T>[], sign: -1 | 0 | 1) {
    this.#heap = heap;
    this.#sign = sign;
    this.#at = heap.length > 0 ? 0 : -1;
  }

  /** The best member not passed yet, or undefined. */
  get current(): T | undefined {
    return this.#at < 0 ? undefined : this.#heap[this.#at]!.taskManager;
  }

  /** Passes the current member: the next best becomes current. */
  advance(): void {
    if (this.#at < 0) return;
    const left = 2 * this.#at + 1;
    if (left < this.#heap.length) this.#push(left);
    if (left + 1 < this.#heap.length) this.#push(left + 1);
    this.#at = this.#frontier.length === 0 ? -1 : this.#pop();
  }

  #before(a: number, b: number): boolean {
    return precedes(this.#heap[a]!, this.#heap[b]!, this.#sign);
  }

  #push(pos: number): void {
    const f = this.#frontier;
    let i = f.length;
    f.push(pos);
    while (i > 0) {
      const parent = (i - 1) >> 1;
      const at = f[i]!;
      const above = f[parent]!;
      if (!this.#before(at, above)) break;
      f[i] = above;
      f[parent] = at;
      i = parent;
    }
  }

  #pop(): number {
    const f = this.#frontier;
    const top = f[0]!;
    const last = f.pop()!;
    if (f.length === 0) return top;
    f[0] = last;
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      if (l >= f.length) break;
      const child = l + 1 < f.length && this.#before(f[l + 1]!, f[l]!) ? l + 1 : l;
      const below = f[child]!;
      const at = f[i]!;
      if (!this.#before(below, at)) break;
      f[i] = below;
      f[child] = at;
      i = child;
    }
    return top;
  }
}

/** How many requirement × host sets the index keeps before forgetting the least recently used. */
const MAX_TRACKED_SETS = 256;

export class FreeResourceIndex<T extends IndexedExecutor> {
  readonly #sets = new Map<string, CandidateSet<T>>();
  /** Stamps the sets' use, for forgetting the least recently used (no Map reordering per lookup). */
  #clock = 0;
  /** The set handed out last. */
  #last: CandidateSet<T> | undefined;

  /** The policy's order as utilizationSign gives it. */
  readonly #sign: -1 | 0 | 1;

  constructor(
    order: CandidateOrder,
    /** Every registered executor, for building a set on first use. */
    private readonly taskManagers: () => Iterable<T>,
  ) {
    this.#sign = utilizationSign(order);
  }

  /** The best executor that can take `requirement` (UNKNOWN: its own default slot), on `host` if given. */
  best(requirement: ResourceProfile, host: string | null = null): T | undefined {
    return this.#setFor(requirement, host).best();
  }

  /** The executors that can take `requirement` now, best first, read lazily (see RankedCandidates). */
  ranked(requirement: ResourceProfile, host: string | null = null): RankedCandidates<T> {
    return this.#setFor(requirement, host).ranked();
  }

  /** Every executor that can take `requirement` right now (for explanations and tests; O(candidates)). */
  candidates(requirement: ResourceProfile, host: string | null = null): ReadonlySet<T> {
    return this.#setFor(requirement, host).members;
  }

  /** An executor's capacity changed (or it registered): every tracked set re-checks it when next asked. */
  taskManagerChanged(taskManager: T): void {
    for (const set of this.#sets.values()) if (set.covers(taskManager)) set.changed(taskManager);
  }

  taskManagerRemoved(taskManager: T): void {
    for (const set of this.#sets.values()) set.remove(taskManager);
  }

  /** Sets currently tracked (requirement × host). */
  get trackedSets(): number {
    return this.#sets.size;
  }

  #setFor(requirement: ResourceProfile, host: string | null): CandidateSet<T> {
    // A plan asks about the same requirement slot after slot: no key to build and look up then.
    const last = this.#last;
    if (last !== undefined && last.requirement === requirement && last.host === host) {
      last.lastUsed = ++this.#clock;
      return last;
    }
    const key = host === null ? requirement.key : `${requirement.key}@${host}`;
    let set = this.#sets.get(key);
    if (set !== undefined) {
      set.lastUsed = ++this.#clock;
      this.#last = set;
      return set;
    }
    set = new CandidateSet<T>(requirement, host, this.#sign);
    for (const taskManager of this.taskManagers()) if (set.covers(taskManager)) set.update(taskManager);
    set.lastUsed = ++this.#clock;
    this.#sets.set(key, set);
    if (this.#sets.size > MAX_TRACKED_SETS) {
      let oldest: string | undefined;
      let oldestUse = Infinity;
      for (const [k, s] of this.#sets) {
        if (s.lastUsed < oldestUse) {
          oldest = k;
          oldestUse = s.lastUsed;
        }
      }
      if (this.#sets.get(oldest!) === this.#last) this.#last = undefined;
      this.#sets.delete(oldest!);
    }
    this.#last = set;
    return set;
  }
}
