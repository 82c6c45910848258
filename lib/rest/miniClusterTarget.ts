/**
 * A MiniCluster as a RestTarget: what `startRestServer` serves for an in-process cluster (and what
 * `slotwise jobmanager --local-taskmanagers N` runs). Uploaded task code goes to a content-addressed
 * file cache (TaskCodeCache, SHA-256 checked); each job gets an event log from the moment the REST
 * API first sees it (at its submit, or at its first lookup for a job submitted in code).
 *
 * `clusterTarget` is the same over anything with a MiniCluster's job API and a Dispatcher (a
 * session cluster's JobManager), with the task code store it brings.
 */
import { IllegalArgumentError } from '../core/errors.js';
import type { JobID } from '../core/ids.js';
import type { ClusterOverview } from '../ClusterOverview.js';
import type { Dispatcher, JobClient, JobSummary } from '../dispatcher/Dispatcher.js';
import type { JobGraphSpec } from '../jobmaster/JobGraph.js';
import type { AttemptSummary } from '../jobmaster/ExecutionAttempts.js';
import type { MiniCluster } from '../MiniCluster.js';
import { DEFAULT_EVENT_LOG_CAPACITY, JobEventLog } from './JobEventLog.js';
import type { JobDetails, LogPage, RestTarget, StoredTaskCode, TaskCodeUpload, TaskDetails } from './RestTarget.js';
import { TaskCodeCache } from './TaskCodeCache.js';

export interface MiniClusterTargetOptions {
  /** Where uploaded task code is cached (default `<os tmpdir>/slotwise-task-code`). */
  readonly taskCodeDir?: string;
  /** Events kept per job (default 10,000; status events always stay). */
  readonly eventLogCapacity?: number;
}

const ENDED: ReadonlySet<string> = new Set(['finished', 'failed', 'canceled']);
/** A job whose status is final has its result at once; this bounds the wait for the promise to settle. */
const RESULT_SETTLE_MS = 5_000;

/** What clusterTarget needs of a cluster: a MiniCluster's job API (sync or async) and its Dispatcher's lookups. */
export interface TargetCluster {
  submitJob(spec: JobGraphSpec): Promise<JobClient>;
  listJobs(): readonly JobSummary[] | Promise<readonly JobSummary[]>;
  cancelJob(jobId: JobID): Promise<void>;
  overview(): ClusterOverview | Promise<ClusterOverview>;
  readonly dispatcher: Pick<Dispatcher, 'getJob' | 'getJobView'>;
  /** A session cluster's forwarded task logs (a JobManager's); a MiniCluster has none. */
  jobLogs?(jobId: JobID, from: number, limit: number): LogPage | undefined;
  taskManagerLogs?(resourceId: string, from: number, limit: number): LogPage | undefined;
}

export function miniClusterTarget(cluster: MiniCluster, options: MiniClusterTargetOptions = {}): RestTarget {
  const cache = new TaskCodeCache(options.taskCodeDir === undefined ? {} : { dir: options.taskCodeDir });
  return clusterTarget(cluster, (upload) => cache.store(upload), options);
}

