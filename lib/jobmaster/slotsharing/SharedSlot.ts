/**
 * One physical slot shared by the subtasks of an ExecutionSlotSharingGroup (Flink's SharedSlot):
 * a logical slot per subtask, all completed when the physical slot arrives, all failed when its
 * request fails. The physical slot goes back exactly once — `cancelSlotRequest` while the request
 * still waits, `releaseSlot` once it holds a slot — when its last logical slot is released or
 * canceled, or when the slot is lost; whichever path comes first, the others find it released.
 */
import { IllegalStateError } from '../../core/errors.js';
import type { AllocationID, ResourceID } from '../../core/ids.js';
import type { ResourceProfile } from '../../core/ResourceProfile.js';
import { ExecutionVertexID } from '../ExecutionGraph.js';
import type { ExecutionSlotSharingGroup } from './SlotSharingStrategy.js';

/** A slot leased to the job on a TaskExecutor. */
export interface PhysicalSlot {
  readonly allocationId: AllocationID;
  readonly resourceId: ResourceID;
  readonly resourceProfile: ResourceProfile;
}

export interface PhysicalSlotRequest {
  readonly requestId: string;
  readonly resourceProfile: ResourceProfile;
}

/**
 * Told once how a physical slot request ended ({@link PhysicalSlotProvider.requestPhysicalSlot}), with the token it was
 * made with: a listener and token instead of a promise, its resolvers and reactions, because every SharedSlot of a job
 * of 25,000 slot sharing groups waits at once.
 */
export interface PhysicalSlotListener<T> {
  physicalSlotReady(token: T, slot: PhysicalSlot): void;
  physicalSlotFailed(token: T, cause: Error): void;
}

/** Where physical slots come from (the JobMaster's slot pool); the allocator's only effect. */
export interface PhysicalSlotProvider {
  /**
   * Asks for a slot: `listener` hears with `token` once, the slot or why it cannot be had — never during the call, but
   * in a microtask after it at the earliest, as a promise's reaction would.
   */
  requestPhysicalSlot<T>(request: PhysicalSlotRequest, listener: PhysicalSlotListener<T>, token: T): void;
  /**
   * Gives up a request still waiting. Should tell its listener it failed; a slot it delivers anyway is given back with
   * releaseSlot.
   */
  cancelSlotRequest(requestId: string, cause: Error): void;
  /** Gives back a slot the job no longer needs (or has lost). */
  releaseSlot(slot: PhysicalSlot, cause: Error): void;
}

/** A subtask's share of a physical slot. */
export interface LogicalSlot {
  readonly executionVertexId: ExecutionVertexID;
  /**
   * Unique within the allocator, like Flink's logical SlotRequestId; given as the slot is handed out (a request that
   * waits holds no string of its own).
   */
  readonly slotRequestId: string;
  readonly groupId: string;
  readonly physicalSlot: PhysicalSlot;
  readonly allocationId: AllocationID;
  readonly resourceId: ResourceID;
  /** False once released (returned by the subtask, or lost with its physical slot). */
  isAlive(): boolean;
  /** Resolves (never rejects) with the cause once the logical slot is released. */
  readonly released: Promise<Error>;
}

/**
 * Told once how a subtask's logical slot request ended ({@link SharedSlot.requestLogicalSlot}): its slot, or why not,
 * with the token the request was made with. One listener serves every request of its owner: a request holds no
 * promise, resolvers or reactions of its own (a job of 100,000 subtasks holds as many requests while they wait).
 */
export interface LogicalSlotListener<T> {
  slotReady(token: T, slot: LogicalSlot): void;
  slotFailed(token: T, cause: Error): void;
}

/** A later request for a subtask whose request waits: told with the first. */
interface Waiter {
  readonly listener: LogicalSlotListener<unknown>;
  readonly token: unknown;
}

type LogicalRequest =
  | {
      readonly kind: 'pending';
      /** The subtask as it was asked for (what its LogicalSlot tells). */
      readonly executionVertexId: ExecutionVertexID;
      /** Who asked (one listener and token, inline: a request per subtask waits in a large job). */
      readonly listener: LogicalSlotListener<unknown>;
      readonly token: unknown;
      /** Later requests for the same subtask, rarely any. */
      more: Waiter[] | null;
      /** The promise allocateLogicalSlot handed out for it, if it was asked for one. */
      promise: Promise<LogicalSlot> | null;
    }
  | {
      readonly kind: 'fulfilled';
      readonly executionVertexId: ExecutionVertexID;
      readonly slot: SharedLogicalSlot;
      promise: Promise<LogicalSlot> | null;
    };

interface Deferred {
  readonly resolve: (slot: LogicalSlot) => void;
  readonly reject: (cause: Error) => void;
}

