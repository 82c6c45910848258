/**
 * What a cluster's coordinator (a MiniCluster, a session cluster's JobManager) needs for its
 * metrics and its dashboard, in one place: the ClusterMetrics, the observer its Dispatcher tells of
 * every job, the callback its ResourceManager tells of lost TaskExecutors, the inspection sink its
 * statecharts report to (the application's, the dashboard's, or both), and the dashboard — on a
 * server of its own (`serve`) or as the source of the dashboard plugin on another (`dashboardFor`).
 *
 * The coordinator builds it before its ResourceManager and Dispatcher (they take its callbacks), and
 * hands it the Dispatcher once that exists; `close()` stops the dashboard and takes the metrics out
 * of their registry.
 */
import type { TaskExecutorMetricsWire } from './rpc/protocol.js';
import type { ClusterOverview } from './ClusterOverview.js';
import type { JobID, ResourceID } from './core/ids.js';
import { ActorDirectory } from './dashboard/ActorDirectory.js';
import { ClusterDashboard } from './dashboard/ClusterDashboard.js';
import type { ResolvedDashboardOptions } from './dashboard/DashboardOptions.js';
import { DashboardServer } from './dashboard/DashboardServer.js';
import type { JobLookup, JobObserver } from './dispatcher/Dispatcher.js';
import { combineInspectionSinks, createInspectionSink, observerSink, type InspectionSink } from './inspect.js';
import type { InspectOption } from './InspectionRecord.js';
import { ClusterMetrics } from './metrics/ClusterMetrics.js';
import type { ResolvedMetricsOptions } from './metrics/MetricsOptions.js';
import type { TaskExecutorLossCause } from './resourcemanager/ResourceManager.js';

export interface ObservabilityOptions {
  readonly metrics: ResolvedMetricsOptions;
  /** Whether a dashboard will show this cluster: it turns the inspection stream on, for the actors view. */
  readonly dashboard: boolean;
  readonly overview: () => ClusterOverview;
  /** The jobs the cluster lists (cheaper than the overview when only they are needed). */
  readonly listJobs?: () => readonly { readonly jobId: JobID }[];
  /** Clock ms of the JobMasters' events (default Date.now). */
  readonly now?: () => number;
  /** Each TaskExecutor's own figures (the result partition metrics); absent: none. */
  readonly taskExecutorMetrics?: () => Promise<readonly TaskExecutorMetricsWire[]>;
}

export class Observability {
  readonly metrics: ClusterMetrics;
  /** The statechart actors the dashboard shows, or null without a dashboard. */
  readonly actors: ActorDirectory | null;
  /** For `new Dispatcher({ jobObserver })`. */
  readonly jobObserver: JobObserver;
  /** For `new ResourceManager({ onTaskExecutorLost })`. */
  readonly onTaskExecutorLost: (resourceId: ResourceID, cause: TaskExecutorLossCause) => void;
  readonly #o: ObservabilityOptions;
  #dashboard: ClusterDashboard | null = null;
  #server: DashboardServer | null = null;

  /**
   * Throws ConfigurationError when the registry already holds these metrics (another cluster's): nothing is registered
   * then.
   */
  constructor(options: ObservabilityOptions) {
    this.#o = options;
    const metrics = (this.metrics = new ClusterMetrics(options.metrics, {
      overview: options.overview,
      ...(options.listJobs ? { listJobs: options.listJobs } : {}),
      now: options.now ?? Date.now,
      ...(options.taskExecutorMetrics ? { taskExecutorMetrics: options.taskExecutorMetrics } : {}),
    }));
    this.actors = options.dashboard ? new ActorDirectory() : null;
    this.onTaskExecutorLost = (resourceId, cause) => metrics.onTaskExecutorLost(resourceId, cause);
    this.jobObserver = {
      onJobEvent: (jobId, jobName, event) => metrics.onJobEvent(jobId, jobName, event),
      onSlotAssigned: (jobId, assignment) => {
        metrics.onSlotAssigned(jobId, assignment);
        this.#dashboard?.onSlotAssigned(jobId, assignment);
      },
    };
  }

  /** Where the statecharts report: the application's `inspect`, the dashboard's actors, both, or nowhere (null). */
  inspectionSink(inspect: InspectOption | undefined): InspectionSink | null {
    const actors = this.actors;
    const own = inspect === undefined ? null : createInspectionSink(inspect);
    const dashboard = actors === null ? null : observerSink(actors.observer(), (record) => actors.record(record));
    return own !== null && dashboard !== null ? combineInspectionSinks(own, dashboard) : (own ?? dashboard);
  }

  /**
   * The dashboard's source for `dispatcher`'s cluster (the plugin's `source`); its chart series sampled from now on.
   */
  dashboardFor(dispatcher: JobLookup): ClusterDashboard {
    if (this.#dashboard === null) {
      this.#dashboard = new ClusterDashboard({
        overview: this.#o.overview,
        dispatcher,
        metrics: this.metrics,
        actors: this.actors,
        ...(this.#o.now ? { now: this.#o.now } : {}),
        ...(this.#o.taskExecutorMetrics ? { taskExecutorMetrics: this.#o.taskExecutorMetrics } : {}),
      });
      this.#dashboard.start();
    }
    return this.#dashboard;
  }

  /**
   * Serves the dashboard on a server of its own; resolves with its URL (token included). ConfigurationError for a busy
   * port.
   */
  async serve(options: ResolvedDashboardOptions, dispatcher: JobLookup): Promise<string> {
    this.#server = await DashboardServer.start(options, this.dashboardFor(dispatcher));
    return this.#server.url;
  }

  /** The dashboard's URL with its token, once `serve` resolved. */
  get dashboardUrl(): string | null {
    return this.#server?.url ?? null;
  }

  /** Stops the dashboard (its server and sampling), then takes the metrics out of their registry. */
  async close(): Promise<void> {
    await this.#server?.close();
    this.#dashboard?.close();
    this.metrics.close();
  }
}
