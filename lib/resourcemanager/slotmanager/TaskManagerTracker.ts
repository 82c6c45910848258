/**
 * TaskManagerTracker (Flink's FineGrainedTaskManagerTracker): the registered TaskExecutors
 * with their slot records by AllocationID, the pending workers (PendingTaskManagers), and the views
 * kept of the executors' capacity: the index that finds an executor for a requirement without
 * scanning (FreeResourceIndex), why none takes it (ShortageIndex), and the free sum
 * (FreeResourceSum). Every change of capacity goes through here, so records, views and totals move
 * in step.
 *
 * A slot is reserved by a plan (SlotReservation), then pending, allocated and free again; each step
 * of its record (slotRecords.ts) goes through the ResourceManager-side slot machine
 * (`resourceSlot.machine.ts`, its compiled transition table): an illegal step (Flink's
 * TaskManagerSlot precondition checks) throws an IllegalStateError and changes nothing.
 */
import type { Clock } from '../../core/clock.js';
import { IllegalArgumentError, IllegalStateError } from '../../core/errors.js';
import type { AllocationID, JobID, ResourceID } from '../../core/ids.js';
import { ResourceProfile } from '../../core/ResourceProfile.js';
import { FreeResourceIndex } from './FreeResourceIndex.js';
import { FreeResourceSum } from './FreeResourceSum.js';
import type { PendingTaskManager, PendingTaskManagerID } from './PendingTaskManager.js';
import { PendingTaskManagers } from './PendingTaskManagers.js';
import { ShortageIndex } from './ShortageIndex.js';
import { candidateOrder, type SlotMatchingPolicy } from './SlotMatchingStrategy.js';
import { completeSlot, dynamicSlotRecord, occupySlot, vacateSlot } from './slotRecords.js';
import { closeReservation, openReservations, type SlotReservation } from './SlotReservation.js';
import { TaskManagerRegistration, type ResourceSlotRecord, type TaskManagerInfo } from './TaskManagerRegistration.js';
import type {
  InsufficientResources,
  RankedTaskManagers,
  TaskManagerResourceInfoProvider,
} from './TaskManagerResourceInfoProvider.js';
import type { WorkerResourceSpec } from './WorkerResourceSpec.js';

/** Where a requirement would rather go; the index tries these first, then any executor. */
export interface PlacementPreference {
  readonly resourceId?: ResourceID;
  readonly host?: string;
}

export interface TaskManagerTrackerOptions {
  readonly policy: SlotMatchingPolicy;
  readonly clock: Clock;
  /** Told whenever an executor becomes idle (idleSince set) or busy again (null). */
  readonly onIdleChanged?: (taskManager: TaskManagerRegistration) => void;
}

export class TaskManagerTracker implements TaskManagerResourceInfoProvider<TaskManagerRegistration> {
  readonly policy: SlotMatchingPolicy;
  readonly #clock: Clock;
  readonly #onIdleChanged: (taskManager: TaskManagerRegistration) => void;
  readonly #taskManagers = new Map<ResourceID, TaskManagerRegistration>();
  readonly #slots = new Map<AllocationID, ResourceSlotRecord>();
  readonly #pending = new PendingTaskManagers();
  readonly #blocked = new Set<TaskManagerRegistration>();
  readonly #index: FreeResourceIndex<TaskManagerRegistration>;
  readonly #shortages: ShortageIndex;
  readonly #free: FreeResourceSum;
  #seq = 0;
  #registeredResource = ResourceProfile.ZERO;
  #registeredSlots = 0;

