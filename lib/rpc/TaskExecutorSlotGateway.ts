/**
 * The slot calls the ResourceManager makes on a TaskExecutor (a part of Flink's
 * TaskExecutorGateway). Only the SlotStatusSyncer calls them. In tests they are in-process doubles;
 * the runtime carries them across threads.
 */
import type { AllocationID, JobID } from '../core/ids.js';
import type { ResourceProfile } from '../core/ResourceProfile.js';

export interface SlotRequest {
  /** A static slot index, or -1 for a dynamic slot (the TaskExecutor picks the index). */
  readonly index: number;
  readonly jobId: JobID;
  readonly allocationId: AllocationID;
  readonly resourceProfile: ResourceProfile;
  /** Where the job's JobMaster can be reached: the TaskExecutor offers the slot there. */
  readonly targetAddress: string;
}

export interface TaskExecutorSlotGateway {
  /**
   * Allocates the slot in the TaskExecutor's table (Flink's TaskExecutorGateway.requestSlot).
   * Resolves on acknowledgement; rejects if the TaskExecutor refuses (a SlotAllocationError, e.g.
   * the index is taken).
   */
  // Function-typed properties (not methods) so that strictFunctionTypes checks what is passed in:
  // a wire gateway taking JSON profiles must not pass for one taking ResourceProfiles.
  readonly requestSlot: (request: SlotRequest) => Promise<void>;
  /** Frees every slot of the job that is allocated but not active (Flink's freeInactiveSlots at job end). */
  readonly freeInactiveSlots: (jobId: JobID) => Promise<void>;
  /**
   * 'transport': every call carries the rpc layer's deadline (callDeadline.ts: it starts when the
   * call's frame has left, not while it waits in our own outbox, and the peer's other frames extend
   * it) and rejects with RpcTimeoutError; the SlotStatusSyncer then adds none. Unset (an in-process
   * double): the syncer keeps one of its own, judged by the same rule.
   */
  readonly deadline?: 'transport';
}
