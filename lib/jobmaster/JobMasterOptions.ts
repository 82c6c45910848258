/**
 * What a JobMaster is made from: its job, where TaskExecutors reach it, the options, the clock, the
 * ResourceManager and TaskExecutors as it may call them, and its listeners.
 */
import type { InspectionEvent } from 'xstate';
import type { Clock } from '../core/clock.js';
import type { JobID, ResourceID } from '../core/ids.js';
import type { RuntimeLog } from '../core/Logger.js';
import type { ResolvedOptions } from '../core/options.js';
import type { ResourceManagerGateway, TaskExecutorGateway } from '../rpc/gateways.js';
import type { ResultPartitionWire } from '../rpc/protocol.js';
import type { JobGraph } from './JobGraph.js';
import type { JobEvent } from './JobResult.js';
import type { SlotAssignment } from './SlotAssignment.js';

export interface JobMasterOptions {
  readonly jobId: JobID;
  readonly jobGraph: JobGraph;
  /** Where TaskExecutors reach this JobMaster (the ResourceManager serves it there). */
  readonly address: string;
  readonly options: ResolvedOptions;
  readonly clock?: Clock;
  /**
   * Numbers in [0, 1), one per failure: the jitter of the exponential-delay restart strategy
   * (default Math.random; a test injects its own to make the jitter deterministic).
   */
  readonly random?: () => number;
  /** The ResourceManager, as this JobMaster may call it. */
  readonly resourceManager: Pick<
    ResourceManagerGateway,
    'registerJobMaster' | 'declareRequiredResources' | 'disconnectJobMaster' | 'notifyNewBlockedNodes'
  >;
  /**
   * The gateway of a TaskExecutor the JobMaster can reach now (its link is open), else undefined: a
   * TaskExecutor registers with the JobMaster only while this has it.
   */
  readonly taskExecutor: (resourceId: ResourceID) => TaskExecutorGateway | undefined;
  /** Why this job's slot requests wait (the SlotManager's reasons), for timeout messages. */
  readonly reasonFor?: () => string;
  readonly onEvent?: (event: JobEvent) => void;
  readonly onSlotAssigned?: (assignment: SlotAssignment) => void;
  readonly inspect?: (event: InspectionEvent) => void;
  /** The JobMaster's messages, with the subtask and TaskExecutor they concern and their level. */
  readonly log?: RuntimeLog;
  /**
   * Subtasks that finished under an earlier leader (its job recovered with its progress, Flink 1.20's batch job
   * recovery): they start finished with their output or partition, and only the others run.
   */
  readonly restored?: readonly FinishedSubtask[];
  /** Each subtask that finishes, with what it produced (what a job store keeps for a recovery). */
  readonly onSubtaskFinished?: (finished: FinishedSubtask) => void;
}

/** A finished subtask as a recovery needs it: a sink's output, a producer's partition (where its consumers read). */
export interface FinishedSubtask {
  readonly vertexId: string;
  readonly subtaskIndex: number;
  readonly output: unknown;
  readonly partition: ResultPartitionWire | null;
}
