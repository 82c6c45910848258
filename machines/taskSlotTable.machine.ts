/**
 * TaskSlotTable (Flink's TaskSlotTableImpl): the TaskExecutor's ledger of slots, one TaskSlot actor
 * per live slot.
 *
 *   created ──START──▶ running ──CLOSE──▶ closing ──(every slot closed)──▶ closed
 *      └──────────────────────CLOSE (never started)───────────────────────────┘
 *
 * In `running`: ALLOCATE_SLOT, MARK_SLOT_ACTIVE, MARK_SLOT_INACTIVE. In `running` and `closing`:
 * FREE_SLOT, REMOVE_TASK, and the slots' own reports. Entering `closing` frees every slot.
 *
 * Tasks are their slots' business. Adding one changes no table-wide record, so the table has no
 * event for it: its caller checks the table-wide rules (`addTaskRefusalIn`: the slot exists, is
 * active for the task's job and allocation, the attempt is new to the whole table) and sends
 * ADD_TASK / ADD_TASKS to the TaskSlot actor, whose own guard checks the slot's part again. A table
 * event on the way would only forward it, at the price of one more XState event per call: 2x the
 * table's CPU per task added one by one (bench/taskSlotTableTasks.bench.ts). REMOVE_TASK does come
 * here when the slot is releasing, because then the table decides: the slot's last task takes the
 * slot out of the ledger. Any other removal may go to the slot directly; this event does the same.
 *
 * The ledger follows Flink's TaskSlotTableImpl: slots by index (static 0..n-1, dynamic ≥ n),
 * AllocationID → index, JobID → AllocationIDs, and an immutable ResourceBudgetManager. Tasks live
 * in their TaskSlot actors only (Flink's ExecutionAttemptID → TaskSlot map is `slotOfTask`, a look
 * through the few live slots): adding or removing a task changes one slot's context, never a
 * table-wide record. A slot leaves the ledger (its budget returns) when it is freed empty, or
 * when a releasing slot loses its last task; its actor shuts its memory down and ends in the same
 * step, and the table counts it as closing until its done event (the next event it processes).
 *
 * Every refusal is a guard over pure functions exported here (`decideAllocation`,
 * `addTaskRefusalIn`), so the TaskSlotTable class turns the very same verdict into a typed error.
 * Notifications for the TaskExecutor leave through `emit`.
 */
import { assign, emit, enqueueActions, setup, type ActorRefFrom } from 'xstate';
import type { AllocationID, ExecutionAttemptID, JobID } from '../lib/core/ids.js';
import type { ResourceBudgetManager } from '../lib/core/ResourceBudgetManager.js';
import type { ResourceProfile } from '../lib/core/ResourceProfile.js';
import {
  addTaskRefusal,
  taskSlotMachine,
  type AddTaskRefusal,
  type SlotMemoryManager,
  type TaskSlotNotification,
  type TaskSlotOutput,
  type TaskSlotPayload,
  type TaskSlotStateName,
} from './taskSlot.machine.js';

export type TaskSlotRef = ActorRefFrom<typeof taskSlotMachine>;

export interface TaskSlotTableInput {
  /** Static slots: indexes 0..numberSlots-1 (taskmanager.numberOfTaskSlots). */
  readonly numberSlots: number;
  /** The TaskExecutor's total resources, reserved from by every slot. */
  readonly budget: ResourceBudgetManager;
  /** The profile of a slot requested with UNKNOWN, and of free static slots in the report. */
  readonly defaultSlotProfile: ResourceProfile;
  /** Default ms an allocated slot may wait for activation. */
  readonly slotTimeout: number;
  /** ms a releasing slot waits for its tasks before reporting them stuck. */
  readonly releaseTimeout: number;
  /** Builds a slot's own MemoryManager from its effective profile. */
  readonly createMemoryManager: (profile: ResourceProfile) => SlotMemoryManager;
}

