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
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, isAbsolute, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { NatsConnection } from '@nats-io/transport-node';
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
import { ResourceManager } from '../resourcemanager/ResourceManager.js';
import { askTaskExecutorMetrics } from '../resourcemanager/askTaskExecutorMetrics.js';
import { resourceManagerServices } from '../dispatcher/resourceManagerServices.js';
import { BlobStore, checkSha256, sha256Hex } from './BlobStore.js';
import { bundleTaskModule } from './bundleTaskModule.js';
import { checkClusterId, clusterSubjects, DEFAULT_CLUSTER_ID, JOBMANAGER_PEER_ID } from './clusterSubjects.js';
import { checkNatsUrl, connectNats, DEFAULT_CONNECT_TIMEOUT_MS, DEFAULT_NATS_URL } from './natsConnection.js';
import { StandaloneResourceManagerDriver } from './StandaloneResourceManagerDriver.js';
import { cachedHash, taskCodeRef, TaskCodeCache } from './TaskCodeCache.js';

export interface JobManagerOptions {
  /** The NATS server (`--nats`). Default nats://127.0.0.1:4222. */
  readonly nats?: string;
  /** The cluster's id (`--cluster-id`): its subjects and object store buckets. Default 'default'. */
  readonly clusterId?: string;
  /** Runtime options (heartbeat.*, rpc.ask.timeout, slotmanager.*, restart-strategy, ...). */
  readonly configuration?: SlotwiseOptions;
  /** Where the JobManager keeps its copy of task code. Default: a new directory under the OS tmpdir, removed at close. */
  readonly cacheDir?: string;
  /** Bound on the first connect to NATS. Default 5 s. */
  readonly connectTimeoutMs?: number;
  /** Log records of the JobManager and of every TaskExecutor. Default: warnings and errors to stderr. */
  readonly logger?: LogSink;
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

const OPTION_KEYS = ['nats', 'clusterId', 'configuration', 'cacheDir', 'connectTimeoutMs', 'logger'];

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
  #closed: Promise<void> | null = null;

  private constructor(
    clusterId: string,
    options: ResolvedOptions,
    connection: NatsConnection,
    blobs: BlobStore,
    cacheDir: string | undefined,
    logger: LogSink,
  ) {
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
      log: (message) => log({ level: 'info', source: 'runtime', message }),
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
    });
  }

  /** Connects to NATS, opens the cluster's object store and starts the ResourceManager; TaskManagers may register from then on. */
  static async start(options: JobManagerOptions = {}): Promise<JobManager> {
    checkOptionKeys(options, OPTION_KEYS, 'startJobManager');
    const url = checkNatsUrl(options.nats ?? DEFAULT_NATS_URL, 'options.nats');
    const clusterId = checkClusterId(options.clusterId ?? DEFAULT_CLUSTER_ID, 'options.clusterId');
    const configuration = resolveOptions(options.configuration ?? {});
    if (options.cacheDir !== undefined && (typeof options.cacheDir !== 'string' || !isAbsolute(options.cacheDir))) {
      throw new IllegalArgumentError(
        'invalid-value',
        `options.cacheDir must be an absolute path, got ${JSON.stringify(options.cacheDir)}`,
        { argument: 'options.cacheDir', value: options.cacheDir },
      );
    }
    const connection = await connectNats(
      url,
      `slotwise jobmanager ${clusterId}`,
      options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS,
      configuration['heartbeat.interval'],
    );
    try {
      const blobs = await BlobStore.open(connection, clusterId);
      const jobManager = new JobManager(
        clusterId,
        configuration,
        connection,
        blobs,
        options.cacheDir,
        options.logger ?? createDefaultLogSink(),
      );
      jobManager.resourceManager.start();
      // Our subscription is in place at the server before anyone is told we are up.
      await jobManager.#inbox.ready();
      return jobManager;
    } catch (error) {
      await connection.close();
      throw error;
    }
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
    return describeCluster(this.resourceManager.slotManager, this.dispatcher, 'process');
  }

  /** Each registered TaskExecutor's figures, asked of it now (one that does not answer within rpc.ask.timeout is left out). */
  async taskExecutorMetrics(): Promise<TaskExecutorMetricsWire[]> {
    this.#requireOpen('taskExecutorMetrics');
    return askTaskExecutorMetrics(
      this.resourceManager.taskExecutors.map((resourceId) => this.#driver.taskExecutorGateway(resourceId)),
    );
  }

  /** Cancels the running jobs, lets the TaskManagers go (they keep trying to register), closes NATS; the same promise every time. */
  close(): Promise<void> {
    this.#closed ??= (async () => {
      await this.dispatcher.close(this.options['rpc.ask.timeout']);
      await this.resourceManager.close();
      this.#inbox.close();
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

export function checkOptionKeys(options: unknown, known: readonly string[], where: string): void {
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    throw new IllegalArgumentError(
      'invalid-type',
      `${where} takes an options object, got ${options === null ? 'null' : Array.isArray(options) ? 'an array' : typeof options}`,
      { argument: 'options' },
    );
  }
  const unknown = Object.keys(options).find((key) => !known.includes(key));
  if (unknown !== undefined)
    throw new IllegalArgumentError('unknown-key', `${where}: unknown option '${unknown}'; known: ${known.join(', ')}`, {
      argument: `options.${unknown}`,
    });
}
