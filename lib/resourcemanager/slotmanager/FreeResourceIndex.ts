/**
 * The hot path of matching: for a requirement, the best TaskExecutor that can take it, without
 * looking at every executor or slot.
 *
 * For every distinct requirement profile asked for (UNKNOWN counts as "each executor's own default
 * slot"), optionally narrowed to one host, the index keeps a candidate set: the executors whose
 * available resources cover the requirement, in a binary heap ordered by the cluster's policy.
 * Sets are built on first use (one pass over the executors) and then kept in step: whenever an
 * executor's capacity changes, each tracked set re-checks that executor alone (O(sets · log n)).
 * Heap entries are never removed eagerly; an entry whose executor has changed since (its `version`)
 * or left the set is skipped when it reaches the top, and a heap that grows past twice its live
 * size is rebuilt. In registration order (first fit) an executor's entry never goes stale while it
 * is in the heap: one that leaves the set and comes back before its entry was popped reuses it.
 */
import type { ResourceProfile } from '../../core/ResourceProfile.js';
import type { CandidateOrder } from './SlotMatchingStrategy.js';
import type { TaskManagerRegistration } from './TaskManagerRegistration.js';

interface Entry {
  readonly taskManager: TaskManagerRegistration;
  readonly version: number;
  readonly utilization: number;
  readonly seq: number;
}

/** An executor's standing in a set: in it; out of it; out of it but with its entry still in the heap (registration order only). */
const IN = 1;
const OUT = 0;
const OUT_QUEUED = 2;
type Standing = typeof IN | typeof OUT | typeof OUT_QUEUED;

class CandidateSet {
  /**
   * Membership flags, flipped in place. A registered executor's key is never deleted (only on
   * removal): deleting and re-adding the same key in a Set leaves dead entries in its hash chain,
   * and the executor first fit keeps picking does exactly that on every allocate and free.
   */
  readonly #flags = new Map<TaskManagerRegistration, Standing>();
  #size = 0;
  #heap: Entry[] = [];
  /** When the index last handed this set out (its LRU stamp). */
  lastUsed = 0;

  constructor(
    readonly requirement: ResourceProfile,
    readonly host: string | null,
    readonly order: CandidateOrder,
    /** Whether the order looks at utilisation (spread, pack); if not, an entry stays valid while its executor stays in. */
    readonly byUtilization: boolean,
  ) {}

