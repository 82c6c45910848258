/**
 * What the REST server needs from a cluster (types only). `startRestServer({ target })` serves any
 * implementation: `miniClusterTarget(cluster)` for an in-process MiniCluster, and a session
 * cluster's JobManager over NATS. Everything here is plain data that survives `JSON.stringify`
 * (IDs are strings, amounts numbers), every method is async so that a target may sit behind a
 * transport, and every refusal is a SlotwiseError (`_tag`, `reason`, `message`) that the server
 * turns into a typed error body:
 *
 * - an unknown job: `undefined` from the lookups, `IllegalArgumentError` from `cancelJob` (404);
 * - a bad spec or task module: `JobGraphError` from `submitJob` (400);
 * - uploaded code whose bytes do not hash to its `sha256`: `IllegalArgumentError` from
 *   `storeTaskCode` (400);
 * - a target that is closing: `IllegalStateError` (503).
 *
 * Stable: the `cluster` branch implements it for the NATS JobManager. Change it only additively.
 */
import type { ClusterOverview } from '../ClusterOverview.js';
import type { JobID } from '../core/ids.js';
import type { LogRecord } from '../core/Logger.js';
import type { JobSummary } from '../dispatcher/Dispatcher.js';
import type { JobExceptionHistory } from '../jobmaster/ExceptionHistory.js';
import type { JobGraphSpec } from '../jobmaster/JobGraph.js';
import type { JobEvent, JobResult } from '../jobmaster/JobMaster.js';
import type { JobStatus } from '../../machines/jobStatus.machine.js';

/** One task module as a client uploads it: an ES module bundled into one file (its imports inlined). */
export interface TaskCodeUpload {
  /** The client's name for it (the module's file name, e.g. `square.mjs`): for messages and logs only. */
  readonly name: string;
  /** The module's source text (UTF-8). */
  readonly code: string;
  /** Lowercase hex SHA-256 of the UTF-8 bytes of `code`; the target refuses code that does not match. */
  readonly sha256: string;
}

/** Where stored task code can be loaded from by the target's TaskExecutors (and its task module checker). */
export interface StoredTaskCode {
  readonly sha256: string;
  /**
   * What to put in a vertex's `taskModule`: a `file:` URL of the cached copy for a MiniCluster, or
   * whatever URL the target's TaskExecutors resolve (a session cluster's blob store).
   */
  readonly taskModule: string;
}

/** One subtask's current attempt. */
export interface TaskDetails {
  readonly vertexId: string;
  readonly subtaskIndex: number;
  readonly attemptNumber: number;
  /**
   * `scheduled` (waiting for its slot or inputs), then `deploying`, `initializing`, `running`, `finished`, `failed`,
   * `canceled`.
   */
  readonly state: string;
  /** The TaskExecutor it runs or ran on (kept after it ended), null when it had none yet. */
  readonly resourceId: string | null;
  readonly allocationId: string | null;
  /** Epoch ms it started deploying, -1 before. */
  readonly startTime: number;
  /** Epoch ms it ended, -1 while it has not. */
  readonly endTime: number;
  /**
   * Speculative attempts running beside it (execution.batch.speculative.*; Flink's other-concurrent-attempts);
   * absent when none runs.
   */
  readonly otherConcurrentAttempts?: ReadonlyArray<
    Omit<TaskDetails, 'vertexId' | 'subtaskIndex' | 'otherConcurrentAttempts'>
  >;
}

export interface VertexDetails {
  readonly id: string;
  /** -1 while the adaptive scheduler has not decided it (Flink's PARALLELISM_DEFAULT). */
  readonly parallelism: number;
  readonly slotSharingGroup: string;
  /** When the adaptive scheduler decided the parallelism: from how many bytes its producers produced, and why. */
  readonly parallelismDecision?: { readonly bytes: number; readonly reason: string };
}

/** An edge of the job graph: `to` consumes what `from` produces. */
export interface EdgeDetails {
  readonly from: string;
  readonly to: string;
  readonly pattern: 'pointwise' | 'all-to-all' | 'hash';
}

