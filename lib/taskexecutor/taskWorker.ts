/**
 * The worker file of a slot's piscina pool (see SlotTaskPool.ts): it runs one task attempt per call.
 *
 * Self-contained on purpose: it imports only Node built-ins, the MemoryManager (a view over the
 * slot's shared pages) and nothing of the TaskExecutor, so a task thread loads little. piscina
 * `require()`s this file before the first task, so it must not use top-level await.
 *
 * Per call (the default export):
 * 1. loads the task module (an absolute path or a `file:` URL) with a dynamic `import()`; a `.ts`
 *    module first registers tsx's loader in this thread (worker threads on Node 20 do not inherit
 *    tsx's ESM hooks, even with `--import tsx`); the module is cached per thread, so its top-level
 *    state is shared by the attempts that run on the same thread;
 * 2. builds the task's {@link TaskContext}: the plain context, `config`, a `memoryManager` view
 *    over the slot's managed memory (or null), an AbortSignal fired by the pool's cancel, `log()`;
 * 3. calls `default(context, inputs)` and checks that the output can cross threads;
 * 4. when the task returned, releases every page it still holds in its view and reports how many
 *    (`leakedPagesReleased`); when it threw, its pages stay held so the slot's shutdown report
 *    shows the leak.
 *
 * It never throws for a task's failure: it returns a {@link TaskWorkerOutcome} whose errors are
 * plain data, so the message, stack, code and a slotwise error's tag/reason/details survive the
 * trip (a structured clone of an Error keeps only its name, message and stack).
 */
import { isAbsolute } from 'node:path';
import { pathToFileURL } from 'node:url';
import { format } from 'node:util';
import v8 from 'node:v8';
import { BroadcastChannel, resourceLimits } from 'node:worker_threads';
import { MemoryManager, type SharedMemoryHandle } from './MemoryManager.js';
import { RUN_QUEUED, RUN_STARTED } from './runFlags.js';

/** The plain, structured-cloneable context of one attempt (DESIGN.md, "The job model"). */
export interface TaskInvocationContext {
  readonly jobId: string;
  readonly jobName: string;
  readonly vertexId: string;
  readonly vertexName: string;
  readonly subtaskIndex: number;
  readonly parallelism: number;
  readonly attemptNumber: number;
  readonly executionAttemptId: string;
  readonly allocationId: string;
}

/** What a task module's default export receives as its first argument. */
export interface TaskContext extends TaskInvocationContext {
  /** The vertex's free-form parameters (the deployment descriptor's `config`). */
  readonly config: unknown;
  /**
   * A view over the slot's managed memory, or null when the slot has none. Allocate under
   * `executionAttemptId` by convention; whatever this view still holds when the task returns is
   * released (and counted), whatever it holds when the task throws leaks into the slot's report.
   * An output that holds views of these pages shares them (SharedArrayBuffers are not copied):
   * copy the bytes out (`bytes.slice()`) before returning them.
   */
  readonly memoryManager: MemoryManager | null;
  /**
   * Fired when the attempt is canceled. It arrives as a message, so a task sees it only when it
   * yields to the event loop (an `await` of a timer or I/O, e.g. `await new Promise(setImmediate)`);
   * a synchronous loop never sees it and is stopped by terminating its thread after the pool's
   * grace period.
   */
  readonly signal: AbortSignal;
  /** Writes a line to the TaskExecutor's log (arguments formatted like console.log). */
  log(...args: unknown[]): void;
}

/** A task module's default export. */
export type TaskFunction = (context: TaskContext, inputs: unknown) => unknown;

/**
 * How a run of a batch talks with its pool, without a channel of its own (a MessageChannel per run,
 * created, transferred and closed, cost more than a trivial task): the pool's BroadcastChannel
 * `channel` carries 'abort' in and 'log' out, each naming the run; the run claims its flag at
 * `index` of the pool's shared `started` flags (queued → started; no message, so no wake-up of the
 * pool's thread).
 */
interface TaskControl {
  /** The name of the pool's BroadcastChannel. */
  readonly channel: string;
  /** The run's number in its pool. */
  readonly run: number;
  /** An Int32Array's buffer: the pool's started flags. */
  readonly started: SharedArrayBuffer;
  /** This run's flag in `started`. */
  readonly index: number;
}

