/**
 * Logical slots for subtasks out of shared physical slots (Flink's
 * SlotSharingExecutionSlotAllocator). One SharedSlot per ExecutionSlotSharingGroup, created on the
 * first request of any member and reused by the others; one physical request per SharedSlot with
 * the group's profile; one logical slot per subtask. A SharedSlot whose physical request failed,
 * or whose last logical slot went back, is forgotten: a later request for the group asks anew.
 *
 * `allocateSlotsFor` follows Flink's steps: group the subtasks, get or request each group's
 * SharedSlot, take a logical slot per subtask, then hand the physical requests of the call to the
 * bulk checker as one bulk.
 */
import { DEFAULTS } from '../../core/options.js';
import { IllegalArgumentError, SlotRequestError } from '../../core/errors.js';
import type { AllocationID, JobID } from '../../core/ids.js';
import { ExecutionVertexID } from '../ExecutionGraph.js';
import type { PhysicalSlotRequestBulkChecker } from './PhysicalSlotRequestBulkChecker.js';
import { SharedSlot, type LogicalSlot, type LogicalSlotListener, type PhysicalSlotProvider } from './SharedSlot.js';
import { type BulkEntry, SharingPhysicalSlotRequestBulk } from './SharingPhysicalSlotRequestBulk.js';
import type { ExecutionSlotSharingGroup, SlotSharingStrategy } from './SlotSharingStrategy.js';

export interface SlotSharingExecutionSlotAllocatorOptions {
  readonly jobId: JobID;
  /** Which group each subtask belongs to. */
  readonly strategy: Pick<SlotSharingStrategy, 'getExecutionSlotSharingGroup'>;
  readonly provider: PhysicalSlotProvider;
  /** Fails bulks not fulfilled within `allocationTimeoutMs`; without one, requests wait forever. */
  readonly bulkChecker?: PhysicalSlotRequestBulkChecker;
  /** `slot.request.timeout`; default 5 min. */
  readonly allocationTimeoutMs?: number;
}

export class SlotSharingExecutionSlotAllocator {
  readonly #jobId: JobID;
  readonly #strategy: Pick<SlotSharingStrategy, 'getExecutionSlotSharingGroup'>;
  readonly #provider: PhysicalSlotProvider;
  readonly #bulkChecker: PhysicalSlotRequestBulkChecker | undefined;
  readonly #timeoutMs: number;
  /** Group id -> its live SharedSlot. */
  readonly #sharedSlots = new Map<string, SharedSlot>();
  /** A speculative attempt's own SharedSlot, by its ExecutionAttemptID: never the group's current one. */
  readonly #speculative = new Map<string, SharedSlot>();
  /** A speculative attempt's SharedSlot that became its subtask's (it took over), by ExecutionVertexID key. */
  readonly #adopted = new Map<string, SharedSlot>();
  /** What a bulk cancels its waiting subtasks with: one for every bulk. */
  readonly #cancelInBulk = (id: ExecutionVertexID, cause: Error): boolean => this.#cancel(id, cause);
  #nextPhysical = 1;
  #nextLogical = 1;
  /** Shared by every SharedSlot (a closure each would be 25,000 of them for a job of 25,000 groups). */
  readonly #nextLogicalId = (): string => `l${this.#nextLogical++}`;
  /** A group's SharedSlot was released: only the group's current one may remove the group's entry. */
  readonly #groupSlotReleased = (released: SharedSlot): void => {
    if (this.#sharedSlots.get(released.group.id) === released) this.#sharedSlots.delete(released.group.id);
  };

  constructor(options: SlotSharingExecutionSlotAllocatorOptions) {
    this.#jobId = options.jobId;
    this.#strategy = options.strategy;
    this.#provider = options.provider;
    this.#bulkChecker = options.bulkChecker;
    this.#timeoutMs = options.allocationTimeoutMs ?? DEFAULTS['slot.request.timeout'];
  }

  /** The live SharedSlots, by group id (for the overview and tests). */
  get sharedSlots(): ReadonlyMap<string, SharedSlot> {
    return this.#sharedSlots;
  }

