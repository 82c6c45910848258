/**
 * How the SlotManager gets and gives back workers (Flink's ResourceAllocator / ResourceActions).
 * The ResourceManager implements it over its ResourceManagerDriver (threads, processes); tests use
 * an in-process double. A cluster of fixed TaskExecutors uses NO_RESOURCE_ALLOCATOR.
 */
import type { ResourceID } from '../../core/ids.js';
import type { PendingTaskManagerID } from './PendingTaskManager.js';
import type { WorkerResourceSpec } from './WorkerResourceSpec.js';

export interface ResourceAllocator {
  /** Whether workers can be started and stopped at all. */
  readonly isSupported: boolean;
  /**
   * Starts a worker of `spec`. The TaskExecutor it becomes registers later, naming `id` if it can
   * (so it takes exactly that pending worker's place). False if the worker cannot be started now.
   */
  allocateWorker(id: PendingTaskManagerID, spec: WorkerResourceSpec): boolean;
  /** The pending worker is no longer needed: stop starting it. */
  cancelWorker(id: PendingTaskManagerID): void;
  /** Stops a registered worker that is idle and not needed. It will unregister on its own. */
  releaseWorker(resourceId: ResourceID, reason: string): void;
}

export const NO_RESOURCE_ALLOCATOR: ResourceAllocator = Object.freeze({
  isSupported: false,
  allocateWorker: () => false,
  cancelWorker: () => {},
  releaseWorker: () => {},
});
