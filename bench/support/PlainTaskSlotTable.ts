/**
 * A baseline for bench/taskSlotTable.bench.ts, NOT used by the runtime: the bookkeeping of Flink's
 * TaskSlotTableImpl on plain Maps and records, so the benchmark can show what the actors cost.
 *
 * Same ledger as the real TaskSlotTable (slots by index, AllocationID → slot, ExecutionAttemptID →
 * slot, JobID → AllocationIDs, an immutable ResourceBudgetManager, a MemoryManager per slot created
 * and shut down like the real one) and the same refusals in Flink's order: index out of range or
 * taken, duplicate / conflicting AllocationID, budget, addTask only on an active slot of the same
 * job and allocation, never the same ExecutionAttemptID twice.
 *
 * Left out on purpose: timers (the actor table arms and cancels a slot-timeout timer per
 * allocation), argument validation, typed errors (refusals throw a plain Error), notifications, and
 * asynchrony (a freed slot is gone at once; the actor slot finishes closing on a later microtask).
 */
import { ResourceBudgetManager } from '../../lib/core/ResourceBudgetManager.js';
import type { ResourceProfile } from '../../lib/core/ResourceProfile.js';
import type { AllocationID, ExecutionAttemptID, JobID } from '../../lib/core/ids.js';
import { MemoryManager } from '../../lib/taskexecutor/MemoryManager.js';
import type { SlotAllocationRequest, TaskSlotPayload } from '../../lib/taskexecutor/TaskSlotTable.js';

export type PlainSlotState = 'allocated' | 'active' | 'releasing';

export interface PlainTaskSlot {
  readonly index: number;
  readonly allocationId: AllocationID;
  readonly jobId: JobID;
  readonly resourceProfile: ResourceProfile;
  readonly memoryManager: MemoryManager;
  state: PlainSlotState;
  readonly tasks: Map<ExecutionAttemptID, TaskSlotPayload>;
}

export class PlainTaskSlotTable {
  readonly #slots = new Map<number, PlainTaskSlot>();
  readonly #allocations = new Map<AllocationID, PlainTaskSlot>();
  readonly #taskSlots = new Map<ExecutionAttemptID, PlainTaskSlot>();
  readonly #slotsPerJob = new Map<JobID, Set<AllocationID>>();
  #budget: ResourceBudgetManager;

  constructor(
    total: ResourceProfile,
    readonly numberSlots: number,
    readonly defaultSlotProfile: ResourceProfile,
    readonly pageSize: number,
  ) {
    this.#budget = new ResourceBudgetManager(total);
  }

  /** Slots in the ledger. */
  get size(): number {
    return this.#slots.size;
  }

  /** True when allocated, false for an identical repeat; throws on every refusal, changing nothing. */
  allocateSlot(request: SlotAllocationRequest): boolean {
    if (request.index >= this.numberSlots) throw new Error(`index-out-of-range: ${request.index}`);
    const dynamic = request.index < 0;
    let index = request.index;
    if (dynamic) for (index = this.numberSlots; this.#slots.has(index); index++);
    const profile = request.resourceProfile.isUnknown() ? this.defaultSlotProfile : request.resourceProfile;
    const existing = this.#allocations.get(request.allocationId);
    if (existing !== undefined) {
      if (
        existing.jobId === request.jobId &&
        existing.resourceProfile.equals(profile) &&
        (dynamic || existing.index === index)
      )
        return false;
      throw new Error(`allocation-conflict: ${request.allocationId}`);
    }
    if (this.#slots.has(index)) throw new Error(`index-taken: ${index}`);
    if (!this.#budget.canReserve(profile)) throw new Error(`insufficient-resources: ${profile}`);
    this.#budget = this.#budget.reserve(profile);
    const slot: PlainTaskSlot = {
      index,
      allocationId: request.allocationId,
      jobId: request.jobId,
      resourceProfile: profile,
      memoryManager: MemoryManager.create(profile.managedMemory, this.pageSize),
      state: 'allocated',
      tasks: new Map(),
    };
    this.#slots.set(index, slot);
    this.#allocations.set(request.allocationId, slot);
    let job = this.#slotsPerJob.get(request.jobId);
    if (job === undefined) this.#slotsPerJob.set(request.jobId, (job = new Set()));
    job.add(request.allocationId);
    return true;
  }

  /** allocated → active; false if the slot is releasing. */
  markSlotActive(allocationId: AllocationID): boolean {
    const slot = this.#slot(allocationId);
    if (slot.state === 'releasing') return false;
    slot.state = 'active';
    return true;
  }

  addTask(task: TaskSlotPayload): void {
    const slot = this.#allocations.get(task.allocationId);
    if (slot === undefined) throw new Error(`slot-not-found: ${task.allocationId}`);
    if (slot.state !== 'active') throw new Error(slot.state === 'allocated' ? 'slot-allocated' : 'slot-releasing');
    if (task.jobId !== slot.jobId) throw new Error(`job-mismatch: ${task.jobId}`);
    if (this.#taskSlots.has(task.executionAttemptId))
      throw new Error(`duplicate-execution-attempt: ${task.executionAttemptId}`);
    slot.tasks.set(task.executionAttemptId, task);
    this.#taskSlots.set(task.executionAttemptId, slot);
  }

  /** Removes a task; a releasing slot leaves the ledger with its last task (Flink's removeTask → freeSlot). */
  removeTask(executionAttemptId: ExecutionAttemptID): TaskSlotPayload {
    const slot = this.#taskSlots.get(executionAttemptId);
    const task = slot?.tasks.get(executionAttemptId);
    if (slot === undefined || task === undefined) throw new Error(`task-not-found: ${executionAttemptId}`);
    slot.tasks.delete(executionAttemptId);
    this.#taskSlots.delete(executionAttemptId);
    if (slot.state === 'releasing' && slot.tasks.size === 0) this.#remove(slot);
    return task;
  }

  /** An empty slot leaves at once; a slot with tasks fails them and leaves with its last one. */
  freeSlot(
    allocationId: AllocationID,
    cause: unknown = new Error(`slot ${allocationId} was freed`),
  ): 'freed' | 'releasing' {
    const slot = this.#slot(allocationId);
    if (slot.tasks.size === 0) {
      this.#remove(slot);
      return 'freed';
    }
    if (slot.state !== 'releasing') {
      slot.state = 'releasing';
      for (const task of slot.tasks.values()) task.failExternally(cause);
    }
    return 'releasing';
  }

  #slot(allocationId: AllocationID): PlainTaskSlot {
    const slot = this.#allocations.get(allocationId);
    if (slot === undefined) throw new Error(`slot-not-found: ${allocationId}`);
    return slot;
  }

  #remove(slot: PlainTaskSlot): void {
    this.#slots.delete(slot.index);
    this.#allocations.delete(slot.allocationId);
    const job = this.#slotsPerJob.get(slot.jobId)!;
    job.delete(slot.allocationId);
    if (job.size === 0) this.#slotsPerJob.delete(slot.jobId);
    this.#budget = this.#budget.release(slot.resourceProfile);
    slot.memoryManager.shutdown();
  }
}