/** A job now (Flink's JobDetailsInfo, in our names; the server renders Flink's keys). */
export interface JobDetails {
  readonly jobId: JobID;
  readonly name: string;
  readonly status: JobStatus;
  /** Epoch ms of submission (the `created` status). */
  readonly startTime: number;
  /** Epoch ms the job ended, or null while it has not. */
  readonly endTime: number | null;
  readonly restarts: number;
  readonly vertices: readonly VertexDetails[];
  readonly edges: readonly EdgeDetails[];
  /** Every subtask's current attempt, by vertex (in topological order) then subtask index. */
  readonly tasks: readonly TaskDetails[];
}

/** A job event with its place in the job's event log (0, 1, 2, …). */
export type SequencedJobEvent = JobEvent & { readonly seq: number };

/** A page of a job's event log, from a sequence number on. */
export interface JobEventPage {
  /** The events with `seq ≥ from`, oldest first, at most the page limit. */
  readonly events: readonly SequencedJobEvent[];
  /** The `from` of the next page: the last event's seq + 1 (or `from` when there was none). */
  readonly next: number;
  /** The oldest seq still kept (a bounded log drops the oldest task events first; status events stay). */
  readonly first: number;
  /** The job has ended and `next` is past its last event: nothing more will come. */
  readonly complete: boolean;
  /**
   * This log's id: another one for the same job means another log — a new leader recovered the job and numbers its
   * events from 0 again.
   */
  readonly log: string;
}

/** A log record a TaskManager forwarded, numbered in the log it is kept in, with when it was logged (epoch ms). */
export interface ForwardedRecord extends LogRecord {
  readonly seq: number;
  readonly time: number;
}

/** A page of a kept log: the records from `from` on, where the next page starts, the oldest seq still kept. */
export interface LogPage {
  readonly records: readonly ForwardedRecord[];
  readonly next: number;
  readonly first: number;
}

export interface RestTarget {
  /** Validates and stores one task module, content-addressed by its SHA-256; storing the same code again is a no-op. */
  storeTaskCode(upload: TaskCodeUpload): Promise<StoredTaskCode>;
  /** Validates and starts a job whose task modules are `taskModule` values from `storeTaskCode`. */
  submitJob(spec: JobGraphSpec): Promise<JobID>;
  /** Running jobs and the ended ones the job store still keeps. */
  listJobs(): Promise<readonly JobSummary[]>;
  /** A job now, or undefined for a job this cluster does not know (or no longer keeps). */
  jobDetails(jobId: JobID): Promise<JobDetails | undefined>;
  /** The job's result once it ended; null while it runs; undefined for an unknown job. */
  jobResult(jobId: JobID): Promise<JobResult | null | undefined>;
  /**
   * The job's failures, root cause first then every failed attempt, newest first (kept after it ended, while it is
   * listed); undefined for an unknown job.
   */
  jobExceptions(jobId: JobID): Promise<JobExceptionHistory | undefined>;
  /** The job's events from `from` on (at most `limit`); undefined for an unknown job. */
  jobEvents(jobId: JobID, from: number, limit: number): Promise<JobEventPage | undefined>;
  /**
   * Cancels a job (IllegalArgumentError for an unknown one); resolves once the cancel was taken, not when the job
   * ended.
   */
  cancelJob(jobId: JobID): Promise<void>;
  /** TaskExecutors with their slots, pending requests and why they wait, jobs. */
  overview(): Promise<ClusterOverview>;
  /**
   * The log records of a job from `from` on (at most `limit`): what its tasks logged, as a session cluster's
   * TaskManagers forward them; undefined for an unknown job. A target without it (a MiniCluster, whose records go to
   * its logger) answers 404 on `GET /jobs/:id/logs`.
   */
  jobLogs?(jobId: JobID, from: number, limit: number): Promise<LogPage | undefined>;
  /** A TaskManager's forwarded records from `from` on; undefined when none came from it. */
  taskManagerLogs?(resourceId: string, from: number, limit: number): Promise<LogPage | undefined>;
}