  constructor(options: TaskManagerTrackerOptions) {
    this.policy = options.policy;
    this.#clock = options.clock;
    this.#onIdleChanged = options.onIdleChanged ?? (() => {});
    this.#index = new FreeResourceIndex(candidateOrder(options.policy), () => this.#taskManagers.values());
    this.#shortages = new ShortageIndex(
      () => this.#taskManagers.values(),
      () => this.#blocked,
      (taskManager) => this.#taskManagers.get(taskManager.resourceId) === taskManager,
      () => this.#taskManagers.size,
    );
    this.#free = new FreeResourceSum(() => this.#taskManagers.values());
  }

  // ------------------------------------------------------------------ registered executors

  addTaskManager(info: TaskManagerInfo): TaskManagerRegistration {
    if (this.#taskManagers.has(info.resourceId)) {
      throw new IllegalStateError(`TaskExecutor ${info.resourceId} is already registered`, {
        component: 'TaskManagerTracker',
        operation: 'addTaskManager',
        state: 'registered',
        allowed: ['unregistered'],
      });
    }
    const taskManager = new TaskManagerRegistration(info, ++this.#seq, this.#clock.now());
    this.#taskManagers.set(info.resourceId, taskManager);
    this.#registeredResource = this.#registeredResource.merge(info.totalResourceProfile);
    this.#registeredSlots += info.numberOfStaticSlots;
    this.#free.count(taskManager, 1);
    this.#index.taskManagerChanged(taskManager);
    this.#shortages.taskManagerAdded(taskManager);
    // It arrives idle: whoever releases idle executors must hear of it like of any other.
    this.#onIdleChanged(taskManager);
    return taskManager;
  }

  /** Forgets an executor and every slot record it had (the caller frees them in the ResourceTracker first). */
  removeTaskManager(resourceId: ResourceID): TaskManagerRegistration {
    const taskManager = this.#require(resourceId);
    for (const slot of this.slotsOf(taskManager)) if (slot.allocationId !== null) this.#slots.delete(slot.allocationId);
    this.#taskManagers.delete(resourceId);
    if (!taskManager.blocked) this.#free.count(taskManager, -1);
    this.#blocked.delete(taskManager);
    this.#registeredResource = this.#registeredResource.subtract(taskManager.totalResourceProfile);
    this.#registeredSlots -= taskManager.numberOfStaticSlots;
    this.#index.taskManagerRemoved(taskManager);
    this.#shortages.taskManagerRemoved(taskManager);
    return taskManager;
  }

  getTaskManager(resourceId: ResourceID): TaskManagerRegistration | undefined {
    return this.#taskManagers.get(resourceId);
  }

  /** In registration order. */
  get taskManagers(): IterableIterator<TaskManagerRegistration> {
    return this.#taskManagers.values();
  }

  get numberOfTaskManagers(): number {
    return this.#taskManagers.size;
  }

  /** Sum of the registered executors' totals. */
  get registeredResource(): ResourceProfile {
    return this.#registeredResource;
  }

  /**
   * What the registered executors can still take (not pending, allocated or reserved), summed.
   * Blocked executors (being released, or in doubt after a refused request) count as having nothing.
   */
  get freeRegisteredResource(): ResourceProfile {
    return this.#free.sum;
  }

  /** Static slots of the registered executors. */
  get numberOfRegisteredSlots(): number {
    return this.#registeredSlots;
  }

  /** Blocks or unblocks an executor for new slots (see TaskManagerRegistration.blocked). */
  setBlocked(taskManager: TaskManagerRegistration, blocked: boolean): void {
    if (taskManager.blocked === blocked) return;
    taskManager.blocked = blocked;
    if (blocked) this.#blocked.add(taskManager);
    else this.#blocked.delete(taskManager);
    this.#free.count(taskManager, blocked ? -1 : 1);
    taskManager.version++;
    this.#index.taskManagerChanged(taskManager);
  }

  /** Every slot record of an executor that is not free, static ones first. */
  slotsOf(taskManager: TaskManagerRegistration): ResourceSlotRecord[] {
    return [...taskManager.staticSlots.filter((s) => s.state !== 'free'), ...taskManager.dynamicSlots.values()];
  }

  // ------------------------------------------------------------------ matching and reserving

  /**
   * The executor a requirement should go to under the cluster's policy: the preferred executor if
   * it fits, else the best on the preferred host, else the best anywhere. O(log n).
   */
  findTaskManager(requirement: ResourceProfile, preference?: PlacementPreference): TaskManagerRegistration | undefined {
    if (preference?.resourceId !== undefined) {
      const preferred = this.#taskManagers.get(preference.resourceId);
      if (preferred?.canFit(requirement)) return preferred;
    }
    if (preference?.host !== undefined) {
      const onHost = this.#index.best(requirement, preference.host);
      if (onHost !== undefined) return onHost;
    }
    return this.#index.best(requirement);
  }

  /**
   * Whether `taskManager`, just found by findTaskManager for `requirement` (with any preference)
   * and reserved on, is still what findTaskManager would answer: under first fit and pack, when it
   * still has room, since a reservation changes nothing else (first fit orders by registration;
   * pack by utilisation, which a reservation can only raise). Under spread it may no longer be the
   * least utilised. Lets a plan place a demand's slots without an index lookup per slot.
   */
  remainsBest(taskManager: TaskManagerRegistration, requirement: ResourceProfile): boolean {
    return this.policy !== 'spread' && taskManager.canFit(requirement);
  }

  /**
   * Why no executor takes `requirement` now: what `explainShortage(requirement, taskManagers)`
   * answers, kept up incrementally (ShortageIndex): O(log n) per executor changed since the last
   * call, when no unblocked executor can take it.
   */
  explainShortage(requirement: ResourceProfile, limit?: number): InsufficientResources {
    return this.#shortages.explain(requirement, limit);
  }

  /** Departed executors the shortage explanations still reference (bounded; for leak checks). */
  get departedHeldByShortages(): number {
    return this.#shortages.departedHeld;
  }

  /**
   * The unblocked executors that can take `requirement` now, best first under the policy, read lazily (a plan's view).
   */
  rankedTaskManagers(requirement: ResourceProfile, host?: string): RankedTaskManagers<TaskManagerRegistration> {
    return this.#index.ranked(requirement, host ?? null);
  }

  /** Every executor that can take `requirement` now (O(candidates); for explanations). */
  candidatesFor(requirement: ResourceProfile): ReadonlySet<TaskManagerRegistration> {
    return this.#index.candidates(requirement);
  }

  /** Sets capacity aside on `taskManager` for one slot of `jobId`; a static slot when the profile is its default. */
  reserve(taskManager: TaskManagerRegistration, requirement: ResourceProfile, jobId: JobID): SlotReservation {
    return this.reserveRun(taskManager, requirement, jobId, 1)[0]!;
  }

  /**
   * `count` reservations as `count` reserve calls would make them (static slots lowest index
   * first), with capacity taken once: a plan puts runs of slots on one executor, and taking them
   * one by one was most of applying it. All or nothing: throws, changing nothing, if they do not fit.
   */
  reserveRun(
    taskManager: TaskManagerRegistration,
    requirement: ResourceProfile,
    jobId: JobID,
    count: number,
  ): SlotReservation[] {
    const profile = taskManager.effectiveProfile(requirement);
    const reservations = openReservations(taskManager, requirement, profile, jobId, count);
    this.#take(taskManager, profile, count);
    return reservations;
  }

  /** Undoes a reservation that will not be used. */
  cancelReservation(reservation: SlotReservation): void {
    closeReservation(reservation, true, 'endReservation'); // throws, changing nothing, if it was used already
    this.#giveBack(reservation.taskManager, reservation.profile);
  }

  // ------------------------------------------------------------------ slot records (the syncer's side)

  /** A reservation becomes a pending slot under `allocationId` (free → pending). */
  assignPending(reservation: SlotReservation, allocationId: AllocationID, tracked: boolean): ResourceSlotRecord {
    if (this.#slots.has(allocationId)) throw this.#duplicate(allocationId);
    closeReservation(reservation, false, 'assignPending'); // throws, changing nothing, if it was used already
    const { taskManager } = reservation;
    const slot = reservation.staticSlot ?? dynamicSlotRecord(taskManager, reservation.profile, tracked);
    occupySlot(slot, 'ASSIGN_PENDING', allocationId, reservation.jobId, tracked);
    this.#slots.set(allocationId, slot);
    this.#updateIdle(taskManager);
    return slot;
  }

  /**
   * The executor acknowledged or reported the allocation (pending → allocated). `known`: its record, when the caller
   * holds it.
   */
  completeAllocation(allocationId: AllocationID, known?: ResourceSlotRecord): ResourceSlotRecord {
    const slot = this.#requireSlot(allocationId, known);
    completeSlot(slot);
    return slot;
  }

  /**
   * A slot report shows an allocation the SlotManager did not know of (free → allocated). A static
   * index is used when it is free and the profile is the default; otherwise a dynamic record.
   */
  adopt(
    taskManager: TaskManagerRegistration,
    allocation: { index: number; allocationId: AllocationID; jobId: JobID; profile: ResourceProfile },
    tracked = true,
  ): ResourceSlotRecord {
    if (!(allocation.profile instanceof ResourceProfile) || allocation.profile.kind !== 'specified') {
      throw new IllegalArgumentError(
        'invalid-value',
        `a reported allocation needs a specified profile, got ${String(allocation.profile)}`,
        { argument: 'profile' },
      );
    }
    if (this.#slots.has(allocation.allocationId)) throw this.#duplicate(allocation.allocationId);
    const candidate = taskManager.staticSlots[allocation.index];
    const useStatic =
      candidate !== undefined &&
      candidate.state === 'free' &&
      !candidate.reserved &&
      candidate.profile.equals(allocation.profile);
    const slot = useStatic ? candidate : dynamicSlotRecord(taskManager, allocation.profile, tracked);
    occupySlot(slot, 'ADOPT', allocation.allocationId, allocation.jobId, tracked);
    if (useStatic) taskManager.freeStaticSlots--;
    this.#slots.set(allocation.allocationId, slot);
    this.#take(taskManager, slot.profile);
    return slot;
  }

  /**
   * The slot is free again (pending or allocated → free): refused, timed out, released by its job,
   * reported free, or its executor was lost. A static record stays, free; a dynamic one goes.
   * `known`: its record, when the caller holds it.
   */
  free(
    allocationId: AllocationID,
    event: 'FREE' | 'FAIL_ALLOCATION' = 'FREE',
    known?: ResourceSlotRecord,
  ): ResourceSlotRecord {
    const slot = this.#requireSlot(allocationId, known);
    const freed = vacateSlot(slot, event);
    this.#slots.delete(allocationId);
    this.#giveBack(slot.taskManager, slot.profile);
    return freed;
  }

  getSlot(allocationId: AllocationID): ResourceSlotRecord | undefined {
    return this.#slots.get(allocationId);
  }

  /** Every pending or allocated slot, in no particular order. */
  get slots(): IterableIterator<ResourceSlotRecord> {
    return this.#slots.values();
  }

  get numberOfOccupiedSlots(): number {
    return this.#slots.size;
  }

  // ------------------------------------------------------------------ pending workers (PendingTaskManagers)

  addPendingTaskManager(spec: WorkerResourceSpec): PendingTaskManager {
    return this.#pending.add(spec, this.#clock.now());
  }

  removePendingTaskManager(id: PendingTaskManagerID): PendingTaskManager {
    return this.#pending.remove(id);
  }

  getPendingTaskManager(id: PendingTaskManagerID): PendingTaskManager | undefined {
    return this.#pending.get(id);
  }

  /** In the order they were asked for. */
  get pendingTaskManagers(): IterableIterator<PendingTaskManager> {
    return this.#pending.values();
  }

  get numberOfPendingTaskManagers(): number {
    return this.#pending.size;
  }

  /** Sum of the pending workers' totals. */
  get pendingResource(): ResourceProfile {
    return this.#pending.totalResource;
  }

  get numberOfPendingSlots(): number {
    return this.#pending.numberOfSlots;
  }

  /** The pending worker a registering executor of this shape replaces (PendingTaskManagers.findMatching). */
  findMatchingPendingTaskManager(
    total: ResourceProfile,
    defaultSlot: ResourceProfile,
    preferredId?: PendingTaskManagerID,
  ): PendingTaskManager | undefined {
    return this.#pending.findMatching(total, defaultSlot, preferredId);
  }

  /** Forgets every executor, slot record and pending worker (the SlotManager suspended). */
  clear(): void {
    for (const slot of [...this.#slots.values()]) this.free(slot.allocationId!);
    for (const taskManager of [...this.#taskManagers.values()]) this.removeTaskManager(taskManager.resourceId);
    this.#pending.clear();
  }

  // ------------------------------------------------------------------ internals

  #take(taskManager: TaskManagerRegistration, profile: ResourceProfile, count = 1): void {
    if (!taskManager.blocked) this.#free.count(taskManager, -1);
    taskManager.take(profile, count);
    if (!taskManager.blocked) this.#free.count(taskManager, 1);
    this.#updateIdle(taskManager);
    this.#index.taskManagerChanged(taskManager);
    this.#shortages.taskManagerChanged(taskManager);
  }

  #giveBack(taskManager: TaskManagerRegistration, profile: ResourceProfile): void {
    if (!taskManager.blocked) this.#free.count(taskManager, -1);
    taskManager.giveBack(profile);
    if (!taskManager.blocked) this.#free.count(taskManager, 1);
    this.#updateIdle(taskManager);
    this.#index.taskManagerChanged(taskManager);
    this.#shortages.taskManagerChanged(taskManager);
  }

  #updateIdle(taskManager: TaskManagerRegistration): void {
    const idle = taskManager.occupiedSlots === 0 && taskManager.reservations === 0;
    if (idle === (taskManager.idleSince !== null)) return;
    taskManager.idleSince = idle ? this.#clock.now() : null;
    this.#onIdleChanged(taskManager);
  }

  #require(resourceId: ResourceID): TaskManagerRegistration {
    const taskManager = this.#taskManagers.get(resourceId);
    if (taskManager === undefined)
      throw new IllegalArgumentError('invalid-value', `TaskExecutor ${resourceId} is not registered`, {
        argument: 'resourceId',
        value: resourceId,
      });
    return taskManager;
  }

  /**
   * The record of `allocationId`. `known`: the record the caller just looked up or holds for it (the
   * syncer, on every answer and free): no second lookup in a Map of every allocation then, as long
   * as it still carries the AllocationID.
   */
  #requireSlot(allocationId: AllocationID, known?: ResourceSlotRecord): ResourceSlotRecord {
    if (known !== undefined && known.allocationId === allocationId) return known;
    const slot = this.#slots.get(allocationId);
    if (slot === undefined)
      throw new IllegalArgumentError('invalid-value', `no slot with allocation ${allocationId}`, {
        argument: 'allocationId',
        value: allocationId,
      });
    return slot;
  }

  #duplicate(allocationId: AllocationID): IllegalStateError {
    return new IllegalStateError(`allocation ${allocationId} is already held by another slot`, {
      component: 'TaskManagerTracker',
      operation: 'allocate',
      state: 'duplicate',
      allowed: ['unknown allocation'],
    });
  }
}
