/**
 * Dispatcher (Flink's Dispatcher): takes jobs, validates their graphs (their task modules loaded
 * and checked in a checker worker, never on this thread), starts a JobMaster for each and keeps the
 * registry of jobs; several jobs share the cluster.
 *
 * Ended jobs stay listed, with their status and result, for `jobstore.expiration-time` after they
 * ended and up to `jobstore.max-capacity` of them (the oldest go first), like Flink's job store;
 * expired ones are dropped when a job ends or the registry is read. What stays of an ended job is its
 * archive (ArchivedJob, Flink's ArchivedExecutionGraph), not its JobMaster.
 */
import { systemClock, type Clock, type TimerHandle } from '../core/clock.js';
import { IllegalArgumentError, IllegalStateError } from '../core/errors.js';
import { JobID } from '../core/ids.js';
import type { RuntimeLog } from '../core/Logger.js';
import type { ResolvedOptions } from '../core/options.js';
import type { JobMasterGateway, ResourceManagerGateway, TaskExecutorGateway } from '../rpc/gateways.js';
import type { MainThreadExecutor } from '../rpc/MainThreadExecutor.js';
import type { ResourceID } from '../core/ids.js';
import { JobGraph, type JobGraphSpec } from '../jobmaster/JobGraph.js';
import { ArchivedJob, liveJobView, type JobView } from '../jobmaster/ArchivedJob.js';
import { JobMaster, type JobEvent, type JobResult } from '../jobmaster/JobMaster.js';
import type { FinishedSubtask } from '../jobmaster/JobMasterOptions.js';
import type { SlotAssignment } from '../jobmaster/SlotAssignment.js';
import { DefaultTaskModuleChecker, type TaskModuleChecker } from '../jobmaster/TaskModuleChecker.js';
import type { JobStatus } from '../../machines/jobStatus.machine.js';
import type { InspectionEvent } from 'xstate';

/** How long an ended job's JobMaster stays reachable for late messages (final states, freed slots). */
export const JOBMASTER_WITHDRAW_DELAY_MS = 1_000;

/** What the Dispatcher needs from the cluster around it. */
export interface DispatcherServices {
  readonly options: ResolvedOptions;
  readonly clock?: Clock;
  /** The ResourceManager as a JobMaster calls it (on the ResourceManager's mailbox). */
  readonly resourceManager: Pick<
    ResourceManagerGateway,
    'registerJobMaster' | 'declareRequiredResources' | 'disconnectJobMaster' | 'notifyNewBlockedNodes'
  >;
  /** Makes a JobMaster reachable for TaskExecutors at its address, and withdraws it. */
  readonly serveJobMaster: (address: string, gateway: JobMasterGateway, mailbox: MainThreadExecutor) => void;
  readonly withdrawJobMaster: (address: string) => void;
  readonly taskExecutor: (resourceId: ResourceID) => TaskExecutorGateway | undefined;
  /** Why the job's slot requests wait (for timeout messages). */
  readonly reasonFor: (jobId: JobID) => string;
  readonly inspect?: (event: InspectionEvent) => void;
  /** Runtime messages of the Dispatcher and its JobMasters, with the job (and subtask) they concern. */
  readonly log?: RuntimeLog;
  /**
   * Loads and checks the task modules of each submitted job off this thread (default: worker
   * threads, each module bounded by `dispatcher.task-module-check.timeout`). The Dispatcher closes
   * it when it closes.
   */
  readonly taskModuleChecker?: TaskModuleChecker;
  /**
   * Sees every job's events and slot assignments (metrics, the dashboard); a throwing observer is logged, never fatal.
   */
  readonly jobObserver?: JobObserver;
  /**
   * A job store (Flink's JobGraphStore, a session cluster's with high availability): each submitted job is persisted
   * here after it was checked and before its JobMaster starts; a submit whose job cannot be persisted fails and starts
   * nothing. Recovered jobs (`recoverJob`) are not persisted again.
   */
  readonly persistJob?: (jobId: JobID, job: JobGraphSpec | JobGraph) => Promise<void>;
  /** Each subtask of a job that finishes, with what it produced (a job store's progress). */
  readonly subtaskFinished?: (jobId: JobID, finished: FinishedSubtask) => void;
  /** Each job's result, as it ends (a job store's result store). */
  readonly jobEnded?: (result: JobResult) => void;
}

/** What the Dispatcher tells an observer of all its jobs. */
export interface JobObserver {
  onJobEvent?(jobId: JobID, jobName: string, event: JobEvent): void;
  onSlotAssigned?(jobId: JobID, assignment: SlotAssignment): void;
}

