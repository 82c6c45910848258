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
 * Cancel: aborting a run's `signal` first fires the task's own `context.signal` (an 'abort' for
 * that run on the pool's BroadcastChannel), so a cooperative task can stop cleanly; if the attempt has
 * not ended after `cancelGraceMs` (default 5 s), piscina's abort terminates its thread (the pool
 * starts another). Either way the run rejects with TaskExecutionError `canceled`.
 *
 * No channel per run: a run marks itself started in the pool's shared flags and its logs come on
 * the pool's BroadcastChannel (a MessageChannel created, transferred and closed per run cost about
 * as much as piscina's own work for a trivial task).
 *
 * The pool uses `atomics: 'disabled'` (an error a task leaves behind arrives as a pool `'error'`
 * instead of inside the next task) and always listens for `'error'` (unhandled, it would crash the
 * TaskExecutor): such errors are logged and counted in {@link SlotTaskPool.stats}.
 */
import { extname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { randomUUID } from 'node:crypto';
import { BroadcastChannel, receiveMessageOnPort, type MessagePort } from 'node:worker_threads';
import { Piscina } from 'piscina';
import { IllegalArgumentError, IllegalStateError, TaskExecutionError } from '../core/errors.js';
import type { TaskDeploymentDescriptor } from '../rpc/protocol.js';
import type { SharedMemoryHandle } from './MemoryManager.js';
import type {
  ControlFromTask,
  ControlToTask,
  HeapLimitProbe,
  TaskControl,
  TaskInvocationContext,
  TaskWorkerOutcome,
  TaskWorkerPayload,
} from './taskWorker.js';

export type { TaskContext, TaskFunction, TaskInvocationContext } from './taskWorker.js';

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

/** A run not settled yet: who it is (for its logs) and where its started flag is. */
interface ActiveRun {
  readonly ctx: TaskInvocationContext;
  readonly flags: Int32Array;
  readonly index: number;
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
  readonly #runs = new Map<number, ActiveRun>();
  #flags = new Int32Array(new SharedArrayBuffer(INITIAL_RUN_FLAGS * Int32Array.BYTES_PER_ELEMENT));
  #freeFlags: number[] = [];
  #unusedFlag = 0;
  #nextRun = 1;
  #closing: Promise<void> | null = null;
  #completed = 0;
  #failed = 0;
  #canceled = 0;
  #poolErrors = 0;

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

    // Run from .ts (tests, under tsx) or from .js (dist/): the worker file follows this module.
    const ownExtension = extname(fileURLToPath(import.meta.url));
    const workerFile = options.workerFile ?? new URL(`./taskWorker${ownExtension}`, import.meta.url);
    const filename = workerFile instanceof URL || workerFile.startsWith('file:') ? fileURLToPath(workerFile) : workerFile;
    const execArgv = options.execArgv ?? (ownExtension === '.ts' ? ['--import', 'tsx'] : []);

    this.#pool = new Piscina({
      filename,
      name: 'default',
      execArgv: [...execArgv],
      atomics: 'disabled',
      maxThreads,
      // Warm threads unless they should idle out: a slot's first task then skips the thread start.
      minThreads: idleTimeoutMs === undefined ? maxThreads : 0,
      ...(idleTimeoutMs === undefined ? {} : { idleTimeout: idleTimeoutMs }),
      concurrentTasksPerWorker: 1,
      ...(heapLimitMb === undefined ? {} : { resourceLimits: { maxOldGenerationSizeMb: heapLimitMb } }),
    });
    this.#control = new BroadcastChannel(this.#controlName);
    this.#control.onmessage = (event) => this.#onControl((event as { data: ControlFromTask }).data);
    // Logs are welcome while the pool lives; the channel alone must not keep a process alive.
    this.#control.unref();
    // Always: an unhandled pool 'error' crashes the process (TOOLCHAIN.md).
    this.#pool.on('error', (error: unknown) => {
      this.#poolErrors++;
      const message = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
      this.#emit({ source: 'pool', level: 'error', pool: this.name, message: `pool error (no task to receive it): ${message}` });
    });
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
  async run(invocation: TaskInvocation, options: { readonly signal?: AbortSignal } = {}): Promise<TaskResult> {
    if (this.#closing !== null) {
      throw new IllegalStateError(`SlotTaskPool ${this.name} is closed: it runs no more tasks`, {
        component: `SlotTaskPool ${this.name}`,
        operation: 'run',
        state: 'closed',
        allowed: ['open'],
      });
    }
    const { signal } = options;
    const ctx = invocation.context;
    if (signal?.aborted) {
      this.#failed++;
      this.#canceled++;
      throw this.#error('canceled', ctx, `canceled before it started: ${reasonText(signal.reason)}`, { stoppedBy: 'before-start' });
    }

    const runNumber = this.#nextRun++;
    const active = this.#claimFlag(ctx);
    this.#runs.set(runNumber, active);
    const forced = new AbortController();
    let settled = false;
    let cancelReason: string | null = null;
    let stoppedBy: 'before-start' | 'cooperative' | 'forced' | null = null;
    let graceTimer: NodeJS.Timeout | undefined;

    const onAbort = () => {
      if (settled || cancelReason !== null) return;
      cancelReason = reasonText(signal?.reason);
      const started = isStarted(active);
      if (!started || this.cancelGraceMs === 0) {
        // Still queued (or no grace): nothing to stop cooperatively.
        stoppedBy = started ? 'forced' : 'before-start';
        forced.abort(cancelReason);
        return;
      }
      this.#control.postMessage({ type: 'abort', run: runNumber, reason: cancelReason } satisfies ControlToTask);
      graceTimer = setTimeout(() => {
        if (settled) return;
        stoppedBy = 'forced';
        this.#emit({
          source: 'pool',
          level: 'warn',
          pool: this.name,
          message: `task ${label(ctx)} did not stop within ${this.cancelGraceMs} ms of its cancel: terminating its thread`,
          executionAttemptId: ctx.executionAttemptId,
          vertexName: ctx.vertexName,
          subtaskIndex: ctx.subtaskIndex,
        });
        forced.abort(cancelReason);
      }, this.cancelGraceMs);
    };
    signal?.addEventListener('abort', onAbort, { once: true });

    const control: TaskControl = { channel: this.#controlName, run: runNumber, started: active.flags.buffer as SharedArrayBuffer, index: active.index };
    const payload: TaskWorkerPayload = { ...invocation, control };
    let outcome: TaskWorkerOutcome;
    try {
      try {
        outcome = (await this.#pool.run(payload, { signal: forced.signal })) as TaskWorkerOutcome;
      } finally {
        // Logs the task posted before it ended are on our channel already: read them before the result.
        this.#drainControl();
      }
    } catch (error) {
      settled = true;
      this.#cleanup(runNumber, active, signal, onAbort, graceTimer);
      throw this.#fromPiscina(error, ctx, cancelReason, stoppedBy);
    }
    settled = true;
    this.#cleanup(runNumber, active, signal, onAbort, graceTimer);

    if (cancelReason !== null) {
      // The task ended on its own after the cancel (on its signal or by finishing): the attempt is canceled either way.
      this.#failed++;
      this.#canceled++;
      const how = outcome.ok ? 'it returned after the cancel' : `it stopped: ${outcome.error.name}: ${outcome.error.message}`;
      throw this.#error('canceled', ctx, `canceled (${cancelReason}); ${how}`, {
        stoppedBy: 'cooperative',
        leakedPagesReleased: outcome.leakedPagesReleased,
        ...(outcome.ok ? {} : { pagesLeft: outcome.pagesLeft }),
      });
    }
    if (outcome.ok) {
      this.#completed++;
      return { output: outcome.output, leakedPagesReleased: outcome.leakedPagesReleased };
    }
    this.#failed++;
    const { error } = outcome;
    const what =
      outcome.failure === 'bad-module'
        ? `could not load its task module ${invocation.taskModule}`
        : outcome.failure === 'bad-output'
          ? 'returned an output that cannot cross threads'
          : 'threw';
    throw this.#error(outcome.failure, ctx, `${what}: ${error.name}: ${error.message}`, {
      cause: error.message,
      causeName: error.name,
      ...(error.stack === undefined ? {} : { stack: error.stack }),
      ...(error.code === undefined ? {} : { code: error.code }),
      ...(error.tag === undefined ? {} : { causeTag: error.tag, causeReason: error.reason, causeDetails: error.details }),
      leakedPagesReleased: outcome.leakedPagesReleased,
      pagesLeft: outcome.pagesLeft,
    });
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
    this.#closing ??= this.#pool.destroy().finally(() => this.#control.close());
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

  #cleanup(runNumber: number, active: ActiveRun, signal: AbortSignal | undefined, onAbort: () => void, graceTimer: NodeJS.Timeout | undefined): void {
    clearTimeout(graceTimer);
    signal?.removeEventListener('abort', onAbort);
    this.#runs.delete(runNumber);
    if (active.flags === this.#flags) this.#freeFlags.push(active.index);
  }

  /** A message from a run: its log lines. */
  #onControl(message: ControlFromTask): void {
    if (message?.type !== 'log') return;
    const ctx = this.#runs.get(message.run)?.ctx;
    this.#emit({
      source: 'task',
      level: 'info',
      pool: this.name,
      message: message.message,
      ...(ctx === undefined ? {} : { executionAttemptId: ctx.executionAttemptId, vertexName: ctx.vertexName, subtaskIndex: ctx.subtaskIndex }),
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
    if (cancelReason !== null && name === 'AbortError') {
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
  return Atomics.load(run.flags, run.index) === 1;
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
