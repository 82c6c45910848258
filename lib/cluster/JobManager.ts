/**
 * The JobManager of a standalone session cluster over NATS (Flink's session cluster entrypoint): a
 * Dispatcher, a ResourceManager with its SlotManager and the JobMasters of its jobs while it leads its
 * cluster id (LeaderElection; the others stand by), TaskManagers on any host registering on the
 * cluster's subject (StandaloneResourceManagerDriver). It offers a MiniCluster's job API plus
 * `storeTaskCode`, so a REST server can serve either; task code travels content-addressed through the
 * cluster's object store (ClusterTaskCode, Flink's BlobServer), never run in this process. Its jobs
 * survive it (RecoveredJobs); its TaskManagers' logs come to it (forwardedLogs). It keeps a
 * MiniCluster's metrics and dashboard (Observability) and, with `rest`, serves the API, the dashboard
 * at `/` and Prometheus text at `/metrics` itself (Flink's WebMonitorEndpoint).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { isAbsolute, join } from 'node:path';
import type { NatsConnection } from '@nats-io/transport-node';
import type { Registry } from 'prom-client';
import { describeCluster, type ClusterOverview } from '../ClusterOverview.js';
import { ClusterError, IllegalArgumentError, IllegalStateError } from '../core/errors.js';
import type { JobID } from '../core/ids.js';
import { createDefaultLogSink, type LogSink } from '../core/Logger.js';
import { resolveOptions, type ResolvedOptions } from '../core/options.js';
import type { JobClient, JobLookup, JobSummary, SubmitJobOptions } from '../dispatcher/Dispatcher.js';
import type { JobGraphSpec } from '../jobmaster/JobGraph.js';
import type { TaskExecutorMetricsWire } from '../rpc/protocol.js';
import { checkInspectOption, type InspectionSink, type InspectOption } from '../inspect.js';
import type { MetricsSnapshot } from '../metrics/MetricsSnapshot.js';
import { resolveMetricsOptions } from '../metrics/MetricsOptions.js';
import { Observability } from '../Observability.js';
import type { ResourceManager } from '../resourcemanager/ResourceManager.js';
import { clusterTarget } from '../rest/miniClusterTarget.js';
import { startRestServer, type RestServer } from '../rest/RestServer.js';
import { askTaskExecutorMetrics } from '../resourcemanager/askTaskExecutorMetrics.js';
import type { LogPage } from '../rest/RestTarget.js';
import { BlobStore } from './BlobStore.js';
import { ForwardedLogs, RECORDS_KEPT } from './forwardedLogs.js';
import { checkClusterId, DEFAULT_CLUSTER_ID } from './clusterSubjects.js';
import { ClusterTaskCode, type StoredTaskCode, type TaskCodeUpload } from './ClusterTaskCode.js';
import {
  checkOptionKeys,
  checkRestOptions,
  JOB_MANAGER_OPTION_KEYS,
  type JobManagerOptions,
} from './jobManagerOptions.js';
import { JobStore } from './JobStore.js';
import { describeHolder, LeaderElection, leaseTimes, type Leader } from './LeaderElection.js';
import {
  startLeaderServices,
  stopLeaderServices,
  type LeadershipChange,
  type LeaderServices,
} from './leaderServices.js';

import { checkNatsAuth } from './natsAuth.js';
import {
  checkNatsUrl,
  connectNats,
  DEFAULT_CONNECT_TIMEOUT_MS,
  DEFAULT_NATS_URL,
  onConnectionLost,
} from './natsConnection.js';
import { leaderFollowingClient } from './leaderFollowingClient.js';
import { RecoveredJobs } from './RecoveredJobs.js';
import { TaskCodeCache } from './TaskCodeCache.js';

export type { JobManagerOptions, JobManagerRestOptions } from './jobManagerOptions.js';
export type { StoredTaskCode, TaskCodeUpload } from './ClusterTaskCode.js';
export type { LeadershipChange } from './leaderServices.js';

export class JobManager {
  readonly clusterId: string;
  readonly options: ResolvedOptions;
  /** The jobs of this cluster as its leader knows them (empty while standing by). */
  readonly dispatcher: JobLookup;
  readonly #connection: NatsConnection;
  readonly #blobs: BlobStore;
  readonly #code: ClusterTaskCode;
  /** Jobs and results in the cluster's JetStream (high-availability.type 'nats'), or null. */
  readonly #jobs: RecoveredJobs | null;
  readonly #cache: TaskCodeCache;
  readonly #ownCacheDir: boolean;
  readonly #observability: Observability;
  readonly #inspection: InspectionSink | null;
  readonly #log: LogSink;
  /** What the TaskManagers forward of their logs. */
  readonly #logs: ForwardedLogs;
  #election: LeaderElection | null = null;
  #leader: LeaderServices | null = null;
  #rest: RestServer | null = null;
  #closed: Promise<void> | null = null;
  readonly #leadershipListeners = new Set<(change: LeadershipChange) => void>();

  private constructor(
    clusterId: string,
    options: ResolvedOptions,
    connection: NatsConnection,
    blobs: BlobStore,
    store: JobStore | null,
    cacheDir: string | undefined,
    logger: LogSink,
    observability: Observability,
    inspect: InspectOption | undefined,
  ) {
    this.#observability = observability;
    // The statecharts (the SlotManager's, the jobs', the TaskManagers') report to `inspect` and, with a dashboard,
    // to its actors view.
    this.#inspection = observability.inspectionSink(inspect);
    this.clusterId = clusterId;
    this.options = options;
    this.#connection = connection;
    this.#blobs = blobs;
    this.#ownCacheDir = cacheDir === undefined;
    this.#cache = new TaskCodeCache(cacheDir ?? mkdtempSync(join(tmpdir(), `slotwise-${clusterId}-jobmanager-`)));
    const code = (this.#code = new ClusterTaskCode(this.#cache, blobs));
    this.#log = (record) => {
      try {
        logger(record);
      } catch {
        // A failing logger must not break the runtime it reports on.
      }
    };
    this.#logs = new ForwardedLogs(connection, clusterId);
    this.#jobs =
      store === null
        ? null
        : new RecoveredJobs({
            store,
            cache: this.#cache,
            blobs,
            wireName: (taskModule) => code.wireName(taskModule),
            log: this.#log,
          });
    this.dispatcher = {
      getJob: (jobId) => this.#leader?.dispatcher.getJob(jobId) ?? this.#jobs?.client(jobId),
      getJobView: (jobId) => this.#leader?.dispatcher.getJobView(jobId),
      listJobs: () => this.listJobs(),
      cancelJob: (jobId) => this.cancelJob(jobId),
    };
  }

  /**
   * Connects to NATS, opens the cluster's stores and joins its leader election: resolves leading (its
   * ResourceManager up, TaskManagers may register, the jobs an earlier leader left recovered) or
   * standing by while another JobManager leads (`isLeader`, `leader`).
   */
  static async start(options: JobManagerOptions = {}): Promise<JobManager> {
    checkOptionKeys(options, JOB_MANAGER_OPTION_KEYS, 'startJobManager');
    const url = checkNatsUrl(options.nats ?? DEFAULT_NATS_URL, 'options.nats');
    const auth = checkNatsAuth(options.natsAuth);
    const clusterId = checkClusterId(options.clusterId ?? DEFAULT_CLUSTER_ID, 'options.clusterId');
    const configuration = resolveOptions(options.configuration ?? {});
    if (options.cacheDir !== undefined && (typeof options.cacheDir !== 'string' || !isAbsolute(options.cacheDir))) {
      throw new IllegalArgumentError(
        'invalid-value',
        `options.cacheDir must be an absolute path, got ${JSON.stringify(options.cacheDir)}`,
        { argument: 'options.cacheDir', value: options.cacheDir },
      );
    }
    const rest = options.rest === undefined ? null : checkRestOptions(options.rest);
    const metrics = resolveMetricsOptions(options.metrics);
    const inspect = options.inspect === undefined ? undefined : checkInspectOption(options.inspect);
    let observability: Observability | undefined;
    const connection = await connectNats({
      url,
      name: `slotwise jobmanager ${clusterId}`,
      clusterId,
      auth,
      timeoutMs: options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS,
      pingIntervalMs: configuration['heartbeat.interval'],
    });
    const logger = options.logger ?? createDefaultLogSink();
    let jobManager: JobManager | null = null;
    try {
      const replicas = configuration['high-availability.nats.replicas'];
      const blobs = await BlobStore.open(connection, clusterId, replicas);
      const store =
        configuration['high-availability.type'] === 'nats'
          ? await JobStore.open(connection, clusterId, configuration['jobstore.expiration-time'], replicas)
          : null;
      // First what may refuse (a registry another cluster uses): nothing listens yet.
      observability = new Observability({
        metrics,
        dashboard: rest !== null,
        overview: () => jobManager!.overview(),
        listJobs: () => jobManager!.listJobs(),
        taskExecutorMetrics: () => jobManager!.taskExecutorMetrics(),
      });
      jobManager = new JobManager(
        clusterId,
        configuration,
        connection,
        blobs,
        store,
        options.cacheDir,
        logger,
        observability,
        inspect,
      );
      await jobManager.#inspection?.ready;
      onConnectionLost(connection, url, (message) => {
        try {
          logger({ level: 'error', source: 'runtime', message });
        } catch {
          // A failing logger must not break the runtime it reports on.
        }
      });
      if (rest !== null) {
        jobManager.#rest = await startRestServer({
          ...rest,
          target: clusterTarget(jobManager, (upload) => jobManager!.storeTaskCode(upload)),
          dashboard: observability.dashboardFor(jobManager.dispatcher),
          standby: () => jobManager!.#standbyOf(),
        });
      }
      const self = jobManager;
      self.#election = await LeaderElection.start(connection, clusterId, {
        ...leaseTimes(configuration),
        replicas,
        restUrl: () => self.restUrl,
        onGrant: (token) => self.#grant(token),
        onRevoke: (reason) => self.#revoke(reason),
        log: (level, message) => self.#log({ level, source: 'runtime', message }),
      });
      return self;
    } catch (error) {
      if (jobManager !== null) await jobManager.close();
      else {
        await observability?.close();
        await connection.close().catch(() => {});
      }
      throw error;
    }
  }

  /**
   * Calls `listener` each time this JobManager starts leading (with its fencing token) or stops (with why); returns a
   * function that removes it.
   */
  onLeadershipChange(listener: (change: LeadershipChange) => void): () => void {
    if (typeof listener !== 'function')
      throw new IllegalArgumentError('invalid-type', 'onLeadershipChange takes a function (change) => void', {
        argument: 'listener',
      });
    this.#leadershipListeners.add(listener);
    return () => this.#leadershipListeners.delete(listener);
  }

  #tellLeadership(change: LeadershipChange): void {
    for (const listener of this.#leadershipListeners) {
      try {
        listener(change);
      } catch {
        // A listener's failure is its own.
      }
    }
  }

  /** Whether this JobManager leads its cluster now (the others stand by). */
  get isLeader(): boolean {
    return this.#leader?.ready === true;
  }

  /** Who leads the cluster (this JobManager included), as its lease says, or null while nobody does. */
  get leader(): Leader | null {
    return this.#election?.leader ?? null;
  }

  /** The ResourceManager of this JobManager's leadership; IllegalStateError (state 'standby') while it stands by. */
  get resourceManager(): ResourceManager {
    return this.#requireLeader('resourceManager').resourceManager;
  }

  /** The REST API's URL (`http://127.0.0.1:8081`, https with `rest.tls`), or null when started without `rest`. */
  /**
   * The Stately inspector relay's page, with its token (`http://localhost:<port>/?token=…`), or null when not started
   * with `inspect: { stately }`.
   */
  get inspectorUrl(): string | null {
    return this.#inspection?.url ?? null;
  }

  get restUrl(): string | null {
    return this.#rest?.url ?? null;
  }

  /** The dashboard's page with its token (`http://127.0.0.1:8081/?token=…`), or null when started without `rest`. */
  get dashboardUrl(): string | null {
    return this.#rest?.dashboardUrl ?? null;
  }

  /** The prom-client Registry holding the JobManager's metrics (the one passed as `metrics.registry`, or its own). */
  get metricsRegistry(): Registry {
    return this.#observability.metrics.registry;
  }

  /** The cluster's metrics now, as plain numbers (what `/metrics` exposes; docs/observability.md, Metrics). */
  async metrics(): Promise<MetricsSnapshot> {
    this.#requireOpen('metrics');
    return this.#observability.metrics.snapshot();
  }

  /** Validates and stores one uploaded task module (content-addressed; the same code again is a no-op). */
  async storeTaskCode(upload: TaskCodeUpload): Promise<StoredTaskCode> {
    this.#requireOpen('storeTaskCode');
    return this.#code.store(upload);
  }

  /**
   * Validates and submits a job. A task module given as a local path (not one `storeTaskCode`
   * returned) is bundled and stored first, so the TaskExecutors on other hosts can run it. With
   * high-availability.type 'nats' the job is persisted before it starts. ClusterError('not-leader')
   * on a JobManager that stands by.
   */
  async submitJob(spec: JobGraphSpec, options?: SubmitJobOptions): Promise<JobClient> {
    this.#requireOpen('submitJob');
    const leader = this.#requireLeader('submitJob');
    const client = await leader.dispatcher.submitJob(await this.#code.withStoredCode(spec), options);
    // With a job store the job outlives this leadership: so does its client.
    const jobs = this.#jobs;
    return jobs === null
      ? client
      : leaderFollowingClient(client, leader, {
          clusterId: this.clusterId,
          closed: () => this.#closed !== null,
          leading: () => (this.#leader?.ready === true ? this.#leader : null),
          storedResult: (jobId) => jobs.storedResult(jobId),
        });
  }

  /** The jobs the leader runs and kept, and the ended ones of earlier leaders whose results are kept. */
  listJobs(): JobSummary[] {
    const jobs = this.#leader?.dispatcher.listJobs() ?? [];
    const known = new Set(jobs.map((job) => job.jobId));
    for (const ended of this.#jobs?.summaries() ?? []) if (!known.has(ended.jobId)) jobs.push(ended);
    return jobs;
  }

  getJob(jobId: JobID): JobClient | undefined {
    return this.dispatcher.getJob(jobId);
  }

  /** Cancels a job (IllegalArgumentError for an unknown JobID; ClusterError('not-leader') while standing by). */
  async cancelJob(jobId: JobID): Promise<void> {
    this.#requireOpen('cancelJob');
    const leader = this.#requireLeader('cancelJob');
    if (leader.dispatcher.getJob(jobId) === undefined && this.#jobs?.has(jobId) === true) return;
    return leader.dispatcher.cancelJob(jobId);
  }

  /** What a job's tasks logged, as TaskManagers forwarded it (forwardedLogs.ts); undefined for an unknown job. */
  jobLogs(jobId: JobID, from = 0, limit = RECORDS_KEPT): LogPage | undefined {
    const page = this.#logs.jobLogs(jobId, from, limit);
    return page.next === 0 && this.dispatcher.getJob(jobId) === undefined ? undefined : page;
  }

  /** A TaskManager's forwarded records (its tasks' lines, its warnings and errors); undefined when none came. */
  taskManagerLogs(resourceId: string, from = 0, limit = RECORDS_KEPT): LogPage | undefined {
    return this.#logs.taskManagerLogs(resourceId, from, limit);
  }

  /** TaskExecutors and their slots (which subtask runs where), waiting requests with reasons, jobs. */
  overview(): ClusterOverview {
    const leader = this.#leader;
    if (leader === null) return { taskExecutors: [], pendingWorkers: 0, pendingRequests: [], jobs: this.listJobs() };
    const rm = leader.resourceManager;
    // Each TaskManager says how its TaskExecutor runs when it registers (one in the SlotManager is registered).
    return describeCluster(
      rm.slotManager,
      this.dispatcher,
      (id) => rm.taskExecutorMode(id) ?? 'thread',
      (id) => rm.taskExecutorPartitions(id),
    );
  }

  /**
   * Each registered TaskExecutor's figures, asked of it now (one that does not answer within rpc.ask.timeout is left
   * out; none while standing by).
   */
  async taskExecutorMetrics(): Promise<TaskExecutorMetricsWire[]> {
    this.#requireOpen('taskExecutorMetrics');
    const leader = this.#leader;
    if (leader === null) return [];
    return askTaskExecutorMetrics(
      leader.resourceManager.taskExecutors.map((resourceId) => leader.driver.taskExecutorGateway(resourceId)),
    );
  }

  /**
   * Stops: a leader stops its jobs here and lets go of the cluster (a standby takes over at once and, with
   * high-availability.type 'nats', recovers the jobs that had not ended); its TaskManagers wait for the next leader
   * under their ResourceIDs. Then NATS closes. The same promise every time.
   */
  close(): Promise<void> {
    this.#closed ??= (async () => {
      // The REST server and dashboard first: nobody submits or watches while the jobs end.
      await this.#rest?.close();
      await this.#observability.close();
      await this.#election?.close();
      this.#logs.close();
      await this.#inspection?.close();
      await this.#connection.drain().catch(() => this.#connection.close());
      if (this.#ownCacheDir) rmSync(this.#cache.dir, { recursive: true, force: true });
    })();
    return this.#closed;
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  /** We lead with `token`: the leader's services start, an earlier leader's jobs are recovered, then we listen. */
  async #grant(token: number): Promise<void> {
    const jobs = this.#jobs;
    const leader = startLeaderServices({
      clusterId: this.clusterId,
      token,
      connection: this.#connection,
      largeMessages: this.#blobs.messages,
      options: this.options,
      log: this.#log,
      inspection: this.#inspection,
      observability: this.#observability,
      taskModuleFor: (taskModule) => this.#code.wireName(taskModule),
      fenced: (theirs) => this.#election?.fence(theirs),
      ...(jobs === null
        ? {}
        : {
            jobStore: {
              persist: (jobId, spec) => jobs.persist(jobId, spec),
              finished: (services, jobId, finished) => jobs.finished(services, jobId, finished),
              ended: (services, result) => void jobs.ended(services, result, () => this.#leader === services),
            },
          }),
    });
    this.#leader = leader;
    this.#log({
      level: 'info',
      source: 'runtime',
      message: `leading cluster '${this.clusterId}' (fencing token ${token})`,
    });
    await jobs?.recover(leader);
    // Our subscription is in place at the server before anyone could hear of us.
    await leader.inbox.ready();
    leader.ready = true;
    if (this.#leader === leader) this.#tellLeadership({ leading: true, token, reason: null });
  }

  /** We no longer lead: the leader's services stop (leaderServices.ts); the next leader recovers the jobs. */
  async #revoke(reason: string): Promise<void> {
    const leader = this.#leader;
    if (leader === null) return;
    this.#leader = null;
    await stopLeaderServices(leader, Math.min(REVOKE_WAIT_MS, this.options['rpc.ask.timeout']));
    this.#log({ level: 'info', source: 'runtime', message: `stopped leading cluster '${this.clusterId}': ${reason}` });
    this.#tellLeadership({ leading: false, token: leader.token, reason });
  }

  /** While standing by or taking over: who leads (for the REST server's redirect); null once we serve. */
  #standbyOf(): { leader: Leader | null } | null {
    if (this.#leader?.ready === true) return null;
    // Taking over (recovering the jobs): nobody serves yet.
    if (this.#leader !== null || this.#election === null) return { leader: null };
    return { leader: this.#election.leader };
  }

  #requireLeader(operation: string): LeaderServices {
    const leader = this.#leader;
    if (leader !== null) return leader;
    const other = this.#election?.leader ?? null;
    throw new ClusterError(
      'not-leader',
      `JobManager.${operation}: this JobManager stands by; ` +
        (other === null
          ? `nobody leads cluster '${this.clusterId}' right now (a standby takes over within the lease duration)`
          : `cluster '${this.clusterId}' is led by the JobManager ${describeHolder(other.holder)}` +
            (other.holder.restUrl === null ? '' : ` (${other.holder.restUrl})`)),
      { clusterId: this.clusterId, leader: other?.holder ?? null },
    );
  }

  #requireOpen(operation: string): void {
    if (this.#closed !== null)
      throw new IllegalStateError(`JobManager.${operation}: the JobManager is closed`, {
        component: 'JobManager',
        operation,
        state: 'closed',
        allowed: ['started'],
      });
  }
}

/** How long a JobManager that stops leading waits for its jobs to stop here. */
const REVOKE_WAIT_MS = 2_000;

/** `startJobManager(options)`: {@link JobManager.start}. */
export const startJobManager = (options: JobManagerOptions = {}): Promise<JobManager> => JobManager.start(options);