/** allocateLogicalSlot's requests: the token is the promise's resolvers. */
const SETTLE_PROMISE: LogicalSlotListener<Deferred> = {
  slotReady: (deferred, slot) => deferred.resolve(slot),
  slotFailed: (deferred, cause) => deferred.reject(cause),
};

type PendingRequest = Extract<LogicalRequest, { kind: 'pending' }>;

function notifyReady(request: PendingRequest, slot: LogicalSlot): void {
  request.listener.slotReady(request.token, slot);
  if (request.more !== null) for (const { listener, token } of request.more) listener.slotReady(token, slot);
}

function notifyFailed(request: PendingRequest, cause: Error): void {
  request.listener.slotFailed(request.token, cause);
  if (request.more !== null) for (const { listener, token } of request.more) listener.slotFailed(token, cause);
}

/**
 * `requestFailed`: released because the physical request failed (the provider rejected it), not given back or given up.
 */
export type SharedSlotState =
  | { readonly kind: 'requested' }
  | { readonly kind: 'allocated'; readonly slot: PhysicalSlot }
  | { readonly kind: 'released'; readonly cause: Error; readonly requestFailed: boolean };

const ignore = () => {};

/** Every SharedSlot's first state, shared: 25,000 groups of a large job wait in it at once. */
const REQUESTED: SharedSlotState = Object.freeze({ kind: 'requested' });

/**
 * Told once when a SharedSlot's physical request settles: its slot came, or the SharedSlot was released without one
 * (its state tells which, and why). What the bulks of the calls that asked for it hear
 * (SharingPhysicalSlotRequestBulk), where a reaction on a promise of the SharedSlot's would cost a promise, a reaction
 * and two closures per group.
 */
export interface PhysicalRequestObserver {
  physicalRequestSettled(slot: SharedSlot): void;
}

/** Releases a {@link SharedLogicalSlot}: its SharedSlot's to call, not its holder's. */
const RELEASE = Symbol('release');

/**
 * A subtask's share of a SharedSlot's physical slot: its fields, whether it is alive, and the promise of its release
 * made only when asked for (a speculative attempt waits on it; a job of 100,000 subtasks' others never do) — an
 * object of its own where a frozen object with three closures and a promise was ~400 bytes a subtask.
 */
class SharedLogicalSlot implements LogicalSlot {
  readonly executionVertexId: ExecutionVertexID;
  readonly slotRequestId: string;
  readonly groupId: string;
  readonly physicalSlot: PhysicalSlot;
  /** Why it was released; null while alive. */
  #cause: Error | null = null;
  #released: Promise<Error> | null = null;
  #markReleased: ((cause: Error) => void) | null = null;

  constructor(id: ExecutionVertexID, requestId: string, groupId: string, slot: PhysicalSlot) {
    this.executionVertexId = id;
    this.slotRequestId = requestId;
    this.groupId = groupId;
    this.physicalSlot = slot;
    Object.freeze(this);
  }

  get allocationId(): AllocationID {
    return this.physicalSlot.allocationId;
  }

  get resourceId(): ResourceID {
    return this.physicalSlot.resourceId;
  }

  isAlive(): boolean {
    return this.#cause === null;
  }

