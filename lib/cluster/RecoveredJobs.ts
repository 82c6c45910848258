/**
 * A leader's side of the job store (JobStore.ts, Flink's Dispatcher with its JobGraphStore and
 * JobResultStore): each submitted job persisted with its code named by hash, never by a path on this
 * host; at each grant the jobs an earlier leader accepted and did not end run again under their
 * JobIDs, and the ended ones whose results the store keeps are listed and answered as JobClients
 * (their results read once asked for); an ended job's result is stored unless leadership went first.
 * The subtasks that finish are recorded as they do (batched every PROGRESS_FLUSH_MS, a message per
 * job), and a recovered job starts with them finished: only what had not finished runs again (a
 * batch lost with its leader, or too large for one message, runs again too).
 */
import { pathToFileURL } from 'node:url';
import { describeError } from '../core/errors.js';
import type { JobID } from '../core/ids.js';
import type { LogSink } from '../core/Logger.js';
import type { JobClient, JobSummary } from '../dispatcher/Dispatcher.js';
import type { JobGraphSpec } from '../jobmaster/JobGraph.js';
import type { FinishedSubtask } from '../jobmaster/JobMasterOptions.js';
import type { JobEvent, JobResult } from '../jobmaster/JobResult.js';
import type { BlobStore } from './BlobStore.js';
import type { JobStore, StoredResultSummary } from './JobStore.js';
import type { LeaderServices } from './leaderServices.js';
import { localPath, taskCodeHash, type TaskCodeCache } from './TaskCodeCache.js';

export interface RecoveredJobsOptions {
  readonly store: JobStore;
  readonly cache: TaskCodeCache;
  readonly blobs: BlobStore;
  /** What a TaskExecutor is told to run for a task module (code in the cache: by its hash). */
  readonly wireName: (taskModule: string) => string;
  readonly log: LogSink;
}

/** How long finished subtasks wait to be recorded together (one message per job per flush). */
const PROGRESS_FLUSH_MS = 50;

export class RecoveredJobs {
  readonly #o: RecoveredJobsOptions;
  /** Finished subtasks not recorded yet, per job, and the records still on their way (awaited at the job's end). */
  readonly #unrecorded = new Map<JobID, FinishedSubtask[]>();
  #recording: Promise<void> = Promise.resolve();
  #flushTimer: ReturnType<typeof setTimeout> | null = null;
  /** Ended jobs of earlier leaders whose results the store keeps, read at each grant. */
  #ended = new Map<JobID, { summary: StoredResultSummary; client: JobClient | null }>();

  constructor(options: RecoveredJobsOptions) {
    this.#o = options;
  }

