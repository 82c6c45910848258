/**
 * The table machine's verdicts as the typed errors the TaskSlotTable throws: the statechart's own
 * decision functions (`decideAllocation`, `addTaskRefusalIn`) say why, these say it to the caller,
 * naming the slot, the job and what would be allowed instead.
 */
import {
  DuplicateTaskError,
  SlotAllocationError,
  SlotNotActiveError,
  SlotNotFoundError,
  SlotOwnerMismatchError,
} from '../core/errors.js';
import { AllocationID, ExecutionAttemptID, JobID } from '../core/ids.js';
import { formatShortfall } from '../core/ResourceProfile.js';
import type { TaskSlotPayload } from '../../machines/taskSlot.machine.js';
import type {
  AllocationVerdict,
  SlotAllocationRequest,
  TableAddTaskRefusal,
} from '../../machines/taskSlotTable.machine.js';

/** The SlotAllocationError for a refused allocation (Flink's allocateSlot checks, in their order). */
export function allocationRefusalError(
  request: SlotAllocationRequest,
  verdict: Extract<AllocationVerdict, { kind: 'refuse' }>,
): SlotAllocationError {
  const id = AllocationID.short(request.allocationId);
  switch (verdict.reason) {
    case 'index-out-of-range':
      return new SlotAllocationError(
        'index-out-of-range',
        `slot index ${verdict.index} is out of range: this table has ${verdict.numberSlots} static ` +
          `slots (0..${verdict.numberSlots - 1}); ask for a negative index to get a dynamic slot`,
        { ...verdict, allocationId: request.allocationId },
      );
    case 'index-taken':
      return new SlotAllocationError(
        'index-taken',
        `cannot allocate ${id}: slot index ${verdict.index} is already ` +
          `held by allocation ${AllocationID.short(verdict.holder)}`,
        { ...verdict, allocationId: request.allocationId },
      );
    case 'allocation-conflict':
      return new SlotAllocationError(
        'allocation-conflict',
        `allocation ${id} is already held by slot ${verdict.existing.index} ` +
          `for job ${JobID.short(verdict.existing.jobId)} ` +
          `with ${verdict.existing.profile}; a repeat must name the same job, profile and index`,
        {
          allocationId: request.allocationId,
          existingIndex: verdict.existing.index,
          existingJobId: verdict.existing.jobId,
        },
      );
    case 'insufficient-resources':
      return new SlotAllocationError(
        'insufficient-resources',
        `cannot allocate ${id} at index ${verdict.index}: the TaskExecutor has not enough ` +
          `resources left (${formatShortfall(verdict.available.shortfall(verdict.profile))})`,
        {
          allocationId: request.allocationId,
          index: verdict.index,
          requested: verdict.profile.toJSON(),
          available: verdict.available.toJSON(),
        },
      );
  }
}

/** The typed error for an addTask refusal. */
export function addTaskError(task: TaskSlotPayload, refusal: TableAddTaskRefusal): Error {
  const id = ExecutionAttemptID.short(task.executionAttemptId);
  const slot = AllocationID.short(task.allocationId);
  const details = { executionAttemptId: task.executionAttemptId, allocationId: task.allocationId, jobId: task.jobId };
  switch (refusal.reason) {
    case 'slot-not-found':
      return new SlotNotFoundError(`cannot add task ${id}: no slot with allocation ${slot} in this table`, details);
    case 'slot-allocated':
      return new SlotNotActiveError(
        'slot-allocated',
        `cannot add task ${id}: slot ${slot} is allocated but not active; mark it active first`,
        details,
      );
    case 'slot-releasing':
      return new SlotNotActiveError('slot-releasing', `cannot add task ${id}: slot ${slot} is releasing`, details);
    case 'job-mismatch':
      return new SlotOwnerMismatchError(
        'job-mismatch',
        `cannot add task ${id} of job ${JobID.short(refusal.actual)}: ` +
          `slot ${slot} belongs to job ${JobID.short(refusal.expected)}`,
        { ...details, expected: refusal.expected },
      );
    case 'allocation-mismatch':
      return new SlotOwnerMismatchError(
        'allocation-mismatch',
        `cannot add task ${id}: slot ${slot} is held under allocation ${AllocationID.short(refusal.expected)}`,
        { ...details, expected: refusal.expected },
      );
    case 'duplicate-execution-attempt':
      return new DuplicateTaskError(`task ${id} is already in this table`, details);
  }
}