/** One attempt to run (a TaskInvocation): alone through the default export, whose signal never fires and whose logs go to the console, or as an item of a batch. */
export interface TaskWorkerPayload {
  readonly taskModule: string;
  readonly context: TaskInvocationContext;
  readonly inputs: unknown;
  readonly config?: unknown;
  readonly memory: SharedMemoryHandle | null;
}

/**
 * Several runs in one pool call ({@link runBatch}): run one after another, each with its own
 * signal, started flag and outcome. A run whose flag the pool has already set to
 * RUN_CANCELED (runFlags.ts) (canceled while queued) is skipped.
 */
export interface TaskWorkerBatch {
  /** The name of the pool's BroadcastChannel. */
  readonly channel: string;
  readonly items: readonly (TaskWorkerPayload & { readonly run: number; readonly started: SharedArrayBuffer; readonly index: number })[];
}

/** What {@link runBatch} returns: the outcome of the last run it ran (the others were posted as each ended), or null. */
export interface TaskWorkerBatchResult {
  readonly last: { readonly run: number; readonly outcome: TaskWorkerOutcome } | null;
}

/** Messages on a pool's control channel. */
export type ControlToTask = { readonly type: 'abort'; readonly run: number; readonly reason: string };
export type ControlFromTask =
  | { readonly type: 'log'; readonly run: number; readonly message: string }
  /** A run of a batch has ended (posted at once, so the pool settles it while the batch goes on). */
  | { readonly type: 'outcome'; readonly run: number; readonly outcome: TaskWorkerOutcome };

/** An error as plain data. */
export interface WorkerErrorInfo {
  readonly name: string;
  readonly message: string;
  readonly stack?: string;
  readonly code?: string;
  /** A slotwise error's `_tag`, `reason` and `details`, when the task threw one. */
  readonly tag?: string;
  readonly reason?: string;
  readonly details?: Record<string, unknown>;
}

export type TaskWorkerOutcome =
  | { readonly ok: true; readonly output: unknown; readonly leakedPagesReleased: number }
  | {
      readonly ok: false;
      readonly failure: 'threw' | 'bad-module' | 'bad-output';
      readonly error: WorkerErrorInfo;
      /** True when the task's signal had fired: the failure is the task stopping on a cancel. */
      readonly aborted: boolean;
      /** Pages the task returned without (released, after a bad output) or threw holding (left held). */
      readonly leakedPagesReleased: number;
      readonly pagesLeft: number;
    };

/** What {@link heapLimit} reports about this thread's heap. */
export interface HeapLimitProbe {
  /** `v8.getHeapStatistics().heap_size_limit`: old generation + young generation, in bytes. */
  readonly heapSizeLimit: number;
  /** The thread's resource limits as Node reports them (the *requested* values: a process-wide flag that overrides them is not visible here). */
  readonly resourceLimits: { readonly maxYoungGenerationSizeMb?: number; readonly maxOldGenerationSizeMb?: number };
}

const TYPESCRIPT_EXTENSION = /\.[mc]?tsx?$/i;
let typeScriptLoader: Promise<void> | undefined;
/**
 * Loaded task functions by module string. `import()` caches modules anyway, but each call still
 * resolves the specifier, and with tsx's hooks registered that is a round trip to the loader
 * thread (~0.5 ms): more than a trivial task costs. Failed loads are not kept.
 */
const loadedTasks = new Map<string, Promise<TaskFunction>>();

/** This thread's end of each pool's control channel, and the runs each may abort. */
const controlChannels = new Map<string, { readonly channel: BroadcastChannel; readonly running: Map<number, AbortController> }>();

function controlChannel(name: string): { readonly channel: BroadcastChannel; readonly running: Map<number, AbortController> } {
  let entry = controlChannels.get(name);
  if (entry === undefined) {
    const channel = new BroadcastChannel(name);
    const running = new Map<number, AbortController>();
    channel.onmessage = (event) => {
      const message = (event as { data: ControlToTask }).data;
      const controller = message?.type === 'abort' ? running.get(message.run) : undefined;
      if (controller !== undefined && !controller.signal.aborted) controller.abort(new DOMException(message.reason, 'AbortError'));
    };
    // The thread lives as long as its pool wants it, not as long as this channel.
    channel.unref();
    entry = { channel, running };
    controlChannels.set(name, entry);
  }
  return entry;
}

