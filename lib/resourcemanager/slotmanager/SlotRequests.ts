/**
 * Imperative slot requests (requestSlot; Flink's SlotManagerImpl's PendingSlotRequests) while they
 * wait, and their timeouts: each fails after slot.request.timeout with the reason it waited. Keyed
 * by the caller's AllocationID, their deadlines too (one DeadlineScheduler, one clock timer for all
 * of them). A request's job is told how it ended (slotRequestFulfilled or slotRequestFailed) here,
 * once.
 */
import type { Clock } from '../../core/clock.js';
import { DeadlineScheduler } from '../../core/DeadlineScheduler.js';
import { IllegalArgumentError, SlotRequestError } from '../../core/errors.js';
import { AllocationID, JobID, type ResourceID } from '../../core/ids.js';
import { ResourceProfile } from '../../core/ResourceProfile.js';
import type { DemandOutcome, ResourceDemand } from './ResourceAllocationStrategy.js';
import type { ResourceEventNotifier } from './ResourceEventNotifier.js';
import type { ResourceSlotRecord } from './TaskManagerRegistration.js';
import type { PlacementPreference } from './TaskManagerTracker.js';
import { describeWaitReason, type WaitReason } from './WaitReason.js';

export interface SlotRequestRecord {
  readonly jobId: JobID;
  readonly allocationId: AllocationID;
  readonly profile: ResourceProfile;
  readonly preference: PlacementPreference | undefined;
  readonly targetAddress: string;
  readonly since: number;
  /** `allocating`: a slot is being asked of an executor for it. */
  state: 'waiting' | 'allocating';
  reason: WaitReason | null;
}

export type SlotRequestFailure = 'timed-out' | 'canceled' | 'suspended' | 'duplicate-request';

/** A request that waits, and why (FineGrainedSlotManager.getPendingRequests). */
export interface SlotRequestInfo {
  readonly kind: 'slot-request';
  readonly jobId: JobID;
  readonly allocationId: AllocationID;
  readonly resourceProfile: ResourceProfile;
  readonly since: number;
  readonly state: 'waiting' | 'allocating';
  readonly reason: WaitReason | null;
  readonly description: string;
}

export interface SlotRequestsOptions {
  readonly clock: Clock;
  /** slot.request.timeout (ms). */
  readonly timeoutMs: number;
  /** Where a request's job hears how it ended. */
  readonly events: Pick<ResourceEventNotifier, 'slotRequestFulfilled' | 'slotRequestFailed'>;
  /** Frees the slot being asked for a request that fails meanwhile. */
  readonly freeSlot: (allocationId: AllocationID) => void;
  /** A request timed out (it has failed, and its job was told). */
  readonly onTimedOut: () => void;
}

/** Refuses a `jobId` that is not a JobID. */
export function checkJobId(jobId: JobID): void {
  if (!JobID.is(jobId))
    throw new IllegalArgumentError('invalid-type', `jobId must be a JobID, got ${String(jobId)}`, {
      argument: 'jobId',
    });
}

/** Refuses a requestSlot whose arguments are not a JobID, an AllocationID and a profile other than ANY. */
export function checkSlotRequest(jobId: JobID, allocationId: AllocationID, profile: ResourceProfile): void {
  checkJobId(jobId);
  if (!AllocationID.is(allocationId))
    throw new IllegalArgumentError(
      'invalid-type',
      `allocationId must be an AllocationID, got ${String(allocationId)}`,
      { argument: 'allocationId' },
    );
  if (!(profile instanceof ResourceProfile) || profile.isAny())
    throw new IllegalArgumentError(
      'invalid-value',
      `profile must be a ResourceProfile other than ANY, got ${String(profile)}`,
      { argument: 'profile' },
    );
}

export class SlotRequests {
  readonly #o: SlotRequestsOptions;
  readonly #requests = new Map<AllocationID, SlotRequestRecord>();
  readonly #deadlines: DeadlineScheduler<AllocationID>;
  /**
   * Waiting requests whose AllocationID a slot report showed held by another job (the only way a
   * waiting request's AllocationID comes to be held): the next check fails them, and looks up no
   * other request's AllocationID in the tracker (a Map of every allocation).
   */
  readonly #heldByAnotherJob = new Set<AllocationID>();

