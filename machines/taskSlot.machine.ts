/**
 * TaskSlot (Flink's TaskSlot): one slot of a TaskExecutor, leased to one job under one
 * AllocationID.
 *
 *   allocated ──MARK_ACTIVE──▶ active ──MARK_INACTIVE──▶ allocated
 *       │  └─ after slotTimeout: report SLOT_TIMED_OUT (ticket) ─┘        │
 *       └──────────────CLOSE──────────────┐   ┌──────────CLOSE───────────┘
 *                                         ▼   ▼
 *                                     releasing ──(no tasks left)──▶ done
 *                   (entry: fail every task;          (MemoryManager.shutdown() on the way,
 *                    after releaseTimeout: report      its leak report → output)
 *                    stuck tasks)
 *   (CLOSE of a slot without tasks goes to done at once, shutting the memory down on the way — as Flink's
 *   TaskSlot.closeAsync completes at once when it holds no task: no release timeout armed.)
 *
 * Flink's TaskSlot has no FREE state: a freed slot leaves the TaskSlotTable; here the actor ends in
 * `done` with its leak report as output. Tasks are added only while `active`, only with the slot's
 * JobID and AllocationID, never the same ExecutionAttemptID twice (`addTaskRefusal`). ADD_TASKS and
 * REMOVE_TASKS do the same for the tasks a TaskExecutor started or ended in a short while (its
 * RunningTasks batches them): one event (one snapshot for the inspector) instead of one per task,
 * all added or none.
 *
 * Pure: the only effects are calls on the objects handed in (a task's failExternally, the memory
 * manager's shutdown) and the two notifications, which default to sendParent and are replaced with
 * `provide()` when the slot runs without a TaskSlotTable.
 */
import { assign, sendParent, setup } from 'xstate';
import type { AllocationID, ExecutionAttemptID, JobID } from '../lib/core/ids.js';
import type { ResourceProfile } from '../lib/core/ResourceProfile.js';
import { TaskSet } from './taskSet.js';

export { TaskSet };

/** What a slot holds for each task: Flink's TaskSlotPayload. */
export interface TaskSlotPayload {
  readonly executionAttemptId: ExecutionAttemptID;
  readonly jobId: JobID;
  readonly allocationId: AllocationID;
  /** Asked when the slot closes under the task; the task must terminate and then be removed. */
  failExternally(cause: unknown): void;
}

/** What a memory manager reports when shut down: the pages an owner still held. */
export interface SlotMemoryLeakReport {
  readonly leakedPages: number;
  readonly leakedBytes: number;
  readonly owners: ReadonlyArray<{ readonly owner: string; readonly pages: number }>;
}

/** The slot's own MemoryManager, as far as the slot's lifecycle needs it. */
export interface SlotMemoryManager {
  shutdown(): SlotMemoryLeakReport;
}

export interface TaskSlotInput {
  readonly index: number;
  readonly resourceProfile: ResourceProfile;
  readonly jobId: JobID;
  readonly allocationId: AllocationID;
  readonly memoryManager: SlotMemoryManager;
  /** ms an allocated slot may wait to be activated (taskmanager.slot.timeout). */
  readonly slotTimeout: number;
  /** ms a releasing slot waits for its tasks before reporting them stuck (task.cancellation.timeout). */
  readonly releaseTimeout: number;
  /** Makes timeout tickets unique across every slot of a table (a table passes its spawn counter). */
  readonly ticketPrefix?: string;
}

export interface TaskSlotContext extends Omit<TaskSlotInput, 'ticketPrefix'> {
  readonly ticketPrefix: string;
  /**
   * The slot's tasks by ExecutionAttemptID: immutable, add and remove share most of it; JSON shows it as a plain
   * record.
   */
  readonly tasks: TaskSet<TaskSlotPayload>;
  /** Counts registrations of the slot timeout; the current ticket is `${ticketPrefix}${timeoutRegistrations}`. */
  readonly timeoutRegistrations: number;
  readonly closeCause: unknown;
  readonly leaks: SlotMemoryLeakReport | null;
  /** Set when the memory manager's shutdown threw: the slot still ends, and says why it could not verify. */
  readonly shutdownError: string | null;
}

export type TaskSlotEvent =
  | { type: 'MARK_ACTIVE' }
  | { type: 'MARK_INACTIVE'; slotTimeout?: number }
  | { type: 'ADD_TASK'; task: TaskSlotPayload }
  /** Several tasks at once (a TaskExecutor's submissions of a while): all are added, or none when any is refused. */
  | { type: 'ADD_TASKS'; tasks: readonly TaskSlotPayload[] }
  | { type: 'REMOVE_TASK'; executionAttemptId: ExecutionAttemptID }
  /** Several removals at once (the tasks that ended in a short while); IDs the slot does not hold are skipped. */
  | { type: 'REMOVE_TASKS'; executionAttemptIds: readonly ExecutionAttemptID[] }
  | { type: 'CLOSE'; cause?: unknown };

