/**
 * What stays of an ended job (Flink's ArchivedExecutionGraph inside an ExecutionGraphInfo): the Dispatcher keeps
 * this, not the JobMaster, for as long as `jobstore.expiration-time` and `jobstore.max-capacity` say. Overviews, the
 * REST API and the dashboard read a running job's JobMaster and an ended job's archive through the same
 * {@link JobView}.
 *
 * Why: a JobMaster holds its slot pool, its statecharts, its mailbox, its scheduling and every closure between them —
 * ~20 KB for a job of one subtask, ~1.4 MB for one of 1,000 (`bench/endedJobMemory.ts`, the main heap after gc per
 * ended job). The archive holds the job's graph and the figures taken as it ended (its subtasks' attempts, times,
 * failures, parallelism decisions): ~5 KB and ~300 KB with the job's result and client.
 */
import type { JobExceptionHistory } from './ExceptionHistory.js';
import type { ExecutionSummary } from './ExecutionAttempts.js';
import type { JobGraph } from './JobGraph.js';
import type { JobMaster } from './JobMaster.js';
import type { ParallelismDecision } from './adaptivebatch/VertexParallelismDecider.js';

/** A job as overviews read it: its JobMaster while it runs, its {@link ArchivedJob} once it ended. */
export interface JobView {
  readonly jobGraph: JobGraph;
  /** A vertex's parallelism: null while the adaptive scheduler has not decided it (and for no such vertex). */
  parallelismOf(vertexId: string): number | null;
  /** Per subtask: its current (last) attempt, its ended ones and its speculative ones. */
  executions(): readonly ExecutionSummary[];
  /** When the job was created and when it ended: epoch ms, -1 before. */
  times(): { readonly startTime: number; readonly endTime: number };
  parallelismDecisions(): readonly ParallelismDecision[];
  /** The job's failures, newest first. */
  exceptionHistory(): JobExceptionHistory;
  /** How many times the job restarted. */
  readonly restarts: number;
  /** The session ID of the job's status statechart (the inspector's and the dashboard's name for it). */
  readonly statusActorId: string;
}

/** A running job's {@link JobView}: what its JobMaster says now. */
export function liveJobView(master: JobMaster): JobView {
  return {
    jobGraph: master.jobGraph,
    parallelismOf: (vertexId) => master.graph.parallelismOf(vertexId),
    executions: () => master.executions(),
    times: () => master.times(),
    parallelismDecisions: () => master.parallelismDecisions(),
    exceptionHistory: () => master.exceptionHistory(),
    get restarts() {
      return master.statusActor.getSnapshot().context.restarts;
    },
    statusActorId: master.statusActor.sessionId,
  };
}

/** An ended job's {@link JobView}: figures taken once, when it ended. */
export class ArchivedJob implements JobView {
  readonly jobGraph: JobGraph;
  readonly restarts: number;
  readonly statusActorId: string;
  readonly #parallelism: ReadonlyMap<string, number | null>;
  readonly #executions: readonly ExecutionSummary[];
  readonly #times: { readonly startTime: number; readonly endTime: number };
  readonly #decisions: readonly ParallelismDecision[];
  readonly #exceptions: JobExceptionHistory;

  constructor(job: JobView) {
    this.jobGraph = job.jobGraph;
    this.restarts = job.restarts;
    this.statusActorId = job.statusActorId;
    this.#parallelism = new Map(job.jobGraph.vertices.map((v) => [v.id, job.parallelismOf(v.id)]));
    this.#executions = Object.freeze([...job.executions()]);
    this.#times = Object.freeze({ ...job.times() });
    this.#decisions = Object.freeze([...job.parallelismDecisions()]);
    this.#exceptions = job.exceptionHistory();
  }

  parallelismOf(vertexId: string): number | null {
    return this.#parallelism.get(vertexId) ?? null;
  }

  executions(): readonly ExecutionSummary[] {
    return this.#executions;
  }

  times(): { readonly startTime: number; readonly endTime: number } {
    return this.#times;
  }

  parallelismDecisions(): readonly ParallelismDecision[] {
    return this.#decisions;
  }

  exceptionHistory(): JobExceptionHistory {
    return this.#exceptions;
  }
}
