/**
 * The REST API's response bodies, in the shape of Flink's REST messages where Flink has one
 * (flink-runtime `rest/messages`: ClusterOverviewWithVersion, TaskManagersInfo,
 * TaskManagerDetailsInfo, JobIdsWithStatusOverview, JobDetailsInfo, JobExecutionResultResponseBody):
 * Flink's keys (`slots-total`, `start-time`, `jid`) and Flink's upper-case states (`RUNNING`,
 * `CANCELLING`), numbers as numbers. Where slotwise knows more than Flink sends (each slot's
 * profile and subtasks, why a request waits, the sinks' outputs) it adds fields beside Flink's.
 * Amounts under Flink's keys are in Flink's units (ResourceProfileInfo: CPU in cores, memory in MiB,
 * whole); ours beside them keep bytes.
 */
import type { ClusterOverview, ResourceAmounts, TaskExecutorOverview } from '../ClusterOverview.js';
import type { JobSummary } from '../dispatcher/Dispatcher.js';
import type { ExceptionHistoryEntry, JobExceptionHistory } from '../jobmaster/ExceptionHistory.js';
import type { JobResult } from '../jobmaster/JobMaster.js';
import type { JobStatus } from '../../machines/jobStatus.machine.js';
import { toJsonValue } from './jsonValue.js';
import type { JobDetails, TaskDetails } from './RestTarget.js';

/** Flink's JobStatus names (note Flink's double-l `CANCELLING`). */
const FLINK_JOB_STATUS: Readonly<Record<JobStatus, string>> = {
  created: 'CREATED',
  running: 'RUNNING',
  failing: 'FAILING',
  restarting: 'RESTARTING',
  finished: 'FINISHED',
  failed: 'FAILED',
  canceling: 'CANCELLING',
  canceled: 'CANCELED',
};

/** Flink's ExecutionState names, in the order Flink's counts list them. */
const FLINK_EXECUTION_STATES = [
  'CREATED',
  'SCHEDULED',
  'DEPLOYING',
  'INITIALIZING',
  'RUNNING',
  'FINISHED',
  'CANCELING',
  'CANCELED',
  'FAILED',
  'RECONCILING',
] as const;

export function flinkJobStatus(status: JobStatus): string {
  return FLINK_JOB_STATUS[status];
}

/** Our task state (`scheduled`, `deploying`, …, `canceled`) as Flink's ExecutionState. */
export function flinkExecutionState(state: string): string {
  return state.toUpperCase();
}

const ENDED: ReadonlySet<string> = new Set(['finished', 'failed', 'canceled']);

/** GET /overview: Flink's ClusterOverviewWithVersion, plus the waiting requests and workers. */
export function clusterOverviewView(overview: ClusterOverview, version: string) {
  const tms = overview.taskExecutors.map(taskManagerView);
  const count = (status: JobStatus) => overview.jobs.filter((job) => job.status === status).length;
  return {
    taskmanagers: tms.length,
    'slots-total': tms.reduce((n, tm) => n + tm.slotsNumber, 0),
    'slots-available': tms.reduce((n, tm) => n + tm.freeSlots, 0),
    'jobs-running': overview.jobs.filter((job) => !ENDED.has(job.status)).length,
    'jobs-finished': count('finished'),
    'jobs-cancelled': count('canceled'),
    'jobs-failed': count('failed'),
    'flink-version': version,
    'flink-commit-id': `slotwise ${version}`,
    pendingWorkers: overview.pendingWorkers,
    pendingRequests: overview.pendingRequests,
  };
}

const MIB = 1024 * 1024;

/** Amounts as Flink's ResourceProfileInfo gives them: cores, memory in whole MiB (Flink's getMebiBytes). */
export function flinkResourceView(amounts: ResourceAmounts) {
  return {
    cpuCores: amounts.cpuCores,
    taskHeapMemory: Math.floor(amounts.taskHeapMemory / MIB),
    taskOffHeapMemory: Math.floor(amounts.taskOffHeapMemory / MIB),
    managedMemory: Math.floor(amounts.managedMemory / MIB),
    networkMemory: Math.floor(amounts.networkMemory / MIB),
    extendedResources: amounts.extendedResources,
  };
}

