/**
 * The JobMaster's slot pool (Flink's DeclarativeSlotPool and its bridge, reduced): the physical
 * slots the job asks for and holds. It is the PhysicalSlotProvider of the slot sharing allocator;
 * what it needs in total (held + pending, by requested profile) is what the JobMaster declares to
 * the ResourceManager.
 *
 * Slots are reused inside the job, as Flink's slot pool does: a slot the job's subtasks gave back
 * stays with the job, idle, and serves the job's next request it matches before the
 * ResourceManager is asked for more; it goes back to its TaskExecutor after `slot.idle.timeout`
 * idle, or when the job ends. A held slot — busy or idle — stays in the declared requirements, so
 * they go down only when a slot really goes back (the ResourceManager never sees an idle slot as
 * spare while the job still counts on it). On the TaskExecutor the allocation, and with it the
 * slot's warm task thread, lives on.
 *
 * Matching follows Flink (`ResourceProfile.isMatching`): a slot serves a request for its own
 * profile or one for UNKNOWN (the executor's default slot). A slot offered or given back goes to
 * the oldest pending request it matches; a new request takes the longest idle slot it matches.
 * Both are found through indexes by profile, never by scanning every request or slot: a job of
 * 10,000 subtasks gives back and re-hands a slot per subtask.
 */
import type { Clock, TimerHandle } from '../core/clock.js';
import { IllegalStateError } from '../core/errors.js';
import type { AllocationID, ResourceID } from '../core/ids.js';
import { ResourceProfile, type ResourceProfileJSON } from '../core/ResourceProfile.js';
import type {
  PhysicalSlot,
  PhysicalSlotListener,
  PhysicalSlotProvider,
  PhysicalSlotRequest,
} from './slotsharing/SharedSlot.js';

interface PendingRequest {
  readonly requestId: string;
  readonly profile: ResourceProfile;
  /** Its place in request order: a slot goes to the oldest request it matches. */
  readonly seq: number;
  /** Who asked, told how it ended (one listener for every SharedSlot of a job, each its own token). */
  readonly listener: PhysicalSlotListener<unknown>;
  readonly token: unknown;
}

type Asker = Pick<PendingRequest, 'listener' | 'token'>;

/** Tells a request its slot in a microtask, as the promise the listener replaces did: never inside the pool's call. */
function tellReady({ listener, token }: Asker, slot: PhysicalSlot): void {
  queueMicrotask(() => listener.physicalSlotReady(token, slot));
}

/** Tells a request why it has no slot, as tellReady does. */
function tellFailed({ listener, token }: Asker, cause: Error): void {
  queueMicrotask(() => listener.physicalSlotFailed(token, cause));
}

/** A slot a TaskExecutor offers, its profile read (Flink's SlotOffer). */
export interface SlotOffer {
  readonly allocationId: AllocationID;
  readonly resourceProfile: ResourceProfile;
}

interface HeldSlot {
  readonly slot: PhysicalSlot;
  /**
   * The profile the job asked for when this slot last served a request: what it counts as in the
   * declaration; null for a slot registered while the job restarted that no request has taken yet.
   */
  requested: ResourceProfile | null;
  /** When its subtasks gave it back; null while a request holds it. */
  idleSince: number | null;
}

export interface JobSlotPoolOptions {
  /**
   * The total requirement changed: the JobMaster declares it again — at once when `urgent` (the job needs more, let a
   * slot go, or waits for none any more), else it may wait a little: a pending request went away while the job still
   * waits for others (served by a slot it holds, or canceled), which no ResourceManager can act on.
   */
  readonly onRequirementsChanged: (urgent: boolean) => void;
  /** Gives a slot back to its TaskExecutor (it frees it and tells the ResourceManager). */
  readonly freeSlot: (slot: PhysicalSlot, cause: Error) => void;
  /** Where idle slots' timeouts run (the JobMaster's mailbox clock). */
  readonly clock: Clock;
  /**
   * `slot.idle.timeout`: how long a slot the job no longer uses is kept for its next subtasks (0: given back at once).
   */
  readonly idleSlotTimeoutMs: number;
  /**
   * Whether a TaskExecutor is blocked for new slots (Flink's BlocklistDeclarativeSlotPool: a slow one, under
   * speculative execution): its offers are refused, and a slot of it the job stops using goes back instead of serving
   * another request or waiting idle. None is blocked without it.
   */
  readonly isBlocked?: (resourceId: ResourceID) => boolean;
}

