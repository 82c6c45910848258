/**
 * Why a requirement fits nowhere, kept up incrementally: the answer of `explainShortage`
 * (WaitReason.ts) without a pass over every executor on every requirement check.
 *
 * `explainShortage` scores every executor that falls short of a requirement and sorts them; at
 * 100,000 executors that is most of a check's cost, and a check runs after every change while a
 * demand waits. Here, per requirement profile explained (UNKNOWN counting as "each executor's own
 * default slot"), a set keeps:
 * - the executors that fall short, in a binary heap by (score, registration order) with each
 *   executor's position in it, so a changed executor moves in place (O(log n)) and the closest
 *   `limit` are among the heap's first 2^limit − 1 entries;
 * - the executors whose total could hold it, in registration order (fixed while they are registered).
 * Capacity changes only mark an executor dirty in each set (a Set.add); a set re-scores its dirty
 * executors when it is next asked, so a check that follows one change pays O(log n), one that
 * follows none pays nothing. A set that has gathered more dirty executors than a rebuild would
 * cost is dropped (built again on its next use), so sets nobody asks for stop costing anything.
 *
 * `explain` gives exactly what `explainShortage(requirement, tracker.taskManagers, limit)` gives
 * (test/resourcemanager/slotmanager/ShortageIndex.test.ts holds it to that). It is cheap when no
 * unblocked executor can take the requirement (the only case the strategy asks about): then the
 * executors that fit are the blocked ones, and skipping them is all the walk for `couldFitWhenFree`
 * and `passedOver` does beyond `limit` steps.
 */
import type { ResourceID } from '../../core/ids.js';
import type { ResourceProfile } from '../../core/ResourceProfile.js';
import type { TaskManagerRegistration } from './TaskManagerRegistration.js';
import type { ExecutorShortfall, WaitReason } from './WaitReason.js';

type InsufficientResources = Extract<WaitReason, { kind: 'insufficient-resources' }>;

interface Entry {
  readonly taskManager: TaskManagerRegistration;
  score: number;
  /** Its index in the heap. */
  pos: number;
}

/** (score, registration order): the order explainShortage sorts the short executors in. */
function before(a: Entry, b: Entry): boolean {
  return a.score < b.score || (a.score === b.score && a.taskManager.seq < b.taskManager.seq);
}

class ShortageSet {
  /** The executors that fall short of the requirement, as a binary min-heap. */
  #heap: Entry[] = [];
  readonly #entries = new Map<TaskManagerRegistration, Entry>();
  /**
   * The executors whose total covers the requirement, in registration order; may hold removed ones (skipped,
   * compacted).
   */
  #holders: TaskManagerRegistration[] = [];
  #removedHolders = 0;
  /** Executors whose capacity changed since the set last looked. */
  readonly dirty = new Set<TaskManagerRegistration>();
  /** When the index last handed this set out (its LRU stamp). */
  lastUsed = 0;

  constructor(
    readonly requirement: ResourceProfile,
    private readonly isRegistered: (taskManager: TaskManagerRegistration) => boolean,
  ) {}

