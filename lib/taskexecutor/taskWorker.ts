/**
 * The worker file of a slot's piscina pool (see SlotTaskPool.ts): it runs the batches of task
 * attempts its pool posts on the port it was handed (`attach`).
 *
 * Self-contained on purpose: it imports only Node built-ins, the MemoryManager (a view over the
 * slot's shared pages), the errors of lib/core (which the MemoryManager loads anyway) and its own
 * parts, and nothing of the TaskExecutor, so a task thread loads little. piscina `require()`s this
 * file before the first task, so it must not use top-level await.
 *
 * Per run (an item of a batch):
 * 1. loads the task module (taskModule.ts: an absolute path or a `file:` URL, a `.ts` one through
 *    tsx's loader, cached per thread);
 * 2. builds the task's {@link TaskContext}: the plain context, `config`, `memoryManager` (a view
 *    over the slot's managed memory, or null), `signal` (fired by the pool's cancel) and `log()`.
 *    The view and the signal are made when the task first reads them: most tasks never do, and an
 *    AbortController per run cost more than a trivial task;
 * 3. calls `default(context, inputs)`; the outcome is posted on the thread's port (or, for the
 *    batch's last run, returned as the call's result), and one that cannot be cloned is reported
 *    as a `bad-output` failure instead;
 * 4. when the task returned, releases every page it still holds in its view and reports how many
 *    (`leakedPagesReleased`); when it threw, its pages stay held so the slot's shutdown report
 *    shows the leak.
 *
 * It never throws for a task's failure: outcomes ({@link TaskWorkerOutcome}) carry errors as plain
 * data (taskOutcomes.ts), so the message, stack, code and a slotwise error's tag/reason/details
 * survive the trip, the stack mapped to the user's files where a module has a source map
 * (sourceMaps.ts). The pool↔thread messages are typed in taskThreadProtocol.ts.
 */
import { format } from 'node:util';
import v8 from 'node:v8';
import { resourceLimits, threadId, type MessagePort } from 'node:worker_threads';
import { describeValue } from '../core/errors.js';
import { MemoryManager, type SharedMemoryHandle } from './MemoryManager.js';
import { RUN_QUEUED, RUN_STARTED } from './runFlags.js';
import { mapStack } from './sourceMaps.js';
import { forgetTasks, loadTask, type TaskContext, type TaskFunction } from './taskModule.js';
import { badOutput, cloneable, errorInfoOf } from './taskOutcomes.js';
import { postToPool, serveBatches } from './batchPort.js';
import type { PartitionPart } from './ResultPartitions.js';
import type {
  ControlFromTask,
  EncodedInputs,
  HeapLimitProbe,
  TaskInvocationContext,
  TaskPartitionSpec,
  TaskWorkerBatch,
  TaskWorkerBatchResult,
  TaskWorkerOutcome,
  ThreadAfterJobs,
  WorkerErrorInfo,
} from './taskThreadProtocol.js';

export type { TaskContext, TaskFunction } from './taskModule.js';
export type { TaskInvocationContext } from './taskThreadProtocol.js';

/** A run's cancel: its controller once the task asked for its signal, or the reason an abort came before that. */
class RunAbort {
  controller: AbortController | null = null;
  reason: string | null = null;

  abort(reason: string): void {
    if (this.controller !== null) {
      if (!this.controller.signal.aborted) this.controller.abort(new DOMException(reason, 'AbortError'));
    } else {
      this.reason ??= reason;
    }
  }

  get signal(): AbortSignal {
    if (this.controller === null) {
      this.controller = new AbortController();
      if (this.reason !== null) this.controller.abort(new DOMException(this.reason, 'AbortError'));
    }
    return this.controller.signal;
  }

  get aborted(): boolean {
    return this.controller === null ? this.reason !== null : this.controller.signal.aborted;
  }
}

/** A pool this thread serves (or served, until its slot goes back): the runs it may abort, the buffers last sent. */
interface PoolState {
  readonly name: string;
  readonly running: Map<number, RunAbort>;
  flags: Int32Array | null;
  memory: SharedMemoryHandle | null;
}

const pools = new Map<string, PoolState>();

/**
 * The pool's state. A batch of a pool this thread has not served is the first of the next slot it serves: the slot
 * before has gone back (its pool is never heard from again), so what the thread kept of the pools before (their
 * buffers) and every job's module instances are let go first (letGoOfJobs).
 */
