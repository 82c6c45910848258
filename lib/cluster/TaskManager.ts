/**
 * A TaskManager of a standalone session cluster over NATS (Flink's TaskManagerRunner): one
 * TaskExecutor in this process that registers with its cluster's ResourceManager on
 * `slotwise.<clusterId>.rm`, listens on `slotwise.<clusterId>.te.<resourceId>`, heartbeats, reports
 * its slots and runs tasks on its own task threads (a piscina pool per slot, heap-limited by the
 * slot's profile, as on a MiniCluster's TaskExecutors).
 *
 * Coming back: the NATS client reconnects by itself; when its connection drops the TaskExecutor
 * starts registering again at once (Flink: the ResourceManager is lost), so when the network heals
 * it registers under the same ResourceID and the ResourceManager reconciles its slots from its
 * slot report. If the ResourceManager let it go meanwhile (not back within heartbeat.timeout of
 * being declared lost), or the JobManager went away, or the TaskExecutor gave up registering, a
 * fresh TaskExecutor starts under a new ResourceID — until `close()`.
 *
 * Task code named by hash (`slotwise-code:sha256-…`) is fetched from the cluster's object store,
 * verified and cached on disk (TaskCodeCache) before its first run here. Its producers' outputs stay here as result
 * partitions, which consumers on other TaskManagers read over a NATS connection of its own (natsPartitionPeers.ts):
 * data never waits in front of, nor behind, its control messages.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import type { NatsConnection, Subscription } from '@nats-io/transport-node';
import { unrefClock } from '../core/clock.js';
import { IllegalArgumentError, TaskExecutionError } from '../core/errors.js';
import { ResourceID } from '../core/ids.js';
import { createDefaultLogSink, type LogSink } from '../core/Logger.js';
import type { ResolvedOptions } from '../core/options.js';
import { Link } from '../rpc/Link.js';
import { serveTaskExecutor, taskExecutorGateways } from '../taskexecutor/taskExecutorGateways.js';
import { INSPECT_CHANNEL } from '../rpc/WorkerBootstrap.js';
import { NatsInbox } from '../rpc/natsTransport.js';
import { ResultPartitions, spillOptionsOf } from '../taskexecutor/ResultPartitions.js';
import { SlotTaskPool } from '../taskexecutor/SlotTaskPool.js';
import { TaskExecutor, type SlotTaskRunner } from '../taskexecutor/TaskExecutor.js';
import type { TaskInvocation } from '../taskexecutor/TaskInvocation.js';
import { taskThreadReserve, type TaskThreadReserve } from '../taskexecutor/TaskThreadReserve.js';
import { BlobStore } from './BlobStore.js';
import { InspectionForwarder } from './forwardedInspection.js';
import { forwardingLogSink } from './forwardedLogs.js';
import { checkResourceIdToken, clusterSubjects, JOBMANAGER_PEER_ID, type ClusterSubjects } from './clusterSubjects.js';
import { currentLeader, watchLease, type LeaseRecord } from './LeaderElection.js';
import { connectNats, DEFAULT_CONNECT_TIMEOUT_MS, DEFAULT_NATS_URL, onConnectionLost } from './natsConnection.js';
import { natsDataBus, natsPartitionPeers } from './natsPartitionPeers.js';
import { taskCodeHash, TaskCodeCache } from './TaskCodeCache.js';
import { TaskManagerProcess } from './TaskManagerProcess.js';
import { checkTaskManagerOptions, type TaskManagerOptions } from './taskManagerOptions.js';
import { TaskManagerRegistrations, type TaskManagerRegistrationListener } from './TaskManagerRegistrations.js';

export type { TaskManagerOptions } from './taskManagerOptions.js';

/** How long closing waits for the NATS connection to drain (its last messages out) before closing it. */
const DRAIN_WAIT_MS = 300;

/**
 * Timers that do not hold the process: while the TaskManager runs, its NATS connection does; once it closed, a
 * TaskExecutor's leftover deadline (a shutdown's bound on its slots' release) must not keep the process up.
 */
const UNREF_CLOCK = unrefClock();

/** One TaskExecutor's life in this process: its ResourceID, inbox, Link and endpoint. */
interface Incarnation {
  readonly resourceId: ResourceID;
  readonly inbox: NatsInbox;
  readonly link: Link;
  readonly taskExecutor: TaskExecutor;
  /** Its statecharts to the JobManager, when that asks. */
  readonly inspection: InspectionForwarder;
  readonly stopped: Promise<void>;
}

