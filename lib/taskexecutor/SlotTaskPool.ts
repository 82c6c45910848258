/**
 * One piscina pool per slot: the thread a slot runs its task attempts on.
 *
 * What a thread's heap limit (`heapLimitMb` → worker `resourceLimits.maxOldGenerationSizeMb`) does
 * and does not contain (tried on Node 20):
 * - Usually, a task that outgrows it fails alone: its thread dies with `ERR_WORKER_OUT_OF_MEMORY`,
 *   the attempt fails `out-of-memory`, the pool replaces the thread and the slot lives on.
 * - It is a backstop, not containment. A task growing a `Map` (or any object in dictionary mode)
 *   past the limit can abort the **whole process** (exit 134, no event anywhere; nodejs/node#47224).
 * - It counts the V8 heap only: Buffers, ArrayBuffers and SharedArrayBuffers (the slot's managed
 *   memory included) live outside it.
 * - A process-wide `--max-old-space-size` (command line or NODE_OPTIONS) silently replaces every
 *   pool's limit; {@link SlotTaskPool.checkHeapLimit} asks a thread what it really got.
 * For hard isolation run the TaskExecutor in process mode (ProcessResourceManagerDriver: a child
 * process with its own `--max-old-space-size`): there an over-limit task kills only its
 * TaskExecutor, whose exit the ResourceManager sees at once.
 *
 * Cancel: aborting a run's `signal` (or {@link SlotTaskPool.cancel} naming its attempt) first fires
 * the task's own `context.signal` (an 'abort' for that run on its thread's port), so a
 * cooperative task can stop cleanly; if the attempt has not ended after `cancelGraceMs` (default
 * 5 s), its thread is terminated (piscina starts another). Either way the run rejects with
 * TaskExecutionError `canceled`.
 *
 * No channel per run, nor per pool: a run marks itself started in the pool's shared flags
 * (runFlags.ts) and its outcome and logs come on its thread's port, named by the pool (a
 * MessageChannel created, transferred and closed per run cost about as much as piscina's own work
 * for a trivial task).
 *
 * The parts: this module is the adapter (its one thread, made by piscina, its errors and exits,
 * the public API); RunBatcher.ts keeps the runs (queue, batches of up to 16,
 * re-queueing after a lost thread, cancels, start notices) and sends a batch only through the
 * `send` given here, which posts it on the thread's own port (TaskThreadPort.ts: piscina's `run`
 * is left for the thread's lifecycle); taskFailure.ts turns what failed into the error a run
 * rejects with; taskThreadProtocol.ts types what the pool and its threads say to each other.
 *
 * The pool uses `atomics: 'disabled'` (an error a task leaves behind arrives as a pool `'error'`
 * instead of inside the next task) and always listens for `'error'` (unhandled, it would crash the
 * TaskExecutor): one that comes while a batch is out on the thread fails that batch (piscina saw
 * no call of its own there), one that comes while the thread is idle is logged and counted in
 * {@link SlotTaskPool.stats}.
 */
import { threadId } from 'node:worker_threads';
import type { Piscina } from 'piscina';
import { IllegalArgumentError, IllegalStateError } from '../core/errors.js';
import type { TaskResult } from './PendingRun.js';
import { RunBatcher } from './RunBatcher.js';
import { RunFlags } from './runFlags.js';
import type { RunStartListener, TaskInvocation } from './TaskInvocation.js';
import { probeHeapLimit, type HeapLimitCheck } from './heapLimitProbe.js';
import type {
  ControlFromTask,
  TaskInvocationContext,
  TaskWorkerBatch,
  TaskWorkerBatchResult,
  ThreadAfterJobs,
} from './taskThreadProtocol.js';
import { createTaskThreads, ThreadExits } from './taskThreads.js';
import { attachThread, threadPortOf, type TaskThreadPort } from './TaskThreadPort.js';

export type { TaskContext, TaskFunction } from './taskModule.js';
export type { RunStartListener, TaskInvocation } from './TaskInvocation.js';
export type { TaskInvocationContext } from './taskThreadProtocol.js';
export type { TaskFailureReason } from './taskFailure.js';
export type { TaskResult } from './PendingRun.js';
export type { HeapLimitCheck } from './heapLimitProbe.js';

export interface SlotTaskPoolLogEntry {
  /** 'task': a task's `context.log(...)`; 'pool': the pool's own warnings. */
  readonly source: 'task' | 'pool';
  readonly level: 'info' | 'warn' | 'error';
  readonly pool: string;
  readonly message: string;
  readonly executionAttemptId?: string;
  readonly jobId?: string;
  readonly vertexId?: string;
  readonly vertexName?: string;
  readonly subtaskIndex?: number;
  readonly attemptNumber?: number;
}