/** Runs one task attempt; never rejects for the task's own failures (see the module comment). */
export default async function runTask(payload: TaskWorkerPayload): Promise<TaskWorkerOutcome> {
  // Without a pool's control there is no flag to claim: never null.
  return (await runClaimed(payload, undefined)) as TaskWorkerOutcome;
}

/**
 * Runs the items of a batch one after another. Each claims its started flag (queued → started)
 * before it runs, so the pool can cancel a queued item by claiming it first (queued → canceled);
 * each ended item's outcome is posted at once, except the last one's, which is returned.
 */
export async function runBatch(batch: TaskWorkerBatch): Promise<TaskWorkerBatchResult> {
  const pool = controlChannel(batch.channel);
  let last: TaskWorkerBatchResult['last'] = null;
  for (const item of batch.items) {
    // The previous item's outcome goes before this item starts: if this one ends the thread, that one is not lost.
    if (last !== null) postControl(pool.channel, { type: 'outcome', run: last.run, outcome: last.outcome });
    last = null;
    const { run, started, index, ...invocation } = item;
    const outcome = await runClaimed(invocation, { channel: batch.channel, run, started, index });
    // null: canceled while queued, and settled by the pool already.
    if (outcome !== null) last = { run, outcome };
  }
  return { last };
}

function postControl(channel: BroadcastChannel | undefined, message: ControlFromTask): void {
  try {
    channel?.postMessage(message);
  } catch {
    // The channel is closed (the thread is ending): nothing to tell.
  }
}

/** Runs one attempt; with a pool's `control`, only if its flag is still queued (null when the pool canceled it first). */
async function runClaimed(payload: TaskWorkerPayload, control: TaskControl | undefined): Promise<TaskWorkerOutcome | null> {
  const { taskModule, context, inputs, config, memory } = payload;
  const controller = new AbortController();
  const pool = control === undefined ? undefined : controlChannel(control.channel);
  const post = (message: ControlFromTask) => postControl(pool?.channel, message);

  try {
    if (control !== undefined) {
      // Abortable first, then started: a pool that sees the flag may send its abort at once.
      pool!.running.set(control.run, controller);
      if (Atomics.compareExchange(new Int32Array(control.started), control.index, RUN_QUEUED, RUN_STARTED) !== RUN_QUEUED) return null;
    }

    let fn: TaskFunction;
    try {
      fn = await loadTask(taskModule);
    } catch (error) {
      return { ok: false, failure: 'bad-module', error: describeError(error), aborted: controller.signal.aborted, leakedPagesReleased: 0, pagesLeft: 0 };
    }

    let memoryManager: MemoryManager | null = null;
    try {
      memoryManager = memory === null || memory === undefined ? null : MemoryManager.attach(memory);
    } catch (error) {
      return { ok: false, failure: 'threw', error: describeError(error), aborted: false, leakedPagesReleased: 0, pagesLeft: 0 };
    }

    const label = `${context.vertexName} (${context.subtaskIndex + 1}/${context.parallelism})`;
    const taskContext: TaskContext = Object.freeze({
      ...context,
      config,
      memoryManager,
      signal: controller.signal,
      log: (...args: unknown[]) => {
        const message = format(...args);
        if (control === undefined) console.log(`${label}: ${message}`);
        else post({ type: 'log', run: control.run, message });
      },
    });

    let output: unknown;
    try {
      output = await fn(taskContext, inputs);
    } catch (error) {
      // A task that throws leaves its pages held: the slot's shutdown report shows them.
      return { ok: false, failure: 'threw', error: describeError(error), aborted: controller.signal.aborted, leakedPagesReleased: 0, pagesLeft: heldPages(memoryManager) };
    }

    // A task that returned has finished with its memory.
    const leakedPagesReleased = releaseEverything(memoryManager);
    try {
      // What piscina would do with the outcome; an uncloneable output there would kill the thread.
      structuredClone(output);
    } catch (error) {
      const info = describeError(error);
      return {
        ok: false,
        failure: 'bad-output',
        error: { ...info, message: `the task's output cannot cross threads (${describeValue(output)}): ${info.message}` },
        aborted: controller.signal.aborted,
        leakedPagesReleased,
        pagesLeft: 0,
      };
    }
    return { ok: true, output, leakedPagesReleased };
  } finally {
    if (control !== undefined) pool!.running.delete(control.run);
  }
}