/** One entry of GET /taskmanagers: Flink's TaskManagerInfo, the fields slotwise has. */
export function taskManagerView(te: TaskExecutorOverview) {
  return {
    id: te.resourceId,
    /** Static slots plus the dynamic slots it holds now. */
    slotsNumber: te.slots.length,
    freeSlots: te.slots.filter((slot) => slot.state === 'free').length,
    totalResource: flinkResourceView(te.totalResources),
    freeResource: flinkResourceView(te.availableResources),
    /** Ours: the same amounts with memory in bytes. */
    totalResourceBytes: te.totalResources,
    freeResourceBytes: te.availableResources,
    mode: te.mode,
    utilization: te.utilization,
  };
}

/** GET /taskmanagers/:id: Flink's TaskManagerDetailsInfo (its `allocatedSlots`), plus every slot with its subtasks. */
export function taskManagerDetailsView(te: TaskExecutorOverview) {
  return {
    ...taskManagerView(te),
    allocatedSlots: te.slots
      .filter((slot) => slot.jobId !== null)
      .map((slot) => ({ jobId: slot.jobId, resource: flinkResourceView(slot.resources) })),
    available: te.available,
    slots: te.slots,
  };
}

/** GET /jobs: Flink's JobIdsWithStatusOverview, with each job's name. */
export function jobsView(jobs: readonly JobSummary[]) {
  return { jobs: jobs.map((job) => ({ id: job.jobId, name: job.name, status: flinkJobStatus(job.status) })) };
}

/** `{ CREATED: 0, SCHEDULED: 2, … }` over the given states (Flink's per-state task counts). */
function countStates(states: readonly string[]): Record<string, number> {
  const counts: Record<string, number> = Object.fromEntries(FLINK_EXECUTION_STATES.map((s) => [s, 0]));
  for (const state of states) counts[flinkExecutionState(state)] = (counts[flinkExecutionState(state)] ?? 0) + 1;
  return counts;
}

/**
 * A vertex's state from its subtasks' (after Flink's ExecutionJobVertex aggregate): a failed subtask
 * makes it FAILED, then CANCELING, CANCELED; all finished is FINISHED; any live one makes it the most
 * advanced live state.
 */
function vertexState(tasks: readonly TaskDetails[]): string {
  const has = (state: string) => tasks.some((t) => t.state === state);
  for (const state of ['failed', 'canceling', 'canceled']) if (has(state)) return flinkExecutionState(state);
  if (tasks.length > 0 && tasks.every((t) => t.state === 'finished')) return 'FINISHED';
  for (const state of ['running', 'initializing', 'deploying', 'scheduled'])
    if (has(state)) return flinkExecutionState(state);
  return 'CREATED';
}

/** GET /jobs/:jobid: Flink's JobDetailsInfo (no plan, no metrics), plus every subtask's attempt and where it runs. */
export function jobDetailsView(details: JobDetails, now: number) {
  const end = details.endTime ?? -1;
  const byVertex = new Map<string, TaskDetails[]>(details.vertices.map((v) => [v.id, []]));
  for (const task of details.tasks) byVertex.get(task.vertexId)?.push(task);
  const vertices = details.vertices.map((v) => {
    const tasks = byVertex.get(v.id) ?? [];
    return {
      id: v.id,
      name: v.id,
      parallelism: v.parallelism,
      ...(v.parallelismDecision === undefined ? {} : { parallelismDecision: v.parallelismDecision }),
      slotSharingGroup: v.slotSharingGroup,
      status: vertexState(tasks),
      tasks: countStates(tasks.map((t) => t.state)),
    };
  });
  const statusCounts: Record<string, number> = Object.fromEntries(FLINK_EXECUTION_STATES.map((s) => [s, 0]));
  for (const vertex of vertices) statusCounts[vertex.status] = (statusCounts[vertex.status] ?? 0) + 1;
  return {
    jid: details.jobId,
    name: details.name,
    isStoppable: false,
    state: flinkJobStatus(details.status),
    'start-time': details.startTime,
    'end-time': end,
    duration: (details.endTime ?? now) - details.startTime,
    now,
    restarts: details.restarts,
    vertices,
    'status-counts': statusCounts,
    subtasks: details.tasks.map((t) => ({
      vertex: t.vertexId,
      subtask: t.subtaskIndex,
      attempt: t.attemptNumber,
      status: flinkExecutionState(t.state),
      'taskmanager-id': t.resourceId,
      'allocation-id': t.allocationId,
      // Flink's SubtaskExecutionAttemptDetailsInfo names the speculative attempts beside the current one so.
      ...(t.otherConcurrentAttempts === undefined
        ? {}
        : {
            'other-concurrent-attempts': t.otherConcurrentAttempts.map((a) => ({
              attempt: a.attemptNumber,
              status: flinkExecutionState(a.state),
              'taskmanager-id': a.resourceId,
              'allocation-id': a.allocationId,
            })),
          }),
    })),
  };
}

