/**
 * The JobManager of a standalone session cluster over NATS (Flink's session cluster entrypoint):
 * a Dispatcher, a ResourceManager with its SlotManager, and the JobMasters of its jobs, in this
 * process; it starts no workers — TaskManagers on any host register themselves on the cluster's
 * subject (StandaloneResourceManagerDriver). It offers the job API of a MiniCluster (submitJob,
 * listJobs, cancelJob, overview, taskExecutorMetrics) plus `storeTaskCode`, so that a REST server
 * can serve either.
 *
 * Task code travels as Flink's BlobServer makes it: content-addressed by SHA-256 in the cluster's
 * JetStream object store (BlobStore). `storeTaskCode` takes a bundle a client uploaded; `submitJob`
 * bundles a task module given as a local path itself. The JobManager keeps a copy on its disk for
 * its task module checker (a worker thread: user code never runs on this one); its TaskExecutors
 * are told the code's hash and fetch it.
 *
 * It keeps a MiniCluster's metrics and dashboard, wired by the same Observability: its ClusterMetrics
 * in a prom-client registry (`metricsRegistry`, `metrics()`), and, with `rest`, its own REST server
 * (Flink's WebMonitorEndpoint) serving the API, the dashboard at `/` and Prometheus text at
 * `/metrics` (`restUrl`, `dashboardUrl`).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, isAbsolute, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { NatsConnection } from '@nats-io/transport-node';
import type { Registry } from 'prom-client';
import { describeCluster, type ClusterOverview } from '../ClusterOverview.js';
import { systemClock } from '../core/clock.js';
import { IllegalArgumentError, IllegalStateError } from '../core/errors.js';
import type { JobID } from '../core/ids.js';
import { createDefaultLogSink, type LogSink } from '../core/Logger.js';
import { resolveOptions, type ResolvedOptions, type SlotwiseOptions } from '../core/options.js';
import { Dispatcher, type JobClient, type JobSummary, type SubmitJobOptions } from '../dispatcher/Dispatcher.js';
import type { JobGraphSpec } from '../jobmaster/JobGraph.js';
import { DefaultTaskModuleChecker } from '../jobmaster/TaskModuleChecker.js';
import { NatsInbox } from '../rpc/natsTransport.js';
import type { TaskExecutorMetricsWire } from '../rpc/protocol.js';
import type { InspectionSink } from '../inspect.js';
import type { MetricsSnapshot } from '../metrics/MetricsSnapshot.js';
import { resolveMetricsOptions, type MetricsOptions } from '../metrics/MetricsOptions.js';
import { Observability } from '../Observability.js';
import { ResourceManager } from '../resourcemanager/ResourceManager.js';
import { clusterTarget } from '../rest/miniClusterTarget.js';
import { startRestServer, type RestServer } from '../rest/RestServer.js';
import { askTaskExecutorMetrics } from '../resourcemanager/askTaskExecutorMetrics.js';
import { resourceManagerServices } from '../dispatcher/resourceManagerServices.js';
import { BlobStore, checkSha256, sha256Hex } from './BlobStore.js';
import { bundleTaskModule } from './bundleTaskModule.js';
import { checkClusterId, clusterSubjects, DEFAULT_CLUSTER_ID, JOBMANAGER_PEER_ID } from './clusterSubjects.js';
import { checkOptionKeys, checkRestOptions, type JobManagerRestOptions } from './jobManagerOptions.js';
import { JobManagerLease, type JobManagerLeaseOptions } from './JobManagerLease.js';
import { checkNatsAuth, type NatsAuthOptions } from './natsAuth.js';
import {
  checkNatsUrl,
  connectNats,
  DEFAULT_CONNECT_TIMEOUT_MS,
  DEFAULT_NATS_URL,
  onConnectionLost,
} from './natsConnection.js';
import { StandaloneResourceManagerDriver } from './StandaloneResourceManagerDriver.js';
import { cachedHash, taskCodeRef, TaskCodeCache } from './TaskCodeCache.js';

export interface JobManagerOptions {
  /** The NATS server (`--nats`). Default nats://127.0.0.1:4222. */
  readonly nats?: string;
  /** Credentials and TLS for NATS (the `--nats-*` flags; natsAuth.ts). Default: none, the server must let anyone in. */
  readonly natsAuth?: NatsAuthOptions;
  /** The cluster's id (`--cluster-id`): its subjects and object store buckets. Default 'default'. */
  readonly clusterId?: string;
  /** Runtime options (heartbeat.*, rpc.ask.timeout, slotmanager.*, restart-strategy, ...). */
  readonly configuration?: SlotwiseOptions;
  /**
   * Where the JobManager keeps its copy of task code. Default: a new directory under the OS tmpdir, removed at close.
   */
  readonly cacheDir?: string;
  /** Bound on the first connect to NATS. Default 5 s. */
  readonly connectTimeoutMs?: number;
  /** Log records of the JobManager and of every TaskExecutor. Default: warnings and errors to stderr. */
  readonly logger?: LogSink;
  /** Its metrics' prom-client registry and prefix, as a MiniCluster's (default: a registry of its own, `slotwise`). */
  readonly metrics?: MetricsOptions;
  /**
   * Its REST server (API, dashboard at `/`, `/metrics`), as `slotwise jobmanager` starts it. Default: none
   * (`startRestServer` may serve it later). `port` default 8081 (0: a free port), `address` default '127.0.0.1'.
   */
  readonly rest?: JobManagerRestOptions;
}

