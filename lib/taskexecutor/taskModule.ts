/**
 * A task module, as a task thread sees it: what its default export is ({@link TaskFunction}) and
 * receives ({@link TaskContext}), and how a thread loads one for a job (the module named by an
 * absolute path or a `file:` URL).
 *
 * Each job gets its own instances of its modules (jobModules.ts): a module's top-level state is
 * shared by the attempts of one job that run on the same thread, never by two jobs.
 */
import { isAbsolute } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describeValue } from '../core/errors.js';
import { forgetJobs, importForJob } from './jobModules.js';
import type { MemoryManager } from './MemoryManager.js';
import type { TaskInvocationContext } from './taskThreadProtocol.js';

/** What a task module's default export receives as its first argument. */
export interface TaskContext extends TaskInvocationContext {
  /** The vertex's free-form parameters (the deployment descriptor's `config`). */
  readonly config: unknown;
  /**
   * A hash edge's producer: how many parts its output must have (return an array that long, part k holding the keys
   * of subpartition k, e.g. `hash(key) % subpartitions`) — the consumer's parallelism, or, when the adaptive scheduler
   * decides the consumer's, the most it may decide (consumers then read contiguous ranges of parts). Null for any
   * other subtask.
   */
  readonly subpartitions: number | null;
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
 * Loaded task functions by job and module string (`<jobId> <module>`). The job's module graph is
 * kept by jobModules.ts anyway, but a run's lookup here skips resolving the specifier again.
 * Failed loads are not kept.
 */
const loadedTasks = new Map<string, Promise<TaskFunction>>();

/**
 * The default export of the task module as the job `jobId` sees it: imported for that job on its
 * first run in this thread (jobModules.ts: the job's own module instances), then cached; a failed
 * load is tried again next time.
 */
export function loadTask(taskModule: string, jobId: string): Promise<TaskFunction> {
  const key = `${jobId} ${taskModule}`;
  let loading = loadedTasks.get(key);
  if (loading === undefined) {
    loading = importTask(taskModule, jobId);
    loadedTasks.set(key, loading);
    loading.catch(() => loadedTasks.delete(key));
  }
  return loading;
}

/** Forgets every job's task modules (the thread goes on to another job, or back to the spares). */
export function forgetTasks(): void {
  loadedTasks.clear();
  forgetJobs();
}

async function importTask(taskModule: string, jobId: string): Promise<TaskFunction> {
  if (typeof taskModule !== 'string' || taskModule.length === 0) {
    throw new TypeError(`taskModule must be an absolute path or a file: URL, got ${describeValue(taskModule)}`);
  }
  let url: string;
  if (taskModule.startsWith('file:')) url = taskModule;
  else if (isAbsolute(taskModule)) url = pathToFileURL(taskModule).href;
  else throw new TypeError(`taskModule must be an absolute path or a file: URL, got ${JSON.stringify(taskModule)}`);

  const fn = (await importForJob(jobId, url))['default'];
  if (typeof fn !== 'function') {
    throw new TypeError(
      `task module ${taskModule} has no default export function (its default export ` +
        `is ${describeValue(fn)}); a task module must export default async (context, inputs) => output`,
    );
  }
  return fn as TaskFunction;
}
