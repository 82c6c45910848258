/**
 * What a job tells its listeners: a JobEvent at every change of its status or of an attempt's state while it runs,
 * and its JobResult (Flink's JobResult) once it ends; with the form an error takes in both.
 */
import type { AllocationID, ExecutionAttemptID, JobID, ResourceID } from '../core/ids.js';
import { serializeError } from '../rpc/errorTransfer.js';
import type { ExecutionState, SerializedError } from '../rpc/protocol.js';
import type { JobStatus } from '../../machines/jobStatus.machine.js';

/**
 * What a subtask waits for before it deploys, each wait bounded: its slot (`slot.request.timeout`: the job fails with
 * the SlotManager's reason), its producers' outputs (their own attempts' bounds), or the job's pending restart (its
 * restart strategy's delay; it deploys with the restart).
 */
export type TaskWait = 'slot' | 'inputs' | 'restart';

export type JobEvent =
  | { readonly type: 'status'; readonly status: JobStatus; readonly cause: string | null; readonly timestamp: number }
  /**
   * The adaptive scheduler decided a vertex's parallelism (a source's as the job starts, any other's once its
   * producers finished), from `bytes` its producers produced; `reason` says how, in words.
   */
  | {
      readonly type: 'parallelism';
      readonly vertexId: string;
      readonly parallelism: number;
      readonly bytes: number;
      readonly reason: string;
      readonly timestamp: number;
    }
  | {
      readonly type: 'task';
      readonly vertexId: string;
      readonly subtaskIndex: number;
      readonly attemptNumber: number;
      readonly executionAttemptId: ExecutionAttemptID;
      readonly state: ExecutionState | 'created' | 'scheduled';
      readonly resourceId: ResourceID | null;
      readonly allocationId: AllocationID | null;
      readonly error: SerializedError | null;
      readonly timestamp: number;
      /**
       * With state 'scheduled': what it waits for now. A subtask is scheduled waiting for its slot; one whose slot came
       * and that cannot deploy yet tells so again, with its slot and what it waits for then. With state 'created'
       * (under region scheduling, a subtask sent back to wait when an input it was to read is lost): 'inputs', without
       * a slot.
       */
      readonly waitingFor?: TaskWait;
      /**
       * True for a speculative attempt running beside the subtask's current one (execution.batch.speculative.*):
       * the first of them to finish is the subtask's; the others end canceled.
       */
      readonly speculative?: true;
    };

export interface JobResult {
  readonly jobId: JobID;
  readonly jobName: string;
  readonly status: 'finished' | 'failed' | 'canceled';
  /** With 'finished': each sink vertex's outputs, by subtask index. */
  readonly outputs: Readonly<Record<string, unknown[]>>;
  /** With 'failed': the error that ended it (the last task failure, or why slots never came). */
  readonly error: SerializedError | null;
  readonly restarts: number;
  readonly durationMs: number;
}

/**
 * An error as the job's result and events carry it: rpc's wire form; one that arrived serialized (a task's failure)
 * stays as it came.
 */
export function jobErrorOf(error: unknown): SerializedError {
  if (!(error instanceof Error) && typeof error === 'object' && error !== null && 'message' in error)
    return error as SerializedError;
  return serializeError(error);
}