function poolState(name: string): PoolState {
  let entry = pools.get(name);
  if (entry === undefined) {
    if (pools.size > 0) letGoOfJobs();
    entry = { name, running: new Map(), flags: null, memory: null };
    pools.set(name, entry);
  }
  return entry;
}

/** Where a run's log lines go: its pool, as the run's. */
interface LogSink {
  readonly pool: PoolState;
  readonly run: number;
}

/** The context a task sees: the plain context and config as fields; memory, signal and log made when asked for. */
class RunContext implements TaskContext {
  readonly jobId: string;
  readonly jobName: string;
  readonly vertexId: string;
  readonly vertexName: string;
  readonly subtaskIndex: number;
  readonly parallelism: number;
  readonly attemptNumber: number;
  readonly executionAttemptId: string;
  readonly allocationId: string;
  readonly config: unknown;
  readonly subpartitions: number | null;
  readonly #abort: RunAbort;
  readonly #memory: SharedMemoryHandle | null;
  readonly #sink: LogSink;
  #view: MemoryManager | null | undefined = undefined;

  constructor(
    context: TaskInvocationContext,
    config: unknown,
    memory: SharedMemoryHandle | null,
    abort: RunAbort,
    sink: LogSink,
    partition: TaskPartitionSpec | undefined,
  ) {
    this.jobId = context.jobId;
    this.jobName = context.jobName;
    this.vertexId = context.vertexId;
    this.vertexName = context.vertexName;
    this.subtaskIndex = context.subtaskIndex;
    this.parallelism = context.parallelism;
    this.attemptNumber = context.attemptNumber;
    this.executionAttemptId = context.executionAttemptId;
    this.allocationId = context.allocationId;
    this.config = config;
    this.subpartitions = partition?.subpartitions ?? null;
    this.#abort = abort;
    this.#memory = memory;
    this.#sink = sink;
  }

  get memoryManager(): MemoryManager | null {
    if (this.#view === undefined) this.#view = this.#memory === null ? null : MemoryManager.attach(this.#memory);
    return this.#view;
  }

  /** The view, if the task asked for it (nothing to release otherwise). */
  get attachedMemory(): MemoryManager | null {
    return this.#view ?? null;
  }

  get signal(): AbortSignal {
    return this.#abort.signal;
  }

  log(...args: unknown[]): void {
    const message = format(...args);
    const { pool, run } = this.#sink;
    postControl({ type: 'log', pool: pool.name, run, message });
  }

  /** What the task sees of itself when it prints its context (the lazy parts by their state). */
  toJSON(): Record<string, unknown> {
    return {
      ...this.#plain(),
      config: this.config,
      subpartitions: this.subpartitions,
      hasMemory: this.#memory !== null,
      aborted: this.#abort.aborted,
    };
  }

  #plain(): TaskInvocationContext {
    const {
      jobId,
      jobName,
      vertexId,
      vertexName,
      subtaskIndex,
      parallelism,
      attemptNumber,
      executionAttemptId,
      allocationId,
    } = this;
    return {
      jobId,
      jobName,
      vertexId,
      vertexName,
      subtaskIndex,
      parallelism,
      attemptNumber,
      executionAttemptId,
      allocationId,
    };
  }
}

/**
 * Runs the items of a batch one after another. Each claims its started flag (queued → started)
 * before it runs, so the pool can cancel a queued item by claiming it first; each ended item's
 * outcome is posted at once on the port, before the next item starts.
 */
async function runBatch(batch: TaskWorkerBatch): Promise<TaskWorkerBatchResult> {
  const pool = poolState(batch.pool);
  if (batch.started !== undefined) pool.flags = new Int32Array(batch.started);
  if (batch.memory !== undefined) pool.memory = batch.memory;
  const { flags, memory } = pool;
  // The pool sends its buffers again after any lost thread; a thread that has none fails the call, and the pool
  // re-sends.
  if (flags === null) throw new Error(`no started flags for pool ${batch.pool} on this thread`);
  const { items } = batch;
  let last: TaskWorkerBatchResult = null;
  for (let i = 0; i < items.length; i++) {
    const item = items[i]!;
    const abort = new RunAbort();
    // Abortable first, then started: a pool that sees the flag may send its abort at once.
    pool.running.set(item.run, abort);
    try {
      // canceled while queued
      if (Atomics.compareExchange(flags, item.index, RUN_QUEUED, RUN_STARTED) !== RUN_QUEUED) continue;
      const sink: LogSink = { pool, run: item.run };
      const outcome = await runOne(
        item.taskModule,
        new RunContext(item.context, item.config, memory, abort, sink, item.partition),
        item.inputs,
        abort,
        item.encoded,
        item.partition,
      );
      if (i < items.length - 1) {
        postOutcome(pool.name, item.run, outcome);
        continue;
      }
      // The last one comes back in the batch's end (one message fewer, and a batch is often a
      // single run): made cloneable here, so that the end always reaches the pool.
      last = { run: item.run, outcome: cloneable(outcome) };
    } finally {
      pool.running.delete(item.run);
    }
  }
  return last;
}

