/**
 * MiniCluster: the public way to embed slotwise. It starts a ResourceManager with its SlotManager,
 * a driver that runs TaskExecutors on worker threads (default) or in child processes, and a
 * Dispatcher; `submitJob(graph)` returns a JobClient; `overview()` shows executors, slots, waiting
 * requests and jobs; `close()` cancels the jobs, frees the slots and stops every worker, so the
 * process can exit with nothing left running.
 */
import { describeCluster, type ClusterOverview } from './ClusterOverview.js';
import { systemClock } from './core/clock.js';
import { IllegalStateError } from './core/errors.js';
import type { JobID, ResourceID } from './core/ids.js';
import type { LogFields, LogLevel, LogSink } from './core/Logger.js';
import type { ResolvedOptions } from './core/options.js';
import { resourceManagerServices } from './dispatcher/resourceManagerServices.js';
import { askTaskExecutorMetrics } from './resourcemanager/askTaskExecutorMetrics.js';
import { Dispatcher, type JobClient, type JobSummary, type SubmitJobOptions } from './dispatcher/Dispatcher.js';
import type { JobGraph, JobGraphSpec } from './jobmaster/JobGraph.js';
import { DefaultTaskModuleChecker } from './jobmaster/TaskModuleChecker.js';
import { resolveMiniClusterOptions, type MiniClusterOptions } from './MiniClusterOptions.js';
import type { TaskExecutorMetricsWire } from './rpc/protocol.js';
import { LocalResourceManagerDriver } from './resourcemanager/LocalResourceManagerDriver.js';
import { ResourceManager } from './resourcemanager/ResourceManager.js';
import { WorkerResourceSpec } from './resourcemanager/slotmanager/WorkerResourceSpec.js';
import { describeWaitReason } from './resourcemanager/slotmanager/WaitReason.js';
import type { InspectionSink } from './inspect.js';
import type { Registry } from 'prom-client';
import type { ResolvedDashboardOptions } from './dashboard/DashboardOptions.js';
import type { MetricsSnapshot } from './metrics/MetricsSnapshot.js';
import { Observability } from './Observability.js';

export type { MiniClusterOptions } from './MiniClusterOptions.js';
export type { ClusterOverview } from './ClusterOverview.js';

export class MiniCluster {
  readonly options: ResolvedOptions;
  readonly mode: 'thread' | 'process';
  readonly resourceManager: ResourceManager;
  readonly dispatcher: Dispatcher;
  readonly #driver: LocalResourceManagerDriver;
  readonly #spec: WorkerResourceSpec;
  readonly #inspection: InspectionSink | null;
  readonly #startTimeoutMs: number;
  readonly #log: LogSink;
  #closed: Promise<void> | null = null;