/** The probe {@link SlotTaskPool.checkHeapLimit} runs: this thread's heap limit. */
export function heapLimit(): HeapLimitProbe {
  const { maxYoungGenerationSizeMb, maxOldGenerationSizeMb } = resourceLimits;
  return { heapSizeLimit: v8.getHeapStatistics().heap_size_limit, resourceLimits: { maxYoungGenerationSizeMb, maxOldGenerationSizeMb } };
}

function loadTask(taskModule: string): Promise<TaskFunction> {
  let loading = loadedTasks.get(taskModule);
  if (loading === undefined) {
    loading = importTask(taskModule);
    loadedTasks.set(taskModule, loading);
    loading.catch(() => loadedTasks.delete(taskModule));
  }
  return loading;
}

async function importTask(taskModule: string): Promise<TaskFunction> {
  if (typeof taskModule !== 'string' || taskModule.length === 0) {
    throw new TypeError(`taskModule must be an absolute path or a file: URL, got ${describeValue(taskModule)}`);
  }
  let url: string;
  if (taskModule.startsWith('file:')) url = taskModule;
  else if (isAbsolute(taskModule)) url = pathToFileURL(taskModule).href;
  else throw new TypeError(`taskModule must be an absolute path or a file: URL, got ${JSON.stringify(taskModule)}`);

  if (TYPESCRIPT_EXTENSION.test(new URL(url).pathname)) await ensureTypeScriptLoader(taskModule);
  const module = (await import(url)) as { default?: unknown };
  const fn = module.default;
  if (typeof fn !== 'function') {
    throw new TypeError(
      `task module ${taskModule} has no default export function (its default export is ${describeValue(fn)}); a task module must export default async (context, inputs) => output`,
    );
  }
  return fn as TaskFunction;
}

/** Registers tsx's ESM loader in this thread, once (the specifier is a variable: tsx is a development tool, not a dependency). */
function ensureTypeScriptLoader(taskModule: string): Promise<void> {
  typeScriptLoader ??= (async () => {
    const specifier = 'tsx/esm/api';
    try {
      const api = (await import(specifier)) as { register: () => unknown };
      api.register();
    } catch (error) {
      typeScriptLoader = undefined;
      throw new Error(
        `task module ${taskModule} is TypeScript, and tsx (its loader) could not be registered in the task thread: ${(error as Error)?.message ?? String(error)}; compile the task to JavaScript or install tsx`,
      );
    }
  })();
  return typeScriptLoader;
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

function describeError(error: unknown): WorkerErrorInfo {
  if (typeof error !== 'object' || error === null) {
    return { name: 'Error', message: `the task threw a non-error value: ${describeValue(error)}` };
  }
  const e = error as { name?: unknown; message?: unknown; stack?: unknown; code?: unknown; _tag?: unknown; reason?: unknown; details?: unknown };
  const info: { -readonly [K in keyof WorkerErrorInfo]: WorkerErrorInfo[K] } = {
    name: typeof e.name === 'string' ? e.name : 'Error',
    message: typeof e.message === 'string' ? e.message : String(error),
  };
  if (typeof e.stack === 'string') info.stack = e.stack;
  // String codes only: a DOMException's numeric legacy code (25 for DataCloneError) says nothing.
  if (typeof e.code === 'string') info.code = e.code;
  if (typeof e._tag === 'string' && typeof e.reason === 'string') {
    info.tag = e._tag;
    info.reason = e.reason;
    if (typeof e.details === 'object' && e.details !== null) {
      try {
        info.details = structuredClone({ ...(e.details as Record<string, unknown>) });
      } catch {
        // Details that cannot cross threads are dropped; the message still says what happened.
      }
    }
  }
  return info;
}

function describeValue(value: unknown): string {
  if (value === null || value === undefined) return String(value);
  if (typeof value === 'function') return `a function${value.name ? ` (${value.name})` : ''}`;
  if (typeof value === 'object') return `an object (${Object.prototype.toString.call(value)})`;
  if (typeof value === 'string') return JSON.stringify(value.length > 80 ? `${value.slice(0, 80)}…` : value);
  return `${typeof value} ${String(value)}`;
}