const APPLICATION_STATUS: Readonly<Record<JobResult['status'], string>> = {
  finished: 'SUCCEEDED',
  failed: 'FAILED',
  canceled: 'CANCELED',
};

/**
 * GET /jobs/:jobid/result: Flink's JobExecutionResultResponseBody, with the sinks' outputs (as JSON, see jsonValue.ts).
 */
export function jobResultView(result: JobResult | null) {
  if (result === null) return IN_PROGRESS;
  const body = endedResultBody(result);
  const ended = body['job-execution-result'];
  // Spread first: outputs and error keep their places among the keys.
  return {
    ...body,
    'job-execution-result': {
      ...ended,
      outputs: toJsonValue(ended.outputs),
      error: ended.error === null ? null : toJsonValue(ended.error),
    },
  };
}

/**
 * The same document with the outputs and the error as the job left them: what the REST server writes piecewise
 * (jsonStream.ts, under jsonValue.ts' rules), so that a large result is never one string of JSON.
 */
export function jobResultBody(result: JobResult | null) {
  return result === null ? IN_PROGRESS : endedResultBody(result);
}

const IN_PROGRESS = { status: { id: 'IN_PROGRESS' } } as const;

function endedResultBody(result: JobResult) {
  return {
    status: { id: 'COMPLETED' },
    'job-execution-result': {
      id: result.jobId,
      'application-status': APPLICATION_STATUS[result.status],
      'accumulator-results': {},
      'net-runtime': result.durationMs,
      ...(result.error === null
        ? {}
        : {
            'failure-cause': {
              class: result.error._tag ?? result.error.name,
              'stack-trace': result.error.stack ?? `${result.error.name}: ${result.error.message}`,
            },
          }),
      name: result.jobName,
      status: result.status,
      outputs: result.outputs as unknown,
      error: result.error as unknown,
      restarts: result.restarts,
    },
  };
}

/** One failure in Flink's ExceptionInfo shape (JobExceptionsInfoWithHistory.ExceptionInfo), with our fields beside. */
function exceptionInfoView(entry: ExceptionHistoryEntry) {
  return {
    exceptionName: entry.exceptionName,
    stacktrace: entry.stacktrace,
    timestamp: entry.timestamp,
    // Flink leaves out what a global failure has not (JsonInclude NON_NULL).
    ...(entry.taskName === null ? {} : { taskName: entry.taskName }),
    // Flink's location/endpoint is the TaskManager's host:port; a TaskExecutor here is named by its ResourceID.
    ...(entry.resourceId === null
      ? {}
      : { location: entry.resourceId, endpoint: entry.resourceId, taskManagerId: entry.resourceId }),
    failureLabels: {},
    message: entry.message,
    vertexId: entry.vertexId,
    subtaskIndex: entry.subtaskIndex,
    attemptNumber: entry.attemptNumber,
    allocationId: entry.allocationId,
  };
}

/**
 * GET /jobs/:jobid/exceptions: Flink's JobExceptionsInfoWithHistory — the root cause (`root-exception`, its
 * `timestamp`), the deprecated flat `all-exceptions` (Flink's ExecutionExceptionInfo), and `exceptionHistory` with its
 * entries newest first (Flink's RootExceptionInfo, each with its `concurrentExceptions`), at most `maxExceptions`.
 */
export function jobExceptionsView(history: JobExceptionHistory, maxExceptions: number) {
  const entries = history.entries.slice(0, maxExceptions);
  const truncated = history.truncated || entries.length < history.entries.length;
  const all = entries.flatMap((root) => [root, ...root.concurrent]).filter((e) => e.taskName !== null);
  return {
    'root-exception': history.rootCause?.stacktrace ?? null,
    timestamp: history.rootCause?.timestamp ?? null,
    'all-exceptions': all.map((e) => ({
      exception: e.stacktrace,
      task: e.taskName,
      location: e.resourceId ?? '(unassigned)',
      timestamp: e.timestamp,
      taskManagerId: e.resourceId ?? '(unassigned)',
    })),
    truncated,
    exceptionHistory: {
      entries: entries.map((root) => ({
        ...exceptionInfoView(root),
        concurrentExceptions: root.concurrent.map(exceptionInfoView),
      })),
      truncated,
    },
  };
}