export interface SlotTaskPoolOptions {
  /** Names the pool in logs and errors (e.g. the slot's AllocationID). */
  readonly name: string;
  /** The slot profile's task heap in MB → each thread's `maxOldGenerationSizeMb`; undefined = no limit. */
  readonly heapLimitMb?: number;
  /** The worker file; default taskWorker next to this module, `.ts` or `.js` like this module. */
  readonly workerFile?: string | URL;
  /** The threads' execArgv; default `['--import', 'tsx']` when running from `.ts`, `[]` from `.js`. */
  readonly execArgv?: readonly string[];
  /** How long a canceled task may take to stop on its own signal before its thread is terminated; default 5 s. */
  readonly cancelGraceMs?: number;
  /** Where task logs and pool warnings go; default the console. */
  readonly log?: (entry: SlotTaskPoolLogEntry) => void;
  /**
   * Threads booted ahead of need (a TaskThreadReserve's, made with `createTaskThreads` for the
   * same heap limit), or the promise of them; the pool owns them from now on and destroys them on
   * close. Unset: the pool makes its own from the options above.
   */
  readonly threads?: Piscina | Promise<Piscina>;
  /**
   * Where the threads go at {@link SlotTaskPool.close} when they can serve another job: idle (no
   * batch out), each the one it was given or its replacement, at once (a thread lets go of the
   * jobs' modules and the pool's buffers as it takes another pool's batch). The callee owns them from
   * then on; `after` is what the thread held when it last went idle (null: it never ran a batch).
   * Unset, when `threads` is unset, or when they cannot, they are destroyed.
   */
  readonly returnThreads?: (threads: Piscina, after: ThreadAfterJobs | null) => void;
}

export interface SlotTaskPoolStats {
  /** Runs that returned an output. */
  readonly completed: number;
  /** Runs that rejected (canceled ones included). */
  readonly failed: number;
  /** Of `failed`, the canceled ones. */
  readonly canceled: number;
  /** Runs started on a thread and not yet settled. */
  readonly running: number;
  /** Runs submitted and not yet started. */
  readonly queued: number;
  /** Pool 'error' events (errors no run was there to receive). */
  readonly poolErrors: number;
  /** Live threads. */
  readonly threads: number;
  /** Pool calls sent to the threads: each carries a batch of 1 to 16 runs (several when runs were waiting). */
  readonly batches: number;
}

const DEFAULT_CANCEL_GRACE_MS = 5_000;
/** Pools made in this thread so far (their names' count). */
let poolsMade = 0;

export class SlotTaskPool {
  readonly name: string;
  readonly heapLimitMb: number | undefined;
  readonly cancelGraceMs: number;

  /** The pool's piscina, once it is there (see the constructor). */
  #pool: Piscina | null = null;
  readonly #poolReady: Promise<Piscina>;
  readonly #log: (entry: SlotTaskPoolLogEntry) => void;
  // Names this pool's runs' messages on its thread's port (a thread serves the pools of one TaskExecutor, one at a
  // time). Not a random UUID: node:crypto would cost every TaskExecutor ~5 ms to load before it registers.
  readonly #poolName = `slotwise-slot-task-pool:${threadId}:${++poolsMade}`;
  /** The runs' outcomes and log lines, from the thread's port while this pool listens there. */
  readonly #onControlMessage = (message: ControlFromTask): void => this.#onControl(message);
  readonly #runs: RunBatcher;
  /** The port to the pool's thread (TaskThreadPort.ts), once attached; null until then and after it was lost. */
  #thread: TaskThreadPort | null = null;
  /** The exit codes of the threads, for the failure of the call a lost thread held. */
  readonly #exits = new ThreadExits();
  #closing: Promise<void> | null = null;
  #poolErrors = 0;
  readonly #returnThreads: ((threads: Piscina, after: ThreadAfterJobs | null) => void) | undefined;
  /** The pool's 'error' listener, taken off threads that go back to a reserve. */
  readonly #onError: (error: unknown) => void;

