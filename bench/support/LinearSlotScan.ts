/**
 * The baseline the indexed matching path is measured against: Flink-style linear first-fit over
 * the slots. A plain array of the very same static slot records the tracker holds, in registration
 * order; a match walks it from the start until a free slot (not pending, allocated or reserved)
 * whose executor's available resources cover the requirement's effective profile (UNKNOWN: the
 * executor's default slot), as Flink's AnyMatchingSlotMatchingStrategy / first-fit resource
 * matching does.
 *
 * Fair to the scan: occupied slots cost one field read each; an executor is tested once per walk
 * even when several of its slots are free (its slots are adjacent); the test is the same
 * `TaskManagerRegistration.canFit` the tracker uses (its running totals, no profile built). The scan keeps no state
 * between walks
 * except counters, so the allocation bookkeeping that follows a match (reserve, assignPending,
 * completeAllocation, free on the tracker) is shared with the indexed path unchanged.
 */
import type { ResourceProfile } from '../../lib/core/ResourceProfile.js';
import type {
  ResourceSlotRecord,
  TaskManagerRegistration,
} from '../../lib/resourcemanager/slotmanager/TaskManagerRegistration.js';

export class LinearSlotScan {
  readonly slots: readonly ResourceSlotRecord[];
  /** Slot records visited by every walk so far. */
  visited = 0;
  /** Walks so far. */
  walks = 0;

  /** Takes the static slot records of `taskManagers` (in the order given: registration order). */
  constructor(taskManagers: Iterable<TaskManagerRegistration>) {
    const slots: ResourceSlotRecord[] = [];
    for (const taskManager of taskManagers) for (const slot of taskManager.staticSlots) slots.push(slot);
    this.slots = slots;
  }

  /** The executor of the first free slot that can take `requirement`, or undefined after walking every slot. */
  firstFit(requirement: ResourceProfile): TaskManagerRegistration | undefined {
    const slots = this.slots;
    let tested: TaskManagerRegistration | undefined;
    this.walks++;
    for (let i = 0; i < slots.length; i++) {
      const slot = slots[i]!;
      if (slot.state !== 'free' || slot.reserved) continue;
      const taskManager = slot.taskManager;
      if (taskManager === tested) continue;
      tested = taskManager;
      if (taskManager.canFit(requirement)) {
        this.visited += i + 1;
        return taskManager;
      }
    }
    this.visited += slots.length;
    return undefined;
  }

  /** Mean slot records visited per walk. */
  get visitedPerWalk(): number {
    return this.walks === 0 ? 0 : this.visited / this.walks;
  }

  resetCounters(): void {
    this.visited = 0;
    this.walks = 0;
  }
}