  /**
   * A logical slot for each subtask, keyed by `ExecutionVertexID.key`, in the order given. A subtask that already has
   * a logical slot or request gets the same promise again. Throws IllegalArgumentError (and
   * requests nothing) if a subtask belongs to no group.
   */
  allocateSlotsFor(ids: Iterable<ExecutionVertexID>): Map<string, Promise<LogicalSlot>> {
    const result = new Map<string, Promise<LogicalSlot>>();
    this.#request(
      [...ids].map((id) => ({ id })),
      (slot, { id }) => result.set(ExecutionVertexID.key(id), slot.allocateLogicalSlot(id)),
    );
    return result;
  }

  /**
   * As {@link allocateSlotsFor}, but each subtask's slot (or why it has none) is told to `listener` with the token
   * given for it (SharedSlot.requestLogicalSlot), not through a promise: what a JobMaster uses, so that a subtask
   * waiting for its slot holds no promise, resolvers and reactions. The listener may hear of a slot already there
   * during this call.
   */
  requestSlotsFor<T>(
    requests: ReadonlyArray<{ readonly id: ExecutionVertexID; readonly token: T }>,
    listener: LogicalSlotListener<T>,
  ): void {
    this.#request(requests, (slot, { id, token }) => slot.requestLogicalSlot(id, listener, token));
  }

  /**
   * Flink's allocateSlotsFor: every subtask's group looked up before anything is requested (an unknown one changes
   * nothing), each group's SharedSlot got or requested, `take` a logical slot of it per subtask in the order given,
   * then the physical requests of the call handed to the bulk checker as one bulk.
   */
  #request<I extends { readonly id: ExecutionVertexID }>(
    items: readonly I[],
    take: (slot: SharedSlot, item: I) => void,
  ): void {
    // Per group, the call's subtasks in it: no Map entry, key string or object per subtask (100,000 in a large job),
    // and lists at most the group's size (a list grown by push keeps room for ~17).
    const calls = new Map<ExecutionSlotSharingGroup, GroupCall<I>>();
    for (const item of items) {
      const group = this.#groupOf(item.id);
      let call = calls.get(group);
      if (call === undefined) {
        const size = group.members.length;
        call = { slot: null, items: new Array<I | null>(size), ids: new Array<ExecutionVertexID>(size), count: 0 };
        calls.set(group, call);
      }
      // A subtask named twice is asked for once, with its last item, where it was first named.
      const at = indexOfSubtask(call.ids, call.count, item.id);
      if (at >= 0) call.items[at] = item;
      else if (call.count < call.ids.length) {
        call.ids[call.count] = item.id;
        call.items[call.count++] = item;
      } else {
        call.ids.push(item.id);
        call.items.push(item);
        call.count++;
      }
    }
    for (const [group, call] of calls) call.slot = this.#getOrAllocateSharedSlot(group);
    for (const item of items) {
      const call = calls.get(this.#groupOf(item.id))!;
      const at = indexOfSubtask(call.ids, call.count, item.id);
      const taken = call.items[at]!;
      if (taken === null) continue;
      call.items[at] = null;
      take(call.slot!, taken);
    }
    // The bulk is built from the call's SharedSlots, not #sharedSlots: a physical request that failed at once has
    // already left #sharedSlots (Flink's comment on createBulk says the same). No closure here: the bulk keeps its
    // cancel as long as a request of it waits, and a closure made here would keep every SharedSlot of the call with it.
    const entries: BulkEntry[] = [];
    for (const [group, { slot, ids, count }] of calls) {
      ids.length = count;
      // The group's own list when the call asks for all of it (the usual case): nothing more kept per group.
      entries.push({ sharedSlot: slot!, executions: sameSubtasks(ids, group.members) ? group.members : ids });
    }
    const bulk = new SharingPhysicalSlotRequestBulk(entries, this.#cancelInBulk);
    this.#bulkChecker?.schedulePendingRequestBulkTimeoutCheck(bulk, this.#timeoutMs);
  }

  /**
   * Cancels a subtask's logical slot request still waiting (its promise rejects, its listener hears, with `cause`,
   * default SlotRequestError 'canceled'); when no member of the group waits or holds a slot any
   * more, the physical request is canceled too. A logical slot already handed out is left alone
   * (Flink): return it with `releaseLogicalSlot`. Returns whether a request was canceled.
   */
  cancel(id: ExecutionVertexID, cause?: Error): boolean {
    return this.#cancel(id, cause ?? this.#canceled(id));
  }

  /**
   * Returns a subtask's logical slot (or cancels its waiting request). The SharedSlot gives its
   * physical slot back when this was its last logical slot. Releasing twice does nothing the
   * second time. Returns whether the subtask had a logical slot or request.
   */
  releaseLogicalSlot(id: ExecutionVertexID, cause?: Error): boolean {
    const key = ExecutionVertexID.key(id);
    const adopted = this.#adopted.get(key);
    if (adopted !== undefined) {
      this.#adopted.delete(key);
      return adopted.returnLogicalSlot(id, cause ?? this.#released(id));
    }
    const slot = this.#sharedSlots.get(this.#groupOf(id).id);
    return slot?.returnLogicalSlot(id, cause ?? this.#released(id)) ?? false;
  }

  /**
   * A slot of its own for a speculative attempt of the subtask (Flink's SpeculativeScheduler asks one per new
   * attempt): a SharedSlot of the subtask's group profile that nothing else shares — never the one the subtask's
   * current attempt is in. Not handed to the bulk checker: a speculative attempt waiting for a slot fails nothing.
   */
  allocateSpeculativeSlot(id: ExecutionVertexID, attempt: string): Promise<LogicalSlot> {
    const group = this.#groupOf(id);
    const slot = new SharedSlot({
      requestId: `${group.id}/s${this.#nextPhysical++}`,
      group,
      provider: this.#provider,
      nextLogicalId: this.#nextLogicalId,
      onReleased: () => {
        if (this.#speculative.get(attempt) === slot) this.#speculative.delete(attempt);
      },
    });
    this.#speculative.set(attempt, slot);
    return slot.allocateLogicalSlot(id);
  }

  /** The speculative attempt's slot goes back (or its request is canceled). Returns whether it had one. */
  releaseSpeculativeSlot(id: ExecutionVertexID, attempt: string, cause: Error): boolean {
    const slot = this.#speculative.get(attempt);
    if (slot === undefined) return false;
    this.#speculative.delete(attempt);
    return slot.returnLogicalSlot(id, cause);
  }

  /**
   * The speculative attempt took over its subtask: the share of the subtask's former attempt goes back, and the
   * speculative attempt's slot is from now on the one `releaseLogicalSlot(id)` gives back.
   */
  adoptSpeculativeSlot(id: ExecutionVertexID, attempt: string, cause: Error): void {
    const slot = this.#speculative.get(attempt);
    this.releaseLogicalSlot(id, cause);
    if (slot === undefined) return;
    this.#speculative.delete(attempt);
    this.#adopted.set(ExecutionVertexID.key(id), slot);
  }

  /**
   * The physical slot with this AllocationID is lost (its TaskExecutor went away, or it was freed
   * under the job): every logical slot on it is released with `cause` and the SharedSlot is
   * forgotten. Returns whether a SharedSlot held it.
   */
  releasePhysicalSlot(allocationId: AllocationID, cause: Error): boolean {
    let held = false;
    for (const [map, slot] of this.#allSharedSlots()) {
      if (slot.state.kind === 'allocated' && slot.state.slot.allocationId === allocationId) {
        slot.release(cause);
        for (const [key, value] of map) if (value === slot) map.delete(key);
        held = true;
      }
    }
    return held;
  }

  /** Releases every SharedSlot (waiting requests fail with `cause`): the job is over. */
  releaseAll(cause: Error): void {
    for (const [, slot] of this.#allSharedSlots()) slot.release(cause);
    this.#speculative.clear();
    this.#adopted.clear();
  }

  /** Every SharedSlot (the groups', the speculative attempts', those adopted) with the map it is in; a copy. */
  #allSharedSlots(): Array<[Map<string, SharedSlot>, SharedSlot]> {
    return [this.#sharedSlots, this.#speculative, this.#adopted].flatMap((map) =>
      [...map.values()].map((slot): [Map<string, SharedSlot>, SharedSlot] => [map, slot]),
    );
  }

  #cancel(id: ExecutionVertexID, cause: Error): boolean {
    const slot = this.#sharedSlots.get(this.#groupOf(id).id);
    return slot?.cancelLogicalSlotRequest(id, cause) ?? false;
  }

  #getOrAllocateSharedSlot(group: ExecutionSlotSharingGroup): SharedSlot {
    const existing = this.#sharedSlots.get(group.id);
    if (existing !== undefined) return existing;
    const slot = new SharedSlot({
      // Joined, not a template: one flat string, not a rope of ~4 (a SharedSlot per group keeps it).
      requestId: [group.id, '/p', this.#nextPhysical++].join(''),
      group,
      provider: this.#provider,
      nextLogicalId: this.#nextLogicalId,
      onReleased: this.#groupSlotReleased,
    });
    this.#sharedSlots.set(group.id, slot);
    return slot;
  }

  #groupOf(id: ExecutionVertexID): ExecutionSlotSharingGroup {
    const group = this.#strategy.getExecutionSlotSharingGroup(id);
    if (group === undefined) {
      const key = typeof id === 'object' && id !== null ? ExecutionVertexID.key(id) : String(id);
      throw new IllegalArgumentError(
        'invalid-value',
        `subtask ${key} is in no ExecutionSlotSharingGroup of ` +
          `job ${this.#jobId}; pass subtasks of the job's ExecutionGraph`,
        { argument: 'executionVertexId', value: key },
      );
    }
    return group;
  }

  #canceled(id: ExecutionVertexID): Error {
    const key = ExecutionVertexID.key(id);
    return new SlotRequestError('canceled', `the slot request of subtask ${key} was canceled`, {
      jobId: this.#jobId,
      executionVertexId: key,
    });
  }

  #released(id: ExecutionVertexID): Error {
    const key = ExecutionVertexID.key(id);
    return new SlotRequestError('canceled', `subtask ${key} returned its slot`, {
      jobId: this.#jobId,
      executionVertexId: key,
    });
  }
}

/** One allocation call's subtasks of one group: the first `count` of `ids`, each with its item until it is taken. */
interface GroupCall<I> {
  slot: SharedSlot | null;
  readonly items: (I | null)[];
  readonly ids: ExecutionVertexID[];
  count: number;
}

function indexOfSubtask(ids: readonly ExecutionVertexID[], count: number, id: ExecutionVertexID): number {
  for (let i = 0; i < count; i++) if (ExecutionVertexID.equals(ids[i]!, id)) return i;
  return -1;
}

function sameSubtasks(ids: readonly ExecutionVertexID[], members: readonly ExecutionVertexID[]): boolean {
  if (ids.length !== members.length) return false;
  for (let i = 0; i < ids.length; i++) if (ids[i] !== members[i]) return false;
  return true;
}