  constructor(options: SlotTaskPoolOptions) {
    const { name, heapLimitMb, cancelGraceMs = DEFAULT_CANCEL_GRACE_MS } = options;
    if (typeof name !== 'string' || name.length === 0) {
      throw new IllegalArgumentError('invalid-value', `name must be a non-empty string, got ${String(name)}`, {
        argument: 'name',
        value: String(name),
      });
    }
    if (heapLimitMb !== undefined && (!Number.isInteger(heapLimitMb) || heapLimitMb < 1)) {
      throw new IllegalArgumentError(
        'out-of-range',
        `heapLimitMb must be a positive integer (MB) or undefined, got ${heapLimitMb}`,
        { argument: 'heapLimitMb', value: heapLimitMb },
      );
    }
    if (!Number.isFinite(cancelGraceMs) || cancelGraceMs < 0) {
      throw new IllegalArgumentError(
        'out-of-range',
        `cancelGraceMs must be a finite number >= 0, got ${cancelGraceMs}`,
        { argument: 'cancelGraceMs', value: cancelGraceMs },
      );
    }
    this.name = name;
    this.heapLimitMb = heapLimitMb;
    this.cancelGraceMs = cancelGraceMs;
    this.#log = options.log ?? consoleLog;
    // Only threads it was given go back (their giver listens for their errors); its own end with it.
    this.#returnThreads = options.threads === undefined ? undefined : options.returnThreads;
    this.#runs = new RunBatcher({
      scope: { pool: name, heapLimitMb, cancelGraceMs },
      pool: this.#poolName,
      flags: new RunFlags(),
      send: (batch) => this.#send(batch),
      readPosted: () => this.#thread?.drain(),
      postAbort: (run, reason) => this.#thread?.abort(this.#poolName, run, reason),
      // Its port fails the batch as the thread exits; piscina starts another thread.
      terminateThread: () => void (this.#thread?.worker ?? this.#pool?.threads[0])?.terminate(),
      threadExitCode: () => this.#exits.lastCode,
      log: (level, message, ctx) => this.#emit({ source: 'pool', level, pool: this.name, message, ...attemptOf(ctx) }),
    });

