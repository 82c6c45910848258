/**
 * What the SlotManager tells the rest of the ResourceManager about jobs (Flink's
 * ResourceEventListener, widened): every callback is optional, runs on the SlotManager's mailbox,
 * and must not call back into the SlotManager synchronously.
 */
import type { SlotRequestError } from '../../core/errors.js';
import type { AllocationID, JobID, ResourceID } from '../../core/ids.js';
import type { ResourceProfile } from '../../core/ResourceProfile.js';
import type { ResourceRequirement } from './ResourceRequirement.js';
import type { WaitReason } from './WaitReason.js';

/** One requirement of a job that is not met, and why. */
export interface WaitingRequirement {
  readonly resourceProfile: ResourceProfile;
  /** Slots still missing (on their way to pending workers, or not placeable). */
  readonly missing: number;
  /** Of those, slots that will go to pending or new workers. */
  readonly onWorkers: number;
  readonly reason: WaitReason;
  /** When the job started waiting (clock ms). */
  readonly since: number;
}

export interface ResourceEventListener {
  /**
   * The job's requirements cannot be met now (Flink: notifyNotEnoughResourcesAvailable); sent when the reason changes.
   */
  notEnoughResourcesAvailable?(
    jobId: JobID,
    acquired: readonly ResourceRequirement[],
    waiting: readonly WaitingRequirement[],
  ): void;
  /** The job has waited longer than slot.request.timeout for its declared requirements. */
  resourceRequirementsTimedOut?(jobId: JobID, waiting: readonly WaitingRequirement[]): void;
  /** An imperative request (requestSlot) got its slot: `index` is the static slot, or -1 for a dynamic one. */
  slotRequestFulfilled?(jobId: JobID, allocationId: AllocationID, resourceId: ResourceID, index: number): void;
  /** An imperative request failed: timed out (with why it waited), canceled, or the SlotManager was suspended. */
  slotRequestFailed?(jobId: JobID, allocationId: AllocationID, error: SlotRequestError): void;
  /** A TaskExecutor was lost: these slots of the job are gone (their tasks with them). */
  slotsLost?(jobId: JobID, allocationIds: readonly AllocationID[], resourceId: ResourceID, cause: string): void;
}
