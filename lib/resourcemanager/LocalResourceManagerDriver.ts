/**
 * The drivers that start TaskExecutors on this machine: on worker threads (the default) or in child
 * processes (hard memory isolation). Both speak to their workers through a Link (lib/rpc): the
 * ResourceManager's gateway on channel `rm`, the TaskExecutor's on `te`, each JobMaster's on
 * `jm:<address>`. A worker that ends — exit, error, crash, abort — is reported at once.
 *
 * Release is graceful first (the TaskExecutor's shutdown: tasks failed, slots freed) and forced
 * after `task.cancellation.grace-period` + `rpc.ask.timeout` (terminate / SIGKILL); a worker not
 * registered yet has nothing to shut down and is terminated at once. Deaths are
 * awaited with a deadline too: a worker stuck in a synchronous native call may never emit `exit`.
 * Workers that end before they register count as start failures; more than
 * `resourcemanager.start-worker.max-failure-rate` of them in a minute delay further starts.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { systemClock, type Clock } from '../core/clock.js';
import { ResourceID } from '../core/ids.js';
import { formatLogRecord, type LogLevel, type LogSink } from '../core/Logger.js';
import { resolveOptions, type ResolvedOptions, type SlotwiseOptions } from '../core/options.js';
import { Link } from '../rpc/Link.js';
import type { ResourceManagerDriver, ResourceManagerDriverContext } from './ResourceManagerDriver.js';
import type { PendingTaskManagerID } from './slotmanager/PendingTaskManager.js';
import type { WorkerResourceSpec } from './slotmanager/WorkerResourceSpec.js';
import { INSPECT_CHANNEL, type WorkerBootstrap } from '../rpc/WorkerBootstrap.js';
import type { InspectionDetail } from '../InspectionRecord.js';
import { wireWorkerLink } from './workerLink.js';
import { LinkedWorkersDriver, type LinkedWorker } from './LinkedWorkers.js';
import { spawnWorker, type SpawnedWorker } from './spawnWorker.js';

/** The clusters' socket directories not removed yet: an application that exits without closing leaves none either. */
const socketDirectories = new Set<string>();
process.once('exit', () => {
  for (const directory of socketDirectories) rmSync(directory, { recursive: true, force: true });
});

export interface LocalDriverOptions {
  readonly mode: 'thread' | 'process';
  readonly configuration?: SlotwiseOptions | ResolvedOptions;
  readonly clock?: Clock;
  /**
   * Runtime messages of the driver and of every worker (task pool warnings and task logs included), as lines prefixed
   * with the worker's ResourceID.
   */
  readonly log?: (message: string) => void;
  /**
   * The same as records with their fields and level (a worker's carry its ResourceID); when set, `log` gets nothing.
   */
  readonly logger?: LogSink;
  /** The least level a worker sends (default 'debug': all). */
  readonly logLevel?: LogLevel;
  /** The worker entry module (default: lib/taskexecutor/taskExecutorMain, .ts or .js like this file). */
  readonly entry?: URL;
  /**
   * Receives the statechart inspection events of every worker's TaskSlotTable (already converted
   * to plain Stately inspection events by the worker). Without it, workers do not inspect at all.
   */
  readonly inspect?: (origin: ResourceID, event: unknown) => void;
  /** How much of each event the workers send (default 'full'). */
  readonly inspectDetail?: InspectionDetail;
}

interface Worker extends LinkedWorker {
  readonly process: SpawnedWorker;
  ended: Promise<void>;
}

const START_FAILURE_WINDOW_MS = 60_000;
const START_RETRY_DELAY_MS = 3_000;

export class LocalResourceManagerDriver extends LinkedWorkersDriver<Worker> implements ResourceManagerDriver {
  readonly mode: 'thread' | 'process';
  readonly #o: LocalDriverOptions;
  readonly #options: ResolvedOptions;
  readonly #clock: Clock;
  readonly #logRecord: LogSink | null;
  readonly #log: (message: string, level?: LogLevel) => void;
  readonly #startFailures: number[] = [];
  /** Every worker started and not yet exited (threads stopped, children reaped): close() waits for them. */
  readonly #running = new Set<SpawnedWorker>();
  #context: ResourceManagerDriverContext | null = null;
  #delayedStarts = 0;
  #closing = false;
  #sockets: string | null = null;