    const onError = (error: unknown) => {
      // piscina saw no call of its own on the thread, but a batch of ours is out on it: the error is that batch's.
      if (this.#thread?.busy === true) {
        this.#thread.fail(error);
        return;
      }
      this.#poolErrors++;
      // piscina replaces a thread that died this way: the next batch brings the buffers again.
      this.#runs.threadLost();
      const message = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
      this.#emit({
        source: 'pool',
        level: 'error',
        pool: this.name,
        message: `pool error (no task to receive it): ${message}`,
      });
    };
    this.#onError = onError;
    // Booted ahead of need (TaskThreadReserve): ours alone from now on, its errors ours to report.
    // Else made here. Either may still be on its way (piscina loading): runs wait in the queue.
    const threads =
      options.threads ??
      createTaskThreads({
        ...(heapLimitMb === undefined ? {} : { heapLimitMb }),
        ...(options.workerFile === undefined ? {} : { workerFile: options.workerFile }),
        ...(options.execArgv === undefined ? {} : { execArgv: options.execArgv }),
        onError,
      });
    const adopt = (pool: Piscina): Piscina => {
      if (options.threads !== undefined) pool.on('error', onError);
      this.#exits.watch(pool);
      this.#pool = pool;
      this.#useThread(threadPortOf(pool) ?? null);
      this.#runs.open();
      return pool;
    };
    this.#poolReady = threads instanceof Promise ? threads.then(adopt) : Promise.resolve(adopt(threads));
    // A pool that could not be made fails the runs waiting for it (and close() still resolves).
    this.#poolReady.catch((error: unknown) => this.#runs.failQueued(error));
  }

  get stats(): SlotTaskPoolStats {
    const { completed, failed, canceled, running, queued, batches } = this.#runs.counts;
    return {
      completed,
      failed,
      canceled,
      running,
      queued,
      poolErrors: this.#poolErrors,
      threads: this.#pool?.threads.length ?? 0,
      batches,
    };
  }

  /** The ids of the live threads (a replaced thread gets a new id). */
  threadIds(): number[] {
    return this.#pool?.threads.map((worker) => worker.threadId) ?? [];
  }

  get closed(): boolean {
    return this.#closing !== null;
  }

  /**
   * Runs one attempt. Resolves with its output and the pages it left; rejects with
   * TaskExecutionError (`threw`, `out-of-memory`, `thread-exited`, `canceled`, `bad-module`,
   * `bad-output`), IllegalArgumentError when the invocation cannot be sent to a thread, or
   * IllegalStateError after {@link close}. Aborting `signal` cancels the attempt (see the module comment).
   */
  run(
    invocation: TaskInvocation,
    options: { readonly signal?: AbortSignal; readonly listener?: RunStartListener } = {},
  ): Promise<TaskResult> {
    // Not async: the caller's reactions hang on the very promise a run settles (RunBatcher).
    if (this.#closing !== null) {
      return Promise.reject(
        new IllegalStateError(`SlotTaskPool ${this.name} is closed: it runs no more tasks`, {
          component: `SlotTaskPool ${this.name}`,
          operation: 'run',
          state: 'closed',
          allowed: ['open'],
        }),
      );
    }
    return this.#runs.submit(invocation, options.signal, options.listener);
  }

  /**
   * Cancels every run of the attempt `executionAttemptId` still queued or running here, as aborting
   * its signal would (see the module comment): the run rejects with TaskExecutionError 'canceled'.
   * False when no such run is here (never submitted, or settled already). For a caller that would
   * otherwise make an AbortController per run only to cancel a few (a TaskExecutor).
   */
  cancel(executionAttemptId: string, reason: string): boolean {
    return this.#runs.cancel(executionAttemptId, reason);
  }

  /**
   * Asks a thread of this pool for its real heap limit (heapLimitProbe.ts): a process-wide flag may have replaced it.
   */
  async checkHeapLimit(): Promise<HeapLimitCheck> {
    if (this.#closing !== null) {
      throw new IllegalStateError(`SlotTaskPool ${this.name} is closed`, {
        component: `SlotTaskPool ${this.name}`,
        operation: 'checkHeapLimit',
        state: 'closed',
        allowed: ['open'],
      });
    }
    return probeHeapLimit(await this.#poolReady, this.heapLimitMb);
  }

  /**
   * Ends the pool: queued attempts reject `canceled`; the threads go to `returnThreads` when they
   * are idle, else they are terminated (a running attempt rejects `canceled`). Idempotent.
   */
  close(): Promise<void> {
    if (this.#closing === null) {
      const busy = this.#runs.busy;
      this.#runs.close();
      // Destroyed under its batches: they fail as the pool closing, not as a thread that exited.
      if (busy) this.#thread?.fail(new Error('Terminating worker thread'));
      this.#closing = this.#poolReady
        .then(
          (pool) => (busy ? pool.destroy() : this.#giveBack(pool)),
          () => {},
        )
        .finally(() => this.#thread?.unlisten(this.#poolName));
    }
    return this.#closing;
  }

  /**
   * The idle thread to `returnThreads`, with what it held when it last went idle; else destroyed. No message: the
   * thread lets go of this pool's jobs as it takes the next pool's first batch.
   */
  #giveBack(pool: Piscina): Promise<void> | void {
    const give = this.#returnThreads;
    if (give === undefined) return pool.destroy();
    pool.off('error', this.#onError);
    this.#exits.unwatch();
    // A thread without a port (taken while it booted, or lost and being replaced) ran nothing: it is attached when next
    // given a batch.
    give(pool, threadPortOf(pool)?.afterLastBatch ?? null);
  }

  /**
   * A batch to the thread, on its port; attached first when the thread is new (piscina boots one after a loss). The
   * batches sent meanwhile wait on the same attach (attachThread shares it), and are posted in the order they came.
   */
  #send(batch: TaskWorkerBatch): Promise<TaskWorkerBatchResult> {
    const thread = this.#thread;
    if (thread !== null && !thread.lost) return thread.post(batch);
    this.#thread = null;
    return attachThread(this.#pool!).then((attached) => {
      if (this.#thread !== attached) this.#useThread(attached);
      return attached.post(batch);
    });
  }

  /** The pool's thread from now on, which tells this pool its runs' messages. */
  #useThread(thread: TaskThreadPort | null): void {
    this.#thread = thread;
    thread?.listen(this.#poolName, this.#onControlMessage);
  }

  /** A message from a run: its log lines, or its outcome (a run of a batch that goes on). */
  #onControl(message: ControlFromTask): void {
    if (message?.type === 'outcome') {
      this.#runs.outcome(message.run, message.outcome);
      return;
    }
    if (message?.type !== 'log') return;
    // It logs: it runs.
    const ctx = this.#runs.heardFrom(message.run);
    this.#emit({
      source: 'task',
      level: 'info',
      pool: this.name,
      message: message.message,
      ...(ctx === undefined ? {} : attemptOf(ctx)),
    });
  }

  #emit(entry: SlotTaskPoolLogEntry): void {
    try {
      this.#log(entry);
    } catch {
      // A failing logger must not fail the run.
    }
  }
}

/** The attempt a log entry is about. */
function attemptOf(
  ctx: TaskInvocationContext,
): Pick<
  SlotTaskPoolLogEntry,
  'executionAttemptId' | 'jobId' | 'vertexId' | 'vertexName' | 'subtaskIndex' | 'attemptNumber'
> {
  return {
    executionAttemptId: ctx.executionAttemptId,
    jobId: ctx.jobId,
    vertexId: ctx.vertexId,
    vertexName: ctx.vertexName,
    subtaskIndex: ctx.subtaskIndex,
    attemptNumber: ctx.attemptNumber,
  };
}

function consoleLog(entry: SlotTaskPoolLogEntry): void {
  const who =
    entry.vertexName === undefined
      ? `[${entry.pool}]`
      : `[${entry.pool}] ${entry.vertexName} (${(entry.subtaskIndex ?? 0) + 1})`;
  if (entry.level === 'info') console.log(`${who}: ${entry.message}`);
  else console.warn(`${who} ${entry.level}: ${entry.message}`);
}
