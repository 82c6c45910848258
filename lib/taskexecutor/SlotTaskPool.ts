/**
 * One piscina pool per slot: the threads a slot runs its task attempts on.
 *
 * What a thread's heap limit (`heapLimitMb` → worker `resourceLimits.maxOldGenerationSizeMb`) does
 * and does not contain (TOOLCHAIN.md, "Threads, pools and memory limits"):
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
 * the task's own `context.signal` (an 'abort' for that run on the pool's BroadcastChannel), so a
 * cooperative task can stop cleanly; if the attempt has not ended after `cancelGraceMs` (default
 * 5 s), piscina's abort terminates its thread (the pool starts another). Either way the run
 * rejects with TaskExecutionError `canceled`.
 *
 * No channel per run: a run marks itself started in the pool's shared flags and its logs come on
 * the pool's BroadcastChannel (a MessageChannel created, transferred and closed per run cost about
 * as much as piscina's own work for a trivial task).
 *
 * Batches: runs waiting for a thread go to it several per piscina call (up to 16; the pool keeps two
 * calls out per thread and splits the waiting runs over the free places, so every thread gets work
 * and a run submitted to an idle pool goes alone at once). piscina's own work per call costs the
 * TaskExecutor's thread more than a trivial task does: a batch pays it once. In the thread the runs
 * of a batch run one after another, each with its own signal, started flag and outcome, and each
 * run's outcome is posted on the channel before the next one starts (the last one comes back as the
 * call's result), so a run settles when it ends, not when its batch does, and a thread lost later
 * loses no outcome. A run still queued in a batch is canceled by claiming its flag first (the thread
 * then skips it). When a batch's thread is lost (a forced cancel terminated it, the run out of heap
 * or exiting), the run that was running gets the error and the batch's other unsettled runs are
 * re-queued (each at most 3 times; after that it fails with the error that lost the thread). A
 * batch that cannot be cloned is re-sent one run per call, so only the run whose invocation cannot
 * be sent is refused. With more than one thread, a run queued in a batch waits for the runs before
 * it in that batch even if another thread is free (a slot's pool has one thread by default).
 *
 * The pool uses `atomics: 'disabled'` (an error a task leaves behind arrives as a pool `'error'`
 * instead of inside the next task) and always listens for `'error'` (unhandled, it would crash the
 * TaskExecutor): such errors are logged and counted in {@link SlotTaskPool.stats}.
 */
import { randomUUID } from 'node:crypto';
import { BroadcastChannel, receiveMessageOnPort, type MessagePort } from 'node:worker_threads';
import type { Piscina } from 'piscina';
import { IllegalArgumentError, IllegalStateError, TaskExecutionError } from '../core/errors.js';
import type { TaskDeploymentDescriptor } from '../rpc/protocol.js';
import type { SharedMemoryHandle } from './MemoryManager.js';
import type { ControlFromTask, ControlToTask, HeapLimitProbe, TaskInvocationContext, TaskWorkerBatch, TaskWorkerBatchItem, TaskWorkerBatchResult, TaskWorkerOutcome } from './taskThreadProtocol.js';
import { RUN_CANCELED, RUN_QUEUED, RUN_STARTED } from './runFlags.js';
import { createTaskThreads } from './taskThreads.js';

export type { TaskContext, TaskFunction } from './taskWorker.js';
export type { TaskInvocationContext } from './taskThreadProtocol.js';

/** Why an attempt failed: TaskExecutionError's reasons. */
export type TaskFailureReason = ConstructorParameters<typeof TaskExecutionError>[0];

/** One task attempt to run on a slot's pool. */
export interface TaskInvocation {
  /** An absolute path or a file: URL; its default export is `async (context, inputs) => output`. */
  readonly taskModule: string;
  readonly context: TaskInvocationContext;
  /** The upstream outputs (structured-cloneable). */
  readonly inputs: unknown;
  /** The vertex's parameters (structured-cloneable), seen by the task as `context.config`. */
  readonly config?: unknown;
  /** The slot's managed memory (`MemoryManager.share()`), or null: its SharedArrayBuffers are shared with the thread, not copied. */
  readonly memory: SharedMemoryHandle | null;
}

export interface TaskResult {
  /** What the task returned (a structured clone of it). */
  readonly output: unknown;
  /** Pages the task still held when it returned, released for it: "task left N pages". */
  readonly leakedPagesReleased: number;
}

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
}

export interface SlotTaskPoolOptions {
  /** Names the pool in logs and errors (e.g. the slot's AllocationID). */
  readonly name: string;
  /** The slot profile's task heap in MB → each thread's `maxOldGenerationSizeMb`; undefined = no limit. */
  readonly heapLimitMb?: number;
  /** Default 1: a slot runs one task at a time (more are queued). */
  readonly maxThreads?: number;
  /** When set, threads idle this long end (the pool keeps none warm); unset, `maxThreads` threads stay warm. */
  readonly idleTimeoutMs?: number;
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
   * same heap limit); the pool owns them from now on and destroys them on close. Unset: the pool
   * makes its own from the options above.
   */
  readonly threads?: Piscina;
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