/** A RestTarget over `cluster`, storing uploaded code with `storeTaskCode`. */
export function clusterTarget(
  cluster: TargetCluster,
  storeTaskCode: (upload: TaskCodeUpload) => Promise<StoredTaskCode>,
  options: Pick<MiniClusterTargetOptions, 'eventLogCapacity'> = {},
): RestTarget {
  if (
    typeof cluster !== 'object' ||
    cluster === null ||
    typeof cluster.submitJob !== 'function' ||
    typeof cluster.dispatcher?.getJob !== 'function'
  ) {
    throw new IllegalArgumentError(
      'invalid-type',
      `a REST target takes a started MiniCluster (or JobManager), got ${cluster === null ? 'null' : typeof cluster}`,
      { argument: 'cluster' },
    );
  }
  if (typeof storeTaskCode !== 'function')
    throw new IllegalArgumentError(
      'invalid-type',
      'storeTaskCode must be a function (upload) => Promise<StoredTaskCode>',
      { argument: 'storeTaskCode' },
    );
  const capacity = options.eventLogCapacity ?? DEFAULT_EVENT_LOG_CAPACITY;
  if (!Number.isInteger(capacity) || capacity < 1)
    throw new IllegalArgumentError(
      'out-of-range',
      `eventLogCapacity must be an integer >= 1, got ${String(capacity)}`,
      { argument: 'eventLogCapacity' },
    );
  /**
   * Each job's log, by its JobClient: a job the job store drops takes its log with it (the log is reachable only
   * through the job), and a request costs one lookup however many jobs are kept. Sweeping a JobID map for dropped
   * jobs at every request cost a JobManager ~18 % of its main thread with 1,000 ended jobs kept.
   */
  const logs = new WeakMap<JobClient, JobEventLog>();

  /** The job and its log, or undefined for a job the Dispatcher does not (or no longer) keep. */
  const lookup = (jobId: JobID): { job: JobClient; log: JobEventLog } | undefined => {
    const job = cluster.dispatcher.getJob(jobId);
    if (job === undefined) return undefined;
    let log = logs.get(job);
    if (log === undefined) logs.set(job, (log = new JobEventLog(job, capacity)));
    return { job, log };
  };

  return {
    storeTaskCode: (upload) => storeTaskCode(upload),

    async submitJob(spec) {
      const job = await cluster.submitJob(spec);
      lookup(job.jobId);
      return job.jobId;
    },

    async listJobs() {
      return cluster.listJobs();
    },

    async jobDetails(jobId): Promise<JobDetails | undefined> {
      const found = lookup(jobId);
      const view = cluster.dispatcher.getJobView(jobId);
      if (found === undefined || view === undefined) return undefined;
      const statuses = found.log.statusEvents();
      const status = found.job.status;
      const order = new Map(view.jobGraph.vertices.map((v, i) => [v.id, i]));
      // The JobMaster (its archive once the job ended) keeps where each attempt ran after its slot went back, and when.
      const tasks = view
        .executions()
        .map(({ vertexId, subtaskIndex, concurrentAttempts, ...attempt }) => ({
          vertexId,
          subtaskIndex,
          ...taskAttempt(attempt),
          ...(concurrentAttempts.length === 0 ? {} : { otherConcurrentAttempts: concurrentAttempts.map(taskAttempt) }),
        }))
        .sort((a, b) => order.get(a.vertexId)! - order.get(b.vertexId)! || a.subtaskIndex - b.subtaskIndex);
      const times = view.times();
      const decisions = new Map(view.parallelismDecisions().map((d) => [d.vertexId, d]));
      return {
        jobId,
        name: found.job.name,
        status,
        startTime: times.startTime < 0 ? (statuses[0]?.timestamp ?? Date.now()) : times.startTime,
        endTime: ENDED.has(status) && times.endTime >= 0 ? times.endTime : null,
        restarts: statuses.filter((event) => event.status === 'restarting').length,
        vertices: view.jobGraph.vertices.map((v) => {
          const decision = decisions.get(v.id);
          return {
            id: v.id,
            parallelism: view.parallelismOf(v.id) ?? -1,
            slotSharingGroup: v.slotSharingGroup,
            ...(decision === undefined
              ? {}
              : { parallelismDecision: { bytes: decision.bytes, reason: decision.reason } }),
          };
        }),
        edges: view.jobGraph.edges.map(({ from, to, pattern }) => ({ from, to, pattern })),
        tasks,
      };
    },

    async jobResult(jobId) {
      const found = lookup(jobId);
      if (found === undefined) return undefined;
      if (found.log.result !== null) return found.log.result;
      if (!ENDED.has(found.job.status)) return null;
      let timer: NodeJS.Timeout | undefined;
      const settled = await Promise.race([
        found.job.result,
        new Promise<null>((resolve) => (timer = setTimeout(resolve, RESULT_SETTLE_MS, null))),
      ]);
      clearTimeout(timer);
      return settled;
    },

    async jobExceptions(jobId) {
      if (cluster.dispatcher.getJob(jobId) === undefined) return undefined;
      return cluster.dispatcher.getJobView(jobId)?.exceptionHistory();
    },

    async jobEvents(jobId, from, limit) {
      return lookup(jobId)?.log.page(from, limit);
    },

    cancelJob: (jobId) => cluster.cancelJob(jobId),

    async overview() {
      return cluster.overview();
    },
    ...(cluster.jobLogs === undefined || cluster.taskManagerLogs === undefined
      ? {}
      : {
          jobLogs: async (jobId: JobID, from: number, limit: number) => cluster.jobLogs!(jobId, from, limit),
          taskManagerLogs: async (id: string, from: number, limit: number) => cluster.taskManagerLogs!(id, from, limit),
        }),
  };
}

/** An attempt as TaskDetails shows it. */
function taskAttempt(a: AttemptSummary): Omit<TaskDetails, 'vertexId' | 'subtaskIndex' | 'otherConcurrentAttempts'> {
  const { attemptNumber, state, resourceId, allocationId, startTime, endTime } = a;
  return { attemptNumber, state, resourceId, allocationId, startTime, endTime };
}
