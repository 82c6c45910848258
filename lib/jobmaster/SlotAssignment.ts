/**
 * A subtask attempt got its slot (the JobMaster tells its `onSlotAssigned` observer, for metrics:
 * slot allocation latency is `timestamp - requestedAt`). Not a JobEvent: a job's listeners keep
 * seeing status and task events only, as they always did.
 */
import type { AllocationID, ResourceID } from '../core/ids.js';
import type { ExecutionRecord } from './ExecutionAttempts.js';

export interface SlotAssignment {
  readonly vertexId: string;
  readonly subtaskIndex: number;
  readonly attemptNumber: number;
  readonly resourceId: ResourceID;
  readonly allocationId: AllocationID;
  /** When the JobMaster asked its slot allocator for the slot (clock ms). */
  readonly requestedAt: number;
  /** When the slot was there (clock ms). */
  readonly timestamp: number;
}

/** The assignment of a record whose slot just came. */
export function slotAssignmentOf(record: ExecutionRecord, requestedAt: number, timestamp: number): SlotAssignment {
  const { vertex, attemptNumber, slot } = record;
  return {
    vertexId: vertex.id.vertexId,
    subtaskIndex: vertex.id.subtaskIndex,
    attemptNumber,
    resourceId: slot!.resourceId,
    allocationId: slot!.allocationId,
    requestedAt,
    timestamp,
  };
}
