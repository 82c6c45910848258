/**
 * The slot report a TaskExecutor sends the ResourceManager (Flink's SlotReport / SlotStatus): every
 * static slot, free ones with the default slot profile, plus every live dynamic slot. `state` is
 * ours (Flink's SlotStatus says only whether an allocation is present).
 */
import type { AllocationID, JobID, ResourceID, SlotID } from './ids.js';
import type { ResourceProfile } from './ResourceProfile.js';

export type SlotStatusState = 'free' | 'allocated' | 'active' | 'releasing';

export interface SlotStatus {
  readonly slotId: SlotID;
  readonly resourceProfile: ResourceProfile;
  /** null when the slot is free. */
  readonly allocationId: AllocationID | null;
  readonly jobId: JobID | null;
  readonly state: SlotStatusState;
}

export interface SlotReport {
  readonly resourceId: ResourceID;
  readonly slots: readonly SlotStatus[];
}
