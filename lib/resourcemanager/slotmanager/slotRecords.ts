/**
 * A slot record's steps on its executor (what Flink's FineGrainedTaskManagerRegistration does in
 * notifyAllocation, notifyAllocationComplete and freeSlot): a dynamic record made for a slot, a
 * record taken for an allocation (free → pending or allocated), its allocation completed (pending →
 * allocated) and the record freed again, each step checked against the ResourceManager-side slot
 * machine (ResourceSlotTransitions); and how a slot reads in messages.
 *
 * They change only the record and its executor's counts (free static slots, dynamic slots,
 * occupied slots). The TaskManagerTracker calls them, keeps every record by its AllocationID and
 * moves the capacity, so that its index and totals stay in step.
 */
import type { AllocationID, JobID } from '../../core/ids.js';
import type { ResourceProfile } from '../../core/ResourceProfile.js';
import { transitionResourceSlot } from './ResourceSlotTransitions.js';
import type { ResourceSlotRecord, TaskManagerRegistration } from './TaskManagerRegistration.js';

/** A new, free dynamic slot record of `profile` on `taskManager` (it joins the executor when it is taken). */
export function dynamicSlotRecord(
  taskManager: TaskManagerRegistration,
  profile: ResourceProfile,
  tracked: boolean,
): ResourceSlotRecord {
  return {
    taskManager,
    index: -1,
    state: 'free',
    allocationId: null,
    jobId: null,
    profile,
    reserved: false,
    tracked,
    inFlight: null,
  };
}

/**
 * The record is taken for `allocationId` of `jobId` (free → pending: ASSIGN_PENDING, or free →
 * allocated: ADOPT); a dynamic one joins its executor's dynamic slots. Throws, changing nothing, on
 * an illegal step. A static record's free count is the caller's (a reservation took it already).
 */
export function occupySlot(
  slot: ResourceSlotRecord,
  event: 'ASSIGN_PENDING' | 'ADOPT',
  allocationId: AllocationID,
  jobId: JobID,
  tracked: boolean,
): void {
  transitionResourceSlot(slot, event, () => describeSlot(slot));
  slot.allocationId = allocationId;
  slot.jobId = jobId;
  slot.tracked = tracked;
  if (slot.index < 0) slot.taskManager.dynamicSlots.set(allocationId, slot);
  slot.taskManager.occupiedSlots++;
}

/**
 * The executor acknowledged or reported the allocation (pending → allocated). Throws, changing
 * nothing, unless the record is pending.
 */
export function completeSlot(slot: ResourceSlotRecord): void {
  transitionResourceSlot(slot, 'COMPLETE_ALLOCATION', () => describeSlot(slot));
}

/**
 * The record is free again (pending or allocated → free): a static one stays on its executor, free;
 * a dynamic one leaves it. Returns a copy of the record as it was before. Throws, changing nothing,
 * on an illegal step.
 */
export function vacateSlot(slot: ResourceSlotRecord, event: 'FREE' | 'FAIL_ALLOCATION'): ResourceSlotRecord {
  transitionResourceSlot(slot, event, () => describeSlot(slot));
  const { taskManager } = slot;
  const freed = { ...slot };
  if (slot.index >= 0) {
    taskManager.staticSlotFreed(slot.index);
  } else {
    taskManager.dynamicSlots.delete(slot.allocationId!);
  }
  slot.allocationId = null;
  slot.jobId = null;
  slot.tracked = false;
  taskManager.occupiedSlots--;
  return freed;
}

/** How a slot reads in messages: its executor and static index, or its allocation for a dynamic slot. */
export function describeSlot(slot: ResourceSlotRecord): string {
  return slot.index >= 0
    ? `${slot.taskManager.resourceId}/${slot.index}`
    : `${slot.taskManager.resourceId}/dynamic(${slot.allocationId ?? 'new'})`;
}