  private constructor(options: MiniClusterOptions) {
    // Every option is checked before anything starts: a refused start leaves nothing behind.
    const o = resolveMiniClusterOptions(options);
    this.options = o.configuration;
    this.mode = o.mode;
    this.#startTimeoutMs = o.startTimeoutMs;
    this.#fixedExecutors = o.fixedExecutors;
    this.#spec = WorkerResourceSpec.fromOptions(this.options);
    const sink = o.logSink;
    this.#log = (record) => {
      try {
        sink(record);
      } catch {
        // A failing logger must not break the runtime it reports on.
      }
    };
    const runtime =
      (fields: Omit<LogFields, 'level' | 'source'> = {}, level: LogLevel = 'info') =>
      (message: string) =>
        this.#log({ level, source: 'runtime', message, ...fields });
    // First what may refuse (a registry another cluster uses): nothing listens yet. With a dashboard,
    // the statecharts report to it through the same inspection stream a user's inspector gets.
    this.#observability = new Observability({
      metrics: o.metrics,
      dashboard: o.dashboard !== null,
      overview: () => this.overview(),
      listJobs: () => this.dispatcher.listJobs(),
      taskExecutorMetrics: () => this.taskExecutorMetrics(),
    });
    this.#inspection = this.#observability.inspectionSink(o.inspect);
    this.#dashboardOptions = o.dashboard;
    this.#driver = new LocalResourceManagerDriver({
      mode: o.mode,
      configuration: this.options,
      logger: this.#log,
      logLevel: o.logLevel,
      ...(this.#inspection ? { inspect: this.#inspection.forward, inspectDetail: this.#inspection.detail } : {}),
    });
    this.resourceManager = new ResourceManager({
      configuration: this.options,
      driver: this.#driver,
      workersOnDemand: o.workersOnDemand,
      log: (message, fields, level) => runtime(fields, level)(message),
      onTaskExecutorLost: this.#observability.onTaskExecutorLost,
      ...(this.#inspection ? { inspect: this.#inspection.inspect } : {}),
    });
    const rm = this.resourceManager;
    this.dispatcher = new Dispatcher({
      options: this.options,
      ...resourceManagerServices(rm),
      taskExecutor: (resourceId) => this.#driver.taskExecutorGateway(resourceId),
      reasonFor: (jobId) => this.#reasonFor(jobId),
      ...(this.#inspection ? { inspect: this.#inspection.inspect } : {}),
      log: (message, fields, level) => runtime(fields, level)(message),
      // User code at submit runs where the tasks would: a thread of its own, or a child process.
      taskModuleChecker: new DefaultTaskModuleChecker({
        mode: o.mode,
        timeoutMs: this.options['dispatcher.task-module-check.timeout'],
      }),
      jobObserver: this.#observability.jobObserver,
    });
  }

  readonly #observability: Observability;
  readonly #dashboardOptions: ResolvedDashboardOptions | null;

  readonly #fixedExecutors: number;

  /** Starts a cluster; with a fixed number of TaskExecutors, resolves once they have all registered. */
  static async start(options: MiniClusterOptions = {}): Promise<MiniCluster> {
    const cluster = new MiniCluster(options);
    await cluster.#inspection?.ready;
    cluster.resourceManager.start();
    const rm = cluster.resourceManager;
    await rm.mailbox.callAsync(() => {
      for (let i = 0; i < cluster.#fixedExecutors; i++) cluster.#driver.requestResource(cluster.#spec, null);
    });
    try {
      if (cluster.#dashboardOptions !== null)
        await cluster.#observability.serve(cluster.#dashboardOptions, cluster.dispatcher);
      await cluster.#waitForExecutors(cluster.#fixedExecutors);
    } catch (error) {
      await cluster.close();
      throw error;
    }
    return cluster;
  }

  /**
   * The Stately inspector relay's page, with its token (`http://localhost:<port>/?token=…`; the
   * port picked when `inspect.stately.port` is 0), or null when the cluster was not started with
   * `inspect: { stately }`. Only holders of this URL can watch or send events.
   */
  get inspectorUrl(): string | null {
    return this.#inspection?.url ?? null;
  }

  /**
   * The dashboard's page with its token (`http://127.0.0.1:<port>/?token=…`), or null when the
   * cluster was started without `dashboard`. Only holders of this URL get in.
   */
  get dashboardUrl(): string | null {
    return this.#observability.dashboardUrl;
  }

  /**
   * The prom-client Registry holding this cluster's metrics (the one passed as `metrics.registry`, or the cluster's
   * own).
   */
  get metricsRegistry(): Registry {
    return this.#observability.metrics.registry;
  }

  /** The cluster's metrics now, as plain numbers (what `/metrics` exposes; see docs/observability.md, Metrics). */
  async metrics(): Promise<MetricsSnapshot> {
    this.#requireOpen('metrics');
    return this.#observability.metrics.snapshot();
  }

  /** Starts one more TaskExecutor of the configured shape; resolves when it has registered. */
  async addTaskExecutor(): Promise<ResourceID> {
    this.#requireOpen('addTaskExecutor');
    const resourceId = await this.resourceManager.mailbox.callAsync(() =>
      this.#driver.requestResource(this.#spec, null),
    );
    const registered = () =>
      this.resourceManager.slotManager.overview().taskManagers.some((tm) => tm.resourceId === resourceId);
    await this.#waitUntil(
      registered,
      () => `TaskExecutor ${resourceId} did not register`,
      'addTaskExecutor',
      () =>
        // The driver forgets a worker whose link closed: it will never register.
        this.#driver.workers().some((worker) => worker.resourceId === resourceId)
          ? undefined
          : `TaskExecutor ${resourceId} ended before it registered`,
    );
    return resourceId;
  }

  /** Stops a TaskExecutor at once, as a crash would (for failover drills). */
  killTaskExecutor(resourceId: ResourceID): boolean {
    this.#requireOpen('killTaskExecutor');
    return this.#driver.killWorker(resourceId);
  }

  /**
   * Validates and submits a job. Rejects with JobGraphError for a bad graph or task module. With
   * `signal`, aborting it cancels the job (before the job started: rejects with the signal's reason).
   */
  async submitJob(job: JobGraphSpec | JobGraph, options?: SubmitJobOptions): Promise<JobClient> {
    this.#requireOpen('submitJob');
    return this.dispatcher.submitJob(job, options);
  }

  listJobs(): JobSummary[] {
    return this.dispatcher.listJobs();
  }

  /** Cancels a job of this cluster (IllegalArgumentError for an unknown JobID). */
  async cancelJob(jobId: JobID): Promise<void> {
    this.#requireOpen('cancelJob');
    return this.dispatcher.cancelJob(jobId);
  }

  /** The cluster now: executors and their slots (which subtask runs where), waiting requests with reasons, jobs. */
  overview(): ClusterOverview {
    const rm = this.resourceManager;
    return describeCluster(
      rm.slotManager,
      this.dispatcher,
      (id) => rm.taskExecutorMode(id) ?? this.mode,
      (id) => rm.taskExecutorPartitions(id),
    );
  }

  /**
   * Each running TaskExecutor's figures, asked of it now: its slots by state, running tasks, and
   * its task threads (booted so far, spare, in use). A TaskExecutor that does not answer within
   * rpc.ask.timeout is left out.
   */
  async taskExecutorMetrics(): Promise<TaskExecutorMetricsWire[]> {
    this.#requireOpen('taskExecutorMetrics');
    return askTaskExecutorMetrics(
      this.#driver.workers().map((worker) => this.#driver.taskExecutorGateway(worker.resourceId)),
    );
  }

  /** Cancels running jobs, frees their slots, stops every TaskExecutor; the same promise every time. */
  close(): Promise<void> {
    this.#closed ??= (async () => {
      // The dashboard first: its pages stop asking while the jobs end.
      await this.#observability.close();
      await this.dispatcher.close(this.options['rpc.ask.timeout']);
      await this.resourceManager.close();
      await this.#inspection?.close();
    })();
    for (const wake of [...this.#waits]) wake();
    return this.#closed;
  }

  /** `await using cluster = await MiniCluster.start(...)`: {@link close} when the scope ends. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  #reasonFor(jobId: JobID): string {
    const reasons = this.resourceManager.slotManager.getPendingRequests().filter((r) => r.jobId === jobId);
    if (reasons.length === 0) return 'no reason reported by the SlotManager';
    return reasons
      .map(
        (r) =>
          `${r.kind === 'requirement' ? r.missing : 1} × ` +
          `${r.resourceProfile.isUnknown() ? 'default slot' : r.resourceProfile}: ` +
          `${r.reason === null ? r.description : describeWaitReason(r.reason)}`,
      )
      .join('; ');
  }

  /**
   * Waits until `count` TaskExecutors are registered with their slots, i.e. in the SlotManager (a
   * TaskExecutor registers at the ResourceManager first and sends its slot report after).
   */
  #waitForExecutors(count: number): Promise<void> {
    const registered = () => this.resourceManager.slotManager.overview().taskManagers.length;
    return this.#waitUntil(
      () => registered() >= count,
      () => `only ${registered()} of ${count} TaskExecutors registered`,
      'start',
    );
  }

  /**
   * Resolves once `done` holds, looked at now and on each of the ResourceManager's registration
   * events (no polling); fails at the start timeout, at once when the cluster closes or `lost` names
   * why it never will.
   */
  #waitUntil(
    done: () => boolean,
    failure: () => string,
    operation: string,
    lost: () => string | undefined = () => undefined,
  ): Promise<void> {
    const refused = (message: string) =>
      new IllegalStateError(message, { component: 'MiniCluster', operation, state: 'starting', allowed: ['started'] });
    return new Promise<void>((resolve, reject) => {
      const settle = (error?: Error) => {
        this.#waits.delete(check);
        unsubscribe();
        systemClock.clearTimeout(timer);
        if (error === undefined) resolve();
        else reject(error);
      };
      const check = () => {
        if (done()) return settle();
        if (this.#closed !== null) return settle(this.#closedError(operation));
        const why = lost();
        if (why !== undefined) settle(refused(why));
      };
      const unsubscribe = this.resourceManager.onTaskExecutorRegistration(check);
      const timer = systemClock.setTimeout(
        () => (done() ? settle() : settle(refused(`${failure()} within ${this.#startTimeoutMs} ms`))),
        this.#startTimeoutMs,
      );
      this.#waits.add(check);
      check();
    });
  }

  /** The waits of start() and addTaskExecutor(): close() wakes them, so they give up at once. */
  readonly #waits = new Set<() => void>();

  #closedError(operation: string): IllegalStateError {
    return new IllegalStateError(`MiniCluster.${operation}: the cluster is closed`, {
      component: 'MiniCluster',
      operation,
      state: 'closed',
      allowed: ['started'],
    });
  }

  #requireOpen(operation: string): void {
    if (this.#closed !== null) throw this.#closedError(operation);
  }
}
