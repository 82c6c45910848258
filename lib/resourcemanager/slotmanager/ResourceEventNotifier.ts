/**
 * Tells the ResourceEventListener what happened, each call handed to `execute` (the
 * ResourceManager's mailbox: never synchronously from inside the SlotManager). A listener that
 * throws is logged, never allowed to break the SlotManager (or its statechart).
 */
import type { SlotRequestError } from '../../core/errors.js';
import type { AllocationID, JobID, ResourceID } from '../../core/ids.js';
import type { ResourceEventListener, WaitingRequirement } from './ResourceEventListener.js';
import type { ReadonlyResourceTracker } from './ResourceTracker.js';

export class ResourceEventNotifier {
  constructor(
    private readonly listener: ResourceEventListener,
    private readonly execute: (task: () => void) => void,
    private readonly resources: ReadonlyResourceTracker,
    private readonly log: (message: string) => void,
  ) {}

  /** With what the job has acquired now (read at once, not when the listener runs). */
  notEnoughResourcesAvailable(jobId: JobID, waiting: readonly WaitingRequirement[]): void {
    const acquired = this.resources.getAcquiredResources(jobId);
    this.#notify((l) => l.notEnoughResourcesAvailable?.(jobId, acquired, waiting));
  }

  resourceRequirementsTimedOut(jobId: JobID, waiting: readonly WaitingRequirement[], timeoutMs: number): void {
    this.log(
      `job ${jobId} has waited ${timeoutMs} ms ` +
        `for ${waiting.map((r) => `${r.missing} × ${r.resourceProfile}`).join(', ')}`,
    );
    this.#notify((l) => l.resourceRequirementsTimedOut?.(jobId, waiting));
  }

  slotRequestFulfilled(jobId: JobID, allocationId: AllocationID, resourceId: ResourceID, index: number): void {
    this.#notify((l) => l.slotRequestFulfilled?.(jobId, allocationId, resourceId, index));
  }

  slotRequestFailed(jobId: JobID, allocationId: AllocationID, error: SlotRequestError): void {
    this.#notify((l) => l.slotRequestFailed?.(jobId, allocationId, error));
  }

  slotsLost(jobId: JobID, allocationIds: readonly AllocationID[], resourceId: ResourceID, cause: string): void {
    this.#notify((l) => l.slotsLost?.(jobId, allocationIds, resourceId, cause));
  }

  #notify(call: (listener: ResourceEventListener) => void): void {
    this.execute(() => {
      try {
        call(this.listener);
      } catch (error) {
        this.log(
          `a ResourceEventListener callback ` +
            `threw: ${error instanceof Error ? `${error.name}: ${error.message}` : String(error)}`,
        );
      }
    });
  }
}