/** The options of {@link Dispatcher.submitJob}. */
export interface SubmitJobOptions {
  /**
   * Aborting it cancels the job, as `cancel()` would; aborted before the job started, `submitJob`
   * rejects with the signal's reason and starts nothing (piscina's and fetch's convention).
   */
  readonly signal?: AbortSignal;
}

/**
 * A job's status changed (`created` → `running` → … → `finished` | `failed` | `canceled`); `cause` says why it failed
 * or restarts.
 */
export type JobStatusChangedEvent = Extract<JobEvent, { readonly type: 'status' }>;

/**
 * A subtask attempt changed state (`scheduled`, `deploying`, `initializing`, `running`, `finished`, `failed`,
 * `canceled`; `created` when a scheduled one goes back to wait for an input that is lost), where it runs.
 */
export type TaskStateChangedEvent = Extract<JobEvent, { readonly type: 'task' }>;

/**
 * The adaptive scheduler decided a vertex's parallelism (a source's as the job starts, any other's once its producers
 * finished), from `bytes` its producers produced; `reason` says how.
 */
export type VertexParallelismDecidedEvent = Extract<JobEvent, { readonly type: 'parallelism' }>;

/** A submitted job, as its submitter sees it. */
export interface JobClient {
  readonly jobId: JobID;
  readonly name: string;
  readonly status: JobStatus;
  /** Settles when the job ends (finished, failed or canceled); never rejects. */
  readonly result: Promise<JobResult>;
  /**
   * Status changes, task state changes and the adaptive scheduler's parallelism decisions; returns a function that
   * unsubscribes. A new listener first receives, at once, the status changes and decisions so far (from `created`
   * on), so subscribing after `submitJob` returns misses none of them; task events are delivered from subscription on.
   */
  onEvent(listener: (event: JobEvent) => void): () => void;
  cancel(): Promise<void>;
}

export interface JobSummary {
  readonly jobId: JobID;
  readonly name: string;
  readonly status: JobStatus;
}

/**
 * A cluster's jobs as its overview, dashboard and REST server look them up: a Dispatcher, or a session cluster's
 * JobManager (its leader's jobs and the ended ones of earlier leaders).
 */
export type JobLookup = Pick<Dispatcher, 'getJob' | 'getJobView' | 'listJobs' | 'cancelJob'>;

/** A job the Dispatcher knows: its JobMaster until withdrawn after the end, what overviews read, the client. */
interface JobEntry {
  master: JobMaster | null;
  view: JobView;
  readonly client: JobClient;
}

export class Dispatcher {
  readonly #s: DispatcherServices;
  readonly #jobs = new Map<JobID, JobEntry>();
  /** Ended jobs and when they ended, oldest first. */
  readonly #ended = new Map<JobID, number>();
  /** JobMaster addresses to withdraw once late messages had their moment, by address, with their job's archiving. */
  readonly #withdrawals = new Map<string, { readonly timer: TimerHandle; readonly archive: () => void }>();
  readonly #checker: TaskModuleChecker;
  #closed = false;

  constructor(services: DispatcherServices) {
    this.#s = services;
    this.#checker =
      services.taskModuleChecker ??
      new DefaultTaskModuleChecker({
        timeoutMs: services.options['dispatcher.task-module-check.timeout'],
        ...(services.clock ? { clock: services.clock } : {}),
      });
  }