export interface HeapLimitCheck {
  /** The limit asked for (`heapLimitMb`), or null when none was. */
  readonly expectedMb: number | null;
  /** The old-generation limit a thread really has: heap_size_limit minus its young generation. */
  readonly actualMb: number;
  /** `v8.getHeapStatistics().heap_size_limit` in the thread (old + young generation). */
  readonly heapSizeLimitMb: number;
  readonly youngGenerationMb: number;
  /** True when `actualMb` is within 10 % of `expectedMb`, or no limit was asked. */
  readonly enforced: boolean;
}

const DEFAULT_CANCEL_GRACE_MS = 5_000;
/** Started flags in the first shared buffer; a pool with more runs outstanding gets a buffer twice as large. */
const INITIAL_RUN_FLAGS = 64;

/** piscina's options for a batch call without a signal. */
const RUN_BATCH = { name: 'runBatch' } as const;
/** At most this many runs per pool call (batch). */
const MAX_BATCH = 16;
/** A run is re-queued at most this often after its batch's thread was lost (then it fails with that error). */
const MAX_REQUEUES = 3;

/** Where a run's started flag is. */
interface ActiveRun {
  readonly ctx: TaskInvocationContext;
  readonly flags: Int32Array;
  readonly index: number;
}

/** A run not settled yet: queued here, or in a batch sent to a thread. (A class: one shape for every run, hot on the TaskExecutor's thread.) */
class PendingRun implements ActiveRun {
  readonly ctx: TaskInvocationContext;
  onAbort: (() => void) | undefined = undefined;
  /** The batch it is in, or null while queued here. */
  batch: Batch | null = null;
  /** Its place in that batch (the thread runs a batch's runs in this order). */
  position = 0;
  /** Told once that it started (see {@link RunStartListener}). */
  startNoticed = false;
  settled = false;
  cancelReason: string | null = null;
  stoppedBy: 'before-start' | 'cooperative' | 'forced' | null = null;
  graceTimer: NodeJS.Timeout | undefined = undefined;
  /** Sent alone: its batch could not be sent to a thread (one of its invocations cannot be cloned). */
  solo = false;
  requeues = 0;

  constructor(
    /** Its started flag; a run re-queued after its thread was lost gets a new one. */
    public flags: Int32Array,
    public index: number,
    readonly number: number,
    readonly invocation: TaskInvocation,
    readonly signal: AbortSignal | undefined,
    readonly listener: RunStartListener | undefined,
    readonly resolve: (result: TaskResult) => void,
    readonly reject: (error: unknown) => void,
  ) {
    this.ctx = invocation.context;
  }
}

/**
 * Told once when a run starts on its thread: when nothing is left before it there (it starts
 * within a message's latency), or when it is heard logging, and at the latest just before it
 * settles; never for a run canceled before it started. No message per run says so: the pool
 * infers it — a batch sent while a thread is free starts at once, the runs of a batch run one
 * after another (the next starts as the previous one's outcome is posted), and a thread takes the
 * next batch when it returns one. With a thread per pool (a slot's default) that is exact to a
 * message's latency; with more threads a start may be told late. Outcomes and logs come on
 * different channels than a batch's return, so a start may be heard before the end of the run
 * before it. A run re-queued after its thread was lost is not told again.
 */
export interface RunStartListener {
  started(): void;
}

/** Runs sent to a thread in one pool call. */
interface Batch {
  readonly runs: readonly PendingRun[];
  /**
   * Aborting it terminates the thread running the batch (piscina's abort), when the pool has more
   * than one thread (which one runs the batch is piscina's to know); with one thread, null: that
   * thread is terminated directly, and no signal (and its listeners) is paid for every call.
   */
  readonly forced: AbortController | null;
  /** The run whose cancel forced that stop. */
  forcedRun: PendingRun | null;
}
const MiB = 1024 * 1024;
/** V8's default young generation on 64-bit Node 20 (3 × 16 MiB semi-spaces), if the thread does not say. */
const DEFAULT_YOUNG_GENERATION_MB = 48;

/** The invocation for a deployment descriptor on a slot whose managed memory is `memory`. */
export function invocationFor(descriptor: TaskDeploymentDescriptor, memory: SharedMemoryHandle | null): TaskInvocation {
  return {
    taskModule: descriptor.taskModule,
    context: {
      jobId: descriptor.jobId,
      jobName: descriptor.jobName,
      vertexId: descriptor.vertexId,
      vertexName: descriptor.vertexName,
      subtaskIndex: descriptor.subtaskIndex,
      parallelism: descriptor.parallelism,
      attemptNumber: descriptor.attemptNumber,
      executionAttemptId: descriptor.executionAttemptId,
      allocationId: descriptor.allocationId,
    },
    inputs: descriptor.inputs,
    config: descriptor.config,
    memory,
  };
}

