/**
 * How the TaskSlotTable puts tasks into their TaskSlots and takes them out (Flink's TaskSlot.add and
 * remove, through TaskSlotTableImpl.addTask and removeTask), several at a time: the tasks of one
 * call go to each slot as one event (ADD_TASKS, REMOVE_TASKS; ADD_TASK, REMOVE_TASK for one), not
 * one event per task.
 *
 * The table machine has no task-adding event (a task changes no table-wide record): the table-wide
 * rule, `addTaskRefusalIn`, runs here and the slot's guard checks its own part again. A task leaves
 * a releasing slot through the table's REMOVE_TASK instead, which decides whether the slot leaves
 * the ledger with it.
 *
 * These run for every task a TaskExecutor runs (its submissions and endings of one turn).
 */
import type { Actor } from 'xstate';
import type { ExecutionAttemptID } from '../core/ids.js';
import type { TaskSlotPayload } from '../../machines/taskSlot.machine.js';
import {
  addTaskRefusalIn,
  slotOf,
  slotOfTask,
  slotState,
  type TaskSlotRef,
  type TaskSlotTableContext,
  type taskSlotTableMachine,
} from '../../machines/taskSlotTable.machine.js';
import { checkPayload } from './taskSlotTableChecks.js';
import { addTaskError } from './taskSlotTableRefusals.js';

/**
 * Checks each task against the table as the tasks before it leave it, then sends each slot its
 * accepted tasks in one event. Returns, per task in order, the error that refused it or undefined.
 */
export function addTasksToSlots(
  context: TaskSlotTableContext,
  tasks: readonly TaskSlotPayload[],
): Array<Error | undefined> {
  const perSlot = new Map<TaskSlotRef, TaskSlotPayload[]>();
  const errors = placeTasks(context, tasks, perSlot);
  for (const [slot, batch] of perSlot)
    slot.send(batch.length === 1 ? { type: 'ADD_TASK', task: batch[0]! } : { type: 'ADD_TASKS', tasks: batch });
  return errors;
}

/** What {@link addTasksToSlots} would refuse, with nothing sent: per task in order, the error or undefined. */
export function refusalsOfTasks(
  context: TaskSlotTableContext,
  tasks: readonly TaskSlotPayload[],
): Array<Error | undefined> {
  return placeTasks(context, tasks, null);
}

/**
 * Each task's refusal (the table as it will be once the tasks before it are in); the accepted ones go into `perSlot`
 * by slot, when one is given (a check alone needs none: it runs for every submission).
 */
function placeTasks(
  context: TaskSlotTableContext,
  tasks: readonly TaskSlotPayload[],
  perSlot: Map<TaskSlotRef, TaskSlotPayload[]> | null,
): Array<Error | undefined> {
  const errors: Array<Error | undefined> = [];
  const accepted = new Set<ExecutionAttemptID>();
  for (const task of tasks) {
    try {
      checkPayload(task);
    } catch (error) {
      errors.push(error as Error);
      continue;
    }
    // Only the tasks before this one can refuse it anew.
    const refusal = accepted.has(task.executionAttemptId)
      ? ({ reason: 'duplicate-execution-attempt' } as const)
      : addTaskRefusalIn(context, task);
    if (refusal !== undefined) {
      errors.push(addTaskError(task, refusal));
      continue;
    }
    accepted.add(task.executionAttemptId);
    errors.push(undefined);
    if (perSlot === null) continue;
    const slot = slotOf(context, task.allocationId)!;
    const batch = perSlot.get(slot);
    if (batch === undefined) perSlot.set(slot, [task]);
    else batch.push(task);
  }
  return errors;
}

/**
 * Each task the table holds leaves its slot: one event per slot, straight to the slot as the
 * table's own REMOVE_TASK would only forward it there — except from a releasing slot, which may
 * leave the ledger with the task: the table decides. Returns each removed task, or undefined for
 * an ID the table did not hold.
 */
export function removeTasksFromSlots(
  table: Actor<typeof taskSlotTableMachine>,
  executionAttemptIds: readonly ExecutionAttemptID[],
): Array<TaskSlotPayload | undefined> {
  const removed: Array<TaskSlotPayload | undefined> = [];
  const perSlot = new Map<TaskSlotRef, ExecutionAttemptID[]>();
  for (const executionAttemptId of executionAttemptIds) {
    // Read again for every task: a releasing slot may have left the table with the one before.
    const slot = slotOfTask(table.getSnapshot().context, executionAttemptId);
    const task = slot?.getSnapshot().context.tasks.get(executionAttemptId);
    if (slot === undefined || task === undefined || perSlot.get(slot)?.includes(executionAttemptId)) {
      removed.push(undefined);
      continue;
    }
    removed.push(task);
    if (slotState(slot) === 'releasing') {
      table.send({ type: 'REMOVE_TASK', executionAttemptId });
      continue;
    }
    const batch = perSlot.get(slot);
    if (batch === undefined) perSlot.set(slot, [executionAttemptId]);
    else batch.push(executionAttemptId);
  }
  for (const [slot, batch] of perSlot)
    slot.send(
      batch.length === 1
        ? { type: 'REMOVE_TASK', executionAttemptId: batch[0]! }
        : { type: 'REMOVE_TASKS', executionAttemptIds: batch },
    );
  return removed;
}
