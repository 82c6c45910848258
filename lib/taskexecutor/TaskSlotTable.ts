/**
 * TaskSlotTable: the TaskExecutor's slots (Flink's TaskSlotTableImpl) as a running XState
 * actor with a synchronous, validated API in front of it.
 *
 * Each call checks its arguments and the table's state, asks the machine's own decision functions
 * whether the operation is allowed, and either throws the typed error that names the reason (the
 * table unchanged) or sends the event. A task is added straight to its TaskSlot actor (the table
 * machine has no event for it: a task changes no table-wide record), and removed there too unless
 * its slot is releasing, when the table's REMOVE_TASK decides whether the slot leaves with it; the
 * tasks of one call go to each slot as one event (taskSlotTableTasks). Argument checks live in
 * taskSlotTableChecks, the verdicts' typed errors in taskSlotTableRefusals, the slot views and the
 * slot report in TaskSlotInfo, the options, their defaults and SlotActions in TaskSlotTableOptions.
 * Like Flink's, the table is single-threaded: call it from one mailbox only (the TaskExecutor's).
 * Notifications for the TaskExecutor (a slot timed out, a slot was freed, a releasing slot's tasks
 * are stuck) are delivered through `slotActions`, on the `executor` (a microtask by default), never
 * while the table is in the middle of an event.
 */
import { createActor, type Actor } from 'xstate';
import type { DurationInput } from '../core/Duration.js';
import { IllegalStateError, SlotNotFoundError, TaskNotFoundError } from '../core/errors.js';
import { AllocationID, type ExecutionAttemptID, type JobID, type ResourceID } from '../core/ids.js';
import { ResourceBudgetManager } from '../core/ResourceBudgetManager.js';
import type { ResourceProfile } from '../core/ResourceProfile.js';
import type { SlotReport } from '../core/SlotReport.js';
import { currentTicket, type TaskSlotOutput, type TaskSlotPayload } from '../../machines/taskSlot.machine.js';
import {
  decideAllocation,
  slotOf,
  slotOfTask,
  slotState,
  taskSlotTableMachine,
  type SlotAllocationRequest,
  type TaskSlotRef,
  type TaskSlotTableContext,
  type TaskSlotTableStateName,
} from '../../machines/taskSlotTable.machine.js';
import { MemoryManager } from './MemoryManager.js';
import { slotReportOf, taskSlotInfo, type TaskSlotInfo } from './TaskSlotInfo.js';
import { resolveTaskSlotTableOptions, type FreeSlotResult, type TaskSlotTableOptions } from './TaskSlotTableOptions.js';
import { checkAllocationRequest, describeId, duration, illegal } from './taskSlotTableChecks.js';
import { allocationRefusalError } from './taskSlotTableRefusals.js';
import { addTasksToSlots, refusalsOfTasks, removeTasksFromSlots } from './taskSlotTableTasks.js';

export type { SlotAllocationRequest, TaskSlotInfo, TaskSlotOutput, TaskSlotPayload };
export type { FreeSlotResult, SlotActions, TaskSlotTableOptions } from './TaskSlotTableOptions.js';

const COMPONENT = 'TaskSlotTable';

export class TaskSlotTable {
  readonly numberSlots: number;
  readonly totalResourceProfile: ResourceProfile;
  readonly defaultSlotResourceProfile: ResourceProfile;
  readonly slotTimeout: number;
  readonly #actor: Actor<typeof taskSlotTableMachine>;
  readonly #closings = new Map<string, Promise<TaskSlotOutput>>();
  #closed: Promise<void> | undefined;