/** The web UI's settings (Flink's DashboardConfiguration), for GET /config. */
export function dashboardConfigView(now: number, version: string) {
  const offset = -new Date(now).getTimezoneOffset() * 60_000;
  return {
    'refresh-interval': 3000,
    'timezone-name': Intl.DateTimeFormat().resolvedOptions().timeZone,
    'timezone-offset': offset,
    'flink-version': version,
    'flink-revision': `slotwise ${version}`,
    features: { 'web-submit': false, 'web-cancel': true, 'web-rescale': false, 'web-history': false },
  };
}

/** Flink's lower-case task counts of a JobDetails (`created` … `reconciling`, and `total`). */
function taskCounts(tasks: readonly TaskDetails[]): Record<string, number> {
  const counts: Record<string, number> = Object.fromEntries(FLINK_EXECUTION_STATES.map((s) => [s.toLowerCase(), 0]));
  for (const task of tasks) counts[task.state] = (counts[task.state] ?? 0) + 1;
  return { total: tasks.length, ...counts };
}

/** One job of GET /jobs/overview: Flink's JobDetails (the overview's, not JobDetailsInfo). */
export function jobOverviewView(details: JobDetails, now: number) {
  const end = details.endTime ?? -1;
  return {
    jid: details.jobId,
    name: details.name,
    state: flinkJobStatus(details.status),
    'start-time': details.startTime,
    'end-time': end,
    duration: (details.endTime ?? now) - details.startTime,
    'last-modification': Math.max(
      details.startTime,
      end,
      ...details.tasks.map((t) => Math.max(t.startTime, t.endTime)),
    ),
    tasks: taskCounts(details.tasks),
  };
}

/** GET /jobs/overview: Flink's MultipleJobsDetails. */
export function jobsOverviewView(jobs: readonly JobDetails[], now: number) {
  return { jobs: jobs.map((job) => jobOverviewView(job, now)) };
}

/**
 * GET /jobs/:jobid/plan: Flink's JobPlanInfo — one node per vertex, its inputs the edges into it. `ship_strategy`
 * says how data goes: FORWARD for a pointwise edge, HASH for a hash edge, ALL_TO_ALL for an all-to-all one
 * (Flink's REBALANCE has no counterpart here); every exchange is `blocking` (a consumer starts when its producers
 * finished).
 */
export function jobPlanView(details: JobDetails) {
  return {
    plan: {
      jid: details.jobId,
      name: details.name,
      type: 'BATCH',
      nodes: details.vertices.map((v) => {
        const inputs = details.edges
          .filter((e) => e.to === v.id)
          .map((e, num) => ({
            num,
            id: e.from,
            ship_strategy: e.pattern === 'pointwise' ? 'FORWARD' : e.pattern === 'hash' ? 'HASH' : 'ALL_TO_ALL',
            exchange: 'blocking',
          }));
        return {
          id: v.id,
          parallelism: v.parallelism,
          operator: '',
          operator_strategy: '',
          description: v.id,
          ...(inputs.length > 0 ? { inputs } : {}),
          optimizer_properties: {},
        };
      }),
    },
  };
}

/**
 * GET /jobs/:jobid/vertices/:vertexid: Flink's JobVertexDetailsInfo — each subtask's current attempt
 * (SubtaskExecutionAttemptDetailsInfo: status, attempt, where, start/end/duration); no IO metrics (none measured),
 * so `metrics` is left out. Undefined for a vertex the job has not.
 */
export function jobVertexView(details: JobDetails, vertexId: string, now: number) {
  const vertex = details.vertices.find((v) => v.id === vertexId);
  if (vertex === undefined) return undefined;
  return {
    id: vertex.id,
    name: vertex.id,
    parallelism: vertex.parallelism,
    maxParallelism: vertex.parallelism,
    now,
    subtasks: details.tasks
      .filter((t) => t.vertexId === vertexId)
      .map((t) => ({
        subtask: t.subtaskIndex,
        status: flinkExecutionState(t.state),
        attempt: t.attemptNumber,
        endpoint: t.resourceId ?? '(unassigned)',
        'start-time': t.startTime,
        'end-time': t.endTime,
        duration: t.startTime < 0 ? -1 : (t.endTime < 0 ? now : t.endTime) - t.startTime,
        'taskmanager-id': t.resourceId ?? '(unassigned)',
        'status-duration': {},
        'allocation-id': t.allocationId,
      })),
  };
}