/** Sent to the parent (the TaskSlotTable). */
export type TaskSlotNotification =
  | { type: 'SLOT_TIMED_OUT'; allocationId: AllocationID; ticket: string }
  | { type: 'SLOT_RELEASE_TIMED_OUT'; allocationId: AllocationID; executionAttemptIds: ExecutionAttemptID[] };

export interface TaskSlotOutput {
  readonly index: number;
  readonly allocationId: AllocationID;
  readonly jobId: JobID;
  readonly leaks: SlotMemoryLeakReport;
  readonly shutdownError: string | null;
}

export type TaskSlotStateName = 'allocated' | 'active' | 'releasing' | 'done';

/** Why a task may not be added to this slot, or undefined when it may. Same order as Flink's checks. */
export type AddTaskRefusal =
  | { reason: 'slot-allocated' | 'slot-releasing' }
  | { reason: 'job-mismatch'; expected: JobID; actual: JobID }
  | { reason: 'allocation-mismatch'; expected: AllocationID; actual: AllocationID }
  | { reason: 'duplicate-execution-attempt' };

export function addTaskRefusal(
  state: TaskSlotStateName,
  context: TaskSlotContext,
  task: TaskSlotPayload,
): AddTaskRefusal | undefined {
  if (state !== 'active') return { reason: state === 'allocated' ? 'slot-allocated' : 'slot-releasing' };
  if (task.jobId !== context.jobId) return { reason: 'job-mismatch', expected: context.jobId, actual: task.jobId };
  if (task.allocationId !== context.allocationId)
    return { reason: 'allocation-mismatch', expected: context.allocationId, actual: task.allocationId };
  if (context.tasks.has(task.executionAttemptId)) return { reason: 'duplicate-execution-attempt' };
  return undefined;
}

/** Why the tasks may not all be added to this slot (the first refusal, and which task), or undefined when they may. */
export function addTasksRefusal(
  state: TaskSlotStateName,
  context: TaskSlotContext,
  tasks: readonly TaskSlotPayload[],
): { index: number; refusal: AddTaskRefusal } | undefined {
  const seen = new Set<ExecutionAttemptID>();
  for (let index = 0; index < tasks.length; index++) {
    const task = tasks[index]!;
    const refusal = seen.has(task.executionAttemptId)
      ? { reason: 'duplicate-execution-attempt' as const }
      : addTaskRefusal(state, context, task);
    if (refusal !== undefined) return { index, refusal };
    seen.add(task.executionAttemptId);
  }
  return undefined;
}

export function currentTicket(context: TaskSlotContext): string {
  return `${context.ticketPrefix}${context.timeoutRegistrations}`;
}