  constructor(options: TaskSlotTableOptions) {
    const {
      numberSlots,
      defaultSlotResourceProfile: defaultSlot,
      slotTimeout,
      releaseTimeout,
      pageSize,
    } = resolveTaskSlotTableOptions(options);
    this.numberSlots = numberSlots;
    this.totalResourceProfile = options.totalResourceProfile;
    this.defaultSlotResourceProfile = defaultSlot;
    this.slotTimeout = slotTimeout;
    const execute = options.executor ?? queueMicrotask;
    const actions = options.slotActions;
    this.#actor = createActor(taskSlotTableMachine, {
      ...(options.clock ? { clock: options.clock } : {}),
      ...(options.inspect ? { inspect: options.inspect } : {}),
      input: {
        numberSlots,
        budget: new ResourceBudgetManager(options.totalResourceProfile),
        defaultSlotProfile: defaultSlot,
        slotTimeout,
        releaseTimeout,
        createMemoryManager: (profile) => MemoryManager.create(profile.managedMemory, pageSize),
      },
    });
    this.#actor.on('slotTimedOut', (e) => execute(() => actions?.timeoutSlot(e.allocationId, e.ticket)));
    this.#actor.on('slotFreed', (e) => execute(() => actions?.slotFreed?.(e.allocationId, e.jobId, e.index)));
    this.#actor.on('slotReleaseTimedOut', (e) =>
      execute(() => actions?.releaseTimedOut?.(e.allocationId, e.executionAttemptIds)),
    );
    this.#actor.on('slotClosed', (e) => execute(() => actions?.slotClosed?.(e.output)));
    this.#actor.start();
  }

  /** The running actor, for inspection (`actor.subscribe`, the Stately inspector). Do not send to it. */
  get actor(): Actor<typeof taskSlotTableMachine> {
    return this.#actor;
  }

  get state(): TaskSlotTableStateName {
    return this.#actor.getSnapshot().value as TaskSlotTableStateName;
  }

  /** What is left of the TaskExecutor's resources for new slots. */
  get availableResources(): ResourceProfile {
    return this.#context.budget.available;
  }

  /** created → running. */
  start(): void {
    this.#requireState('start', ['created']);
    this.#actor.send({ type: 'START' });
  }

  /**
   * Allocates a slot for a job (Flink's allocateSlot). A negative index asks for a dynamic slot;
   * UNKNOWN asks for the default slot profile. Returns true when a slot was allocated, false when
   * this was an identical repeat of an existing allocation (accepted, nothing changed). Refusals
   * (index out of range or taken, the AllocationID held with other terms, resources short) throw
   * SlotAllocationError and change nothing. The slot starts `allocated`; unless it is activated
   * within `slotTimeout` the table reports it through `slotActions.timeoutSlot`.
   */
  allocateSlot(request: SlotAllocationRequest): boolean {
    this.#requireState('allocateSlot', ['running']);
    checkAllocationRequest(request);
    const verdict = decideAllocation(this.#context, request);
    switch (verdict.kind) {
      case 'duplicate':
        return false;
      case 'allocate':
        this.#actor.send({ type: 'ALLOCATE_SLOT', ...request });
        return true;
      case 'refuse':
        throw allocationRefusalError(request, verdict);
    }
  }

  /**
   * allocated → active (Flink's markSlotActive): cancels the slot timeout. False if the slot is
   * releasing. A slot already active stays so and no event is sent (a TaskExecutor marks the slot
   * active for every task it is given). The slot hears MARK_ACTIVE straight, as the table's own
   * MARK_SLOT_ACTIVE would only forward it there once the table holds the slot (checked here): one
   * statechart step per job fewer on the TaskExecutor's thread.
   */
  markSlotActive(allocationId: AllocationID): boolean {
    this.#requireState('markSlotActive', ['running']);
    const slot = this.#slot('markSlotActive', allocationId);
    const state = slotState(slot);
    if (state === 'active') return true;
    if (state !== 'allocated') return false;
    slot.send({ type: 'MARK_ACTIVE' });
    return slotState(slot) === 'active';
  }

  /** active → allocated (Flink's markSlotInactive): the slot timeout starts again. False if the slot is releasing. */
  markSlotInactive(allocationId: AllocationID, slotTimeout?: DurationInput): boolean {
    this.#requireState('markSlotInactive', ['running']);
    const slot = this.#slot('markSlotInactive', allocationId);
    const timeout = slotTimeout === undefined ? undefined : duration('slotTimeout', slotTimeout, this.slotTimeout);
    if (slotState(slot) === 'releasing') return false;
    this.#actor.send({
      type: 'MARK_SLOT_INACTIVE',
      allocationId,
      ...(timeout === undefined ? {} : { slotTimeout: timeout }),
    });
    return true;
  }

  /**
   * Frees a slot (Flink's freeSlot). An empty slot leaves the table at once and its resources
   * return; a slot with tasks goes to releasing, its tasks are failed with `cause`, and it leaves
   * when its last task is removed. Either way `closed` settles when the slot's memory is shut down;
   * freeing a releasing slot again returns the same `closed`.
   */
  freeSlot(allocationId: AllocationID, cause?: unknown): FreeSlotResult {
    this.#requireState('freeSlot', ['running', 'closing']);
    const slot = this.#slot('freeSlot', allocationId);
    const index = slot.getSnapshot().context.index;
    const closed = this.#closingOf(slot);
    // The cause reaches only the tasks still running; build a default one only when there are some.
    const hasTasks = slot.getSnapshot().context.tasks.size > 0;
    this.#actor.send({
      type: 'FREE_SLOT',
      allocationId,
      cause: cause ?? (hasTasks ? new Error(`slot ${AllocationID.short(allocationId)} was freed`) : undefined),
    });
    return { index, state: slotOf(this.#context, allocationId) === slot ? 'releasing' : 'freed', closed };
  }

  /**
   * Adds a task to its slot (Flink's addTask): the slot must exist and be active, for the task's
   * job, and the ExecutionAttemptID must be new to the table. Each refusal has its own error.
   */
  addTask(task: TaskSlotPayload): void {
    this.#requireState('addTask', ['running']);
    const [error] = addTasksToSlots(this.#context, [task]);
    if (error !== undefined) throw error;
  }

  /**
   * Adds several tasks as {@link addTask} would add each in turn, with one event per slot instead
   * of one per task (a TaskExecutor's submissions of one turn). Returns, per task in order, the
   * error that refused it (what addTask would throw) or undefined when it was added; a refused task
   * changes nothing and does not stop the others.
   */
  addTasks(tasks: readonly TaskSlotPayload[]): Array<Error | undefined> {
    this.#requireState('addTasks', ['running']);
    if (!Array.isArray(tasks)) throw illegal('tasks', 'invalid-type', 'must be an array of tasks');
    return addTasksToSlots(this.#context, tasks);
  }

  /**
   * What {@link addTasks} would answer for these tasks, with nothing added: a TaskExecutor accepts a
   * submission at once and puts its task in the slot later (RunningTasks).
   */
  checkTasks(tasks: readonly TaskSlotPayload[]): Array<Error | undefined> {
    this.#requireState('checkTasks', ['running']);
    if (!Array.isArray(tasks)) throw illegal('tasks', 'invalid-type', 'must be an array of tasks');
    return refusalsOfTasks(this.#context, tasks);
  }

  /**
   * Removes a terminated task (Flink's removeTask) and returns it. If its slot is releasing and
   * this was its last task, the slot leaves the table.
   */
  removeTask(executionAttemptId: ExecutionAttemptID): TaskSlotPayload {
    this.#requireState('removeTask', ['running', 'closing']);
    const [task] = removeTasksFromSlots(this.#actor, [executionAttemptId]);
    if (task === undefined) {
      throw new TaskNotFoundError(`no task ${describeId(executionAttemptId)} in this table`, {
        executionAttemptId: String(executionAttemptId),
      });
    }
    return task;
  }

  /**
   * Removes the task if the table still holds it, in one lookup; otherwise (already removed, or the
   * table closed) does nothing and returns undefined. What a TaskExecutor does when a task ends.
   */
  removeTaskIfPresent(executionAttemptId: ExecutionAttemptID): TaskSlotPayload | undefined {
    return this.removeTasksIfPresent([executionAttemptId])[0];
  }

  /**
   * Removes the tasks the table still holds, as {@link removeTaskIfPresent} would one by one, with
   * one event per slot (the tasks that ended in one turn); returns each removed task, or undefined
   * for an ID the table did not hold. A releasing slot's tasks go one by one: the table decides
   * when such a slot leaves the ledger.
   */
  removeTasksIfPresent(executionAttemptIds: readonly ExecutionAttemptID[]): Array<TaskSlotPayload | undefined> {
    const state = this.state;
    if (state !== 'running' && state !== 'closing') return executionAttemptIds.map(() => undefined);
    return removeTasksFromSlots(this.#actor, executionAttemptIds);
  }

  /** Whether a reported slot timeout is still current: the slot is still allocated and not re-registered since. */
  isValidTimeout(allocationId: AllocationID, ticket: string): boolean {
    const slot = slotOf(this.#context, allocationId);
    return (
      slot !== undefined && slotState(slot) === 'allocated' && currentTicket(slot.getSnapshot().context) === ticket
    );
  }

  // ------------------------------------------------------------------------------ lookups

  getTaskSlot(allocationId: AllocationID): TaskSlotInfo | undefined {
    const slot = slotOf(this.#context, allocationId);
    return slot === undefined ? undefined : taskSlotInfo(slot);
  }

  /** Every slot in the table, by index. */
  getTaskSlots(): TaskSlotInfo[] {
    return Object.values(this.#context.slots)
      .map(taskSlotInfo)
      .sort((a, b) => a.index - b.index);
  }

  /** The slot's MemoryManager, for a task being submitted to it (Flink's getTaskMemoryManager). */
  getTaskMemoryManager(allocationId: AllocationID): MemoryManager {
    return this.#slot('getTaskMemoryManager', allocationId).getSnapshot().context.memoryManager as MemoryManager;
  }

  getTask(executionAttemptId: ExecutionAttemptID): TaskSlotPayload | undefined {
    return slotOfTask(this.#context, executionAttemptId)?.getSnapshot().context.tasks.get(executionAttemptId);
  }

  /** The AllocationID of the slot a task runs in. */
  getSlotOfTask(executionAttemptId: ExecutionAttemptID): AllocationID | undefined {
    return slotOfTask(this.#context, executionAttemptId)?.getSnapshot().context.allocationId;
  }

  /** Every task of a job in this table. */
  getTasks(jobId: JobID): TaskSlotPayload[] {
    return this.getAllocationIdsPerJob(jobId).flatMap((id) =>
      slotOf(this.#context, id)!.getSnapshot().context.tasks.values(),
    );
  }

  getAllocationIdsPerJob(jobId: JobID): AllocationID[] {
    return [...(this.#context.slotsPerJob[jobId] ?? [])];
  }

  /** The active slots of a job. */
  getActiveSlots(jobId: JobID): AllocationID[] {
    return this.getAllocationIdsPerJob(jobId).filter((id) => slotState(slotOf(this.#context, id)!) === 'active');
  }

  getOwningJob(allocationId: AllocationID): JobID | undefined {
    return slotOf(this.#context, allocationId)?.getSnapshot().context.jobId;
  }

  /** Whether `index` holds a slot allocated to this job under this AllocationID (Flink's isAllocated). */
  isAllocated(index: number, jobId: JobID, allocationId: AllocationID): boolean {
    const slot = this.#context.slots[index];
    const c = slot?.getSnapshot().context;
    return c !== undefined && c.jobId === jobId && c.allocationId === allocationId && slotState(slot!) !== 'releasing';
  }

  isSlotFree(index: number): boolean {
    return this.#context.slots[index] === undefined;
  }

  hasAllocatedSlots(jobId: JobID): boolean {
    return (this.#context.slotsPerJob[jobId]?.length ?? 0) > 0;
  }

  /** Every static slot (free ones with the default profile) and every live dynamic slot. */
  createSlotReport(resourceId: ResourceID): SlotReport {
    return slotReportOf(this.#context, resourceId, this.defaultSlotResourceProfile);
  }

  /**
   * Closes the table: every slot is freed (tasks failed with `cause`), and the returned promise
   * settles when every slot has closed. Calling it again returns the same promise.
   */
  closeAsync(cause?: unknown): Promise<void> {
    if (this.#closed !== undefined) return this.#closed;
    const slots = Object.values(this.#context.slots);
    const closings = slots.map((slot) => this.#closingOf(slot));
    this.#closed = new Promise<void>((resolve, reject) => {
      const settle = () => (this.#actor.getSnapshot().status === 'done' ? resolve() : undefined);
      this.#actor.subscribe({ complete: resolve, error: reject });
      this.#actor.send({ type: 'CLOSE', cause: cause ?? new Error('the TaskSlotTable is closing') });
      settle();
    });
    void Promise.allSettled(closings);
    return this.#closed;
  }

  /** A plain picture of the table, for logs, tests and the demo. */
  describe(): {
    state: TaskSlotTableStateName;
    available: string;
    slots: Array<Omit<TaskSlotInfo, 'memoryManager' | 'resourceProfile'> & { resourceProfile: string }>;
  } {
    return {
      state: this.state,
      available: this.availableResources.toString(),
      slots: this.getTaskSlots().map(({ memoryManager: _, resourceProfile, ...rest }) => ({
        ...rest,
        resourceProfile: resourceProfile.toString(),
      })),
    };
  }

  // ------------------------------------------------------------------------------ internals

  get #context(): TaskSlotTableContext {
    return this.#actor.getSnapshot().context;
  }

  #requireState(operation: string, allowed: readonly TaskSlotTableStateName[]): void {
    const state = this.state;
    if (!allowed.includes(state)) {
      throw new IllegalStateError(
        `${COMPONENT}.${operation} is not allowed while the table is ${state} (allowed: ${allowed.join(', ')})`,
        {
          component: COMPONENT,
          operation,
          state,
          allowed,
        },
      );
    }
  }

  #slot(operation: string, allocationId: AllocationID): TaskSlotRef {
    if (!AllocationID.is(allocationId))
      throw illegal(
        'allocationId',
        'invalid-value',
        `must be an AllocationID (32 hex characters), got ${describeId(allocationId)}`,
      );
    const slot = slotOf(this.#context, allocationId);
    if (slot === undefined) {
      throw new SlotNotFoundError(
        `${COMPONENT}.${operation}: no slot with allocation ${AllocationID.short(allocationId)} in this table`,
        { allocationId },
      );
    }
    return slot;
  }

  /** The slot's closing completion, shared by every caller (Flink's closingFuture). */
  #closingOf(slot: TaskSlotRef): Promise<TaskSlotOutput> {
    let closing = this.#closings.get(slot.id);
    if (closing === undefined) {
      closing = new Promise<TaskSlotOutput>((resolve, reject) => {
        slot.subscribe({
          complete: () => {
            this.#closings.delete(slot.id);
            resolve(slot.getSnapshot().output!);
          },
          error: reject,
        });
      });
      this.#closings.set(slot.id, closing);
    }
    return closing;
  }
}
