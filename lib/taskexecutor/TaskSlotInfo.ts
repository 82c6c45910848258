/**
 * What the TaskSlotTable shows of its slots: a read-only view of one slot (`TaskSlotInfo`) and the
 * slot report a TaskExecutor sends the ResourceManager (Flink's TaskSlotTable.createSlotReport),
 * both read from the table machine's ledger and its slots' snapshots.
 */
import { SlotID, type AllocationID, type ExecutionAttemptID, type JobID, type ResourceID } from '../core/ids.js';
import type { ResourceProfile } from '../core/ResourceProfile.js';
import type { SlotReport, SlotStatus } from '../core/SlotReport.js';
import type { TaskSlotStateName } from '../../machines/taskSlot.machine.js';
import { slotState, type TaskSlotRef, type TaskSlotTableContext } from '../../machines/taskSlotTable.machine.js';
import type { MemoryManager } from './MemoryManager.js';

/** A read-only view of one slot. */
export interface TaskSlotInfo {
  readonly index: number;
  readonly allocationId: AllocationID;
  readonly jobId: JobID;
  readonly resourceProfile: ResourceProfile;
  readonly state: TaskSlotStateName;
  readonly tasks: readonly ExecutionAttemptID[];
  readonly memoryManager: MemoryManager;
}

export function taskSlotInfo(slot: TaskSlotRef): TaskSlotInfo {
  const c = slot.getSnapshot().context;
  return {
    index: c.index,
    allocationId: c.allocationId,
    jobId: c.jobId,
    resourceProfile: c.resourceProfile,
    state: slotState(slot),
    tasks: c.tasks.ids(),
    memoryManager: c.memoryManager as MemoryManager,
  };
}

/** Every static slot (a free one with `defaultSlotProfile`) and every live dynamic slot. */
export function slotReportOf(
  context: TaskSlotTableContext,
  resourceId: ResourceID,
  defaultSlotProfile: ResourceProfile,
): SlotReport {
  const slots: SlotStatus[] = [];
  const statusOf = (slot: TaskSlotRef): SlotStatus => {
    const c = slot.getSnapshot().context;
    const state = slotState(slot);
    return {
      slotId: SlotID.of(resourceId, c.index),
      resourceProfile: c.resourceProfile,
      allocationId: c.allocationId,
      jobId: c.jobId,
      state: state === 'done' ? 'releasing' : state,
    };
  };
  for (let index = 0; index < context.numberSlots; index++) {
    const slot = context.slots[index];
    slots.push(
      slot === undefined
        ? {
            slotId: SlotID.of(resourceId, index),
            resourceProfile: defaultSlotProfile,
            allocationId: null,
            jobId: null,
            state: 'free',
          }
        : statusOf(slot),
    );
  }
  for (const [index, slot] of Object.entries(context.slots)) {
    if (Number(index) >= context.numberSlots) slots.push(statusOf(slot));
  }
  return { resourceId, slots };
}