  constructor(options: LocalDriverOptions) {
    super();
    this.#o = options;
    this.mode = options.mode;
    this.#options = resolveOptions(options.configuration ?? {});
    this.#clock = options.clock ?? systemClock;
    const log = options.log;
    this.#logRecord = options.logger ?? (log === undefined ? null : (record) => log(formatLogRecord(record)));
    this.#log = (message, level = 'info') => this.#logRecord?.({ level, source: 'runtime', message });
  }

  start(context: ResourceManagerDriverContext): void {
    this.#context = context;
  }

  requestResource(spec: WorkerResourceSpec, pendingWorkerId: PendingTaskManagerID | null): ResourceID {
    const resourceId = ResourceID.generate(this.mode === 'thread' ? 'taskexecutor' : 'taskexecutor-process');
    const delay = this.#startDelay();
    if (delay > 0) {
      this.#log(
        `worker starts are failing (${this.#startFailures.length} ` +
          `in the last minute): starting ${resourceId} in ${delay} ms`,
        'warn',
      );
      this.#delayedStarts++;
      this.#clock.setTimeout(() => {
        this.#delayedStarts--;
        if (!this.#closing) this.#start(resourceId, spec, pendingWorkerId);
      }, delay);
    } else {
      this.#start(resourceId, spec, pendingWorkerId);
    }
    return resourceId;
  }

  releaseResource(resourceId: ResourceID, reason: string): void {
    const worker = this.linkedWorkers.get(resourceId);
    if (worker === undefined || worker.state === 'stopping') return;
    const registered = worker.state === 'running';
    worker.state = 'stopping';
    const deadline = this.#options['task.cancellation.grace-period'] + this.#options['rpc.ask.timeout'];
    const terminate = () => {
      worker.process.kill();
      // A worker blocked in a synchronous native call may never report its exit: stop waiting.
      const given = this.#clock.setTimeout(
        () => worker.link.close(`terminated; no exit seen within ${deadline} ms`),
        deadline,
      );
      void worker.ended.then(() => this.#clock.clearTimeout(given));
    };
    if (!registered) {
      // Not registered yet: it holds no slot and runs no task, so there is nothing to shut down
      // gracefully, and a shutdown would first wait for it to finish booting (a child under tsx: ~0.5 s).
      this.#log(`stopping worker ${resourceId}, not registered yet, at once: ${reason}`, 'debug');
      terminate();
      return;
    }
    const forced = this.#clock.setTimeout(() => {
      this.#log(`worker ${resourceId} did not stop within ${deadline} ms: terminating it`, 'warn');
      terminate();
    }, deadline);
    worker.gateway.shutdown(reason).catch(() => worker.process.kill());
    void worker.ended.then(() => this.#clock.clearTimeout(forced));
  }

  /** Stops a worker at once, without a graceful shutdown (as a crash would): for tests and chaos drills. */
  killWorker(resourceId: ResourceID): boolean {
    const worker = this.linkedWorkers.get(resourceId);
    if (worker === undefined) return false;
    worker.process.kill();
    return true;
  }

  cancelPendingWorker(pendingWorkerId: PendingTaskManagerID): void {
    for (const worker of this.linkedWorkers.values()) {
      if (worker.pendingWorkerId === pendingWorkerId && worker.state === 'starting')
        this.releaseResource(worker.resourceId, 'its pending worker is no longer needed');
    }
  }

  /**
   * Releases every worker and resolves once each has exited — a thread stopped, a child process
   * reaped, those that ended earlier included — not merely once its link closed (a child
   * disconnects ~50 ms before it exits, and stayed defunct that long after close()).
   */
  async close(): Promise<void> {
    this.#closing = true;
    const workers = [...this.linkedWorkers.values()];
    for (const worker of workers) this.releaseResource(worker.resourceId, 'the cluster is closing');
    await Promise.all(workers.map((w) => w.ended));
    await Promise.all([...this.#running].map((spawned) => this.#exitOf(spawned)));
    if (this.#sockets !== null) {
      rmSync(this.#sockets, { recursive: true, force: true });
      socketDirectories.delete(this.#sockets);
    }
  }

  /** Where process-mode TaskExecutors serve their result partitions: one directory per cluster, gone at close. */
  #socketDirectory(): string {
    if (this.#sockets === null) {
      const directory = mkdtempSync(join(tmpdir(), 'slotwise-'));
      this.#sockets = directory;
      socketDirectories.add(directory);
    }
    return this.#sockets;
  }

  // ------------------------------------------------------------------ internals

  #start(resourceId: ResourceID, spec: WorkerResourceSpec, pendingWorkerId: PendingTaskManagerID | null): void {
    const context = this.#context;
    if (context === null) throw new Error('the driver was not started');
    const bootstrap: WorkerBootstrap = {
      resourceId,
      pendingWorkerId,
      mode: this.mode,
      // Every TaskExecutor reads the others' partitions: threads of this process over BroadcastChannels, processes of
      // this host over Unix sockets in the cluster's directory.
      partitions:
        this.mode === 'thread' ? { kind: 'in-process' } : { kind: 'sockets', directory: this.#socketDirectory() },
      inspect: this.#o.inspect !== undefined,
      ...(this.#o.inspectDetail === undefined ? {} : { inspectDetail: this.#o.inspectDetail }),
      log: this.#logRecord !== null,
      ...(this.#o.logLevel === undefined ? {} : { logLevel: this.#o.logLevel }),
      configuration: {
        ...this.#options,
        'taskmanager.numberOfTaskSlots': spec.numberOfSlots,
        'taskmanager.cpu.cores': spec.totalResourceProfile.cpuCores,
        'taskmanager.memory.task.heap.size': spec.totalResourceProfile.taskHeapMemory,
        'taskmanager.memory.task.off-heap.size': spec.totalResourceProfile.taskOffHeapMemory,
        'taskmanager.memory.managed.size': spec.totalResourceProfile.managedMemory,
        'taskmanager.memory.network.size': spec.totalResourceProfile.networkMemory,
        'taskmanager.extended-resources': spec.totalResourceProfile.extendedResources,
      },
    };
    const spawned = spawnWorker(this.mode, bootstrap, {
      ...(this.#o.entry ? { entry: this.#o.entry } : {}),
      heapLimitMb: Math.ceil(spec.totalResourceProfile.taskHeapMemory / (1024 * 1024)),
    });
    this.#running.add(spawned);
    void spawned.exited.then(() => this.#running.delete(spawned));
    const link = new Link(`${this.mode} ${resourceId}`, spawned.transport);
    const gateway = wireWorkerLink(link, context, {
      resourceId,
      timeoutMs: this.#options['rpc.ask.timeout'],
      clock: this.#clock,
      logger: this.#logRecord,
    });
    const inspect = this.#o.inspect;
    if (inspect !== undefined)
      link.channel(INSPECT_CHANNEL).addEventListener('message', (event) => inspect(resourceId, event.data));
    let resolveEnded!: () => void;
    const worker: Worker = {
      resourceId,
      pendingWorkerId,
      spec,
      startedAt: this.#clock.now(),
      state: 'starting',
      link,
      process: spawned,
      gateway,
      ended: new Promise<void>((resolve) => (resolveEnded = resolve)),
    };
    this.linkedWorkers.set(resourceId, worker);
    link.onClosed((reason) => {
      if (this.linkedWorkers.get(resourceId) !== worker) return;
      this.linkedWorkers.delete(resourceId);
      if (worker.state === 'starting') this.#startFailures.push(this.#clock.now());
      resolveEnded();
      context.onWorkerTerminated(resourceId, reason);
    });
  }

  /**
   * Resolves when `spawned` has exited. Its link is closed by now: one still running after
   * `task.cancellation.grace-period` is killed, and given up on (logged) after another.
   */
  #exitOf(spawned: SpawnedWorker): Promise<void> {
    const grace = this.#options['task.cancellation.grace-period'];
    return new Promise<void>((resolve) => {
      let timer = this.#clock.setTimeout(() => {
        spawned.kill();
        timer = this.#clock.setTimeout(() => {
          this.#log(
            `a worker did not exit within ${2 * grace} ms of its ` +
              `link closing, even when killed: no longer waiting for it`,
          );
          resolve();
        }, grace);
      }, grace);
      void spawned.exited.then(() => {
        this.#clock.clearTimeout(timer);
        resolve();
      });
    });
  }

  /** 0, or how long to wait before the next start while starts keep failing. */
  #startDelay(): number {
    const now = this.#clock.now();
    while (this.#startFailures.length > 0 && now - this.#startFailures[0]! > START_FAILURE_WINDOW_MS)
      this.#startFailures.shift();
    return this.#startFailures.length >= this.#options['resourcemanager.start-worker.max-failure-rate']
      ? START_RETRY_DELAY_MS * (1 + this.#delayedStarts)
      : 0;
  }
}
