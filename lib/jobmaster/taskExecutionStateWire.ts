/**
 * A TaskExecutor's task execution state updates (Flink's TaskExecutionState) as they arrive on the wire, checked as
 * far as the JobMaster reads them: a malformed one throws an IllegalArgumentError naming the argument.
 */
import { IllegalArgumentError } from '../core/errors.js';
import { ExecutionAttemptID } from '../core/ids.js';
import type { ExecutionState, TaskExecutionStateWire } from '../rpc/protocol.js';

const EXECUTION_STATES: ReadonlySet<string> = new Set<ExecutionState>([
  'deploying',
  'initializing',
  'running',
  'finished',
  'failed',
  'canceled',
]);

/**
 * Each state as this module's own string. A state read off the wire is a new string per update, and a subtask keeps
 * its last (a job of 100,000 subtasks kept as many strings 'finished').
 */
const CANONICAL = new Map<string, ExecutionState>(
  [...EXECUTION_STATES].map((state) => [state, state as ExecutionState]),
);

/** The state as this module's own string (one per state, however many updates carried it); a checked update's. */
export function canonicalState(state: ExecutionState): ExecutionState {
  return CANONICAL.get(state) ?? state;
}

/** A TaskExecutor's state update, as far as the JobMaster reads it. */
export function checkStateUpdate(update: TaskExecutionStateWire, argument: string): void {
  if (typeof update !== 'object' || update === null)
    throw new IllegalArgumentError(
      'invalid-type',
      `${argument} must be a task execution state object, got ${update === null ? 'null' : typeof update}`,
      { argument },
    );
  if (!ExecutionAttemptID.is(update.executionAttemptId)) {
    throw new IllegalArgumentError(
      'invalid-value',
      `${argument}.executionAttemptId must be an ExecutionAttemptID, got ${String(update.executionAttemptId)}`,
      { argument: `${argument}.executionAttemptId` },
    );
  }
  if (!EXECUTION_STATES.has(update.state)) {
    throw new IllegalArgumentError(
      'invalid-value',
      `${argument}.state must be one of ${[...EXECUTION_STATES].join(', ')}, got ${String(update.state)}`,
      { argument: `${argument}.state`, value: String(update.state), allowed: [...EXECUTION_STATES] },
    );
  }
}

/** A batch of updates (updateTaskExecutionStates): an array, every update checked. */
export function checkStateUpdates(updates: readonly TaskExecutionStateWire[]): void {
  if (!Array.isArray(updates))
    throw new IllegalArgumentError(
      'invalid-type',
      `updateTaskExecutionStates: updates must be an array of task ` +
        `execution states, got ${updates === null ? 'null' : typeof updates}`,
      { argument: 'updates' },
    );
  updates.forEach((update, i) => checkStateUpdate(update, `updates[${i}]`));
}
