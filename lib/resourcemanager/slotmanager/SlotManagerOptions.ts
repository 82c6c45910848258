/**
 * What a FineGrainedSlotManager is built from (SlotManagerOptions) and the shapes of what it
 * answers: a registration's result, and a request that waits (getPendingRequests).
 */
import type { InspectionEvent } from 'xstate';
import type { Clock } from '../../core/clock.js';
import type { ResolvedOptions, SlotwiseOptions } from '../../core/options.js';
import type { PendingTaskManagerID } from './PendingTaskManager.js';
import type { ResourceAllocator } from './ResourceAllocator.js';
import type { ResourceEventListener } from './ResourceEventListener.js';
import type { SlotRequestInfo } from './SlotRequests.js';
import type { TaskManagerInfo } from './TaskManagerRegistration.js';
import type { RequirementInfo } from './WaitingJobs.js';
import type { WorkerResourceSpec } from './WorkerResourceSpec.js';

export interface SlotManagerOptions {
  /** Flink-named options; see docs/configuration.md. */
  readonly configuration?: SlotwiseOptions | ResolvedOptions;
  /** The shape of workers that can be started; default: the TaskExecutor options. null: unknown. */
  readonly workerSpec?: WorkerResourceSpec | null;
  /** Default NO_RESOURCE_ALLOCATOR: a fixed set of TaskExecutors. */
  readonly allocator?: ResourceAllocator;
  readonly listener?: ResourceEventListener;
  readonly clock?: Clock;
  /** Where listener calls and RPC completions run (the ResourceManager's mailbox); default queueMicrotask. */
  readonly execute?: (task: () => void) => void;
  readonly inspect?: (event: InspectionEvent) => void;
  readonly log?: (message: string) => void;
}

export interface TaskManagerRegistrationRequest extends TaskManagerInfo {
  /** The pending worker this executor was started for, if the driver knows it. */
  readonly pendingWorkerId?: PendingTaskManagerID;
}

export type RegistrationResult =
  | { readonly kind: 'registered'; readonly replacedPendingWorker?: PendingTaskManagerID }
  /** Already registered: the report was applied as a slot report. */
  | { readonly kind: 'ignored' }
  /** Over the cluster's maxima (Flink: REJECTED); the caller should stop the worker. */
  | { readonly kind: 'rejected'; readonly reason: string };

/** A request that waits, and why (getPendingRequests). */
export type PendingRequestInfo = SlotRequestInfo | RequirementInfo;
