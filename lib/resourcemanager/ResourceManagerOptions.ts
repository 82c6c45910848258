/**
 * What a ResourceManager is made from (ResourceManager.ts), and what it tells about its TaskExecutors.
 */
import type { InspectionEvent } from 'xstate';
import type { Clock } from '../core/clock.js';
import type { ResourceID } from '../core/ids.js';
import type { RuntimeLog } from '../core/Logger.js';
import type { ResolvedOptions, SlotwiseOptions } from '../core/options.js';
import type { ResourceManagerDriver } from './ResourceManagerDriver.js';
import type { ResourceEventListener } from './slotmanager/ResourceEventListener.js';

export interface ResourceManagerOptions {
  readonly configuration?: SlotwiseOptions | ResolvedOptions;
  readonly clock?: Clock;
  /** Starts and stops workers. */
  readonly driver: ResourceManagerDriver;
  /**
   * false: a fixed set of workers started by the caller (the SlotManager asks for none); one that
   * is gone for good after it registered is replaced through the driver. Default true.
   */
  readonly workersOnDemand?: boolean;
  /** Told what the SlotManager tells about jobs (slots lost, requirements waiting, ...). */
  readonly listener?: ResourceEventListener;
  /** Its messages, with the TaskExecutor they concern and their level (a lost TaskExecutor is `warn`). */
  readonly log?: RuntimeLog;
  /** A registered TaskExecutor was lost (an idle release or the cluster closing is no loss); for metrics. */
  readonly onTaskExecutorLost?: (resourceId: ResourceID, cause: TaskExecutorLossCause, detail: string) => void;
  /** Receives every XState inspection event of the SlotManager's statechart. */
  readonly inspect?: (event: InspectionEvent) => void;
}

/**
 * For waits on TaskExecutors (MiniCluster.start): `registered`, one entered the SlotManager with its slots;
 * `worker-ended`, a worker ended.
 */
export interface TaskExecutorRegistrationEvent {
  readonly type: 'registered' | 'worker-ended';
  readonly resourceId: ResourceID;
}

/** Why a registered TaskExecutor was lost: its worker ended, it went silent, said goodbye, or was refused. */
export type TaskExecutorLossCause = 'worker-exited' | 'heartbeat-timeout' | 'disconnected' | 'rejected';