  /** Validates the job (its graph, then its task modules) and starts it. */
  async submitJob(job: JobGraphSpec | JobGraph, options: SubmitJobOptions = {}): Promise<JobClient> {
    this.#requireOpen();
    const signal = checkSubmitJobOptions(options);
    signal?.throwIfAborted();
    const graph = job instanceof JobGraph ? job : JobGraph.create(job, this.#s.options);
    // Loaded in a checker worker, never here: a module's top-level code must not run in the coordinator.
    await graph.validateTaskModules(this.#checker);
    // Aborted while the task modules were checked: nothing was started.
    signal?.throwIfAborted();
    // The Dispatcher may have closed while the modules were checked.
    this.#requireOpen();
    const jobId = JobID.generate();
    await this.#s.persistJob?.(jobId, job);
    signal?.throwIfAborted();
    this.#requireOpen();
    return this.#start(graph, jobId, signal);
  }

  /**
   * Runs a job a former leader had accepted and not ended (Flink's Dispatcher recovering from its
   * JobGraphStore): under its own JobID, its task modules checked again, from its first attempt.
   */
  async recoverJob(
    job: JobGraphSpec | JobGraph,
    jobId: JobID,
    restored: readonly FinishedSubtask[] = [],
  ): Promise<JobClient> {
    this.#requireOpen();
    if (!JobID.is(jobId))
      throw new IllegalArgumentError('invalid-value', `recoverJob: jobId must be a JobID, got ${String(jobId)}`, {
        argument: 'jobId',
      });
    if (this.#jobs.has(jobId))
      throw new IllegalStateError(`job ${jobId} runs here already: it cannot be recovered again`, {
        component: 'Dispatcher',
        operation: 'recoverJob',
        state: 'known',
        allowed: ['unknown job'],
      });
    const graph = job instanceof JobGraph ? job : JobGraph.create(job, this.#s.options);
    await graph.validateTaskModules(this.#checker);
    this.#requireOpen();
    return this.#start(graph, jobId, undefined, restored);
  }

  #start(
    graph: JobGraph,
    jobId: JobID,
    signal: AbortSignal | undefined,
    restored: readonly FinishedSubtask[] = [],
  ): JobClient {
    const address = `jobmaster-${jobId}`;
    const listeners = new Set<(event: JobEvent) => void>();
    // The status changes so far (a handful), replayed to each new listener.
    const statusHistory: JobEvent[] = [];
    const deliver = (listener: (event: JobEvent) => void, event: JobEvent) => {
      try {
        listener(event);
      } catch (error) {
        // One failing listener must neither break the JobMaster nor keep the others from their events.
        this.#s.log?.(
          `a job event listener threw: ${error instanceof Error ? error.message : String(error)}`,
          { jobId, jobName: graph.name },
          'warn',
        );
      }
    };
    const observer = this.#s.jobObserver;
    const observe = observer?.onJobEvent ? (event: JobEvent) => observer.onJobEvent!(jobId, graph.name, event) : null;
    const master = new JobMaster({
      jobId,
      jobGraph: graph,
      address,
      options: this.#s.options,
      clock: this.#clock,
      resourceManager: this.#s.resourceManager,
      taskExecutor: this.#s.taskExecutor,
      reasonFor: () => this.#s.reasonFor(jobId),
      onEvent: (event) => {
        // A listener that comes later gets these first: status changes and parallelism decisions (few), not tasks.
        if (event.type !== 'task') statusHistory.push(event);
        if (observe !== null) deliver(observe, event);
        for (const listener of listeners) deliver(listener, event);
      },
      ...(observer?.onSlotAssigned
        ? { onSlotAssigned: (assignment: SlotAssignment) => observer.onSlotAssigned!(jobId, assignment) }
        : {}),
      ...(this.#s.inspect ? { inspect: this.#s.inspect } : {}),
      ...(restored.length > 0 ? { restored } : {}),
      ...(this.#s.subtaskFinished
        ? { onSubtaskFinished: (finished: FinishedSubtask) => this.#s.subtaskFinished!(jobId, finished) }
        : {}),
      ...(this.#s.log
        ? {
            log: ((m, fields, level) =>
              this.#s.log!(m, { jobId, jobName: graph.name, ...fields }, level)) as RuntimeLog,
          }
        : {}),
    });
    this.#s.serveJobMaster(address, master, master.mailbox);
    // Once archived, neither the entry nor the client holds the JobMaster: no closure made here may name `master` (it
    // would keep it in this call's context, which every closure made here shares), only `entry.master`.
    let ended: JobStatus | null = null;
    const client: JobClient = {
      jobId,
      name: graph.name,
      get status() {
        return ended ?? entry.master!.status;
      },
      result: master.result,
      onEvent: (listener) => {
        if (typeof listener !== 'function')
          throw new IllegalArgumentError(
            'invalid-type',
            `onEvent takes a function (event) => void, got ${typeof listener}`,
            { argument: 'listener' },
          );
        for (const event of statusHistory) deliver(listener, event);
        listeners.add(listener);
        return () => {
          listeners.delete(listener);
        };
      },
      cancel: () => entry.master?.cancel() ?? Promise.resolve(),
    };
    const entry: JobEntry = { master, view: liveJobView(master), client };
    this.#jobs.set(jobId, entry);
    if (signal !== undefined) {
      const onAbort = () => void entry.master?.cancel();
      signal.addEventListener('abort', onAbort, { once: true });
      void master.result.then(() => signal.removeEventListener('abort', onAbort));
    }
    void master.result.then((result) => {
      ended = result.status;
      this.#s.jobEnded?.(result);
      this.#scheduleWithdrawal(address, () => {
        // Late messages had their moment (a canceled task's final state comes after the job's result): archived now.
        entry.view = new ArchivedJob(entry.view);
        entry.master = null;
      });
      this.#ended.set(jobId, this.#clock.now());
      this.#expire();
    });
    master.start();
    return client;
  }

  getJob(jobId: JobID): JobClient | undefined {
    this.#expire();
    return this.#jobs.get(jobId)?.client;
  }

  /** A job's JobMaster while it runs and for late messages after; undefined once withdrawn and archived. */
  getJobMaster(jobId: JobID): JobMaster | undefined {
    this.#expire();
    return this.#jobs.get(jobId)?.master ?? undefined;
  }

  /** What overviews read of a job: its JobMaster's figures while it runs, its archive once it ended. */
  getJobView(jobId: JobID): JobView | undefined {
    this.#expire();
    return this.#jobs.get(jobId)?.view;
  }

  listJobs(): JobSummary[] {
    this.#expire();
    return [...this.#jobs.values()].map(({ client }) => ({
      jobId: client.jobId,
      name: client.name,
      status: client.status,
    }));
  }

  #requireOpen(): void {
    if (this.#closed)
      throw new IllegalStateError('the Dispatcher is closed: no new job is taken', {
        component: 'Dispatcher',
        operation: 'submitJob',
        state: 'closed',
        allowed: ['open'],
      });
  }

  get #clock(): Clock {
    return this.#s.clock ?? systemClock;
  }

  /**
   * Late messages for an ended job (final states, freed slots) may still come: its JobMaster's
   * address is withdrawn JOBMASTER_WITHDRAW_DELAY_MS later on the clock, or at once on close; `archive` runs after.
   */
  #scheduleWithdrawal(address: string, archive: () => void): void {
    const withdraw = () => {
      this.#withdrawals.delete(address);
      this.#s.withdrawJobMaster(address);
      archive();
    };
    if (this.#closed) return withdraw();
    const timer = this.#clock.setTimeout(withdraw, JOBMASTER_WITHDRAW_DELAY_MS);
    // A system-clock timer must not keep the process alive for this.
    (timer as { unref?: () => void }).unref?.();
    this.#withdrawals.set(address, { timer, archive });
  }

  /** Drops the ended jobs past jobstore.expiration-time, then the oldest beyond jobstore.max-capacity. */
  #expire(): void {
    const now = this.#clock.now();
    const expiration = this.#s.options['jobstore.expiration-time'];
    const capacity = this.#s.options['jobstore.max-capacity'];
    for (const [jobId, endedAt] of this.#ended) {
      if (now - endedAt < expiration && this.#ended.size <= capacity) break;
      this.#ended.delete(jobId);
      this.#jobs.delete(jobId);
    }
  }

  async cancelJob(jobId: JobID): Promise<void> {
    this.#expire();
    const job = this.#jobs.get(jobId);
    if (job === undefined)
      throw new IllegalArgumentError(
        'invalid-value',
        `no job ${jobId} in this cluster (ended jobs are kept for ` +
          `jobstore.expiration-time, at most jobstore.max-capacity)`,
        { argument: 'jobId' },
      );
    await job.client.cancel();
  }

  /** Cancels every running job and waits (bounded) for them to end; ends the task module checker's workers. */
  async close(timeoutMs: number): Promise<void> {
    this.#closed = true;
    const checkerClosed = this.#checker.close();
    const running = [...this.#jobs.values()].filter(
      ({ client }) => !['finished', 'failed', 'canceled'].includes(client.status),
    );
    await Promise.all(running.map(({ client }) => client.cancel()));
    let deadline: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([
      Promise.all(running.map(({ client }) => client.result)),
      new Promise((resolve) => (deadline = setTimeout(resolve, timeoutMs).unref())),
    ]);
    clearTimeout(deadline);
    for (const [address, { timer, archive }] of this.#withdrawals) {
      this.#clock.clearTimeout(timer);
      this.#s.withdrawJobMaster(address);
      archive();
    }
    this.#withdrawals.clear();
    await checkerClosed;
  }
}

/** The signal of valid options; IllegalArgumentError for anything else. */
function checkSubmitJobOptions(options: SubmitJobOptions): AbortSignal | undefined {
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    throw new IllegalArgumentError(
      'invalid-type',
      `submitJob options must be an object { signal? }, ` +
        `got ${options === null ? 'null' : Array.isArray(options) ? 'an array' : typeof options}`,
      { argument: 'options' },
    );
  }
  const unknown = Object.keys(options).find((key) => key !== 'signal');
  if (unknown !== undefined)
    throw new IllegalArgumentError('unknown-key', `unknown submitJob option '${unknown}'; known: signal`, {
      argument: `options.${unknown}`,
    });
  const { signal } = options;
  if (signal === undefined) return undefined;
  if (!(signal instanceof AbortSignal)) {
    throw new IllegalArgumentError(
      'invalid-type',
      `submitJob options.signal must be an AbortSignal (new ` +
        `AbortController().signal), got ${signal === null ? 'null' : typeof signal}`,
      { argument: 'options.signal' },
    );
  }
  return signal;
}
