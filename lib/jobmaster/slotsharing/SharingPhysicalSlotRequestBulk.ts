/**
 * The physical slot requests one `allocateSlotsFor` call depends on (Flink's
 * SharingPhysicalSlotRequestBulk): one per SharedSlot involved, with the subtasks of the call that
 * wait on it. The bulk checker fails what is still pending at the deadline.
 *
 * When one physical request of the bulk fails (its provider rejected it), the bulk's other waiting
 * subtasks fail at once with that cause and the bulk is cleared, so that no timeout follows: Flink
 * clears the bulk too (its scheduler then fails them). A request given up by the job (its subtasks
 * canceled, or the bulk timed out) only leaves the bulk.
 */
import type { ResourceProfile } from '../../core/ResourceProfile.js';
import type { ExecutionVertexID } from '../ExecutionGraph.js';
import type { PhysicalSlotRequestBulk } from './PhysicalSlotRequestBulkChecker.js';
import type { PhysicalRequestObserver, SharedSlot } from './SharedSlot.js';

export interface BulkEntry {
  readonly sharedSlot: SharedSlot;
  /** The subtasks of this bulk that take a logical slot from it. */
  readonly executions: readonly ExecutionVertexID[];
}

export class SharingPhysicalSlotRequestBulk implements PhysicalSlotRequestBulk, PhysicalRequestObserver {
  readonly size: number;
  /**
   * Physical request id -> its SharedSlot and the subtasks of this bulk waiting on it; insertion order is request
   * order.
   */
  readonly #pending = new Map<string, BulkEntry>();
  readonly #cancelLogicalSlotRequest: (id: ExecutionVertexID, cause: Error) => void;
  #listeners: Array<() => void> = [];

  /** `cancelLogicalSlotRequest` fails one subtask's waiting logical slot (the allocator's cancel). */
  constructor(entries: readonly BulkEntry[], cancelLogicalSlotRequest: (id: ExecutionVertexID, cause: Error) => void) {
    this.size = entries.length;
    this.#cancelLogicalSlotRequest = cancelLogicalSlotRequest;
    for (const entry of entries) {
      const { sharedSlot } = entry;
      // A SharedSlot that holds its physical slot already is fulfilled for this bulk from the start.
      if (sharedSlot.state.kind !== 'requested') continue;
      this.#pending.set(sharedSlot.requestId, entry);
      sharedSlot.observePhysicalRequest(this);
    }
  }

  /** A SharedSlot of the bulk has its physical slot, or ended without one (SharedSlot.observePhysicalRequest). */
  physicalRequestSettled(sharedSlot: SharedSlot): void {
    const state = sharedSlot.state;
    if (state.kind === 'released') this.#ended(sharedSlot, state.cause);
    else this.#settle(sharedSlot.requestId);
  }

  pendingRequestIds(): readonly string[] {
    return [...this.#pending.keys()];
  }

  /** The distinct profiles the pending requests ask for. */
  pendingRequestProfiles(): readonly ResourceProfile[] {
    const distinct = new Map<string, ResourceProfile>();
    for (const { sharedSlot } of this.#pending.values()) {
      const profile = sharedSlot.group.resourceProfile;
      distinct.set(profile.key, profile);
    }
    return [...distinct.values()];
  }

  /** The subtasks of this bulk that still wait for a physical slot. */
  pendingExecutions(): readonly ExecutionVertexID[] {
    return [...this.#pending.values()].flatMap((entry) => entry.executions);
  }

  /**
   * Fails the waiting logical slots of the bulk. Subtasks whose slot already came keep it (Flink:
   * canceling a completed logical slot request does nothing; the scheduler returns those).
   */
  cancel(cause: Error): void {
    for (const { executions } of [...this.#pending.values()]) {
      for (const id of executions) this.#cancelLogicalSlotRequest(id, cause);
    }
  }

  whenSettled(listener: () => void): void {
    if (this.#pending.size === 0) listener();
    else this.#listeners.push(listener);
  }

  /** A request ended without a slot: a failed one fails the rest of the bulk with its cause. */
  #ended(sharedSlot: SharedSlot, cause: Error): void {
    const state = sharedSlot.state;
    if (state.kind !== 'released' || !state.requestFailed || !this.#pending.delete(sharedSlot.requestId)) {
      this.#settle(sharedSlot.requestId);
      return;
    }
    // Cleared first: the cancels below settle their own requests, which must find nothing left here.
    const rest = [...this.#pending.values()];
    this.#pending.clear();
    for (const { executions } of rest) for (const id of executions) this.#cancelLogicalSlotRequest(id, cause);
    this.#notifySettled();
  }

  #settle(requestId: string): void {
    if (!this.#pending.delete(requestId) || this.#pending.size > 0) return;
    this.#notifySettled();
  }

  #notifySettled(): void {
    const listeners = this.#listeners;
    this.#listeners = [];
    for (const listener of listeners) listener();
  }
}