  get released(): Promise<Error> {
    if (this.#released === null) {
      const cause = this.#cause;
      this.#released =
        cause !== null ? Promise.resolve(cause) : new Promise<Error>((resolve) => (this.#markReleased = resolve));
    }
    return this.#released;
  }

  [RELEASE](cause: Error): void {
    if (this.#cause !== null) return;
    this.#cause = cause;
    this.#markReleased?.(cause);
    this.#markReleased = null;
  }
}

export class SharedSlot {
  /** Where the provider tells every SharedSlot's physical request, the SharedSlot its token. */
  static readonly #physical: PhysicalSlotListener<SharedSlot> = {
    physicalSlotReady: (shared, slot) => shared.#fulfil(slot),
    physicalSlotFailed: (shared, cause) => shared.#fail(cause),
  };

  readonly requestId: string;
  readonly group: ExecutionSlotSharingGroup;
  #state: SharedSlotState = REQUESTED;
  /**
   * The subtasks' requests, pending or fulfilled, in request order, one per subtask: a list, not a Map by subtask key
   * — a group holds a few subtasks (one per job vertex), and a Map and a key string each cost a job of 25,000 groups
   * more than the requests themselves.
   */
  #requests: LogicalRequest[] = [];
  readonly #provider: PhysicalSlotProvider;
  readonly #onReleased: (slot: SharedSlot) => void;
  readonly #nextLogicalId: () => string;
  /** Who hears when the physical request settles: usually one bulk, so no array for it. */
  #observers: PhysicalRequestObserver | PhysicalRequestObserver[] | null = null;

  /**
   * Requests the physical slot at once. `onReleased` runs once, when the SharedSlot is released by
   * whatever path (the allocator forgets it then).
   */
  constructor(options: {
    requestId: string;
    group: ExecutionSlotSharingGroup;
    provider: PhysicalSlotProvider;
    onReleased: (slot: SharedSlot) => void;
    nextLogicalId: () => string;
  }) {
    this.requestId = options.requestId;
    this.group = options.group;
    this.#provider = options.provider;
    this.#onReleased = options.onReleased;
    this.#nextLogicalId = options.nextLogicalId;
    const request = { requestId: this.requestId, resourceProfile: this.group.resourceProfile };
    try {
      this.#provider.requestPhysicalSlot(request, SharedSlot.#physical, this);
    } catch (error) {
      // A provider that throws fails the request like one that tells it failed: in a microtask, not during the call.
      const cause = error instanceof Error ? error : new Error(String(error));
      queueMicrotask(() => this.#fail(cause));
    }
  }

  get state(): SharedSlotState {
    return this.#state;
  }

  /**
   * Tells `observer` once when the physical request settles (the slot came, or the SharedSlot was released without
   * one). Only while it waits (`requested`): afterwards there is nothing to wait for and nothing is told.
   */
  observePhysicalRequest(observer: PhysicalRequestObserver): void {
    if (this.#state.kind !== 'requested') return;
    const observers = this.#observers;
    if (observers === null) this.#observers = observer;
    else if (Array.isArray(observers)) observers.push(observer);
    else this.#observers = [observers, observer];
  }

  /** The subtasks holding or waiting for a logical slot here. */
  get logicalSlotCount(): number {
    return this.#requests.length;
  }

  /** The subtask's logical slot; the same promise while its request lives (Flink de-duplicates too). */
  allocateLogicalSlot(id: ExecutionVertexID): Promise<LogicalSlot> {
    this.#requireUnreleased('allocateLogicalSlot');
    const existing = this.#requestOf(id);
    if (existing?.promise) return existing.promise;
    let deferred!: Deferred;
    const promise = new Promise<LogicalSlot>((resolve, reject) => (deferred = { resolve, reject }));
    promise.catch(ignore); // the caller may drop it; a failed slot must not be an unhandled rejection
    this.requestLogicalSlot(id, SETTLE_PROMISE, deferred);
    // A request of an unreleased SharedSlot leaves its entry, pending or fulfilled: the promise is the subtask's now.
    this.#requestOf(id)!.promise = promise;
    return promise;
  }

  /**
   * Asks for the subtask's logical slot: `listener` hears with `token` once, when the physical slot is there (at once
   * when it is, or when the subtask holds its logical slot already) or when the request fails, is canceled or the
   * slot released first. A second request for a subtask whose request waits is told with the first.
   */
  requestLogicalSlot<T>(id: ExecutionVertexID, listener: LogicalSlotListener<T>, token: T): void {
    this.#requireUnreleased('requestLogicalSlot');
    const existing = this.#requestOf(id);
    const asked = listener as LogicalSlotListener<unknown>;
    if (existing?.kind === 'pending') {
      (existing.more ??= []).push({ listener: asked, token });
    } else if (existing?.kind === 'fulfilled') {
      listener.slotReady(token, existing.slot);
    } else if (this.#state.kind === 'allocated') {
      listener.slotReady(token, this.#fulfilled(id, this.#nextLogicalId(), this.#state.slot, null));
    } else {
      const request: PendingRequest = {
        kind: 'pending',
        executionVertexId: id,
        listener: asked,
        token,
        more: null,
        promise: null,
      };
      this.#add(request);
    }
  }

  /**
   * Cancels a logical slot request still waiting: its promise rejects (its listener hears) with `cause`. A slot
   * already handed out is left alone (Flink: the subtask owns it and must return it). Returns
   * whether a request was canceled.
   */
  cancelLogicalSlotRequest(id: ExecutionVertexID, cause: Error): boolean {
    const request = this.#requestOf(id);
    if (request?.kind !== 'pending') return false;
    this.#forget(request);
    notifyFailed(request, cause);
    this.#releaseIfEmpty(cause);
    return true;
  }

  /** Returns a subtask's logical slot (or cancels its waiting request). Returns whether it had one. */
  returnLogicalSlot(id: ExecutionVertexID, cause: Error): boolean {
    const request = this.#requestOf(id);
    if (request === undefined) return false;
    this.#forget(request);
    if (request.kind === 'pending') notifyFailed(request, cause);
    else request.slot[RELEASE](cause);
    this.#releaseIfEmpty(cause);
    return true;
  }

  /** The physical slot is gone or the job is done with it: every logical slot fails or is released. */
  release(cause: Error): void {
    if (this.#state.kind === 'released') return;
    const requests = this.#requests;
    this.#requests = [];
    this.#releaseOnce(cause);
    for (const request of requests) {
      if (request.kind === 'pending') notifyFailed(request, cause);
      else request.slot[RELEASE](cause);
    }
  }

  #fulfil(slot: PhysicalSlot): void {
    if (this.#state.kind === 'released') {
      // Canceled while waiting, delivered anyway: it is ours to give back.
      this.#provider.releaseSlot(slot, this.#state.cause);
      return;
    }
    this.#state = { kind: 'allocated', slot };
    // A copy: a listener told may return its slot (or release them all) at once; a request gone by then is not handed
    // a slot, as iterating a Map of them would skip it.
    for (const request of [...this.#requests]) {
      if (request.kind !== 'pending' || !this.#requests.includes(request)) continue;
      const logical = this.#fulfilled(request.executionVertexId, this.#nextLogicalId(), slot, request.promise);
      notifyReady(request, logical);
    }
    this.#physicalRequestSettled();
  }

  #fail(cause: Error): void {
    if (this.#state.kind === 'released') return; // our own cancel coming back
    // The request failed: there is no slot to give back, only waiting subtasks to fail.
    this.#state = { kind: 'released', cause, requestFailed: true };
    const requests = this.#requests;
    this.#requests = [];
    this.#onReleased(this);
    for (const request of requests) if (request.kind === 'pending') notifyFailed(request, cause);
    // Last, as the promise reactions the observers replace ran after all this: a bulk's own cancels come after.
    this.#physicalRequestSettled();
  }

  #physicalRequestSettled(): void {
    const observers = this.#observers;
    if (observers === null) return;
    this.#observers = null;
    if (!Array.isArray(observers)) return observers.physicalRequestSettled(this);
    for (const observer of observers) observer.physicalRequestSettled(this);
  }

  /** Records a handed-out logical slot; `promise`: the one allocateLogicalSlot gave for its request, if any. */
  #fulfilled(
    id: ExecutionVertexID,
    requestId: string,
    slot: PhysicalSlot,
    promise: Promise<LogicalSlot> | null,
  ): LogicalSlot {
    const logical = new SharedLogicalSlot(id, requestId, this.group.id, slot);
    const fulfilled: LogicalRequest = { kind: 'fulfilled', executionVertexId: id, slot: logical, promise };
    // In the place of its pending request, if it had one: request order stays.
    const at = this.#indexOf(id);
    if (at < 0) this.#add(fulfilled);
    else this.#requests[at] = fulfilled;
    return logical;
  }

  #indexOf(id: ExecutionVertexID): number {
    const requests = this.#requests;
    for (let i = 0; i < requests.length; i++)
      if (ExecutionVertexID.equals(requests[i]!.executionVertexId, id)) return i;
    return -1;
  }

  #requestOf(id: ExecutionVertexID): LogicalRequest | undefined {
    return this.#requests[this.#indexOf(id)];
  }

  /** A copy one longer, not push: an array grown by push keeps room for ~17 requests, a group has a few. */
  #add(request: LogicalRequest): void {
    this.#requests = this.#requests.concat([request]);
  }

  #forget(request: LogicalRequest): void {
    this.#requests.splice(this.#requests.indexOf(request), 1);
  }

  #requireUnreleased(operation: string): void {
    if (this.#state.kind !== 'released') return;
    throw new IllegalStateError(
      `SharedSlot ${this.requestId} of group ${this.group.id} is released; allocate from a new one`,
      { component: 'SharedSlot', operation, state: 'released', allowed: ['requested', 'allocated'] },
    );
  }

  #releaseIfEmpty(cause: Error): void {
    if (this.#requests.length === 0) this.#releaseOnce(cause);
  }

  /** The one place the physical slot goes back. */
  #releaseOnce(cause: Error): void {
    const previous = this.#state;
    if (previous.kind === 'released') return;
    this.#state = { kind: 'released', cause, requestFailed: false };
    // Forgotten by the allocator before the provider hears of it: a provider that hands the slot
    // on synchronously (and so re-enters the allocator) must find a fresh SharedSlot, not this one.
    this.#onReleased(this);
    if (previous.kind === 'requested') {
      this.#provider.cancelSlotRequest(this.requestId, cause);
      this.#physicalRequestSettled();
    } else {
      this.#provider.releaseSlot(previous.slot, cause);
    }
  }
}