/** One task module as uploaded: an ES module bundled into one file (RestTarget's TaskCodeUpload). */
export interface TaskCodeUpload {
  readonly name: string;
  readonly code: string;
  readonly sha256: string;
}

/** Where stored code is: its hash, and what to put in a vertex's `taskModule`. */
export interface StoredTaskCode {
  readonly sha256: string;
  readonly taskModule: string;
}

const OPTION_KEYS = [
  'nats',
  'natsAuth',
  'clusterId',
  'configuration',
  'cacheDir',
  'connectTimeoutMs',
  'logger',
  'metrics',
  'rest',
];

export class JobManager {
  readonly clusterId: string;
  readonly options: ResolvedOptions;
  readonly resourceManager: ResourceManager;
  readonly dispatcher: Dispatcher;
  readonly #connection: NatsConnection;
  readonly #inbox: NatsInbox;
  readonly #blobs: BlobStore;
  readonly #driver: StandaloneResourceManagerDriver;
  readonly #cache: TaskCodeCache;
  readonly #ownCacheDir: boolean;
  readonly #observability: Observability;
  readonly #inspection: InspectionSink | null;
  /** This cluster id is ours while we hold it (JobManagerLease.ts). */
  readonly #lease: JobManagerLease;
  #rest: RestServer | null = null;
  #closed: Promise<void> | null = null;