/**
 * The piscina call that hands this thread its pool's port (TaskThreadPort.ts): batches come on it from now on
 * (batchPort.ts). Answers this thread's id, by which the pool finds the thread it attached.
 */
export function attach(message: { readonly port: MessagePort }): number {
  serveBatches(message.port, {
    run: runBatch,
    afterBatch,
    abort: ({ pool, run, reason }) => pools.get(pool)?.running.get(run)?.abort(reason),
  });
  return threadId;
}

/** Posts a run's outcome; one the port cannot clone goes as a bad-output failure instead. */
function postOutcome(pool: string, run: number, outcome: TaskWorkerOutcome): void {
  try {
    postToPool({ type: 'outcome', pool, run, outcome });
  } catch (error) {
    postControl({ type: 'outcome', pool, run, outcome: badOutput(outcome, error) });
  }
}

function postControl(message: ControlFromTask): void {
  try {
    postToPool(message);
  } catch {
    // The port is closed (the thread is ending): nothing to tell.
  }
}

async function runOne(
  taskModule: string,
  context: RunContext,
  inputs: unknown,
  abort: RunAbort,
  encoded: EncodedInputs | undefined,
  partition: TaskPartitionSpec | undefined,
): Promise<TaskWorkerOutcome> {
  let fn: TaskFunction;
  try {
    fn = await loadTask(taskModule, context.jobId);
  } catch (error) {
    return {
      ok: false,
      failure: 'bad-module',
      error: thrownInfo(error),
      aborted: abort.aborted,
      leakedPagesReleased: 0,
      pagesLeft: 0,
    };
  }
  let output: unknown;
  try {
    output = await fn(context, encoded === undefined ? inputs : decodeInputs(inputs, encoded));
  } catch (error) {
    let memory: MemoryManager | null = null;
    try {
      memory = context.attachedMemory;
    } catch {
      // Never attached.
    }
    // A task that throws leaves its pages held: the slot's shutdown report shows them.
    return {
      ok: false,
      failure: 'threw',
      error: thrownInfo(error),
      aborted: abort.aborted,
      leakedPagesReleased: 0,
      pagesLeft: heldPages(memory),
    };
  }
  if (partition !== undefined) {
    const kept = partitionOf(output, partition);
    if (!kept.ok) {
      const leakedPagesReleased = releaseEverything(context.attachedMemory);
      return { ok: false, failure: 'bad-output', error: kept.error, aborted: false, leakedPagesReleased, pagesLeft: 0 };
    }
    output = kept.output;
  }
  // A task that returned has finished with its memory.
  return { ok: true, output, leakedPagesReleased: releaseEverything(context.attachedMemory) };
}

/** What a task (or its module's load) threw, its stack in the user's files and lines (sourceMaps.ts). */
function thrownInfo(error: unknown): WorkerErrorInfo {
  const info = errorInfoOf(error);
  return info.stack === undefined ? info : { ...info, stack: mapStack(info.stack) };
}

/** The inputs with those read from result partitions decoded in place (they are this run's own copy). */
function decodeInputs(inputs: unknown, encoded: EncodedInputs): unknown {
  const byEdge = (inputs ?? {}) as Record<string, unknown[]>;
  for (const from of Object.keys(encoded)) {
    const parts = encoded[from]!;
    const values = byEdge[from] ?? (byEdge[from] = []);
    for (let i = 0; i < parts.length; i++) {
      const part = parts[i];
      if (part !== null && part !== undefined) values[i] = part instanceof Uint8Array ? v8.deserialize(part) : part.raw;
    }
  }
  return byEdge;
}

/**
 * A producer's output as its TaskExecutor keeps it: a hash edge's producer must return one part per subpartition;
 * with `encode`, each part is serialized here into a SharedArrayBuffer (the TaskExecutor and the consumers' only pass
 * it on), or kept as the value if v8 cannot serialize it but it can cross threads (a view of managed memory).
 */