  constructor(options: SlotRequestsOptions) {
    this.#o = options;
    this.#deadlines = new DeadlineScheduler(options.clock, (allocationId) => {
      const request = this.#requests.get(allocationId);
      if (request === undefined) return;
      this.fail(request, 'timed-out', `not fulfilled within slot.request.timeout (${options.timeoutMs} ms)`);
      options.onTimedOut();
    });
  }

  get(allocationId: AllocationID): SlotRequestRecord | undefined {
    return this.#requests.get(allocationId);
  }

  has(allocationId: AllocationID): boolean {
    return this.#requests.has(allocationId);
  }

  ofJob(jobId: JobID): SlotRequestRecord[] {
    return [...this.#requests.values()].filter((r) => r.jobId === jobId);
  }

  all(): SlotRequestRecord[] {
    return [...this.#requests.values()];
  }

  /** A new request, waiting; its timeout starts now. */
  add(
    jobId: JobID,
    allocationId: AllocationID,
    profile: ResourceProfile,
    preference: PlacementPreference | undefined,
    targetAddress: string,
  ): void {
    const since = this.#o.clock.now();
    this.#requests.set(allocationId, {
      jobId,
      allocationId,
      profile,
      preference,
      targetAddress,
      since,
      state: 'waiting',
      reason: null,
    });
    this.#deadlines.schedule(allocationId, since + this.#o.timeoutMs);
  }

  /** The request got slot `index` of `resourceId`: it is gone, its job told. */
  fulfilled(request: SlotRequestRecord, resourceId: ResourceID, index: number): void {
    this.#forget(request);
    this.#o.events.slotRequestFulfilled(request.jobId, request.allocationId, resourceId, index);
  }

  /**
   * The request fails: it is gone, the slot being asked for it (if any) freed, and its job told with
   * an error naming why it waited.
   */
  fail(request: SlotRequestRecord, reason: SlotRequestFailure, message: string): void {
    this.#forget(request);
    if (request.state === 'allocating') this.#o.freeSlot(request.allocationId);
    this.#o.events.slotRequestFailed(request.jobId, request.allocationId, this.#error(request, reason, message));
  }

  #forget(request: SlotRequestRecord): void {
    this.#requests.delete(request.allocationId);
    this.#deadlines.cancel(request.allocationId);
  }

  #error(request: SlotRequestRecord, reason: SlotRequestFailure, message: string): SlotRequestError {
    const why = request.reason === null ? undefined : describeWaitReason(request.reason);
    return new SlotRequestError(
      reason,
      `slot request ${AllocationID.short(request.allocationId)} of job ${JobID.short(request.jobId)} ` +
        `for ${request.profile}: ${message}${why ? `; it waited because ${why}` : ''}`,
      {
        jobId: request.jobId,
        allocationId: request.allocationId,
        ...(why ? { why } : {}),
      },
    );
  }

  /**
   * The slot asked for this request is gone (its executor was lost): it waits again. False if no request has this
   * AllocationID.
   */
  waitAgain(allocationId: AllocationID): boolean {
    const request = this.#requests.get(allocationId);
    if (request === undefined) return false;
    request.state = 'waiting';
    return true;
  }

  /**
   * A slot report of `resourceId` showed these slots allocated: a request for one of them is
   * fulfilled; one whose AllocationID another job holds is failed by the next check.
   */
  answeredBy(slots: readonly ResourceSlotRecord[], resourceId: ResourceID): void {
    for (const slot of slots) {
      const request = this.#requests.get(slot.allocationId!);
      if (request === undefined) continue;
      if (request.jobId === slot.jobId) this.fulfilled(request, resourceId, slot.index);
      else this.#heldByAnotherJob.add(request.allocationId);
    }
  }

  /**
   * The demands of the waiting requests, in the order they were made; first fails each request
   * whose AllocationID a slot report showed held by another job meanwhile (it cannot be used again).
   */
  demands(slots: { getSlot(allocationId: AllocationID): ResourceSlotRecord | undefined }): ResourceDemand[] {
    const demands: ResourceDemand[] = [];
    const held = this.#heldByAnotherJob;
    // Copied first only when a request may fail here (fail() forgets it while the loop runs).
    for (const r of held.size === 0 ? this.#requests.values() : [...this.#requests.values()]) {
      const holder = r.state === 'waiting' && held.has(r.allocationId) ? slots.getSlot(r.allocationId) : undefined;
      if (holder !== undefined) {
        this.fail(
          r,
          'duplicate-request',
          `allocation ${AllocationID.short(r.allocationId)} is held by ` +
            `job ${JobID.short(holder.jobId!)} on ${holder.taskManager.resourceId}`,
        );
        continue;
      }
      // One shape for every demand (no conditional spread): the strategy reads these on every step.
      if (r.state === 'waiting')
        demands.push({
          jobId: r.jobId,
          profile: r.profile,
          count: 1,
          allocationId: r.allocationId,
          preference: r.preference,
        });
    }
    // Set.clear() makes a new table even for an empty set: a check would pay for one every time.
    if (held.size > 0) held.clear();
    return demands;
  }

  /** A check's outcomes: why each waiting request still waits; returns the others (of declared requirements). */
  recordOutcomes(outcomes: readonly DemandOutcome[]): DemandOutcome[] {
    const declared: DemandOutcome[] = [];
    for (const outcome of outcomes) {
      if (outcome.demand.allocationId === undefined) {
        declared.push(outcome);
        continue;
      }
      const request = this.#requests.get(outcome.demand.allocationId);
      if (request !== undefined && request.state === 'waiting') request.reason = outcome.reason ?? null;
    }
    return declared;
  }

  /** Every request, oldest first, and why it waits. */
  infos(): SlotRequestInfo[] {
    return [...this.#requests.values()].map((r) => {
      const description =
        r.state === 'allocating'
          ? 'asking the TaskExecutor'
          : r.reason === null
            ? 'waiting for the next requirement check'
            : describeWaitReason(r.reason);
      return {
        kind: 'slot-request',
        jobId: r.jobId,
        allocationId: r.allocationId,
        resourceProfile: r.profile,
        since: r.since,
        state: r.state,
        reason: r.reason,
        description,
      };
    });
  }

  /** Forgets every deadline (the requests themselves are failed one by one first). */
  clear(): void {
    this.#requests.clear();
    this.#heldByAnotherJob.clear();
    this.#deadlines.clear();
  }
}