export const taskSlotMachine = setup({
  types: {
    context: {} as TaskSlotContext,
    events: {} as TaskSlotEvent,
    input: {} as TaskSlotInput,
    output: {} as TaskSlotOutput,
  },
  delays: {
    slotTimeout: ({ context }) => context.slotTimeout,
    releaseTimeout: ({ context }) => context.releaseTimeout,
  },
  guards: {
    canAddTask: ({ context, event }) =>
      event.type === 'ADD_TASK' && addTaskRefusal('active', context, event.task) === undefined,
    canAddTasks: ({ context, event }) =>
      event.type === 'ADD_TASKS' &&
      event.tasks.length > 0 &&
      addTasksRefusal('active', context, event.tasks) === undefined,
    holdsTask: ({ context, event }) => event.type === 'REMOVE_TASK' && context.tasks.has(event.executionAttemptId),
    holdsAnyTask: ({ context, event }) =>
      event.type === 'REMOVE_TASKS' && event.executionAttemptIds.some((id) => context.tasks.has(id)),
    isEmpty: ({ context }) => context.tasks.size === 0,
  },
  actions: {
    registerTimeout: assign({ timeoutRegistrations: ({ context }) => context.timeoutRegistrations + 1 }),
    updateSlotTimeout: assign({
      slotTimeout: ({ context, event }) =>
        event.type === 'MARK_INACTIVE' && event.slotTimeout !== undefined ? event.slotTimeout : context.slotTimeout,
    }),
    addTask: assign({
      tasks: ({ context, event }) => (event.type === 'ADD_TASK' ? context.tasks.with(event.task) : context.tasks),
    }),
    addTasks: assign({
      tasks: ({ context, event }) => (event.type === 'ADD_TASKS' ? context.tasks.withAll(event.tasks) : context.tasks),
    }),
    removeTask: assign({
      tasks: ({ context, event }) =>
        event.type === 'REMOVE_TASK' ? context.tasks.without(event.executionAttemptId) : context.tasks,
    }),
    removeTasks: assign({
      tasks: ({ context, event }) =>
        event.type === 'REMOVE_TASKS' ? context.tasks.withoutAll(event.executionAttemptIds) : context.tasks,
    }),
    recordCloseCause: assign({ closeCause: ({ event }) => (event.type === 'CLOSE' ? event.cause : undefined) }),
    /**
     * Flink: task.failExternally(cause) for every task still in the slot. A payload that throws is still waited for.
     */
    failTasks: ({ context }) => {
      for (const task of context.tasks.values()) {
        try {
          task.failExternally(context.closeCause);
        } catch {
          // The task is asked, not forced: it still has to terminate and be removed.
        }
      }
    },
    /**
     * Flink's TaskSlot.closeAsync once no task is left: the memory manager shut down, its leak report kept (the
     * slot's output); a shutdown that throws still ends the slot, which says why it could not verify.
     */
    shutDownMemory: assign(({ context }) => {
      try {
        return { leaks: context.memoryManager.shutdown() };
      } catch (error) {
        return { shutdownError: String((error as Error)?.message ?? error) };
      }
    }),
    notifySlotTimedOut: sendParent(({ context }) => ({
      type: 'SLOT_TIMED_OUT' as const,
      allocationId: context.allocationId,
      ticket: currentTicket(context),
    })),
    notifyReleaseTimedOut: sendParent(({ context }) => ({
      type: 'SLOT_RELEASE_TIMED_OUT' as const,
      allocationId: context.allocationId,
      executionAttemptIds: context.tasks.ids(),
    })),
  },
}).createMachine({
  id: 'taskSlot',
  context: ({ input }) => ({
    index: input.index,
    resourceProfile: input.resourceProfile,
    jobId: input.jobId,
    allocationId: input.allocationId,
    memoryManager: input.memoryManager,
    slotTimeout: input.slotTimeout,
    releaseTimeout: input.releaseTimeout,
    ticketPrefix: input.ticketPrefix ?? '',
    tasks: TaskSet.empty<TaskSlotPayload>(),
    timeoutRegistrations: 0,
    closeCause: undefined,
    leaks: null,
    shutdownError: null,
  }),
  initial: 'allocated',
  on: {
    REMOVE_TASK: { guard: 'holdsTask', actions: 'removeTask' },
    REMOVE_TASKS: { guard: 'holdsAnyTask', actions: 'removeTasks' },
  },
  states: {
    allocated: {
      entry: 'registerTimeout',
      after: { slotTimeout: { actions: 'notifySlotTimedOut' } },
      on: {
        MARK_ACTIVE: { target: 'active' },
        // Flink re-registers the timeout when an allocated slot is marked inactive again.
        MARK_INACTIVE: { target: 'allocated', reenter: true, actions: 'updateSlotTimeout' },
        CLOSE: [
          { guard: 'isEmpty', target: 'done', actions: ['recordCloseCause', 'shutDownMemory'] },
          { target: 'releasing', actions: 'recordCloseCause' },
        ],
      },
    },
    active: {
      on: {
        // Flink's markActive() on an active slot succeeds and changes nothing.
        MARK_ACTIVE: {},
        MARK_INACTIVE: { target: 'allocated', actions: 'updateSlotTimeout' },
        ADD_TASK: { guard: 'canAddTask', actions: 'addTask' },
        ADD_TASKS: { guard: 'canAddTasks', actions: 'addTasks' },
        CLOSE: [
          { guard: 'isEmpty', target: 'done', actions: ['recordCloseCause', 'shutDownMemory'] },
          { target: 'releasing', actions: 'recordCloseCause' },
        ],
      },
    },
    releasing: {
      entry: 'failTasks',
      always: { guard: 'isEmpty', target: 'done', actions: 'shutDownMemory' },
      after: { releaseTimeout: { actions: 'notifyReleaseTimedOut' } },
      on: {
        // Closing twice is closing once.
        CLOSE: {},
      },
    },
    done: { type: 'final' },
  },
  output: ({ context }) => ({
    index: context.index,
    allocationId: context.allocationId,
    jobId: context.jobId,
    leaks: context.leaks ?? { leakedPages: 0, leakedBytes: 0, owners: [] },
    shutdownError: context.shutdownError,
  }),
});
