/**
 * The JobMaster's slot pool (Flink's DeclarativeSlotPool, reduced): the physical slots the job asks
 * for and holds. It is the PhysicalSlotProvider of the slot sharing allocator; what it needs in
 * total (held + pending, by requested profile) is what the JobMaster declares to the
 * ResourceManager. Offered slots are matched to pending requests as Flink does: an offer serves a
 * request for an equal profile, or one for UNKNOWN (the executor's default slot).
 */
import { IllegalStateError } from '../core/errors.js';
import type { AllocationID, ResourceID } from '../core/ids.js';
import { ResourceProfile, type ResourceProfileJSON } from '../core/ResourceProfile.js';
import type { SlotOfferWire } from '../rpc/protocol.js';
import type { PhysicalSlot, PhysicalSlotProvider, PhysicalSlotRequest } from './slotsharing/SharedSlot.js';

interface PendingRequest {
  readonly requestId: string;
  readonly profile: ResourceProfile;
  readonly resolve: (slot: PhysicalSlot) => void;
  readonly reject: (cause: Error) => void;
}

export interface JobSlotPoolOptions {
  /** The total requirement changed: the JobMaster declares it again. */
  readonly onRequirementsChanged: () => void;
  /** Gives a slot back to its TaskExecutor (it frees it and tells the ResourceManager). */
  readonly freeSlot: (slot: PhysicalSlot, cause: Error) => void;
}

export class JobSlotPool implements PhysicalSlotProvider {
  readonly #o: JobSlotPoolOptions;
  readonly #pending = new Map<string, PendingRequest>();
  readonly #held = new Map<AllocationID, { slot: PhysicalSlot; requested: ResourceProfile }>();
  #closed = false;

  constructor(options: JobSlotPoolOptions) {
    this.#o = options;
  }

  get pendingRequests(): number {
    return this.#pending.size;
  }

  get heldSlots(): readonly PhysicalSlot[] {
    return [...this.#held.values()].map((h) => h.slot);
  }

  allocatePhysicalSlot(request: PhysicalSlotRequest): Promise<PhysicalSlot> {
    if (this.#closed) return Promise.reject(new IllegalStateError('the job\'s slot pool is closed', { component: 'JobSlotPool', operation: 'allocatePhysicalSlot', state: 'closed', allowed: ['open'] }));
    return new Promise<PhysicalSlot>((resolve, reject) => {
      this.#pending.set(request.requestId, { requestId: request.requestId, profile: request.resourceProfile, resolve, reject });
      this.#o.onRequirementsChanged();
    });
  }

  cancelSlotRequest(requestId: string, cause: Error): void {
    const pending = this.#pending.get(requestId);
    if (pending === undefined) return;
    this.#pending.delete(requestId);
    pending.reject(cause);
    this.#o.onRequirementsChanged();
  }

  releaseSlot(slot: PhysicalSlot, cause: Error): void {
    if (!this.#held.delete(slot.allocationId)) return;
    this.#o.freeSlot(slot, cause);
    this.#o.onRequirementsChanged();
  }

  /** Slots offered by a TaskExecutor: returns the AllocationIDs accepted (the rest are freed by the executor). */
  offerSlots(resourceId: ResourceID, offers: readonly SlotOfferWire[]): AllocationID[] {
    const accepted: AllocationID[] = [];
    for (const offer of offers) {
      if (this.#held.has(offer.allocationId)) {
        accepted.push(offer.allocationId); // offered again (a retried offer): still ours
        continue;
      }
      const profile = ResourceProfile.fromJSON(offer.resourceProfile as ResourceProfileJSON);
      const request = this.#match(profile);
      if (request === undefined) continue;
      this.#pending.delete(request.requestId);
      const slot: PhysicalSlot = { allocationId: offer.allocationId, resourceId, resourceProfile: profile };
      this.#held.set(offer.allocationId, { slot, requested: request.profile });
      accepted.push(offer.allocationId);
      request.resolve(slot);
    }
    if (accepted.length > 0) this.#o.onRequirementsChanged();
    return accepted;
  }

  /** The slot is gone (its executor freed it, or was lost): forget it without freeing it again. */
  slotLost(allocationId: AllocationID): PhysicalSlot | undefined {
    const held = this.#held.get(allocationId);
    if (held === undefined) return undefined;
    this.#held.delete(allocationId);
    this.#o.onRequirementsChanged();
    return held.slot;
  }

  /** What the job needs now: every pending and held slot, counted by the profile it was asked with. */
  requirements(): Array<{ resourceProfile: ResourceProfileJSON; numberOfRequiredSlots: number }> {
    const counts = new Map<string, { profile: ResourceProfile; count: number }>();
    const add = (profile: ResourceProfile) => {
      const entry = counts.get(profile.key) ?? { profile, count: 0 };
      entry.count++;
      counts.set(profile.key, entry);
    };
    for (const held of this.#held.values()) add(held.requested);
    for (const pending of this.#pending.values()) add(pending.profile);
    return [...counts.values()].map(({ profile, count }) => ({ resourceProfile: profile.toJSON(), numberOfRequiredSlots: count }));
  }

  /** Fails every pending request and gives every held slot back. */
  close(cause: Error): void {
    this.#closed = true;
    for (const pending of [...this.#pending.values()]) pending.reject(cause);
    this.#pending.clear();
    for (const { slot } of [...this.#held.values()]) this.#o.freeSlot(slot, cause);
    this.#held.clear();
  }

  #match(offered: ResourceProfile): PendingRequest | undefined {
    let unknown: PendingRequest | undefined;
    for (const request of this.#pending.values()) {
      if (request.profile.equals(offered)) return request;
      if (unknown === undefined && request.profile.isUnknown()) unknown = request;
    }
    return unknown;
  }
}