/** Set by TaskManager's static block: TaskManager.start for the child process of a TaskManagerProcess. */
let startInChildProcess: (options: TaskManagerOptions) => Promise<TaskManager>;

export class TaskManager {
  readonly clusterId: string;
  readonly options: ResolvedOptions;
  readonly #connection: NatsConnection;
  /** The data plane's connection: result partitions served and read (natsPartitionPeers.ts). */
  readonly #data: NatsConnection;
  readonly #subjects: ClusterSubjects;
  readonly #blobs: BlobStore;
  readonly #cache: TaskCodeCache;
  readonly #ownCacheDir: boolean;
  readonly #host: string;
  /** What its TaskExecutors register as: 'thread' (this process), 'process' (a TaskManagerProcess's child). */
  readonly #runsIn: 'thread' | 'process';
  readonly #log: LogSink;
  readonly #forwarding: ReturnType<typeof forwardingLogSink>;
  #current: Incarnation;
  #incarnations = 0;
  readonly #registrations = new TaskManagerRegistrations();
  /** The fencing token of the JobManager we follow (0: none known yet); older ones are not heard. */
  #leaderToken: number;
  readonly #leaseWatch: Subscription;
  /** Messages of deposed leaders dropped by earlier incarnations' inboxes. */
  #fencedBefore = 0;
  #closed: Promise<void> | null = null;

