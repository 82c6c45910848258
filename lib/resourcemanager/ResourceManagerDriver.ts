/**
 * ResourceManagerDriver (Flink's ResourceManagerDriver): how the ResourceManager gets
 * workers. The default starts each TaskExecutor on a worker thread of this process; the process
 * driver starts each in a child process (hard memory isolation); a remote or Kubernetes driver
 * would implement the same interface.
 */
import type { ResourceID } from '../core/ids.js';
import type { JobMasterGateway, ResourceManagerGateway, TaskExecutorGateway } from '../rpc/gateways.js';
import type { MainThreadExecutor } from '../rpc/MainThreadExecutor.js';
import type { PendingTaskManagerID } from './slotmanager/PendingTaskManager.js';
import type { WorkerResourceSpec } from './slotmanager/WorkerResourceSpec.js';

/** What the ResourceManager gives its driver. */
export interface ResourceManagerDriverContext {
  /** The ResourceManager's mailbox: whatever a worker calls on the main thread runs there. */
  readonly mailbox: MainThreadExecutor;
  /** A worker ended (exit, error, crash, or after release): reported at once, whatever the cause. */
  onWorkerTerminated(resourceId: ResourceID, reason: string): void;
  /** The ResourceManager as the worker `resourceId` may call it (calls are checked against that id). */
  resourceManagerGateway(resourceId: ResourceID): ResourceManagerGateway;
  /** The JobMaster at `address`, to serve to workers that connect to it; undefined if there is none. */
  jobMasterGateway(address: string): JobMasterGateway | undefined;
  /**
   * `listener` is told each address whose JobMaster is withdrawn (its job ended a while ago): a worker's Link lets go
   * of the channels it served it on. Returns an unsubscribe.
   */
  onJobMasterWithdrawn?(listener: (address: string) => void): () => void;
}

export interface WorkerInfo {
  readonly resourceId: ResourceID;
  readonly pendingWorkerId: PendingTaskManagerID | null;
  readonly spec: WorkerResourceSpec;
  readonly startedAt: number;
  /** 'starting' until it registers (the ResourceManager says so), then 'running'; 'stopping' once released. */
  state: 'starting' | 'running' | 'stopping';
}

export interface ResourceManagerDriver {
  readonly mode: 'thread' | 'process';
  /**
   * false for a driver that cannot start workers (a standalone cluster: TaskManagers start
   * themselves): a worker gone for good is not replaced through it. Default true.
   */
  readonly canStartWorkers?: boolean;
  start(context: ResourceManagerDriverContext): void;
  /**
   * Starts a TaskExecutor of `spec` (asynchronously; it registers when ready) and returns its
   * ResourceID. Starts may be delayed when workers keep failing to start
   * (resourcemanager.start-worker.max-failure-rate).
   */
  requestResource(spec: WorkerResourceSpec, pendingWorkerId: PendingTaskManagerID | null): ResourceID;
  /** Stops a worker: a graceful shutdown first, a forced terminate after a deadline. */
  releaseResource(resourceId: ResourceID, reason: string): void;
  /** The worker started for a pending worker that is no longer needed (none if it already registered). */
  cancelPendingWorker(pendingWorkerId: PendingTaskManagerID): void;
  /** Marks a worker registered (its start succeeded). */
  markRegistered(resourceId: ResourceID): void;
  /** The TaskExecutor of a live worker, connected. */
  taskExecutorGateway(resourceId: ResourceID): TaskExecutorGateway | undefined;
  workers(): readonly WorkerInfo[];
  /** Stops every worker; resolves when all have ended (bounded by a deadline). */
  close(): Promise<void>;
}
