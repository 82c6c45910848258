/**
 * The jobs as the dashboard's job page shows them (after Flink's job page): each with its start and end,
 * its graph (vertices with their parallelism, edges with their pattern), each vertex's start and end
 * over its subtasks, each subtask's current attempt (state, the TaskExecutor and slot it runs or ran in,
 * start and end) and its ended attempts, subtask counts by state, restarts and the exception history;
 * read from the Dispatcher's JobMasters when a view is built. Times are epoch ms of the JobMasters'
 * clock, -1 for what has not happened.
 */
import type { AllocationID, JobID, ResourceID } from '../core/ids.js';
import type { JobLookup } from '../dispatcher/Dispatcher.js';
import type { AttemptSummary } from '../jobmaster/ExecutionAttempts.js';
import type { JobExceptionHistory } from '../jobmaster/ExceptionHistory.js';
import type { JobStatus } from '../../machines/jobStatus.machine.js';

/** One attempt of a subtask. */
export interface AttemptDetail {
  readonly attempt: number;
  readonly state: string;
  /** The TaskExecutor it runs or ran on (kept after it ended); null when it had none. */
  readonly resourceId: ResourceID | null;
  readonly allocationId: AllocationID | null;
  /** When it started deploying, -1 before. */
  readonly startTime: number;
  /** When it ended, -1 while it has not. */
  readonly endTime: number;
  /** A speculative attempt (one run beside the subtask's current attempt); absent for the others. */
  readonly speculative?: true;
}

/**
 * A subtask: its current attempt, and the ended ones before it (oldest first, at most
 * `jobmanager.execution.attempts-history-size`).
 */
export interface SubtaskDetail extends AttemptDetail {
  readonly index: number;
  readonly priorAttempts: readonly AttemptDetail[];
  /** Its speculative attempts running beside the current one. */
  readonly concurrentAttempts: readonly AttemptDetail[];
}

export interface VertexDetail {
  readonly id: string;
  /** Null while the adaptive scheduler has not decided it. */
  readonly parallelism: number | null;
  /** Why the adaptive scheduler decided the parallelism it did (null: the job's graph set it). */
  readonly parallelismReason: string | null;
  readonly slotSharingGroup: string;
  /** Display form of what each subtask asks for (`'default slot'` when UNKNOWN). */
  readonly resources: string;
  /** The first start of its subtasks' current attempts (Flink's vertex start-time), -1 before. */
  readonly startTime: number;
  /** The last end of its subtasks' current attempts once all ended, -1 before. */
  readonly endTime: number;
  readonly subtasks: readonly SubtaskDetail[];
}

/** An edge of the job graph: `to` reads what `from` produced. */
export interface EdgeDetail {
  readonly from: string;
  readonly to: string;
  readonly pattern: 'pointwise' | 'all-to-all' | 'hash';
}

export interface JobDetail {
  readonly jobId: JobID;
  readonly name: string;
  readonly status: JobStatus;
  /** When it was created, -1 if not known. */
  readonly startTime: number;
  /** When it ended, -1 while it runs. */
  readonly endTime: number;
  readonly restarts: number;
  /** Subtasks by the state of their current attempt. */
  readonly subtasksByState: Readonly<Record<string, number>>;
  /** In the job's order (a topological one). */
  readonly vertices: readonly VertexDetail[];
  readonly edges: readonly EdgeDetail[];
  /** Its failures (Flink's exception history): the root cause and every failed attempt, newest first. */
  readonly exceptions: JobExceptionHistory;
}

const ENDED: ReadonlySet<string> = new Set(['finished', 'failed', 'canceled']);

export function describeJobs(dispatcher: Pick<JobLookup, 'listJobs' | 'getJobView'>): JobDetail[] {
  return dispatcher.listJobs().flatMap((summary): JobDetail[] => {
    const view = dispatcher.getJobView(summary.jobId);
    if (view === undefined) return [];
    const byVertex = new Map<string, SubtaskDetail[]>();
    const subtasksByState: Record<string, number> = {};
    for (const e of view.executions()) {
      subtasksByState[e.state] = (subtasksByState[e.state] ?? 0) + 1;
      const list = byVertex.get(e.vertexId) ?? [];
      list.push({
        index: e.subtaskIndex,
        ...attemptDetail(e),
        priorAttempts: e.priorAttempts.map(attemptDetail),
        concurrentAttempts: e.concurrentAttempts.map(attemptDetail),
      });
      byVertex.set(e.vertexId, list);
    }
    const reasons = new Map(view.parallelismDecisions().map((d) => [d.vertexId, d.reason]));
    const vertices = view.jobGraph.vertices.map((v): VertexDetail => {
      const subtasks = (byVertex.get(v.id) ?? []).sort((a, b) => a.index - b.index);
      const starts = subtasks.map((s) => s.startTime).filter((t) => t >= 0);
      const allEnded = subtasks.length > 0 && subtasks.every((s) => ENDED.has(s.state) && s.endTime >= 0);
      return {
        id: v.id,
        parallelism: view.parallelismOf(v.id),
        parallelismReason: reasons.get(v.id) ?? null,
        slotSharingGroup: v.slotSharingGroup,
        resources: v.resourceProfile.isUnknown() ? 'default slot' : v.resourceProfile.toString(),
        startTime: starts.length > 0 ? Math.min(...starts) : -1,
        endTime: allEnded ? Math.max(...subtasks.map((s) => s.endTime)) : -1,
        subtasks,
      };
    });
    const times = view.times();
    return [
      {
        jobId: summary.jobId,
        name: summary.name,
        status: summary.status,
        startTime: times.startTime,
        endTime: ENDED.has(summary.status) ? times.endTime : -1,
        restarts: view.restarts,
        subtasksByState,
        vertices,
        edges: view.jobGraph.edges.map(({ from, to, pattern }) => ({ from, to, pattern })),
        exceptions: view.exceptionHistory(),
      },
    ];
  });
}

function attemptDetail(a: AttemptSummary): AttemptDetail {
  return {
    attempt: a.attemptNumber,
    state: a.state,
    resourceId: a.resourceId,
    allocationId: a.allocationId,
    startTime: a.startTime,
    endTime: a.endTime,
    ...(a.speculative === true ? { speculative: true as const } : {}),
  };
}