  /** The executors in the set (built on demand: for explanations and tests, not the hot path). */
  get members(): ReadonlySet<TaskManagerRegistration> {
    const out = new Set<TaskManagerRegistration>();
    for (const [taskManager, standing] of this.#flags) if (standing === IN) out.add(taskManager);
    return out;
  }

  covers(taskManager: TaskManagerRegistration): boolean {
    return this.host === null || taskManager.host === this.host;
  }

  update(taskManager: TaskManagerRegistration): void {
    const standing = this.#flags.get(taskManager);
    if (taskManager.canFit(this.requirement)) {
      if (standing !== IN) {
        this.#flags.set(taskManager, IN);
        this.#size++;
        if (standing === OUT_QUEUED) return; // back before its entry was popped: that entry is still right
      } else if (!this.byUtilization) {
        return; // still in, same place in a registration-order heap: its entry is still right
      }
      this.#push({ taskManager, version: taskManager.version, utilization: taskManager.utilization, seq: taskManager.seq });
      if (this.#heap.length > 2 * this.#size + 64) this.#rebuild();
    } else if (standing === IN) {
      this.#flags.set(taskManager, this.byUtilization ? OUT : OUT_QUEUED);
      this.#size--;
    }
  }

  remove(taskManager: TaskManagerRegistration): void {
    if (this.#flags.get(taskManager) === IN) this.#size--;
    this.#flags.delete(taskManager);
  }

  best(): TaskManagerRegistration | undefined {
    const heap = this.#heap;
    while (heap.length > 0) {
      const top = heap[0]!;
      const current = !this.byUtilization || top.version === top.taskManager.version;
      const standing = this.#flags.get(top.taskManager);
      if (current && standing === IN) return top.taskManager;
      // Registration order keeps one entry per executor: popping it leaves the executor without one.
      if (standing === OUT_QUEUED) this.#flags.set(top.taskManager, OUT);
      this.#pop();
    }
    return undefined;
  }

  #rebuild(): void {
    this.#heap = [...this.members].map((t) => ({ taskManager: t, version: t.version, utilization: t.utilization, seq: t.seq }));
    for (let i = (this.#heap.length >> 1) - 1; i >= 0; i--) this.#siftDown(i);
    // Only members have an entry now.
    for (const [taskManager, standing] of this.#flags) if (standing === OUT_QUEUED) this.#flags.set(taskManager, OUT);
  }

  #push(entry: Entry): void {
    const heap = this.#heap;
    heap.push(entry);
    let i = heap.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (this.order(heap[i]!, heap[parent]!) >= 0) break;
      [heap[i], heap[parent]] = [heap[parent]!, heap[i]!];
      i = parent;
    }
  }

  #pop(): void {
    const heap = this.#heap;
    const last = heap.pop()!;
    if (heap.length > 0) {
      heap[0] = last;
      this.#siftDown(0);
    }
  }

  #siftDown(start: number): void {
    const heap = this.#heap;
    let i = start;
    for (;;) {
      const left = 2 * i + 1;
      const right = left + 1;
      let smallest = i;
      if (left < heap.length && this.order(heap[left]!, heap[smallest]!) < 0) smallest = left;
      if (right < heap.length && this.order(heap[right]!, heap[smallest]!) < 0) smallest = right;
      if (smallest === i) return;
      [heap[i], heap[smallest]] = [heap[smallest]!, heap[i]!];
      i = smallest;
    }
  }
}

/** How many requirement × host sets the index keeps before forgetting the least recently used. */
const MAX_TRACKED_SETS = 256;

export class FreeResourceIndex {
  readonly #sets = new Map<string, CandidateSet>();
  /** Stamps the sets' use, for forgetting the least recently used (no Map reordering per lookup). */
  #clock = 0;

  constructor(
    private readonly order: CandidateOrder,
    /** Every registered executor, for building a set on first use. */
    private readonly taskManagers: () => Iterable<TaskManagerRegistration>,
    /** Whether the order looks at utilisation (spread, pack) rather than registration order alone. */
    private readonly byUtilization = true,
  ) {}

  /** The best executor that can take `requirement` (UNKNOWN: its own default slot), on `host` if given. */
  best(requirement: ResourceProfile, host: string | null = null): TaskManagerRegistration | undefined {
    return this.#setFor(requirement, host).best();
  }

  /** Every executor that can take `requirement` right now (for explanations and tests; O(candidates)). */
  candidates(requirement: ResourceProfile, host: string | null = null): ReadonlySet<TaskManagerRegistration> {
    return this.#setFor(requirement, host).members;
  }

  /** An executor's capacity changed (or it registered): re-check it in every tracked set. */
  taskManagerChanged(taskManager: TaskManagerRegistration): void {
    for (const set of this.#sets.values()) if (set.covers(taskManager)) set.update(taskManager);
  }

  taskManagerRemoved(taskManager: TaskManagerRegistration): void {
    for (const set of this.#sets.values()) set.remove(taskManager);
  }

  /** Sets currently tracked (requirement × host). */
  get trackedSets(): number {
    return this.#sets.size;
  }

  #setFor(requirement: ResourceProfile, host: string | null): CandidateSet {
    const key = host === null ? requirement.key : `${requirement.key}@${host}`;
    let set = this.#sets.get(key);
    if (set !== undefined) {
      set.lastUsed = ++this.#clock;
      return set;
    }
    set = new CandidateSet(requirement, host, this.order, this.byUtilization);
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
      this.#sets.delete(oldest!);
    }
    return set;
  }
}