  build(taskManagers: Iterable<TaskManagerRegistration>): void {
    this.#heap = [];
    this.#entries.clear();
    this.#holders = [];
    this.#removedHolders = 0;
    this.dirty.clear();
    for (const taskManager of taskManagers) {
      if (this.#holds(taskManager)) this.#holders.push(taskManager);
      const score = this.#score(taskManager);
      if (score >= 0) this.#append(taskManager, score);
    }
    for (let i = (this.#heap.length >> 1) - 1; i >= 0; i--) this.#siftDown(i);
  }

  added(taskManager: TaskManagerRegistration): void {
    // Registration order is seq order, and a new executor has the highest seq: it goes last.
    if (this.#holds(taskManager)) this.#holders.push(taskManager);
    this.dirty.add(taskManager);
  }

  removed(taskManager: TaskManagerRegistration): void {
    this.dirty.delete(taskManager);
    this.#remove(taskManager);
    // Compacted once an eighth are gone (at least 8): amortized O(8) per removal, and a departed executor's
    // registration — its gateway, its Link, the JobMasters served on it — is not kept alive here for long.
    if (this.#holds(taskManager) && ++this.#removedHolders > Math.max(8, this.#holders.length >> 3)) {
      this.#holders = this.#holders.filter((t) => this.isRegistered(t));
      this.#removedHolders = 0;
    }
  }

  /** Departed executors still in the holders list (not compacted yet). */
  get departedHeld(): number {
    return this.#removedHolders;
  }

  /** Re-scores the executors that changed since the last call. */
  refresh(): void {
    if (this.dirty.size === 0) return; // (Set.clear() below makes a new table even for an empty set)
    for (const taskManager of this.dirty) {
      const score = this.#score(taskManager);
      const entry = this.#entries.get(taskManager);
      if (score < 0) {
        if (entry !== undefined) this.#remove(taskManager);
      } else if (entry === undefined) {
        this.#siftUp(this.#append(taskManager, score).pos);
      } else if (score !== entry.score) {
        const worse = score > entry.score;
        entry.score = score;
        if (worse) this.#siftDown(entry.pos);
        else this.#siftUp(entry.pos);
      }
    }
    this.dirty.clear();
  }

  explain(blocked: Iterable<TaskManagerRegistration>, limit: number): InsufficientResources {
    return {
      kind: 'insufficient-resources',
      closest: this.#closest(limit).map((entry) => this.#shortfallOf(entry.taskManager)),
      couldFitWhenFree: this.#couldFitWhenFree(limit),
      passedOver: this.#passedOver(blocked, limit),
    };
  }

  /** The `limit` smallest heap entries in order: a best-first walk from the root, never deeper than `limit` levels. */
  #closest(limit: number): Entry[] {
    const heap = this.#heap;
    const out: Entry[] = [];
    const frontier: number[] = heap.length > 0 ? [0] : [];
    while (out.length < limit && frontier.length > 0) {
      let best = 0;
      for (let i = 1; i < frontier.length; i++) if (before(heap[frontier[i]!]!, heap[frontier[best]!]!)) best = i;
      const at = frontier[best]!;
      frontier.splice(best, 1);
      out.push(heap[at]!);
      for (const child of [2 * at + 1, 2 * at + 2]) if (child < heap.length) frontier.push(child);
    }
    return out;
  }

  /** The first `limit` executors (registration order) that fall short but whose total could hold the requirement. */
  #couldFitWhenFree(limit: number): ResourceID[] {
    const out: ResourceID[] = [];
    for (const taskManager of this.#holders) {
      if (out.length >= limit) break;
      if (this.#entries.has(taskManager)) out.push(taskManager.resourceId); // short now (a removed one has no entry)
    }
    return out;
  }

  /** The first `limit` blocked executors (registration order) that have room for it. */
  #passedOver(blocked: Iterable<TaskManagerRegistration>, limit: number): ResourceID[] {
    const roomy: TaskManagerRegistration[] = [];
    for (const taskManager of blocked) if (!this.#entries.has(taskManager)) roomy.push(taskManager);
    return roomy
      .sort((a, b) => a.seq - b.seq)
      .slice(0, limit)
      .map((t) => t.resourceId);
  }

  #shortfallOf(taskManager: TaskManagerRegistration): ExecutorShortfall {
    return {
      resourceId: taskManager.resourceId,
      shortfall: taskManager.available.shortfall(taskManager.effectiveProfile(this.requirement)),
    };
  }

  #holds(taskManager: TaskManagerRegistration): boolean {
    return taskManager.totalResourceProfile.allFieldsNoLessThan(taskManager.effectiveProfile(this.requirement));
  }

  /** explainShortage's score of the executor, or -1 when nothing falls short (blocked or not). */
  #score(taskManager: TaskManagerRegistration): number {
    return taskManager.shortfallScore(taskManager.effectiveProfile(this.requirement));
  }