  private constructor(
    clusterId: string,
    options: ResolvedOptions,
    connection: NatsConnection,
    blobs: BlobStore,
    cacheDir: string | undefined,
    logger: LogSink,
    observability: Observability,
    lease: JobManagerLease,
  ) {
    this.#observability = observability;
    this.#lease = lease;
    // With a dashboard, the SlotManager's and the jobs' statecharts report to its actors view.
    this.#inspection = observability.inspectionSink(undefined);
    const inspect = this.#inspection ? { inspect: this.#inspection.inspect } : {};
    this.clusterId = clusterId;
    this.options = options;
    this.#connection = connection;
    this.#blobs = blobs;
    this.#ownCacheDir = cacheDir === undefined;
    this.#cache = new TaskCodeCache(cacheDir ?? mkdtempSync(join(tmpdir(), `slotwise-${clusterId}-jobmanager-`)));
    const log: LogSink = (record) => {
      try {
        logger(record);
      } catch {
        // A failing logger must not break the runtime it reports on.
      }
    };
    this.#inbox = new NatsInbox({
      connection,
      subject: clusterSubjects(clusterId).resourceManager,
      id: JOBMANAGER_PEER_ID,
      largeMessages: blobs.messages,
      log: (message) => log({ level: 'warn', source: 'runtime', message }),
    });
    const driver = (this.#driver = new StandaloneResourceManagerDriver({
      inbox: this.#inbox,
      configuration: options,
      clock: systemClock,
      logger: log,
      taskModuleFor: (taskModule) => this.#wireName(taskModule),
    }));
    this.resourceManager = new ResourceManager({
      configuration: options,
      driver,
      workersOnDemand: false,
      log: (message, fields, level = 'info') => log({ level, source: 'runtime', message, ...fields }),
      onTaskExecutorLost: observability.onTaskExecutorLost,
      ...inspect,
    });
    const rm = this.resourceManager;
    this.dispatcher = new Dispatcher({
      options,
      ...resourceManagerServices(rm),
      taskExecutor: (resourceId) => driver.taskExecutorGateway(resourceId),
      reasonFor: (jobId) => {
        const waiting = rm.slotManager.getPendingRequests().filter((r) => r.jobId === jobId);
        return waiting.length === 0
          ? 'no reason reported by the SlotManager'
          : waiting.map((r) => r.description).join('; ');
      },
      log: (message, fields, level = 'info') => log({ level, source: 'runtime', message, ...fields }),
      taskModuleChecker: new DefaultTaskModuleChecker({
        mode: 'thread',
        timeoutMs: options['dispatcher.task-module-check.timeout'],
      }),
      jobObserver: observability.jobObserver,
      ...inspect,
    });
  }

  /**
   * Connects to NATS, opens the cluster's object store and starts the ResourceManager; TaskManagers may register from
   * then on.
   */
  static async start(options: JobManagerOptions = {}): Promise<JobManager> {
    checkOptionKeys(options, OPTION_KEYS, 'startJobManager');
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
    let lease: JobManagerLease | undefined;
    try {
      // The cluster id is ours before we listen on it, or we refuse (ClusterError): one JobManager per cluster.
      lease = await JobManagerLease.acquire(connection, clusterId, leaseTimes(configuration, logger));
      const blobs = await BlobStore.open(connection, clusterId);
      // First what may refuse (a registry another cluster uses): nothing listens yet.
      let self: JobManager | null = null;
      observability = new Observability({
        metrics,
        dashboard: rest !== null,
        overview: () => self!.overview(),
      });
      const jobManager = (self = new JobManager(
        clusterId,
        configuration,
        connection,
        blobs,
        options.cacheDir,
        logger,
        observability,
        lease,
      ));
      onConnectionLost(connection, url, (message) => {
        try {
          logger({ level: 'error', source: 'runtime', message });
        } catch {
          // A failing logger must not break the runtime it reports on.
        }
      });
      jobManager.resourceManager.start();
      // Our subscription is in place at the server before anyone is told we are up.
      await jobManager.#inbox.ready();
      if (rest !== null) {
        try {
          jobManager.#rest = await startRestServer({
            ...rest,
            target: clusterTarget(jobManager, (upload) => jobManager.storeTaskCode(upload)),
            dashboard: observability.dashboardFor(jobManager.dispatcher),
          });
        } catch (error) {
          await jobManager.close();
          throw error;
        }
      }
      return jobManager;
    } catch (error) {
      await observability?.close();
      await lease?.release();
      await connection.close().catch(() => {});
      throw error;
    }
  }

  /** The REST API's URL (`http://127.0.0.1:8081`, https with `rest.tls`), or null when started without `rest`. */
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
    if (typeof upload !== 'object' || upload === null)
      throw new IllegalArgumentError('invalid-type', 'storeTaskCode takes { name, code, sha256 }', {
        argument: 'upload',
      });
    if (typeof upload.name !== 'string' || upload.name === '')
      throw new IllegalArgumentError(
        'invalid-value',
        "upload.name must be a non-empty string (the module's file name)",
        { argument: 'upload.name' },
      );
    if (typeof upload.code !== 'string')
      throw new IllegalArgumentError('invalid-type', `upload.code of ${upload.name} must be the module's source text`, {
        argument: 'upload.code',
      });
    const sha256 = checkSha256(upload.sha256, 'upload.sha256');
    const bytes = Buffer.from(upload.code, 'utf8');
    const actual = sha256Hex(bytes);
    if (actual !== sha256) {
      throw new IllegalArgumentError(
        'invalid-value',
        `upload.sha256 of ${upload.name} is ${sha256}, but its code hashes to ${actual}: refused`,
        { argument: 'upload.sha256', value: sha256, actual },
      );
    }
    await this.#blobs.putCode(bytes);
    const path = this.#cache.write(sha256, bytes);
    return { sha256, taskModule: pathToFileURL(path).href };
  }

  /**
   * Validates and submits a job. A task module given as a local path (not one `storeTaskCode`
   * returned) is bundled and stored first, so the TaskExecutors on other hosts can run it.
   */
  async submitJob(spec: JobGraphSpec, options?: SubmitJobOptions): Promise<JobClient> {
    this.#requireOpen('submitJob');
    return this.dispatcher.submitJob(await this.#withStoredCode(spec), options);
  }

  listJobs(): JobSummary[] {
    return this.dispatcher.listJobs();
  }

  getJob(jobId: JobID): JobClient | undefined {
    return this.dispatcher.getJob(jobId);
  }

  /** Cancels a job (IllegalArgumentError for an unknown JobID). */
  async cancelJob(jobId: JobID): Promise<void> {
    this.#requireOpen('cancelJob');
    return this.dispatcher.cancelJob(jobId);
  }

  /** TaskExecutors and their slots (which subtask runs where), waiting requests with reasons, jobs. */
  overview(): ClusterOverview {
    const rm = this.resourceManager;
    // Each TaskManager says how its TaskExecutor runs when it registers (one in the SlotManager is registered).
    return describeCluster(rm.slotManager, this.dispatcher, (id) => rm.taskExecutorMode(id) ?? 'thread');
  }

  /**
   * Each registered TaskExecutor's figures, asked of it now (one that does not answer within rpc.ask.timeout is left
   * out).
   */
  async taskExecutorMetrics(): Promise<TaskExecutorMetricsWire[]> {
    this.#requireOpen('taskExecutorMetrics');
    return askTaskExecutorMetrics(
      this.resourceManager.taskExecutors.map((resourceId) => this.#driver.taskExecutorGateway(resourceId)),
    );
  }

  /**
   * Cancels the running jobs, lets the TaskManagers go (they keep trying to register), closes NATS; the same promise
   * every time.
   */
  close(): Promise<void> {
    this.#closed ??= (async () => {
      // The REST server and dashboard first: nobody submits or watches while the jobs end.
      await this.#rest?.close();
      await this.#observability.close();
      await this.dispatcher.close(this.options['rpc.ask.timeout']);
      await this.resourceManager.close();
      await this.#inspection?.close();
      this.#inbox.close();
      await this.#lease.release();
      await this.#connection.drain().catch(() => this.#connection.close());
      if (this.#ownCacheDir) rmSync(this.#cache.dir, { recursive: true, force: true });
    })();
    return this.#closed;
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  /** What a TaskExecutor is told to run: code in our cache by its hash, any other path as it is. */
  #wireName(taskModule: string): string {
    const hash = cachedHash(taskModule);
    return hash !== undefined && dirname(taskModule) === this.#cache.dir ? taskCodeRef(hash) : taskModule;
  }

  async #withStoredCode(spec: JobGraphSpec): Promise<JobGraphSpec> {
    const vertices = (spec as { vertices?: unknown } | null)?.vertices;
    if (!Array.isArray(vertices)) return spec; // JobGraph.create says what is wrong
    const stored = new Map<string, string>();
    const mapped = [];
    for (const vertex of vertices) {
      const path = localPath((vertex as { taskModule?: unknown } | null)?.taskModule);
      if (path === undefined || (cachedHash(path) !== undefined && dirname(path) === this.#cache.dir)) {
        mapped.push(vertex);
        continue;
      }
      let taskModule = stored.get(path);
      if (taskModule === undefined) {
        const bundle = await bundleTaskModule(path);
        taskModule = (await this.storeTaskCode(bundle)).taskModule;
        stored.set(path, taskModule);
      }
      mapped.push({ ...vertex, taskModule });
    }
    return { ...spec, vertices: mapped };
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

/** `startJobManager(options)`: {@link JobManager.start}. */
export const startJobManager = (options: JobManagerOptions = {}): Promise<JobManager> => JobManager.start(options);

/**
 * The lease lasts heartbeat.timeout unrenewed (as long as TaskManagers take to see a JobManager gone; at least 1 s),
 * renewed every heartbeat.interval, at least three times within it.
 */
function leaseTimes(configuration: ResolvedOptions, logger: LogSink): JobManagerLeaseOptions {
  const ttlMs = Math.max(1_000, Math.ceil(configuration['heartbeat.timeout']));
  return {
    ttlMs,
    renewMs: Math.max(1, Math.min(Math.ceil(configuration['heartbeat.interval']), Math.floor(ttlMs / 3))),
    log: (level, message) => {
      try {
        logger({ level, source: 'runtime', message });
      } catch {
        // A failing logger must not break the runtime it reports on.
      }
    },
  };
}

/** The absolute path a task module names, or undefined when it names none (JobGraph refuses it then). */
function localPath(taskModule: unknown): string | undefined {
  try {
    if (taskModule instanceof URL || (typeof taskModule === 'string' && taskModule.startsWith('file:')))
      return fileURLToPath(taskModule);
  } catch {
    return undefined;
  }
  return typeof taskModule === 'string' && isAbsolute(taskModule) ? taskModule : undefined;
}
