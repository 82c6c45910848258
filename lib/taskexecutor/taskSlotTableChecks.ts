/**
 * The TaskSlotTable's door: its arguments checked one clause each, an IllegalArgumentError naming
 * the argument and the rule, before anything changes.
 */
import { IllegalArgumentError } from '../core/errors.js';
import { AllocationID, ExecutionAttemptID, JobID } from '../core/ids.js';
import { parseDuration, type DurationInput } from '../core/Duration.js';
import { ResourceProfile } from '../core/ResourceProfile.js';
import type { TaskSlotPayload } from '../../machines/taskSlot.machine.js';
import type { SlotAllocationRequest } from '../../machines/taskSlotTable.machine.js';

const COMPONENT = 'TaskSlotTable';

/** An IllegalArgumentError naming the argument and its rule. */
export function illegal(
  argument: string,
  reason: 'invalid-type' | 'invalid-value' | 'out-of-range',
  rule: string,
): IllegalArgumentError {
  return new IllegalArgumentError(reason, `${COMPONENT}: ${argument} ${rule}`, { argument });
}

/** A duration argument in ms (> 0), or `fallback` when it is not given. */
export function duration(argument: string, input: DurationInput | undefined, fallback: number): number {
  if (input === undefined) return fallback;
  const parsed = parseDuration(input);
  if (!parsed.ok) throw illegal(argument, 'invalid-value', parsed.problem);
  if (parsed.ms <= 0) throw illegal(argument, 'out-of-range', `must be longer than 0 ms, got ${parsed.ms}`);
  return parsed.ms;
}

/** An ID-like argument as it may appear in a message (cut at 40 characters). */
export function describeId(value: unknown): string {
  return typeof value === 'string'
    ? JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value)
    : String(value);
}

/** An allocateSlot request: index, jobId, allocationId, a finite resourceProfile, an optional slotTimeout. */
export function checkAllocationRequest(request: SlotAllocationRequest): void {
  if (typeof request !== 'object' || request === null)
    throw illegal('request', 'invalid-type', 'must be an object { index, jobId, allocationId, resourceProfile }');
  if (!Number.isSafeInteger(request.index))
    throw illegal(
      'index',
      'invalid-value',
      `must be an integer (negative for a dynamic slot), got ${String(request.index)}`,
    );
  if (!JobID.is(request.jobId))
    throw illegal('jobId', 'invalid-value', `must be a JobID (32 hex characters), got ${describeId(request.jobId)}`);
  if (!AllocationID.is(request.allocationId))
    throw illegal(
      'allocationId',
      'invalid-value',
      `must be an AllocationID (32 hex characters), got ${describeId(request.allocationId)}`,
    );
  if (!(request.resourceProfile instanceof ResourceProfile))
    throw illegal(
      'resourceProfile',
      'invalid-type',
      'must be a ResourceProfile (UNKNOWN for the default slot profile)',
    );
  if (request.resourceProfile.isAny())
    throw illegal('resourceProfile', 'invalid-value', 'must not be ANY: a slot needs a finite profile');
  if (request.slotTimeout !== undefined && (!Number.isFinite(request.slotTimeout) || request.slotTimeout <= 0)) {
    throw illegal('slotTimeout', 'out-of-range', `must be a number of ms > 0, got ${String(request.slotTimeout)}`);
  }
}

/** A task payload: its IDs and its failExternally callback. */
export function checkPayload(task: TaskSlotPayload): void {
  if (typeof task !== 'object' || task === null)
    throw illegal(
      'task',
      'invalid-type',
      'must be an object { executionAttemptId, jobId, allocationId, failExternally }',
    );
  if (!ExecutionAttemptID.is(task.executionAttemptId))
    throw illegal(
      'task.executionAttemptId',
      'invalid-value',
      `must be an ExecutionAttemptID, got ${describeId(task.executionAttemptId)}`,
    );
  if (!JobID.is(task.jobId))
    throw illegal('task.jobId', 'invalid-value', `must be a JobID, got ${describeId(task.jobId)}`);
  if (!AllocationID.is(task.allocationId))
    throw illegal(
      'task.allocationId',
      'invalid-value',
      `must be an AllocationID, got ${describeId(task.allocationId)}`,
    );
  if (typeof task.failExternally !== 'function')
    throw illegal('task.failExternally', 'invalid-type', 'must be a function (cause) => void');
}