export interface TaskSlotTableContext extends TaskSlotTableInput {
  readonly slots: Readonly<Record<number, TaskSlotRef>>;
  readonly allocations: Readonly<Record<AllocationID, number>>;
  readonly slotsPerJob: Readonly<Record<JobID, readonly AllocationID[]>>;
  /** Slot actors that left the ledger and are still closing (shutting their memory down). */
  readonly closingSlots: number;
  /** Slots spawned so far: prefixes each slot's timeout tickets, so no two slots ever share a ticket. */
  readonly spawned: number;
}

export interface SlotAllocationRequest {
  /** A static index, or a negative number for a dynamic slot (the next free index ≥ numberSlots). */
  readonly index: number;
  readonly jobId: JobID;
  readonly allocationId: AllocationID;
  /** UNKNOWN means the default slot profile. */
  readonly resourceProfile: ResourceProfile;
  /** ms; defaults to the table's slot timeout. */
  readonly slotTimeout?: number;
}

export type TaskSlotTableEvent =
  | { type: 'START' }
  | ({ type: 'ALLOCATE_SLOT' } & SlotAllocationRequest)
  | { type: 'MARK_SLOT_ACTIVE'; allocationId: AllocationID }
  | { type: 'MARK_SLOT_INACTIVE'; allocationId: AllocationID; slotTimeout?: number }
  | { type: 'FREE_SLOT'; allocationId: AllocationID; cause?: unknown }
  | { type: 'REMOVE_TASK'; executionAttemptId: ExecutionAttemptID }
  | { type: 'CLOSE'; cause?: unknown }
  | TaskSlotNotification
  | { type: `xstate.done.actor.${string}`; output: TaskSlotOutput };

/** What leaves the table for the TaskExecutor. */
export type TaskSlotTableEmitted =
  | { type: 'slotTimedOut'; allocationId: AllocationID; ticket: string }
  | { type: 'slotReleaseTimedOut'; allocationId: AllocationID; executionAttemptIds: ExecutionAttemptID[] }
  | { type: 'slotFreed'; allocationId: AllocationID; jobId: JobID; index: number }
  | { type: 'slotClosed'; output: TaskSlotOutput };

const DONE_PREFIX = 'xstate.done.actor.';

export type TaskSlotTableStateName = 'created' | 'running' | 'closing' | 'closed';

// ---------------------------------------------------------------------------------------------
// Decisions (pure; shared by the guards and by the TaskSlotTable class's typed errors)
// ---------------------------------------------------------------------------------------------

export type AllocationVerdict =
  | { kind: 'allocate'; index: number; profile: ResourceProfile }
  | { kind: 'duplicate'; index: number }
  | { kind: 'refuse'; reason: 'index-out-of-range'; index: number; numberSlots: number }
  | { kind: 'refuse'; reason: 'index-taken'; index: number; holder: AllocationID }
  | {
      kind: 'refuse';
      reason: 'allocation-conflict';
      existing: { index: number; jobId: JobID; profile: ResourceProfile };
    }
  | {
      kind: 'refuse';
      reason: 'insufficient-resources';
      index: number;
      profile: ResourceProfile;
      available: ResourceProfile;
    };

/** Flink's allocateSlot checks, in Flink's order, without changing anything. */
export function decideAllocation(context: TaskSlotTableContext, request: SlotAllocationRequest): AllocationVerdict {
  if (request.index >= context.numberSlots) {
    return { kind: 'refuse', reason: 'index-out-of-range', index: request.index, numberSlots: context.numberSlots };
  }
  const dynamic = request.index < 0;
  const index = dynamic ? nextDynamicSlotIndex(context) : request.index;
  const profile = request.resourceProfile.isUnknown() ? context.defaultSlotProfile : request.resourceProfile;
  const existingIndex = context.allocations[request.allocationId];
  if (existingIndex !== undefined) {
    const existing = context.slots[existingIndex]!.getSnapshot().context;
    // Flink's isDuplicatedSlot: same job, same profile, and the same index unless dynamic.
    const identical =
      existing.jobId === request.jobId &&
      existing.resourceProfile.equals(profile) &&
      (dynamic || existingIndex === index);
    return identical
      ? { kind: 'duplicate', index: existingIndex }
      : {
          kind: 'refuse',
          reason: 'allocation-conflict',
          existing: { index: existingIndex, jobId: existing.jobId, profile: existing.resourceProfile },
        };
  }
  const holder = context.slots[index];
  if (holder !== undefined)
    return { kind: 'refuse', reason: 'index-taken', index, holder: holder.getSnapshot().context.allocationId };
  if (!context.budget.canReserve(profile)) {
    return { kind: 'refuse', reason: 'insufficient-resources', index, profile, available: context.budget.available };
  }
  return { kind: 'allocate', index, profile };
}

