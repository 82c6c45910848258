/**
 * The pending workers: the TaskExecutors the SlotManager asked for that have not registered yet
 * (Flink's FineGrainedTaskManagerTracker keeps them beside the registered ones), in the order they
 * were asked for, with what they add up to, and the one a registering executor replaces. The
 * TaskManagerTracker holds them and answers for them (addPendingTaskManager and the rest).
 */
import { IllegalArgumentError } from '../../core/errors.js';
import { ResourceProfile } from '../../core/ResourceProfile.js';
import { PendingTaskManager, type PendingTaskManagerID } from './PendingTaskManager.js';
import type { WorkerResourceSpec } from './WorkerResourceSpec.js';

export class PendingTaskManagers {
  readonly #pending = new Map<PendingTaskManagerID, PendingTaskManager>();

  /** A new pending worker of `spec`, asked for at `requestedAt` (clock ms). */
  add(spec: WorkerResourceSpec, requestedAt: number): PendingTaskManager {
    const pending = new PendingTaskManager(spec, requestedAt);
    this.#pending.set(pending.id, pending);
    return pending;
  }

  /** Forgets a pending worker (it registered, or is no longer wanted); throws if there is none of that id. */
  remove(id: PendingTaskManagerID): PendingTaskManager {
    const pending = this.#pending.get(id);
    if (pending === undefined)
      throw new IllegalArgumentError('invalid-value', `no pending worker ${id}`, { argument: 'id' });
    this.#pending.delete(id);
    return pending;
  }

  get(id: PendingTaskManagerID): PendingTaskManager | undefined {
    return this.#pending.get(id);
  }

  /** In the order they were asked for. */
  values(): IterableIterator<PendingTaskManager> {
    return this.#pending.values();
  }

  get size(): number {
    return this.#pending.size;
  }

  /** Sum of the pending workers' totals. */
  get totalResource(): ResourceProfile {
    let sum = ResourceProfile.ZERO;
    for (const pending of this.#pending.values()) sum = sum.merge(pending.totalResourceProfile);
    return sum;
  }

  /** Sum of the pending workers' slots. */
  get numberOfSlots(): number {
    let sum = 0;
    for (const pending of this.#pending.values()) sum += pending.spec.numberOfSlots;
    return sum;
  }

  /**
   * The pending worker a registering executor of this shape replaces: the one it was started for
   * (`preferredId`) if it matches, else the oldest of the same shape with planned slots, else the
   * oldest of the same shape (Flink prefers one with allocations, then any).
   */
  findMatching(
    total: ResourceProfile,
    defaultSlot: ResourceProfile,
    preferredId?: PendingTaskManagerID,
  ): PendingTaskManager | undefined {
    const sameShape = (p: PendingTaskManager) =>
      p.totalResourceProfile.equals(total) && p.defaultSlotResourceProfile.equals(defaultSlot);
    const preferred = preferredId === undefined ? undefined : this.#pending.get(preferredId);
    if (preferred !== undefined && sameShape(preferred)) return preferred;
    let fallback: PendingTaskManager | undefined;
    for (const pending of this.#pending.values()) {
      if (!sameShape(pending)) continue;
      if (pending.hasPendingAllocations) return pending;
      fallback ??= pending;
    }
    return fallback;
  }

  clear(): void {
    this.#pending.clear();
  }
}