  private constructor(
    clusterId: string,
    options: ResolvedOptions,
    connection: NatsConnection,
    data: NatsConnection,
    blobs: BlobStore,
    o: TaskManagerOptions,
    runsIn: 'thread' | 'process',
    leaderToken: number,
  ) {
    this.clusterId = clusterId;
    this.#leaderToken = leaderToken;
    this.#runsIn = runsIn;
    this.options = options;
    this.#connection = connection;
    this.#data = data;
    this.#subjects = clusterSubjects(clusterId);
    this.#blobs = blobs;
    this.#ownCacheDir = o.cacheDir === undefined;
    this.#cache = new TaskCodeCache(o.cacheDir ?? mkdtempSync(join(tmpdir(), `slotwise-${clusterId}-taskmanager-`)));
    this.#host = o.host ?? hostname();
    const own = o.logger ?? createDefaultLogSink();
    // Printed here, and a task's lines and the warnings forwarded to the JobManagers (forwardedLogs.ts).
    const sink = (this.#forwarding = forwardingLogSink(connection, clusterId, (record) => {
      try {
        own(record);
      } catch {
        // A failing logger must not break the runtime it reports on.
      }
    }));
    this.#log = sink;
    this.#current = this.#startTaskExecutor();
    void this.#watchConnection();
    // Who leads, from every write of the cluster's lease: a new term is a new leader to register with.
    this.#leaseWatch = watchLease(connection, clusterId, (record) => this.#leaseWritten(record));
    onConnectionLost(connection, o.nats ?? DEFAULT_NATS_URL, (message) =>
      this.#log({ level: 'error', source: 'runtime', message, resourceId: this.#current.resourceId }),
    );
  }

  /**
   * Connects to NATS and starts the TaskExecutor in this process (mode 'thread'); it registers in
   * the background (see `registered`). `startTaskManager` also takes mode 'process'.
   */
  static async start(options: TaskManagerOptions = {}): Promise<TaskManager> {
    return TaskManager.#start(options, 'thread');
  }

  static {
    startInChildProcess = (options) => TaskManager.#start(options, 'process');
  }

  /** `runsIn`: what its TaskExecutor registers as, 'process' in the child process of a TaskManagerProcess. */
  static async #start(options: TaskManagerOptions, runsIn: 'thread' | 'process'): Promise<TaskManager> {
    const { url, auth, clusterId, configuration } = checkTaskManagerOptions(options);
    if ((options.mode ?? 'thread') !== 'thread') {
      throw new IllegalArgumentError(
        'invalid-value',
        `TaskManager.start runs the TaskExecutor in this process (mode 'thread'); ` +
          `startTaskManager takes mode 'process', got ${JSON.stringify(options.mode)}`,
        { argument: 'options.mode', value: options.mode },
      );
    }
    // Pinged at the heartbeat interval: a cut network is noticed about as fast as the ResourceManager notices us gone.
    const connect = (name: string) =>
      connectNats({
        url,
        name,
        clusterId,
        auth,
        timeoutMs: options.connectTimeoutMs ?? DEFAULT_CONNECT_TIMEOUT_MS,
        pingIntervalMs: configuration['heartbeat.interval'],
      });
    const connection = await connect(`slotwise taskmanager ${clusterId}`);
    let data: NatsConnection | undefined;
    try {
      data = await connect(`slotwise taskmanager ${clusterId} data`);
      const blobs = await BlobStore.open(connection, clusterId, configuration['high-availability.nats.replicas']);
      // Messages of a JobManager older than the one leading now are not heard (none leads yet: any is).
      const leader = await currentLeader(connection, clusterId).catch(() => null);
      return new TaskManager(clusterId, configuration, connection, data, blobs, options, runsIn, leader?.token ?? 0);
    } catch (error) {
      await connection.close();
      await data?.close();
      throw error;
    }
  }

  /** The ResourceID of its TaskExecutor now (a new one after the ResourceManager let the last one go). */
  get resourceId(): ResourceID {
    return this.#current.resourceId;
  }

  /** Whether its TaskExecutor is registered at the ResourceManager now. */
  get registered(): boolean {
    return this.#current.taskExecutor.isRegistered;
  }

  /**
   * Calls `listener` each time its TaskExecutor is registered at the ResourceManager (its first
   * registration, again under its ResourceID after a loss, and each fresh TaskExecutor's under a new
   * one); returns a function that removes it.
   */
  onRegistered(listener: TaskManagerRegistrationListener): () => void {
    return this.#registrations.add(listener);
  }

  /** The fencing token of the JobManager this TaskManager follows (0 before it knew of any). */
  get leaderToken(): number {
    return this.#leaderToken;
  }

  /** Messages from JobManagers that no longer lead (an older fencing token than the leader's), dropped unheard. */
  get fencedMessages(): number {
    return this.#fencedBefore + this.#current.inbox.fencedDrops;
  }

  /** How many TaskExecutors this TaskManager has started (1, plus one per fresh start). */
  get incarnations(): number {
    return this.#incarnations;
  }

  /**
   * Stops the TaskExecutor gracefully (tasks failed, slots freed, the ResourceManager told if it is
   * registered there, not waited on), then NATS: idle, within a second whether the JobManager is there,
   * hung or gone.
   */
  close(): Promise<void> {
    this.#closed ??= (async () => {
      this.#registrations.clear();
      this.#leaseWatch.unsubscribe();
      const current = this.#current;
      await current.taskExecutor.mailbox
        .callAsync(() => current.taskExecutor.shutdown('the TaskManager is closing'))
        .catch(() => {});
      await current.stopped;
      this.#forwarding.close();
      const drained = this.#connection.drain().then(
        () => true,
        () => false,
      );
      let timer: ReturnType<typeof setTimeout> | undefined;
      const waited = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), DRAIN_WAIT_MS)));
      if (!(await Promise.race([drained, waited]))) await this.#connection.close().catch(() => {});
      clearTimeout(timer);
      await this.#data.close().catch(() => {});
      if (this.#ownCacheDir) rmSync(this.#cache.dir, { recursive: true, force: true });
    })();
    return this.#closed;
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  #startTaskExecutor(): Incarnation {
    if (this.#incarnations > 0) this.#fencedBefore += this.#current.inbox.fencedDrops;
    this.#incarnations++;
    const resourceId = ResourceID.generate('taskmanager');
    checkResourceIdToken(resourceId);
    const timeoutMs = this.options['rpc.ask.timeout'];
    const inbox = new NatsInbox({
      connection: this.#connection,
      subject: this.#subjects.taskExecutor(resourceId),
      id: resourceId,
      largeMessages: this.#blobs.messages,
      log: (message) => this.#log({ level: 'warn', source: 'runtime', message, resourceId }),
      fencing: {
        outgoing: () => (this.#leaderToken === 0 ? undefined : this.#leaderToken),
        incoming: (peer, token) => {
          if (peer !== JOBMANAGER_PEER_ID || token === undefined || token === this.#leaderToken) return 'accept';
          if (token < this.#leaderToken) return 'drop';
          this.#follow(token);
          return 'adopt';
        },
      },
    });
    const link = new Link(
      `TaskExecutor ${resourceId}`,
      inbox.transportTo(JOBMANAGER_PEER_ID, this.#subjects.resourceManager),
    );
    const log = (message: string) => this.#log({ level: 'info', source: 'runtime', message, resourceId });
    const taskThreads = taskThreadReserve(this.options, (message) =>
      this.#log({ level: 'warn', source: 'pool', message, resourceId }),
    );
    let stoppedResolve!: () => void;
    const stopped = new Promise<void>((resolve) => (stoppedResolve = resolve));
    const warn = (message: string) => this.#log({ level: 'warn', source: 'runtime', message, resourceId });
    const inspection = new InspectionForwarder(link.channel(INSPECT_CHANNEL), warn);
    // Its producers' outputs stay here; its consumers read the others' over the data connection.
    const peers = natsPartitionPeers({
      bus: natsDataBus(this.#data),
      clusterId: this.clusterId,
      resourceId,
      clock: UNREF_CLOCK,
      log: warn,
    });
    const partitions = new ResultPartitions(resourceId, peers, timeoutMs, spillOptionsOf(this.options));
    const taskExecutor = new TaskExecutor({
      resourceId,
      clock: UNREF_CLOCK,
      host: this.#host,
      mode: this.#runsIn,
      configuration: this.options,
      ...taskExecutorGateways(link, timeoutMs),
      createTaskRunner: ({ name, heapLimitMb }) => this.#taskRunner(resourceId, taskThreads, name, heapLimitMb),
      taskThreads,
      partitions,
      onRegistered: () => this.#registrations.registered(resourceId),
      onTerminated: (code, reason) => {
        log(`TaskExecutor stopped (${code}): ${reason}`);
        inspection.stop();
        link.close(`the TaskExecutor stopped: ${reason}`);
        inbox.close();
        stoppedResolve();
        // Not closing: come back as a fresh TaskExecutor (the last one was let go, or gave up) — unless
        // the client gave up on NATS for good (credentials refused: onConnectionLost said so), when
        // there is nothing to come back to and a new inbox could not listen.
        if (this.#closed === null)
          setTimeout(
            () => this.#closed === null && !this.#connection.isClosed() && (this.#current = this.#startTaskExecutor()),
            this.options['cluster.registration.initial-timeout'],
          ).unref();
      },
      log,
      inspect: inspection.inspect,
    });
    inspection.attach(() => taskExecutor.table.actor);
    serveTaskExecutor(link, taskExecutor);
    // The JobManager let us go, or went away: nothing left to work for under this ResourceID.
    link.onClosed((reason, kind) => {
      if (kind === 'lost')
        void taskExecutor.mailbox
          .callAsync(() => taskExecutor.shutdown(`the JobManager closed the connection: ${reason}`))
          .catch(() => {});
    });
    taskExecutor.start();
    return { resourceId, inbox, link, taskExecutor, inspection, stopped };
  }

  /** A slot's runner: its piscina pool, with code named by hash fetched (and cached) first. */
  #taskRunner(
    resourceId: ResourceID,
    taskThreads: TaskThreadReserve,
    name: string,
    heapLimitMb: number | undefined,
  ): SlotTaskRunner {
    const lease = taskThreads.lease(heapLimitMb);
    const pool = new SlotTaskPool({
      name,
      ...(heapLimitMb === undefined ? {} : { heapLimitMb }),
      cancelGraceMs: this.options['task.cancellation.grace-period'],
      threads: lease.threads,
      returnThreads: lease.returnThreads,
      // A task's line with the attempt it came from: what the JobManager keeps it under (GET /jobs/:id/logs).
      log: ({ pool, ...entry }) => this.#log({ ...entry, resourceId, slotId: pool }),
    });
    /** Attempts waiting for their code, and whether they were canceled meanwhile. */
    const fetching = new Map<string, { canceled: string | null }>();
    return {
      run: async (invocation, options) => {
        const hash = taskCodeHash(invocation.taskModule);
        if (hash === undefined) return pool.run(invocation, options);
        const id = invocation.context.executionAttemptId;
        const waiting = { canceled: null as string | null };
        fetching.set(id, waiting);
        let resolved: TaskInvocation;
        try {
          resolved = { ...invocation, taskModule: await this.#cache.resolve(hash, (sha) => this.#blobs.getCode(sha)) };
        } catch (error) {
          const cause = error instanceof Error ? error.message : String(error);
          throw new TaskExecutionError(
            'bad-module',
            `task ${invocation.context.vertexName}#${invocation.context.subtaskIndex}: ` +
              `its code sha256-${hash} could not be fetched: ${cause}`,
            {
              executionAttemptId: id,
              vertexName: invocation.context.vertexName,
              cause,
            },
          );
        } finally {
          fetching.delete(id);
        }
        if (waiting.canceled !== null) {
          throw new TaskExecutionError(
            'canceled',
            `task ${invocation.context.vertexName}#${invocation.context.subtaskIndex} ` +
              `was canceled before it started: ${waiting.canceled}`,
            {
              executionAttemptId: id,
              vertexName: invocation.context.vertexName,
              cause: waiting.canceled,
            },
          );
        }
        return pool.run(resolved, options);
      },
      cancel: (executionAttemptId, reason) => {
        const waiting = fetching.get(executionAttemptId);
        if (waiting === undefined) return pool.cancel(executionAttemptId, reason);
        waiting.canceled = reason;
        return true;
      },
      close: () => lease.release(pool.close()),
    };
  }

  /** The lease was written: a renewal of the leader we follow, a release, or a new leader's term. */
  #leaseWritten(record: LeaseRecord): void {
    if (this.#closed !== null || record.released || record.term === null) return;
    if (record.term > this.#leaderToken) this.#follow(record.term);
  }

  /**
   * A JobManager with a newer fencing token leads: what the last one says is not heard any more, and the TaskExecutor
   * registers with the new one under its ResourceID, offering back the slots its jobs hold.
   */
  #follow(token: number): void {
    const first = this.#leaderToken === 0;
    this.#leaderToken = token;
    const { taskExecutor, inbox, resourceId, inspection } = this.#current;
    inbox.retarget(JOBMANAGER_PEER_ID);
    if (first && !taskExecutor.isRegistered) return; // registering already: it reaches the new leader
    inspection.stop(); // until the new leader asks
    this.#log({
      level: 'info',
      source: 'runtime',
      message: `a new JobManager leads cluster '${this.clusterId}' (fencing token ${token}): registering with it`,
      resourceId,
    });
    void taskExecutor.mailbox
      .callAsync(() =>
        taskExecutor.jobManagerLeaderChanged(`a new JobManager leads cluster '${this.clusterId}' (token ${token})`),
      )
      .catch(() => {});
  }

  /**
   * NATS dropped us: the ResourceManager is lost to us; register again (over the same Link) as soon as it can hear us.
   */
  async #watchConnection(): Promise<void> {
    for await (const status of this.#connection.status()) {
      if (this.#closed !== null) return;
      if (status.type !== 'disconnect') continue;
      const { taskExecutor, resourceId } = this.#current;
      this.#log({
        level: 'warn',
        source: 'runtime',
        message: `the NATS connection was lost: registering again once it is back`,
        resourceId,
      });
      void taskExecutor.mailbox
        .callAsync(() => taskExecutor.disconnectResourceManager('the NATS connection was lost'))
        .catch(() => {});
    }
  }
}

/**
 * The TaskManager of the child process of a TaskManagerProcess (taskManagerProcessMain.ts): its
 * TaskExecutor runs on this process's main thread, and registers as running in a process of its
 * own (mode 'process'), which it is. Not exported by `slotwise/cluster`. `options.mode` must be
 * 'thread' or unset, as for TaskManager.start.
 */
export function startTaskManagerInChildProcess(options: TaskManagerOptions): Promise<TaskManager> {
  return startInChildProcess(options);
}

/**
 * Starts a TaskManager: its TaskExecutor in this process (mode 'thread', the default), or in a
 * child process of its own with a hard heap limit, started again when it dies (mode 'process').
 * Every option is checked before anything starts.
 */
export async function startTaskManager(options: TaskManagerOptions = {}): Promise<TaskManager | TaskManagerProcess> {
  const { clusterId, configuration } = checkTaskManagerOptions(options);
  if (options.mode !== 'process') return TaskManager.start(options);
  const { logger: _logger, ...childOptions } = options;
  return TaskManagerProcess.start(clusterId, configuration, childOptions);
}
