/**
 * The TaskExecutors registered with a JobMaster (Flink's JobMaster.registeredTaskManagers and the
 * set DeclarativeSlotPoolService keeps): a TaskExecutor registers when it connects for the job
 * (JobTable.connect, Flink's JobLeaderService), the JobMaster takes slots only from registered ones
 * (Flink's DeclarativeSlotPoolService.offerSlots ignores an unknown TaskManager's), and forgets one
 * that lets go of the job (disconnectTaskManager) or that it can no longer reach (Flink: the
 * TaskManager's heartbeat timed out). A registration is accepted only while the JobMaster can reach
 * that TaskExecutor (Flink's JobMaster connects to the TaskManager's address first): one the
 * ResourceManager's side has already dropped is refused.
 *
 * Also the checks at the door of the calls TaskExecutors make about themselves: a malformed one
 * throws an IllegalArgumentError naming the argument, before anything changes.
 */
import { IllegalArgumentError } from '../core/errors.js';
import { AllocationID, JobID, ResourceID } from '../core/ids.js';
import { ResourceProfile } from '../core/ResourceProfile.js';
import type { JobMasterRegistrationResponse, SlotOfferWire } from '../rpc/protocol.js';

export class RegisteredTaskManagers {
  readonly #registered = new Set<ResourceID>();
  readonly #reachable: (resourceId: ResourceID) => boolean;

  /** `reachable`: whether the JobMaster can call that TaskExecutor now (its link is open). */
  constructor(reachable: (resourceId: ResourceID) => boolean) {
    this.#reachable = reachable;
  }

  /** Registers a TaskExecutor the JobMaster can reach (again: still registered); refuses one it cannot. */
  register(resourceId: ResourceID): JobMasterRegistrationResponse {
    if (!this.#reachable(resourceId))
      return { kind: 'refused', reason: `the JobMaster cannot reach TaskExecutor ${resourceId}: it is not connected` };
    this.#registered.add(resourceId);
    return { kind: 'accepted' };
  }

  has(resourceId: ResourceID): boolean {
    return this.#registered.has(resourceId);
  }

  /** Forgets a TaskExecutor; returns whether it was registered. */
  release(resourceId: ResourceID): boolean {
    return this.#registered.delete(resourceId);
  }

  get size(): number {
    return this.#registered.size;
  }
}

/** registerTaskManager's arguments: a JobID and a ResourceID. */
export function checkRegistration(jobId: unknown, resourceId: unknown): void {
  if (!JobID.is(jobId))
    throw new IllegalArgumentError(
      'invalid-value',
      `registerTaskManager: jobId must be a JobID, got ${String(jobId)}`,
      {
        argument: 'jobId',
      },
    );
  checkResourceId('registerTaskManager', resourceId);
}

/** disconnectTaskManager's arguments: a ResourceID and a string cause. */
export function checkDisconnect(resourceId: unknown, cause: unknown): void {
  checkResourceId('disconnectTaskManager', resourceId);
  if (typeof cause !== 'string')
    throw new IllegalArgumentError(
      'invalid-type',
      `disconnectTaskManager: cause must be a string, got ${cause === null ? 'null' : typeof cause}`,
      { argument: 'cause' },
    );
}

/**
 * offerSlots' arguments: a ResourceID and an array of offers, each with an AllocationID, a slot
 * index (an integer >= -1: -1 for a dynamic slot) and a resource profile. Returns the profiles, read.
 */
export function checkSlotOffers(resourceId: unknown, offers: unknown): ResourceProfile[] {
  checkResourceId('offerSlots', resourceId);
  if (!Array.isArray(offers))
    throw new IllegalArgumentError(
      'invalid-type',
      `offerSlots: offers must be an array of slot offers, got ${offers === null ? 'null' : typeof offers}`,
      { argument: 'offers' },
    );
  return offers.map((offer: Partial<SlotOfferWire> | null, i) => {
    const argument = `offers[${i}]`;
    if (typeof offer !== 'object' || offer === null)
      throw new IllegalArgumentError('invalid-type', `offerSlots: ${argument} must be a slot offer object`, {
        argument,
      });
    if (!AllocationID.is(offer.allocationId))
      throw new IllegalArgumentError(
        'invalid-value',
        `offerSlots: ${argument}.allocationId must be an AllocationID, got ${String(offer.allocationId)}`,
        { argument: `${argument}.allocationId` },
      );
    if (!Number.isSafeInteger(offer.index) || (offer.index as number) < -1)
      throw new IllegalArgumentError(
        'invalid-value',
        `offerSlots: ${argument}.index must be an integer >= -1, got ${String(offer.index)}`,
        { argument: `${argument}.index` },
      );
    try {
      return ResourceProfile.fromJSON(offer.resourceProfile);
    } catch (error) {
      throw new IllegalArgumentError(
        'invalid-value',
        `offerSlots: ${argument}.resourceProfile is not a resource profile: ${(error as Error).message}`,
        { argument: `${argument}.resourceProfile` },
      );
    }
  });
}

function checkResourceId(operation: string, resourceId: unknown): void {
  if (!ResourceID.is(resourceId))
    throw new IllegalArgumentError(
      'invalid-value',
      `${operation}: resourceId must be a ResourceID, got ${String(resourceId)}`,
      { argument: 'resourceId' },
    );
}