export class SlotTaskPool {
  readonly name: string;
  readonly heapLimitMb: number | undefined;
  readonly cancelGraceMs: number;

  readonly #pool: Piscina;
  readonly #log: (entry: SlotTaskPoolLogEntry) => void;
  /** 'abort' to the runs, 'log' from them. */
  readonly #control: BroadcastChannel;
  readonly #controlName = `slotwise-slot-task-pool:${randomUUID()}`;
  readonly #runs = new Map<number, PendingRun>();
  /** Runs not yet in a batch, in order. */
  #queue: PendingRun[] = [];
  /** The batches sent and not returned, in the order they were sent. */
  readonly #inFlight: Batch[] = [];
  readonly #threadCount: number;
  readonly #maxBatchesInFlight: number;
  #dispatchScheduled = false;
  /** The buffers the pool's thread was last sent (null: it may have none, send them with the next batch). */
  #sent: { readonly started: SharedArrayBuffer; readonly memory: TaskInvocation['memory'] } | null = null;
  #flags = new Int32Array(new SharedArrayBuffer(INITIAL_RUN_FLAGS * Int32Array.BYTES_PER_ELEMENT));
  #freeFlags: number[] = [];
  #unusedFlag = 0;
  #nextRun = 1;
  #closing: Promise<void> | null = null;
  #completed = 0;
  #failed = 0;
  #canceled = 0;
  #poolErrors = 0;
  #batches = 0;