export function nextDynamicSlotIndex(context: TaskSlotTableContext): number {
  let index = context.numberSlots;
  while (context.slots[index] !== undefined) index++;
  return index;
}

export function slotOf(context: TaskSlotTableContext, allocationId: AllocationID): TaskSlotRef | undefined {
  const index = context.allocations[allocationId];
  return index === undefined ? undefined : context.slots[index];
}

/** The live slot that holds the attempt (a look through the ledger's slots, which are few), or undefined. */
export function slotOfTask(
  context: TaskSlotTableContext,
  executionAttemptId: ExecutionAttemptID,
): TaskSlotRef | undefined {
  for (const index in context.slots) {
    const slot = context.slots[index as unknown as number]!;
    if (slot.getSnapshot().context.tasks.has(executionAttemptId)) return slot;
  }
  return undefined;
}

export function slotState(slot: TaskSlotRef): TaskSlotStateName {
  // A TaskSlot's states are all top-level: its snapshot value is the state's name.
  return slot.getSnapshot().value as TaskSlotStateName;
}

export type TableAddTaskRefusal = AddTaskRefusal | { reason: 'slot-not-found' };

/** Flink's addTask checks: the slot exists, is active for this job and allocation, and the attempt is new. */
export function addTaskRefusalIn(
  context: TaskSlotTableContext,
  task: TaskSlotPayload,
): TableAddTaskRefusal | undefined {
  const slot = slotOf(context, task.allocationId);
  if (slot === undefined) return { reason: 'slot-not-found' };
  const refusal = addTaskRefusal(slotState(slot), slot.getSnapshot().context, task);
  if (refusal !== undefined) return refusal;
  // An attempt may live in one slot of the whole table, not merely once per slot.
  if (slotOfTask(context, task.executionAttemptId) !== undefined) return { reason: 'duplicate-execution-attempt' };
  return undefined;
}

// ---------------------------------------------------------------------------------------------

/** The ledger after slots leave it: every index, map and the budget in one step. */
function removeFromLedger(context: TaskSlotTableContext, ...leaving: TaskSlotRef[]): Partial<TaskSlotTableContext> {
  const slots = { ...context.slots };
  const allocations = { ...context.allocations };
  const slotsPerJob = { ...context.slotsPerJob };
  let budget = context.budget;
  for (const slot of leaving) {
    const { index, allocationId, jobId, resourceProfile } = slot.getSnapshot().context;
    delete slots[index];
    delete allocations[allocationId];
    const jobSlots = (slotsPerJob[jobId] ?? []).filter((id) => id !== allocationId);
    if (jobSlots.length === 0) delete slotsPerJob[jobId];
    else slotsPerJob[jobId] = jobSlots;
    budget = budget.release(resourceProfile);
  }
  return { slots, allocations, slotsPerJob, budget, closingSlots: context.closingSlots + leaving.length };
}

/**
 * Flink's freeSlotInternal, as a plan: an empty slot leaves the ledger at once (the returned removal
 * and the `slotFreed` notice); a slot with tasks stays until its last task is removed. Either way
 * the caller then sends the slot CLOSE.
 */
function planFreeSlot(
  context: TaskSlotTableContext,
  slot: TaskSlotRef,
): { removal: Partial<TaskSlotTableContext>; freed: TaskSlotTableEmitted } | undefined {
  const slotContext = slot.getSnapshot().context;
  if (slotContext.tasks.size > 0) return undefined;
  return {
    removal: removeFromLedger(context, slot),
    freed: {
      type: 'slotFreed',
      allocationId: slotContext.allocationId,
      jobId: slotContext.jobId,
      index: slotContext.index,
    },
  };
}