  #append(taskManager: TaskManagerRegistration, score: number): Entry {
    const entry: Entry = { taskManager, score, pos: this.#heap.length };
    this.#heap.push(entry);
    this.#entries.set(taskManager, entry);
    return entry;
  }

  #remove(taskManager: TaskManagerRegistration): void {
    const entry = this.#entries.get(taskManager);
    if (entry === undefined) return;
    this.#entries.delete(taskManager);
    const heap = this.#heap;
    const last = heap.pop()!;
    if (last === entry) return;
    heap[entry.pos] = last;
    last.pos = entry.pos;
    if (before(last, entry)) this.#siftUp(last.pos);
    else this.#siftDown(last.pos);
  }

  #siftUp(start: number): void {
    const heap = this.#heap;
    const entry = heap[start]!;
    let i = start;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      const p = heap[parent]!;
      if (!before(entry, p)) break;
      heap[i] = p;
      p.pos = i;
      i = parent;
    }
    heap[i] = entry;
    entry.pos = i;
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
      const child = right < n && before(heap[right]!, heap[left]!) ? right : left;
      const c = heap[child]!;
      if (!before(c, entry)) break;
      heap[i] = c;
      c.pos = i;
      i = child;
    }
    heap[i] = entry;
    entry.pos = i;
  }
}

/** How many requirement sets the index keeps before forgetting the least recently used. */
const MAX_TRACKED_SETS = 16;

export class ShortageIndex {
  readonly #sets = new Map<string, ShortageSet>();
  #clock = 0;

  constructor(
    /** Every registered executor, in registration order. */
    private readonly taskManagers: () => Iterable<TaskManagerRegistration>,
    /** The executors taking no new slots now. */
    private readonly blocked: () => Iterable<TaskManagerRegistration>,
    private readonly isRegistered: (taskManager: TaskManagerRegistration) => boolean,
    /** How many executors are registered (a set with more dirty ones than a quarter of this is rebuilt). */
    private readonly size: () => number,
  ) {}

  /** What `explainShortage(requirement, taskManagers, limit)` would answer now. */
  explain(requirement: ResourceProfile, limit = 3): InsufficientResources {
    const key = requirement.key;
    let set = this.#sets.get(key);
    if (set === undefined) {
      set = new ShortageSet(requirement, this.isRegistered);
      set.build(this.taskManagers());
      this.#sets.set(key, set);
      if (this.#sets.size > MAX_TRACKED_SETS) this.#forgetLeastRecentlyUsed();
    } else {
      set.refresh();
    }
    set.lastUsed = ++this.#clock;
    return set.explain(this.blocked(), limit);
  }

  taskManagerAdded(taskManager: TaskManagerRegistration): void {
    for (const set of this.#sets.values()) set.added(taskManager);
  }

  /** The executor's available resources changed. */
  taskManagerChanged(taskManager: TaskManagerRegistration): void {
    if (this.#sets.size === 0) return;
    const tooMany = this.size() >> 2;
    for (const [key, set] of this.#sets) {
      set.dirty.add(taskManager);
      // Re-scoring this many would cost more than building the set again: stop keeping it.
      if (set.dirty.size > tooMany && set.dirty.size > 64) this.#sets.delete(key);
    }
  }

  taskManagerRemoved(taskManager: TaskManagerRegistration): void {
    for (const set of this.#sets.values()) set.removed(taskManager);
  }

  /** Requirement sets currently kept. */
  get trackedSets(): number {
    return this.#sets.size;
  }

  /** Departed executors the sets still reference, at most (each set compacts past an eighth of its executors). */
  get departedHeld(): number {
    let most = 0;
    for (const set of this.#sets.values()) most = Math.max(most, set.departedHeld);
    return most;
  }

  #forgetLeastRecentlyUsed(): void {
    let oldest: string | undefined;
    let oldestUse = Infinity;
    for (const [key, set] of this.#sets) {
      if (set.lastUsed < oldestUse) {
        oldest = key;
        oldestUse = set.lastUsed;
      }
    }
    this.#sets.delete(oldest!);
  }
}