  /** A subtask of `jobId` finished under `leader`: recorded with the next flush. */
  finished(leader: LeaderServices, jobId: JobID, finished: FinishedSubtask): void {
    if (leader.suspended) return;
    let batch = this.#unrecorded.get(jobId);
    if (batch === undefined) this.#unrecorded.set(jobId, (batch = []));
    batch.push(finished);
    if (this.#flushTimer !== null) return;
    this.#flushTimer = setTimeout(() => {
      this.#flushTimer = null;
      if (!leader.suspended) this.#flush();
    }, PROGRESS_FLUSH_MS);
    this.#flushTimer.unref();
  }

  #flush(): void {
    const batches = [...this.#unrecorded];
    this.#unrecorded.clear();
    const { store } = this.#o;
    this.#recording = this.#recording.then(() =>
      Promise.all(
        batches.map(([jobId, batch]) =>
          store.appendProgress(jobId, batch).catch((error: unknown) =>
            this.#o.log({
              level: 'info',
              source: 'runtime',
              message:
                `${batch.length} finished subtask(s) of job ${jobId} could not be recorded (they run again if ` +
                `the job is recovered): ${describeError(error)}`,
              jobId,
            }),
          ),
        ),
      ).then(() => {}),
    );
  }

  /** Persists a submitted job before it starts. */
  async persist(jobId: JobID, spec: JobGraphSpec): Promise<void> {
    await this.#o.store.putJob({ jobId, spec: this.#portable(spec), submittedAt: Date.now() });
  }

  /**
   * Reads the ended jobs the store keeps and runs again every job an earlier leader accepted and did not end. A store
   * out of reach (a NATS node lost, its streams electing new leaders) is read again until it answers or leadership
   * goes: no job is left behind for a read that timed out.
   */
  async recover(leader: LeaderServices): Promise<void> {
    const { store } = this.#o;
    const results = await this.#retried(leader, "the ended jobs' results", () => store.results());
    if (results === null) return;
    this.#ended = new Map(results.map((summary) => [summary.jobId, { summary, client: null }]));
    const jobs = await this.#retried(leader, 'the stored jobs', () =>
      store.jobs((jobId, why) => this.#warn(`could not decode stored job ${jobId}: ${why}`, { jobId })),
    );
    for (const job of jobs ?? []) {
      if (leader.suspended) return;
      if (this.#ended.has(job.jobId)) {
        await store.removeJob(job.jobId).catch(() => {});
        continue;
      }
      const progress = await this.#retried(leader, `the progress of job ${job.jobId}`, () => store.progress(job.jobId));
      if (progress === null) return;
      try {
        await leader.dispatcher.recoverJob(await this.#local(job.spec), job.jobId, progress);
        this.#o.log({
          level: 'info',
          source: 'runtime',
          message:
            `recovered job ${job.jobId} (${job.spec.name}) from the job store, ` +
            `${progress.length} subtask(s) finished already`,
          jobId: job.jobId,
        });
      } catch (error) {
        this.#warn(`could not recover job ${job.jobId} (${job.spec.name}): ${describeError(error)}`, {
          jobId: job.jobId,
        });
      }
    }
  }

  /** `read()`, tried again (250 ms doubling to 2 s apart) while `leader` leads; null once it no longer does. */
  async #retried<T>(leader: LeaderServices, what: string, read: () => Promise<T>): Promise<T | null> {
    for (let attempt = 1; !leader.suspended; attempt++) {
      try {
        return await read();
      } catch (error) {
        if (attempt === 1 || attempt % 10 === 0)
          this.#warn(
            `could not read ${what} (attempt ${attempt}; trying again while leading): ${describeError(error)}`,
          );
        await new Promise((resolve) => setTimeout(resolve, Math.min(250 * 2 ** (attempt - 1), 2_000)));
      }
    }
    return null;
  }

  /** A job ended under `leader`: unless `current()` says leadership went meanwhile, its result is stored. */
  async ended(leader: LeaderServices, result: JobResult, current: () => boolean): Promise<void> {
    const { jobId } = result;
    if (leader.suspended || !current()) return;
    this.#unrecorded.delete(jobId);
    await this.#recording;
    await this.#o.store
      .putResult(result, Date.now())
      .catch((error: unknown) =>
        this.#warn(`could not store the result of job ${jobId}: ${describeError(error)}`, { jobId }),
      );
    await this.#o.store.removeProgress(jobId).catch(() => {});
  }

  /** Whether `jobId` ended under an earlier leader (its result kept). */
  has(jobId: JobID): boolean {
    return this.#ended.has(jobId);
  }

  /** The ended jobs of earlier leaders, as listed. */
  summaries(): JobSummary[] {
    return [...this.#ended].map(([jobId, { summary }]) => ({ jobId, name: summary.name, status: summary.status }));
  }

  /** A JobClient over an ended job of an earlier leader (its result read from the store once asked for). */
  /** The ended job's result in the store, or null while there is none. */
  storedResult(jobId: JobID): Promise<JobResult | null> {
    return this.#o.store.result(jobId);
  }

  client(jobId: JobID): JobClient | undefined {
    const entry = this.#ended.get(jobId);
    if (entry === undefined) return undefined;
    if (entry.client !== null) return entry.client;
    const { summary } = entry;
    const store = this.#o.store;
    let result: Promise<JobResult> | null = null;
    const status: JobEvent = { type: 'status', status: summary.status, cause: null, timestamp: summary.endedAt };
    entry.client = {
      jobId,
      name: summary.name,
      status: summary.status,
      get result() {
        result ??= store.result(jobId).then(
          (stored) => stored ?? missingResult(summary, 'its result expired from the job store'),
          (error: unknown) => missingResult(summary, `its result could not be read: ${describeError(error)}`),
        );
        return result;
      },
      onEvent: (listener) => {
        listener(status);
        return () => {};
      },
      cancel: async () => {},
    };
    return entry.client;
  }

  #warn(message: string, fields: Record<string, unknown> = {}): void {
    this.#o.log({ level: 'warn', source: 'runtime', message, ...fields });
  }

  /** A spec as the job store keeps it: code in our cache named by its hash, never by a path on this host. */
  #portable(spec: JobGraphSpec): JobGraphSpec {
    return {
      ...spec,
      vertices: spec.vertices.map((vertex) => {
        const path = localPath(vertex.taskModule);
        return path === undefined ? vertex : { ...vertex, taskModule: this.#o.wireName(path) };
      }),
    };
  }

  /** A stored spec made runnable here: code named by hash fetched into our cache. */
  async #local(spec: JobGraphSpec): Promise<JobGraphSpec> {
    const vertices = [];
    for (const vertex of spec.vertices) {
      const hash = typeof vertex.taskModule === 'string' ? taskCodeHash(vertex.taskModule) : undefined;
      if (hash === undefined) vertices.push(vertex);
      else {
        const path = await this.#o.cache.resolve(hash, (sha) => this.#o.blobs.getCode(sha));
        vertices.push({ ...vertex, taskModule: pathToFileURL(path).href });
      }
    }
    return { ...spec, vertices };
  }
}

/** The result of an ended job the store no longer (or cannot) give: its status, and why nothing more. */
function missingResult(summary: StoredResultSummary, why: string): JobResult {
  return {
    jobId: summary.jobId,
    jobName: summary.name,
    status: summary.status,
    outputs: {},
    error: summary.status === 'failed' ? { name: 'Error', message: `job ${summary.jobId} failed; ${why}` } : null,
    restarts: 0,
    durationMs: 0,
  } as JobResult;
}