/**
 * `slot-<index>`, or `slot-<index>.<k>` while an earlier actor of that index is still closing.
 * Actor ids must stay few: every id becomes an event type (`xstate.done.actor.<id>`) and XState
 * caches transitions per event type for the life of the process, so a fresh id per allocation
 * would leak a few hundred bytes per slot ever allocated.
 */
function freeChildId(index: number, children: Readonly<Record<string, unknown>>): string {
  let id = `slot-${index}`;
  for (let k = 1; children[id] !== undefined; k++) id = `slot-${index}.${k}`;
  return id;
}

export const taskSlotTableMachine = setup({
  types: {
    context: {} as TaskSlotTableContext,
    events: {} as TaskSlotTableEvent,
    input: {} as TaskSlotTableInput,
    emitted: {} as TaskSlotTableEmitted,
  },
  actors: { taskSlot: taskSlotMachine },
  guards: {
    canAllocate: ({ context, event }) =>
      event.type === 'ALLOCATE_SLOT' && decideAllocation(context, event).kind === 'allocate',
    isIdenticalAllocation: ({ context, event }) =>
      event.type === 'ALLOCATE_SLOT' && decideAllocation(context, event).kind === 'duplicate',
    slotExists: ({ context, event }) =>
      'allocationId' in event && slotOf(context, event.allocationId as AllocationID) !== undefined,
    taskExists: ({ context, event }) =>
      event.type === 'REMOVE_TASK' && slotOfTask(context, event.executionAttemptId) !== undefined,
    allSlotsClosed: ({ context }) => Object.keys(context.slots).length === 0 && context.closingSlots === 0,
  },
  actions: {
    allocateSlot: assign(({ context, event, spawn, self }) => {
      if (event.type !== 'ALLOCATE_SLOT') return {};
      const verdict = decideAllocation(context, event);
      if (verdict.kind !== 'allocate') return {};
      const { index, profile } = verdict;
      const spawned = context.spawned + 1;
      const slot = spawn('taskSlot', {
        id: freeChildId(index, self.getSnapshot().children),
        input: {
          index,
          resourceProfile: profile,
          jobId: event.jobId,
          allocationId: event.allocationId,
          memoryManager: context.createMemoryManager(profile),
          slotTimeout: event.slotTimeout ?? context.slotTimeout,
          releaseTimeout: context.releaseTimeout,
          ticketPrefix: `${spawned}.`,
        },
      });
      return {
        spawned,
        slots: { ...context.slots, [index]: slot },
        allocations: { ...context.allocations, [event.allocationId]: index },
        slotsPerJob: {
          ...context.slotsPerJob,
          [event.jobId]: [...(context.slotsPerJob[event.jobId] ?? []), event.allocationId],
        },
        budget: context.budget.reserve(profile),
      };
    }),
    markSlotActive: enqueueActions(({ context, event, enqueue }) => {
      if (event.type !== 'MARK_SLOT_ACTIVE') return;
      const slot = slotOf(context, event.allocationId)!;
      // Marking an active slot active changes nothing (Flink's markActive): no event for the slot.
      if (slotState(slot) !== 'active') enqueue.sendTo(slot, { type: 'MARK_ACTIVE' });
    }),
    markSlotInactive: enqueueActions(({ context, event, enqueue }) => {
      if (event.type !== 'MARK_SLOT_INACTIVE') return;
      enqueue.sendTo(slotOf(context, event.allocationId)!, { type: 'MARK_INACTIVE', slotTimeout: event.slotTimeout });
    }),
    freeSlot: enqueueActions(({ context, event, enqueue }) => {
      if (event.type !== 'FREE_SLOT') return;
      const slot = slotOf(context, event.allocationId)!;
      const plan = planFreeSlot(context, slot);
      if (plan !== undefined) {
        enqueue.assign(plan.removal);
        enqueue.emit(plan.freed);
      }
      enqueue.sendTo(slot, { type: 'CLOSE', cause: event.cause });
    }),
    freeAllSlots: enqueueActions(({ context, event, enqueue }) => {
      const cause = event.type === 'CLOSE' ? event.cause : undefined;
      const slots = Object.values(context.slots);
      const empty = slots.filter((slot) => slot.getSnapshot().context.tasks.size === 0);
      // One removal for every empty slot: removing them one by one would copy the ledger per slot.
      enqueue.assign(removeFromLedger(context, ...empty));
      for (const slot of empty) {
        const { allocationId, jobId, index } = slot.getSnapshot().context;
        enqueue.emit({ type: 'slotFreed', allocationId, jobId, index });
      }
      for (const slot of slots) enqueue.sendTo(slot, { type: 'CLOSE', cause });
    }),
    removeTask: enqueueActions(({ context, event, enqueue }) => {
      if (event.type !== 'REMOVE_TASK') return;
      const slot = slotOfTask(context, event.executionAttemptId)!;
      const slotContext = slot.getSnapshot().context;
      // A releasing slot leaves the ledger with its last task (Flink: removeTask → slotActions.freeSlot).
      if (slotState(slot) === 'releasing' && slotContext.tasks.size === 1) {
        enqueue.assign(removeFromLedger(context, slot));
        enqueue.emit({
          type: 'slotFreed',
          allocationId: slotContext.allocationId,
          jobId: slotContext.jobId,
          index: slotContext.index,
        });
      }
      enqueue.sendTo(slot, { type: 'REMOVE_TASK', executionAttemptId: event.executionAttemptId });
    }),
    reportSlotTimedOut: emit(({ event }) => ({
      type: 'slotTimedOut' as const,
      allocationId: (event as Extract<TaskSlotTableEvent, { type: 'SLOT_TIMED_OUT' }>).allocationId,
      ticket: (event as Extract<TaskSlotTableEvent, { type: 'SLOT_TIMED_OUT' }>).ticket,
    })),
    reportSlotReleaseTimedOut: emit(({ event }) => ({
      type: 'slotReleaseTimedOut' as const,
      allocationId: (event as Extract<TaskSlotTableEvent, { type: 'SLOT_RELEASE_TIMED_OUT' }>).allocationId,
      executionAttemptIds: (event as Extract<TaskSlotTableEvent, { type: 'SLOT_RELEASE_TIMED_OUT' }>)
        .executionAttemptIds,
    })),
    recordSlotClosed: enqueueActions(({ context, event, enqueue }) => {
      const output = (event as { output: TaskSlotOutput }).output;
      enqueue.assign({ closingSlots: context.closingSlots - 1 });
      // A finished child stays in the snapshot's children until stopped: stop it, or they pile up.
      enqueue.stopChild(event.type.slice(DONE_PREFIX.length));
      enqueue.emit({ type: 'slotClosed', output });
    }),
  },
}).createMachine({
  id: 'taskSlotTable',
  context: ({ input }) => ({
    ...input,
    slots: {},
    allocations: {},
    slotsPerJob: {},
    closingSlots: 0,
    spawned: 0,
  }),
  initial: 'created',
  on: {
    FREE_SLOT: { guard: 'slotExists', actions: 'freeSlot' },
    REMOVE_TASK: { guard: 'taskExists', actions: 'removeTask' },
    SLOT_TIMED_OUT: { actions: 'reportSlotTimedOut' },
    SLOT_RELEASE_TIMED_OUT: { actions: 'reportSlotReleaseTimedOut' },
    'xstate.done.actor.*': { actions: 'recordSlotClosed' },
  },
  states: {
    created: {
      // Flink: closing a table that never started takes it straight to CLOSED.
      on: { START: { target: 'running' }, CLOSE: { target: 'closed' } },
    },
    running: {
      on: {
        ALLOCATE_SLOT: [
          { guard: 'canAllocate', actions: 'allocateSlot' },
          // An identical repeat of an allocation is accepted and changes nothing (Flink: idempotent).
          { guard: 'isIdenticalAllocation' },
        ],
        MARK_SLOT_ACTIVE: { guard: 'slotExists', actions: 'markSlotActive' },
        MARK_SLOT_INACTIVE: { guard: 'slotExists', actions: 'markSlotInactive' },
        CLOSE: { target: 'closing' },
      },
    },
    closing: {
      entry: 'freeAllSlots',
      always: { guard: 'allSlotsClosed', target: 'closed' },
    },
    closed: { type: 'final' },
  },
});