function partitionOf(
  output: unknown,
  { subpartitions, encode }: TaskPartitionSpec,
): { ok: true; output: unknown } | { ok: false; error: WorkerErrorInfo } {
  if (subpartitions !== null && (!Array.isArray(output) || output.length !== subpartitions)) {
    const got = Array.isArray(output) ? `an array of ${output.length}` : describeValue(output);
    return {
      ok: false,
      error: {
        name: 'TypeError',
        message:
          `a producer of a hash edge returns an array of ${subpartitions} parts, one per subpartition ` +
          `(context.subpartitions); got ${got}`,
      },
    };
  }
  if (!encode) return { ok: true, output };
  const values: readonly unknown[] = subpartitions === null ? [output] : (output as unknown[]);
  const parts: PartitionPart[] = new Array(values.length);
  for (let i = 0; i < values.length; i++) {
    try {
      parts[i] = encodePart(values[i]);
    } catch (serializeError) {
      try {
        structuredClone(values[i]);
        parts[i] = { raw: values[i] };
      } catch {
        const info = errorInfoOf(serializeError);
        return {
          ok: false,
          error: {
            ...info,
            message: `the task's output cannot cross threads (${describeValue(values[i])}): ${info.message}`,
          },
        };
      }
    }
  }
  return { ok: true, output: parts };
}

/** One part serialized into a SharedArrayBuffer of its size: shared, not copied, by whoever passes it on. */
function encodePart(value: unknown): Uint8Array {
  const bytes = v8.serialize(value);
  const shared = new Uint8Array(new SharedArrayBuffer(bytes.byteLength));
  shared.set(bytes);
  return shared;
}

/**
 * A profiling run (bench/soak.ts) measures a thread's heap after a full collection — what the jobs
 * left held, not their garbage — by setting SLOTWISE_GC_AFTER_JOBS=1 under --expose-gc. Never by
 * default: a full collection per slot given back (when the thread was asked for its heap then) was
 * 8 ms of CPU on every p = 1 job of any application run with --expose-gc (npm run bench -- jobs:
 * 4.9 → 13.5 ms CPU per job).
 */
const GC_AFTER_JOBS = process.env['SLOTWISE_GC_AFTER_JOBS'] === '1';

/**
 * The thread serves another slot now (TaskThreadReserve gave it to another job, which may be another job's): what it
 * kept of its pools before (their buffers) and every job's module instances are let go. Each job imports its modules
 * afresh whatever is kept (jobModules.ts): this gives back their memory.
 */
function letGoOfJobs(): void {
  // Only between a slot's last batch and the next slot's first: no run is left to abort.
  pools.clear();
  forgetTasks();
}

/**
 * What the thread holds as it goes idle after a batch, for its reserve's retirement rules when its slot goes back:
 * the heap in use (garbage included, unless {@link GC_AFTER_JOBS}; the job's module instances too, let go only as the
 * thread takes another slot's batch) and what the jobs left running. No message says the slot has gone back: this
 * rides on the end of every batch after which nothing waits, so giving the thread back costs no round trip.
 */
export function afterBatch(): ThreadAfterJobs {
  if (GC_AFTER_JOBS) (globalThis as { gc?: () => void }).gc?.();
  return {
    heapUsedBytes: v8.getHeapStatistics().used_heap_size,
    // What keeps an idle thread's event loop alive but its pool's ports: a job's timers, sockets, requests.
    leftRunning: process.getActiveResourcesInfo().filter((kind) => kind !== 'MessagePort'),
  };
}

/** The probe {@link SlotTaskPool.checkHeapLimit} runs: this thread's heap limit. */
export function heapLimit(): HeapLimitProbe {
  const { maxYoungGenerationSizeMb, maxOldGenerationSizeMb } = resourceLimits;
  return {
    heapSizeLimit: v8.getHeapStatistics().heap_size_limit,
    resourceLimits: { maxYoungGenerationSizeMb, maxOldGenerationSizeMb },
  };
}

function heldPages(memoryManager: MemoryManager | null): number {
  if (memoryManager === null) return 0;
  let pages = 0;
  for (const { owner } of memoryManager.owners()) pages += memoryManager.pagesOf(owner);
  return pages;
}

/**
 * Releases what every owner of this view holds: normally the task's executionAttemptId, but a task
 * may name its owners as it likes. `owners()` lists other views' owners too, as `#<token>`;
 * releaseAll only touches owners known to this view, so those are left alone.
 */
function releaseEverything(memoryManager: MemoryManager | null): number {
  if (memoryManager === null) return 0;
  let released = 0;
  for (const { owner } of memoryManager.owners()) released += memoryManager.releaseAll(owner);
  return released;
}
