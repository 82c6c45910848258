/**
 * What the dashboard shows of one cluster, whatever serves it (a MiniCluster's own server, or the
 * JobManager's REST server with the plugin registered): the view pushed to pages (overview,
 * TaskExecutors and their slot tables, jobs with their subtasks, pending requests and why, chart
 * series, the actors), an actor's detail and events, cancelling a job, and the metrics text.
 *
 * `start()` samples the chart series once a second (an unref'd timer: it never keeps the process
 * alive), and asks the TaskExecutors for their result partition figures as often (an answer still
 * awaited is not asked again); `close()` stops it.
 */
import type { ClusterOverview } from '../ClusterOverview.js';
import { IllegalArgumentError } from '../core/errors.js';
import { JobID } from '../core/ids.js';
import type { JobLookup, JobObserver } from '../dispatcher/Dispatcher.js';
import type { SlotAssignment } from '../jobmaster/SlotAssignment.js';
import type { ClusterMetrics } from '../metrics/ClusterMetrics.js';
import type { TaskExecutorMetricsWire } from '../rpc/protocol.js';
import type { ActorDetail, ActorDirectory, ActorEvent, ActorSummary } from './ActorDirectory.js';
import { describeJobs, type JobDetail } from './jobDetails.js';
import { SeriesRecorder, type SeriesSnapshot } from './SeriesRecorder.js';

type PartitionFigures = NonNullable<TaskExecutorMetricsWire['partitions']>;

/** Everything a page shows, in one JSON object. */
export interface DashboardView {
  readonly overview: ClusterOverview;
  readonly jobs: ReadonlyArray<JobDetail & { readonly actorId: string | null }>;
  readonly series: SeriesSnapshot;
  /** null: the cluster was started without the inspection stream. */
  readonly actors: readonly ActorSummary[] | null;
  /** Each TaskExecutor's result partitions as it last told them (ResourceID → figures), at most a second old. */
  readonly partitions: Readonly<Record<string, PartitionFigures>>;
}

/** What the dashboard plugin needs of a cluster. */
export interface DashboardSource {
  view(): DashboardView;
  actor(id: string): ActorDetail | undefined;
  /** Each new event of the actor `id`; returns a function that stops it. */
  watchActor(id: string, listener: (event: ActorEvent) => void): () => void;
  /**
   * Cancels a job: 'canceling', or 'ended' when it had ended already; IllegalArgumentError for an unknown or malformed
   * JobID.
   */
  cancelJob(jobId: string): Promise<'canceling' | 'ended'>;
  metrics(): Promise<{ readonly contentType: string; readonly text: string }>;
}

export interface ClusterDashboardOptions {
  readonly overview: () => ClusterOverview;
  readonly dispatcher: JobLookup;
  readonly metrics: ClusterMetrics;
  readonly actors: ActorDirectory | null;
  readonly now?: () => number;
  /** Each TaskExecutor's own figures (its result partitions); absent: none shown. */
  readonly taskExecutorMetrics?: () => Promise<readonly TaskExecutorMetricsWire[]>;
}

const SAMPLE_INTERVAL_MS = 1_000;
/** Partition figures older than this (nobody viewed the dashboard meanwhile) are dropped at the next view. */
const STALE_AFTER_MS = 5_000;
const ENDED = ['finished', 'failed', 'canceled'];

export class ClusterDashboard implements DashboardSource, JobObserver {
  readonly #o: ClusterDashboardOptions;
  readonly #series = new SeriesRecorder();
  #timer: ReturnType<typeof setInterval> | null = null;
  #partitions: Record<string, PartitionFigures> = {};
  #asking = false;
  /** When the TaskExecutors were last asked for their figures (-Infinity: never). */
  #askedAt = -Infinity;

  constructor(options: ClusterDashboardOptions) {
    this.#o = options;
  }

  start(): void {
    if (this.#timer !== null) return;
    this.#sample();
    this.#timer = setInterval(() => this.#sample(), SAMPLE_INTERVAL_MS);
    this.#timer.unref();
  }

  close(): void {
    if (this.#timer !== null) clearInterval(this.#timer);
    this.#timer = null;
  }

  onSlotAssigned(_jobId: JobID, assignment: SlotAssignment): void {
    this.#series.recordAllocation(assignment.timestamp - assignment.requestedAt);
  }

  /**
   * What a page shows. The TaskExecutors' partition figures are asked for here, at most once a SAMPLE_INTERVAL_MS,
   * so they are asked only while a page views the dashboard (a control call each; over NATS on a session cluster):
   * the view has the last answer, at most about a second old while a page polls or follows it.
   */
  view(): DashboardView {
    this.#askPartitions();
    const actors = this.#o.actors;
    const jobs = describeJobs(this.#o.dispatcher).map((job) => ({
      ...job,
      actorId: this.#o.dispatcher.getJobView(job.jobId)?.statusActorId ?? null,
    }));
    return {
      overview: this.#o.overview(),
      jobs,
      series: this.#series.snapshot(),
      actors: actors === null ? null : actors.list(),
      partitions: this.#partitions,
    };
  }

  actor(id: string): ActorDetail | undefined {
    return this.#o.actors?.get(id);
  }

  watchActor(id: string, listener: (event: ActorEvent) => void): () => void {
    return this.#o.actors?.subscribe((actorId, event) => actorId === id && listener(event)) ?? (() => {});
  }

  async cancelJob(jobId: string): Promise<'canceling' | 'ended'> {
    if (!JobID.is(jobId))
      throw new IllegalArgumentError(
        'invalid-value',
        `cancel: ${JSON.stringify(jobId)} is not a JobID (32 hex digits)`,
        { argument: 'jobId' },
      );
    const job = this.#o.dispatcher.getJob(jobId);
    if (job === undefined)
      throw new IllegalArgumentError(
        'invalid-value',
        `cancel: no job ${jobId} in this cluster (ended jobs are kept for jobstore.expiration-time)`,
        { argument: 'jobId' },
      );
    if (ENDED.includes(job.status)) return 'ended';
    await this.#o.dispatcher.cancelJob(jobId);
    return 'canceling';
  }

  async metrics(): Promise<{ contentType: string; text: string }> {
    return { contentType: this.#o.metrics.registry.contentType, text: await this.#o.metrics.exposition() };
  }

  #sample(): void {
    this.#series.sample(this.#now(), this.#o.overview());
  }

  #now(): number {
    return (this.#o.now ?? Date.now)();
  }

  #askPartitions(): void {
    const ask = this.#o.taskExecutorMetrics;
    const now = this.#now();
    if (ask === undefined || this.#asking || now - this.#askedAt < SAMPLE_INTERVAL_MS) return;
    // Figures from before a pause in viewing are not shown as current: none until the answer.
    if (now - this.#askedAt > STALE_AFTER_MS) this.#partitions = {};
    this.#asking = true;
    this.#askedAt = now;
    ask().then(
      (answers) => {
        this.#asking = false;
        const partitions: Record<string, PartitionFigures> = {};
        for (const { resourceId, partitions: figures } of answers)
          if (figures !== null) partitions[resourceId] = figures;
        this.#partitions = partitions;
      },
      () => {
        // A cluster closing refuses: the last figures stay until the page goes.
        this.#asking = false;
      },
    );
  }
}