export class JobSlotPool implements PhysicalSlotProvider {
  readonly #o: JobSlotPoolOptions;
  /** Every pending request, in request order. */
  readonly #pending = new Map<string, PendingRequest>();
  /** Pending requests by the key of their profile, each in request order. */
  readonly #pendingByProfile = new Map<string, Map<string, PendingRequest>>();
  readonly #held = new Map<AllocationID, HeldSlot>();
  /** Idle slots, longest idle first. */
  readonly #idle = new Map<AllocationID, HeldSlot>();
  /** Idle slots by the key of their profile, each longest idle first. */
  readonly #idleByProfile = new Map<string, Map<AllocationID, HeldSlot>>();
  /** What is declared: held and pending slots counted by requested profile. */
  readonly #required = new Map<string, { readonly profile: ResourceProfile; count: number }>();
  #nextSeq = 0;
  #idleTimer: { readonly handle: TimerHandle; readonly due: number } | null = null;
  #reused = 0;
  #closed = false;

  constructor(options: JobSlotPoolOptions) {
    this.#o = options;
  }

  get pendingRequests(): number {
    return this.#pending.size;
  }

  /** Every slot the job holds, busy or idle. */
  get heldSlots(): readonly PhysicalSlot[] {
    return [...this.#held.values()].map((h) => h.slot);
  }

  /** How many held slots are idle (given back by their subtasks, kept for the next ones). */
  get idleSlots(): number {
    return this.#idle.size;
  }

  /** How many requests a slot the job already held has served (instead of a new slot). */
  get reusedSlots(): number {
    return this.#reused;
  }

  requestPhysicalSlot<T>(request: PhysicalSlotRequest, listener: PhysicalSlotListener<T>, token: T): void {
    const asked: Asker = { listener: listener as PhysicalSlotListener<unknown>, token };
    if (this.#closed)
      return tellFailed(
        asked,
        new IllegalStateError("the job's slot pool is closed", {
          component: 'JobSlotPool',
          operation: 'requestPhysicalSlot',
          state: 'closed',
          allowed: ['open'],
        }),
      );
    const idle = this.#takeIdleFor(request.resourceProfile);
    if (idle !== undefined) {
      this.#reserve(idle, request.resourceProfile);
      this.#reused++;
      return tellReady(asked, idle.slot);
    }
    const pending: PendingRequest = {
      requestId: request.requestId,
      profile: request.resourceProfile,
      seq: this.#nextSeq++,
      listener: asked.listener,
      token,
    };
    this.#pending.set(pending.requestId, pending);
    bucket(this.#pendingByProfile, pending.profile.key).set(pending.requestId, pending);
    this.#count(pending.profile, 1);
  }

  cancelSlotRequest(requestId: string, cause: Error): void {
    const pending = this.#pending.get(requestId);
    if (pending === undefined) return;
    this.#removePending(pending);
    this.#count(pending.profile, -1);
    tellFailed(pending, cause);
  }

  /**
   * The job's subtasks gave the slot back: it serves the oldest pending request it matches, or
   * waits idle for the next one (and goes back to its TaskExecutor after slot.idle.timeout).
   */
  releaseSlot(slot: PhysicalSlot, cause: Error): void {
    const held = this.#held.get(slot.allocationId);
    if (held === undefined || held.idleSince !== null) return;
    if (this.#closed || this.#o.isBlocked?.(slot.resourceId)) return this.#giveBack(held, cause);
    const request = this.#oldestPendingFor(held.slot.resourceProfile);
    if (request !== undefined) {
      this.#removePending(request);
      this.#count(request.profile, -1);
      this.#reserve(held, request.profile);
      this.#reused++;
      tellReady(request, held.slot);
      return;
    }
    if (this.#o.idleSlotTimeoutMs === 0) return this.#giveBack(held, cause);
    this.#becomeIdle(held);
  }

  /**
   * Slots offered by a TaskExecutor: returns the AllocationIDs accepted (the rest are freed by the
   * executor). Each goes to the oldest pending request it matches; one no request matches is refused —
   * unless the job is `restarting`: then every offer is registered (Flink's DeclarativeSlotPoolBridge
   * with DefaultDeclarativeSlotPool.registerSlots), as an idle slot the job does not declare, for the
   * restarted subtasks to take (and given back after slot.idle.timeout if none does).
   */
  offerSlots(
    resourceId: ResourceID,
    offers: readonly SlotOffer[],
    options: { restarting?: boolean } = {},
  ): AllocationID[] {
    const accepted: AllocationID[] = [];
    if (this.#o.isBlocked?.(resourceId)) return accepted;
    for (const offer of offers) {
      if (this.#held.has(offer.allocationId)) {
        accepted.push(offer.allocationId); // offered again (a retried offer): still ours
        continue;
      }
      const profile = offer.resourceProfile;
      const request = this.#oldestPendingFor(profile);
      if (request === undefined) {
        if (options.restarting !== true) continue;
        const held: HeldSlot = {
          slot: { allocationId: offer.allocationId, resourceId, resourceProfile: profile },
          requested: null,
          idleSince: null,
        };
        this.#held.set(offer.allocationId, held);
        accepted.push(offer.allocationId);
        this.#becomeIdle(held);
        continue;
      }
      // It moves from pending to held under the same requested profile: the declaration is unchanged.
      this.#removePending(request);
      const slot: PhysicalSlot = { allocationId: offer.allocationId, resourceId, resourceProfile: profile };
      this.#held.set(offer.allocationId, { slot, requested: request.profile, idleSince: null });
      accepted.push(offer.allocationId);
      tellReady(request, slot);
    }
    return accepted;
  }

  /** The TaskExecutor was blocked: the job's idle slots there go back to it now (Flink frees them too). */
  releaseIdleSlotsOf(resourceId: ResourceID, cause: Error): void {
    for (const held of [...this.#idle.values()]) if (held.slot.resourceId === resourceId) this.#giveBack(held, cause);
  }

  /** The slot is gone (its executor freed it, or was lost): forget it without freeing it again. */
  slotLost(allocationId: AllocationID): PhysicalSlot | undefined {
    const held = this.#held.get(allocationId);
    if (held === undefined) return undefined;
    this.#forget(held);
    return held.slot;
  }

  /** What the job needs now: every pending and held slot, counted by the profile it was asked with. */
  requirements(): Array<{ resourceProfile: ResourceProfileJSON; numberOfRequiredSlots: number }> {
    return [...this.#required.values()].map(({ profile, count }) => ({
      resourceProfile: profile.toJSON(),
      numberOfRequiredSlots: count,
    }));
  }

  /** Fails every pending request and gives every held slot back. */
  close(cause: Error): void {
    this.#closed = true;
    if (this.#idleTimer !== null) this.#o.clock.clearTimeout(this.#idleTimer.handle);
    this.#idleTimer = null;
    const pending = [...this.#pending.values()];
    this.#pending.clear();
    this.#pendingByProfile.clear();
    for (const request of pending) tellFailed(request, cause);
    const held = [...this.#held.values()];
    this.#held.clear();
    this.#idle.clear();
    this.#idleByProfile.clear();
    this.#required.clear();
    for (const { slot } of held) this.#o.freeSlot(slot, cause);
  }

  // ------------------------------------------------------------------ internals

  /** The oldest pending request a slot of `profile` may serve: one for that profile or one for UNKNOWN. */
  #oldestPendingFor(profile: ResourceProfile): PendingRequest | undefined {
    if (profile.isAny()) return first(this.#pending);
    const exact = first(this.#pendingByProfile.get(profile.key));
    const unknown = first(this.#pendingByProfile.get(ResourceProfile.UNKNOWN.key));
    if (exact === undefined) return unknown;
    return unknown === undefined || exact.seq < unknown.seq ? exact : unknown;
  }

  /** The longest idle slot that may serve a request for `profile` (any slot for UNKNOWN), taken out of the idle set. */
  #takeIdleFor(profile: ResourceProfile): HeldSlot | undefined {
    const held = profile.isUnknown()
      ? first(this.#idle)
      : (first(this.#idleByProfile.get(profile.key)) ?? first(this.#idleByProfile.get(ResourceProfile.ANY.key)));
    if (held !== undefined) this.#leaveIdle(held);
    return held;
  }

  /**
   * A held slot now serves a request for `profile`: the declaration counts it under that profile (one
   * more, for a registered slot no request had taken: Flink's reserveFreeSlot of a slot matched to ANY).
   */
  #reserve(held: HeldSlot, profile: ResourceProfile): void {
    if (held.requested?.key === profile.key) return;
    if (held.requested !== null) this.#count(held.requested, -1);
    this.#count(profile, 1);
    held.requested = profile;
  }

  /** Nothing uses the slot: it waits idle for the job's next request, or slot.idle.timeout. */
  #becomeIdle(held: HeldSlot): void {
    held.idleSince = this.#o.clock.now();
    this.#idle.set(held.slot.allocationId, held);
    bucket(this.#idleByProfile, held.slot.resourceProfile.key).set(held.slot.allocationId, held);
    this.#armIdleTimer();
  }

  #leaveIdle(held: HeldSlot): void {
    held.idleSince = null;
    const { allocationId } = held.slot;
    this.#idle.delete(allocationId);
    const key = held.slot.resourceProfile.key;
    const idle = this.#idleByProfile.get(key);
    idle?.delete(allocationId);
    if (idle?.size === 0) this.#idleByProfile.delete(key);
  }

  #removePending(request: PendingRequest): void {
    this.#pending.delete(request.requestId);
    const key = request.profile.key;
    const same = this.#pendingByProfile.get(key);
    same?.delete(request.requestId);
    if (same?.size === 0) this.#pendingByProfile.delete(key);
  }

  /** Forgets a held slot (it is gone or given back): the declaration no longer counts it. */
  #forget(held: HeldSlot): void {
    if (held.idleSince !== null) this.#leaveIdle(held);
    this.#held.delete(held.slot.allocationId);
    if (held.requested !== null) this.#count(held.requested, -1, true);
  }

  #giveBack(held: HeldSlot, cause: Error): void {
    this.#forget(held);
    this.#o.freeSlot(held.slot, cause);
  }

  #count(profile: ResourceProfile, delta: 1 | -1, letGo = false): void {
    const entry = this.#required.get(profile.key);
    if (entry !== undefined) {
      if ((entry.count += delta) === 0) this.#required.delete(profile.key);
    } else if (delta === 1) {
      this.#required.set(profile.key, { profile, count: 1 });
    }
    this.#o.onRequirementsChanged(delta === 1 || letGo || this.#pending.size === 0);
  }

  /** One timer, due when the longest idle slot has been idle for slot.idle.timeout. */
  #armIdleTimer(): void {
    const oldest = first(this.#idle);
    if (oldest === undefined) return;
    const due = oldest.idleSince! + this.#o.idleSlotTimeoutMs;
    if (this.#idleTimer !== null) {
      if (this.#idleTimer.due <= due) return;
      this.#o.clock.clearTimeout(this.#idleTimer.handle);
    }
    const handle = this.#o.clock.setTimeout(() => this.#releaseIdleSlots(), Math.max(0, due - this.#o.clock.now()));
    this.#idleTimer = { handle, due };
  }

  /** Gives back every slot idle for slot.idle.timeout (Flink's releaseIdleSlots). */
  #releaseIdleSlots(): void {
    this.#idleTimer = null;
    if (this.#closed) return;
    const now = this.#o.clock.now();
    for (const held of [...this.#idle.values()]) {
      if (held.idleSince! + this.#o.idleSlotTimeoutMs > now) break;
      this.#giveBack(
        held,
        new Error(`the job had not used the slot for slot.idle.timeout (${this.#o.idleSlotTimeoutMs} ms)`),
      );
    }
    this.#armIdleTimer();
  }
}

function bucket<K, V>(map: Map<string, Map<K, V>>, key: string): Map<K, V> {
  let entries = map.get(key);
  if (entries === undefined) map.set(key, (entries = new Map()));
  return entries;
}

function first<K, V>(map: Map<K, V> | undefined): V | undefined {
  if (map === undefined) return undefined;
  for (const value of map.values()) return value;
  return undefined;
}
