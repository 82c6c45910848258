/**
 * The jobs as the dashboard shows them: each with its vertices and their subtasks (state, attempt,
 * which TaskExecutor and slot), subtask counts by state, restarts and the exception history; read from the Dispatcher's
 * JobMasters when a view is built.
 */
import type { AllocationID, JobID, ResourceID } from '../core/ids.js';
import type { JobLookup } from '../dispatcher/Dispatcher.js';
import type { JobExceptionHistory } from '../jobmaster/ExceptionHistory.js';
import type { JobStatus } from '../../machines/jobStatus.machine.js';

export interface SubtaskDetail {
  readonly index: number;
  readonly attempt: number;
  readonly state: string;
  readonly resourceId: ResourceID | null;
  readonly allocationId: AllocationID | null;
}

export interface VertexDetail {
  readonly id: string;
  readonly parallelism: number;
  readonly slotSharingGroup: string;
  /** Display form of what each subtask asks for (`'default slot'` when UNKNOWN). */
  readonly resources: string;
  readonly subtasks: readonly SubtaskDetail[];
}

export interface JobDetail {
  readonly jobId: JobID;
  readonly name: string;
  readonly status: JobStatus;
  readonly restarts: number;
  /** Subtasks by the state of their current attempt. */
  readonly subtasksByState: Readonly<Record<string, number>>;
  readonly vertices: readonly VertexDetail[];
  /** Its failures (Flink's exception history): the root cause and every failed attempt, newest first. */
  readonly exceptions: JobExceptionHistory;
}

export function describeJobs(dispatcher: Pick<JobLookup, 'listJobs' | 'getJobMaster'>): JobDetail[] {
  return dispatcher.listJobs().flatMap((summary): JobDetail[] => {
    const master = dispatcher.getJobMaster(summary.jobId);
    if (master === undefined) return [];
    const byVertex = new Map<string, SubtaskDetail[]>();
    const subtasksByState: Record<string, number> = {};
    for (const e of master.executions()) {
      subtasksByState[e.state] = (subtasksByState[e.state] ?? 0) + 1;
      const list = byVertex.get(e.vertexId) ?? [];
      list.push({
        index: e.subtaskIndex,
        attempt: e.attemptNumber,
        state: e.state,
        resourceId: e.resourceId,
        allocationId: e.allocationId,
      });
      byVertex.set(e.vertexId, list);
    }
    const vertices = master.jobGraph.vertices.map(
      (v): VertexDetail => ({
        id: v.id,
        parallelism: v.parallelism,
        slotSharingGroup: v.slotSharingGroup,
        resources: v.resourceProfile.isUnknown() ? 'default slot' : v.resourceProfile.toString(),
        subtasks: (byVertex.get(v.id) ?? []).sort((a, b) => a.index - b.index),
      }),
    );
    return [
      {
        jobId: summary.jobId,
        name: summary.name,
        status: summary.status,
        restarts: master.statusActor.getSnapshot().context.restarts,
        subtasksByState,
        vertices,
        exceptions: master.exceptionHistory(),
      },
    ];
  });
}