  constructor(options: SlotTaskPoolOptions) {
    const { name, heapLimitMb, maxThreads = 1, idleTimeoutMs, cancelGraceMs = DEFAULT_CANCEL_GRACE_MS } = options;
    if (typeof name !== 'string' || name.length === 0) {
      throw new IllegalArgumentError('invalid-value', `name must be a non-empty string, got ${String(name)}`, { argument: 'name', value: String(name) });
    }
    if (heapLimitMb !== undefined && (!Number.isInteger(heapLimitMb) || heapLimitMb < 1)) {
      throw new IllegalArgumentError('out-of-range', `heapLimitMb must be a positive integer (MB) or undefined, got ${heapLimitMb}`, { argument: 'heapLimitMb', value: heapLimitMb });
    }
    if (!Number.isInteger(maxThreads) || maxThreads < 1) {
      throw new IllegalArgumentError('out-of-range', `maxThreads must be an integer >= 1, got ${maxThreads}`, { argument: 'maxThreads', value: maxThreads });
    }
    if (idleTimeoutMs !== undefined && (!Number.isFinite(idleTimeoutMs) || idleTimeoutMs < 0)) {
      throw new IllegalArgumentError('out-of-range', `idleTimeoutMs must be a finite number >= 0 or undefined, got ${idleTimeoutMs}`, { argument: 'idleTimeoutMs', value: idleTimeoutMs });
    }
    if (!Number.isFinite(cancelGraceMs) || cancelGraceMs < 0) {
      throw new IllegalArgumentError('out-of-range', `cancelGraceMs must be a finite number >= 0, got ${cancelGraceMs}`, { argument: 'cancelGraceMs', value: cancelGraceMs });
    }
    this.name = name;
    this.heapLimitMb = heapLimitMb;
    this.cancelGraceMs = cancelGraceMs;
    this.#log = options.log ?? consoleLog;
    // One batch running per thread and one waiting behind it, so a thread that ends a batch finds the next.
    this.#threadCount = maxThreads;
    this.#maxBatchesInFlight = maxThreads * 2;

    const onError = (error: unknown) => {
      this.#poolErrors++;
      // piscina replaces a thread that died this way: the next batch brings the buffers again.
      this.#sent = null;
      const message = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
      this.#emit({ source: 'pool', level: 'error', pool: this.name, message: `pool error (no task to receive it): ${message}` });
    };
    if (options.threads !== undefined) {
      // Booted ahead of need (TaskThreadReserve): ours alone from now on, its errors ours to report.
      this.#pool = options.threads;
      this.#pool.on('error', onError);
    } else {
      this.#pool = createTaskThreads({
        ...(heapLimitMb === undefined ? {} : { heapLimitMb }),
        maxThreads,
        ...(idleTimeoutMs === undefined ? {} : { idleTimeoutMs }),
        ...(options.workerFile === undefined ? {} : { workerFile: options.workerFile }),
        ...(options.execArgv === undefined ? {} : { execArgv: options.execArgv }),
        onError,
      });
    }
    this.#control = new BroadcastChannel(this.#controlName);
    this.#control.onmessage = (event) => {
      this.#onControl((event as { data: ControlFromTask }).data);
      // A batch's outcomes come close together: read the ones already here without an event each.
      this.#drainControl();
    };
    // Logs are welcome while the pool lives; the channel alone must not keep a process alive.
    this.#control.unref();
  }

  get stats(): SlotTaskPoolStats {
    let running = 0;
    for (const run of this.#runs.values()) if (isStarted(run)) running++;
    return {
      completed: this.#completed,
      failed: this.#failed,
      canceled: this.#canceled,
      running,
      queued: this.#runs.size - running,
      poolErrors: this.#poolErrors,
      threads: this.#pool.threads.length,
      batches: this.#batches,
    };
  }

  /** The ids of the live threads (a replaced thread gets a new id). */
  threadIds(): number[] {
    return this.#pool.threads.map((worker) => worker.threadId);
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
  run(invocation: TaskInvocation, options: { readonly signal?: AbortSignal; readonly listener?: RunStartListener } = {}): Promise<TaskResult> {
    // Not async: the caller's reactions hang on the very promise a run settles (see #settleOutcome).
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
    const { signal } = options;
    const ctx = invocation.context;
    if (signal?.aborted) {
      this.#failed++;
      this.#canceled++;
      return Promise.reject(this.#error('canceled', ctx, `canceled before it started: ${reasonText(signal.reason)}`, { stoppedBy: 'before-start' }));
    }
    return new Promise<TaskResult>((resolve, reject) => {
      const { flags, index } = this.#claimFlag(ctx);
      const run = new PendingRun(flags, index, this.#nextRun++, invocation, signal, options.listener, resolve, reject);
      this.#runs.set(run.number, run);
      if (signal !== undefined) {
        run.onAbort = () => this.#cancel(run, reasonText(signal.reason));
        signal.addEventListener('abort', run.onAbort, { once: true });
      }
      this.#queue.push(run);
      this.#scheduleDispatch();
    });
  }

  /**
   * Cancels every run of the attempt `executionAttemptId` still queued or running here, as aborting
   * its signal would (see the module comment): the run rejects with TaskExecutionError 'canceled'.
   * False when no such run is here (never submitted, or settled already). For a caller that would
   * otherwise make an AbortController per run only to cancel a few (a TaskExecutor).
   */
  cancel(executionAttemptId: string, reason: string): boolean {
    let found = false;
    for (const run of this.#runs.values()) {
      if (run.ctx.executionAttemptId !== executionAttemptId || run.settled) continue;
      found = true;
      this.#cancel(run, reason);
    }
    return found;
  }

  /** A run's signal fired, or {@link cancel} named it. */
  #cancel(run: PendingRun, reason: string): void {
    if (run.settled || run.cancelReason !== null) return;
    run.cancelReason = reason;
    const batch = run.batch;
    // Queued here, or in a batch whose thread has not claimed it yet: it never runs (its thread skips it).
    if (batch === null || Atomics.compareExchange(run.flags, run.index, RUN_QUEUED, RUN_CANCELED) === RUN_QUEUED) {
      run.stoppedBy = 'before-start';
      this.#failed++;
      this.#canceled++;
      this.#reject(run, this.#error('canceled', run.ctx, `canceled (${reason}); it had not started`, { stoppedBy: 'before-start', graceMs: this.cancelGraceMs }));
      return;
    }
    if (this.cancelGraceMs === 0) {
      this.#force(run, batch);
      return;
    }
    this.#control.postMessage({ type: 'abort', run: run.number, reason } satisfies ControlToTask);
    run.graceTimer = setTimeout(() => {
      // Its outcome may be here already: a thread is only terminated for a run still running.
      this.#drainControl();
      if (run.settled || run.batch !== batch) return;
      const { ctx } = run;
      this.#emit({
        source: 'pool',
        level: 'warn',
        pool: this.name,
        message: `task ${label(ctx)} did not stop within ${this.cancelGraceMs} ms of its cancel: terminating its thread`,
        executionAttemptId: ctx.executionAttemptId,
        jobId: ctx.jobId,
        vertexId: ctx.vertexId,
        vertexName: ctx.vertexName,
        subtaskIndex: ctx.subtaskIndex,
      });
      this.#force(run, batch);
    }, this.cancelGraceMs);
  }

  /** Terminates the thread running `run` (and its batch): the batch's other unfinished runs are re-queued. */
  #force(run: PendingRun, batch: Batch): void {
    run.stoppedBy = 'forced';
    batch.forcedRun = run;
    if (batch.forced !== null) batch.forced.abort(run.cancelReason ?? 'canceled');
    // piscina sees the thread exit, fails its call and starts another thread.
    else void this.#pool.threads[0]?.terminate();
  }

  #scheduleDispatch(): void {
    if (this.#dispatchScheduled) return;
    this.#dispatchScheduled = true;
    // A microtask later: runs submitted in the same turn share batches.
    queueMicrotask(() => this.#dispatch());
  }

  /**
   * Sends queued runs to the threads in batches, while fewer than {@link #maxBatchesInFlight} are
   * out: the queue is split over the free places (so every thread gets work), MAX_BATCH at most each.
   */
  #dispatch(): void {
    this.#dispatchScheduled = false;
    if (this.#closing !== null) return;
    if (this.#queue.some((run) => run.settled)) this.#queue = this.#queue.filter((run) => !run.settled);
    while (this.#queue.length > 0 && this.#inFlight.length < this.#maxBatchesInFlight) {
      const places = this.#maxBatchesInFlight - this.#inFlight.length;
      const size = Math.min(MAX_BATCH, Math.ceil(this.#queue.length / places));
      // One batch shares one flags buffer and one managed memory: runs whose differ go in the next.
      const first = this.#queue[0]!;
      let take = 1;
      if (!first.solo) {
        while (take < size) {
          const run = this.#queue[take]!;
          if (run.solo || run.flags.buffer !== first.flags.buffer || run.invocation.memory?.data !== first.invocation.memory?.data) break;
          take++;
        }
      }
      this.#startBatch(this.#queue.splice(0, take));
    }
  }

  #startBatch(runs: PendingRun[]): void {
    const batch: Batch = { runs, forced: this.#threadCount === 1 ? null : new AbortController(), forcedRun: null };
    // A thread is free for it (fewer batches out than threads): its first run starts now.
    const startsNow = this.#inFlight.length < this.#threadCount;
    this.#inFlight.push(batch);
    this.#batches++;
    const items: TaskWorkerBatchItem[] = [];
    for (let position = 0; position < runs.length; position++) {
      const run = runs[position]!;
      run.batch = batch;
      run.position = position;
      const { taskModule, context, inputs, config } = run.invocation;
      // Listed, not spread: one shape for every item.
      items.push({ taskModule, context, inputs, config, run: run.number, index: run.index });
    }
    if (startsNow) this.#noticeNextStart(batch, 0);
    const first = runs[0]!;
    const started = first.flags.buffer as SharedArrayBuffer;
    const { memory } = first.invocation;
    // The buffers go only when the thread may not have them: it keeps the last ones per channel.
    const fresh = this.#threadCount > 1 || this.#sent === null || this.#sent.started !== started || this.#sent.memory !== memory;
    const payload: TaskWorkerBatch = fresh ? { channel: this.#controlName, started, memory, items } : { channel: this.#controlName, items };
    if (this.#threadCount === 1) this.#sent = { started, memory };
    this.#pool.run(payload, batch.forced === null ? RUN_BATCH : { name: 'runBatch', signal: batch.forced.signal }).then(
      (result: unknown) => this.#batchEnded(batch, true, undefined, result as TaskWorkerBatchResult),
      (error: unknown) => this.#batchEnded(batch, false, error, null),
    );
  }

  #batchEnded(batch: Batch, returned: boolean, error: unknown, last: TaskWorkerBatchResult): void {
    const at = this.#inFlight.indexOf(batch);
    if (at < 0) return;
    this.#inFlight.splice(at, 1);
    // The outcomes and logs its runs posted before it ended are on our channel already.
    this.#drainControl();
    if (last !== null) {
      const run = this.#runs.get(last.run);
      if (run !== undefined && run.batch === batch) this.#settleOutcome(run, last.outcome);
    }
    if (!returned) {
      this.#batchFailed(batch, error);
    } else {
      for (const run of batch.runs) {
        if (run.settled) continue;
        // Defensive: a batch that returned has posted or returned every outcome.
        if (Atomics.load(run.flags, run.index) === RUN_STARTED) {
          this.#failed++;
          this.#reject(run, this.#error('thread-exited', run.ctx, 'ended without its outcome reaching the pool', {}));
        } else this.#requeue(run, new Error('the batch ended before it started'));
      }
    }
    for (const run of batch.runs) {
      if (run.batch !== batch) continue;
      run.batch = null;
      // After a lost thread its flags are not reused: a terminated thread may run on for a moment
      // and must find nothing there to claim (a few flags per lost thread).
      if (run.settled && returned) this.#freeFlag(run);
    }
    // Its thread takes the oldest batch still waiting for one (told after this batch's last run was heard to end).
    const next = this.#inFlight[this.#threadCount - 1];
    if (next !== undefined) queueMicrotask(() => this.#noticeNextStart(next, 0));
    this.#scheduleDispatch();
  }

  /**
   * The batch's call rejected: its thread was terminated (a forced cancel, the pool closing), ran out
   * of heap or exited, or the batch could not be sent. The run that was running gets the error;
   * the runs that had not started are re-queued (a batch that could not be sent: one by one).
   */
  #batchFailed(batch: Batch, error: unknown): void {
    // The thread may be a new one (a lost one is replaced): it has none of the buffers.
    this.#sent = null;
    const name = typeof error === 'object' && error !== null && typeof (error as { name?: unknown }).name === 'string' ? (error as { name: string }).name : 'Error';
    if (name === 'DataCloneError' && batch.runs.length > 1) {
      for (const run of batch.runs) {
        if (run.settled) continue;
        run.solo = true;
        this.#requeue(run, error, true);
      }
      return;
    }
    for (const run of batch.runs) {
      if (run.settled) continue;
      const started = Atomics.load(run.flags, run.index) === RUN_STARTED;
      const own = batch.forcedRun === null ? started || name === 'DataCloneError' || this.#closing !== null : run === batch.forcedRun;
      if (own) this.#reject(run, this.#fromPiscina(error, run.ctx, run.cancelReason, run.stoppedBy));
      else this.#requeue(run, error);
    }
  }

  /** Puts a run of a lost batch back at the head of the queue (at most MAX_REQUEUES times), or fails it. */
  #requeue(run: PendingRun, error: unknown, free = false): void {
    if (run.cancelReason !== null) {
      // Its cancel was on its way to a thread that is gone: the thread's termination stopped it.
      this.#failed++;
      this.#canceled++;
      this.#reject(run, this.#error('canceled', run.ctx, `canceled (${run.cancelReason}); its thread was terminated`, { stoppedBy: 'forced', graceMs: this.cancelGraceMs }));
      return;
    }
    if (this.#closing !== null || (!free && ++run.requeues > MAX_REQUEUES)) {
      this.#reject(run, this.#fromPiscina(this.#closing !== null ? new Error('Terminating worker thread') : error, run.ctx, null, null));
      return;
    }
    run.batch = null;
    // A new flag: the lost thread's (see #batchEnded).
    ({ flags: run.flags, index: run.index } = this.#claimFlag(run.ctx));
    // Ahead of the runs queued after it (several re-queued runs keep their order: the batch's runs are walked in order).
    let at = 0;
    while (at < this.#queue.length && this.#queue[at]!.number < run.number) at++;
    this.#queue.splice(at, 0, run);
  }

  /** A run's outcome from its thread. */
  #settleOutcome(run: PendingRun, outcome: TaskWorkerOutcome): void {
    if (run.settled) return;
    this.#noticeStart(run);
    const { batch, position } = run;
    this.#settle(run, outcome);
    if (batch === null) return;
    // The thread went on with the next run of the batch as it posted this outcome. Told after the
    // reactions to this run's settling (queued just now), so a listener hears this run end first.
    queueMicrotask(() => this.#noticeNextStart(batch, position + 1));
  }

  #settle(run: PendingRun, outcome: TaskWorkerOutcome): void {
    const { ctx } = run;
    if (run.cancelReason !== null) {
      // The task ended on its own after the cancel (on its signal or by finishing): the attempt is canceled either way.
      this.#failed++;
      this.#canceled++;
      const how = outcome.ok ? 'it returned after the cancel' : `it stopped: ${outcome.error.name}: ${outcome.error.message}`;
      this.#reject(
        run,
        this.#error('canceled', ctx, `canceled (${run.cancelReason}); ${how}`, {
          stoppedBy: 'cooperative',
          leakedPagesReleased: outcome.leakedPagesReleased,
          ...(outcome.ok ? {} : { pagesLeft: outcome.pagesLeft }),
        }),
      );
      return;
    }
    if (outcome.ok) {
      this.#completed++;
      if (this.#finish(run)) run.resolve({ output: outcome.output, leakedPagesReleased: outcome.leakedPagesReleased });
      return;
    }
    this.#failed++;
    const { error } = outcome;
    const what =
      outcome.failure === 'bad-module'
        ? `could not load its task module ${run.invocation.taskModule}`
        : outcome.failure === 'bad-output'
          ? 'returned an output that cannot cross threads'
          : 'threw';
    this.#reject(
      run,
      this.#error(outcome.failure, ctx, `${what}: ${error.name}: ${error.message}`, {
        cause: error.message,
        causeName: error.name,
        ...(error.stack === undefined ? {} : { stack: error.stack }),
        ...(error.code === undefined ? {} : { code: error.code }),
        ...(error.tag === undefined ? {} : { causeTag: error.tag, causeReason: error.reason, causeDetails: error.details }),
        leakedPagesReleased: outcome.leakedPagesReleased,
        pagesLeft: outcome.pagesLeft,
      }),
    );
  }

  /** The first run of `batch` from `position` on that will still run (not settled, not canceled before it started): it is starting. */
  #noticeNextStart(batch: Batch, position: number): void {
    for (let i = position; i < batch.runs.length; i++) {
      const run = batch.runs[i]!;
      if (run.settled || run.batch !== batch || Atomics.load(run.flags, run.index) === RUN_CANCELED) continue;
      this.#noticeStart(run);
      return;
    }
  }

  #noticeStart(run: PendingRun): void {
    if (run.startNoticed || run.settled) return;
    run.startNoticed = true;
    if (run.listener === undefined) return;
    try {
      run.listener.started();
    } catch (error) {
      this.#emit({ source: 'pool', level: 'error', pool: this.name, message: `a run's start listener threw: ${error instanceof Error ? error.message : String(error)}`, executionAttemptId: run.ctx.executionAttemptId, jobId: run.ctx.jobId, vertexId: run.ctx.vertexId, vertexName: run.ctx.vertexName, subtaskIndex: run.ctx.subtaskIndex });
    }
  }

  #reject(run: PendingRun, error: Error): void {
    if (this.#finish(run)) run.reject(error);
  }

  /** Marks a run settled and lets go of it; false when it was already. Its flag is freed once no thread can read it. */
  #finish(run: PendingRun): boolean {
    if (run.settled) return false;
    run.settled = true;
    clearTimeout(run.graceTimer);
    if (run.onAbort !== undefined) run.signal?.removeEventListener('abort', run.onAbort);
    this.#runs.delete(run.number);
    if (run.batch === null) this.#freeFlag(run);
    return true;
  }

  #freeFlag(run: ActiveRun): void {
    if (run.flags === this.#flags) this.#freeFlags.push(run.index);
  }

  /**
   * Asks a thread of this pool for its real heap limit: worker `resourceLimits` can be silently
   * replaced by a process-wide `--max-old-space-size`. `heap_size_limit` counts the young
   * generation too, so the old generation is that minus the young generation the thread reports.
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
    const probe = (await this.#pool.run(null, { name: 'heapLimit' })) as HeapLimitProbe;
    const heapSizeLimitMb = probe.heapSizeLimit / MiB;
    const youngGenerationMb = probe.resourceLimits.maxYoungGenerationSizeMb ?? DEFAULT_YOUNG_GENERATION_MB;
    const actualMb = heapSizeLimitMb - youngGenerationMb;
    const expectedMb = this.heapLimitMb ?? null;
    const enforced = expectedMb === null || Math.abs(actualMb - expectedMb) <= expectedMb * 0.1;
    return { expectedMb, actualMb, heapSizeLimitMb, youngGenerationMb, enforced };
  }

  /** Terminates the threads; a running attempt rejects `canceled`. Idempotent. */
  close(): Promise<void> {
    if (this.#closing === null) {
      this.#closing = this.#pool.destroy().finally(() => this.#control.close());
      // Runs not sent to a thread yet end as piscina ends the ones it holds.
      const queued = this.#queue;
      this.#queue = [];
      for (const run of queued) if (!run.settled) this.#reject(run, this.#fromPiscina(new Error('Terminating worker thread'), run.ctx, null, null));
    }
    return this.#closing;
  }

  /** A started flag for a new run, cleared: a free one, or one of a new, larger buffer when all are taken. */
  #claimFlag(ctx: TaskInvocationContext): ActiveRun {
    let index = this.#freeFlags.pop();
    if (index === undefined) {
      if (this.#unusedFlag === this.#flags.length) {
        // Runs still holding flags of the old buffer keep it; their flags are not reused.
        this.#flags = new Int32Array(new SharedArrayBuffer(this.#flags.length * 2 * Int32Array.BYTES_PER_ELEMENT));
        this.#freeFlags = [];
        this.#unusedFlag = 0;
      }
      index = this.#unusedFlag++;
    }
    Atomics.store(this.#flags, index, 0);
    return { ctx, flags: this.#flags, index };
  }

  /** A message from a run: its log lines, or its outcome (a run of a batch that goes on). */
  #onControl(message: ControlFromTask): void {
    if (message?.type === 'outcome') {
      const run = this.#runs.get(message.run);
      if (run !== undefined) this.#settleOutcome(run, message.outcome);
      return;
    }
    if (message?.type !== 'log') return;
    const logging = this.#runs.get(message.run);
    // It logs: it runs (told after what settled before it in this read was heard).
    if (logging !== undefined && !logging.startNoticed) queueMicrotask(() => this.#noticeStart(logging));
    const ctx = logging?.ctx;
    this.#emit({
      source: 'task',
      level: 'info',
      pool: this.name,
      message: message.message,
      ...(ctx === undefined ? {} : { executionAttemptId: ctx.executionAttemptId, jobId: ctx.jobId, vertexId: ctx.vertexId, vertexName: ctx.vertexName, subtaskIndex: ctx.subtaskIndex }),
    });
  }

  /** Reads what the runs posted and is still queued on our end, in order. */
  #drainControl(): void {
    // Node takes a BroadcastChannel here as well as a MessagePort; @types/node 20 names only the port.
    const port = this.#control as unknown as MessagePort;
    for (let entry = receiveMessageOnPort(port); entry !== undefined; entry = receiveMessageOnPort(port)) {
      this.#onControl(entry.message as ControlFromTask);
    }
  }

  #fromPiscina(
    error: unknown,
    ctx: TaskInvocationContext,
    cancelReason: string | null,
    stoppedBy: 'before-start' | 'cooperative' | 'forced' | null,
  ): Error {
    const e = (typeof error === 'object' && error !== null ? error : {}) as { name?: unknown; message?: unknown; code?: unknown; stack?: unknown };
    const message = typeof e.message === 'string' ? e.message : String(error);
    const name = typeof e.name === 'string' ? e.name : 'Error';
    const code = typeof e.code === 'string' ? e.code : undefined;
    const extra = {
      cause: message,
      causeName: name,
      ...(code === undefined ? {} : { code }),
      ...(typeof e.stack === 'string' ? { stack: e.stack } : {}),
    };

    if (name === 'DataCloneError') {
      // piscina could not post the invocation: the caller's inputs or config, not the task.
      this.#failed++;
      return new IllegalArgumentError('invalid-value', `task ${label(ctx)}: its invocation cannot be sent to a thread (inputs and config must be structured-cloneable): ${message}`, {
        argument: 'invocation',
        executionAttemptId: ctx.executionAttemptId,
        cause: message,
      });
    }
    this.#failed++;
    // Forced: piscina's abort (AbortError), or its only thread terminated under it (it exited).
    if (cancelReason !== null && (name === 'AbortError' || stoppedBy === 'forced')) {
      this.#canceled++;
      const how =
        stoppedBy === 'before-start'
          ? 'it had not started'
          : `its thread was terminated after ${stoppedBy === 'forced' && this.cancelGraceMs > 0 ? `a ${this.cancelGraceMs} ms grace` : 'no grace'}`;
      return this.#error('canceled', ctx, `canceled (${cancelReason}); ${how}`, { ...extra, stoppedBy: stoppedBy ?? 'forced', graceMs: this.cancelGraceMs });
    }
    if (code === 'ERR_WORKER_OUT_OF_MEMORY') {
      return this.#error(
        'out-of-memory',
        ctx,
        `ran out of heap${this.heapLimitMb === undefined ? '' : ` (its thread's limit is ${this.heapLimitMb} MB)`}; the thread was replaced: ${message}`,
        { ...extra, heapLimitMb: this.heapLimitMb ?? null },
      );
    }
    if (this.#closing !== null && message === 'Terminating worker thread') {
      this.#canceled++;
      return this.#error('canceled', ctx, `canceled: the slot's task pool ${this.name} was closed while it ran`, { ...extra, stoppedBy: 'pool-closed' });
    }
    const exited = /worker exited with code: (-?\d+)/.exec(message);
    if (exited !== null) {
      return this.#error('thread-exited', ctx, `ended its thread (exit code ${exited[1]}); the thread was replaced`, { ...extra, exitCode: Number(exited[1]) });
    }
    // An uncaught error in the thread (a stray timer or rejection of the task's) killed it.
    return this.#error('thread-exited', ctx, `lost its thread to an uncaught ${name}: ${message}`, extra);
  }

  #error(reason: TaskFailureReason, ctx: TaskInvocationContext, what: string, details: Record<string, unknown>): TaskExecutionError {
    return new TaskExecutionError(reason, `task ${label(ctx)} on slot pool ${this.name} ${what}`, {
      executionAttemptId: ctx.executionAttemptId,
      vertexName: ctx.vertexName,
      subtaskIndex: ctx.subtaskIndex,
      attemptNumber: ctx.attemptNumber,
      cause: what,
      ...details,
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

function isStarted(run: ActiveRun): boolean {
  return Atomics.load(run.flags, run.index) === RUN_STARTED;
}

function label(ctx: TaskInvocationContext): string {
  return `${ctx.vertexName} (${ctx.subtaskIndex + 1}/${ctx.parallelism}) attempt ${ctx.attemptNumber} [${ctx.executionAttemptId}]`;
}

function reasonText(reason: unknown): string {
  if (reason === undefined) return 'canceled';
  if (typeof reason === 'string') return reason;
  if (reason instanceof Error) return reason.message;
  return String(reason);
}

function consoleLog(entry: SlotTaskPoolLogEntry): void {
  const who = entry.vertexName === undefined ? `[${entry.pool}]` : `[${entry.pool}] ${entry.vertexName} (${(entry.subtaskIndex ?? 0) + 1})`;
  if (entry.level === 'info') console.log(`${who}: ${entry.message}`);
  else console.warn(`${who} ${entry.level}: ${entry.message}`);
}
