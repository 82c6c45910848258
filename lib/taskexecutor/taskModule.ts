/**
 * A task module, as a task thread sees it: what its default export is ({@link TaskFunction}) and
 * receives ({@link TaskContext}), and how a thread loads one (the module named by an absolute path
 * or a `file:` URL, with a dynamic `import()`).
 *
 * A `.ts` module first registers tsx's loader in the thread (worker threads on Node 20 do not
 * inherit tsx's ESM hooks, even with `--import tsx`). Modules are cached per thread, so a module's
 * top-level state is shared by the attempts that run on the same thread.
 */
import { isAbsolute } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describeValue } from '../core/errors.js';
import type { MemoryManager } from './MemoryManager.js';
import type { TaskInvocationContext } from './taskThreadProtocol.js';

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

const TYPESCRIPT_EXTENSION = /\.[mc]?tsx?$/i;
let typeScriptLoader: Promise<void> | undefined;
/**
 * Loaded task functions by module string. `import()` caches modules anyway, but each call still
 * resolves the specifier, and with tsx's hooks registered that is a round trip to the loader
 * thread (~0.5 ms): more than a trivial task costs. Failed loads are not kept.
 */
const loadedTasks = new Map<string, Promise<TaskFunction>>();

/** The default export of the task module, loaded once per thread (a failed load is tried again next time). */
export function loadTask(taskModule: string): Promise<TaskFunction> {
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
      `task module ${taskModule} has no default export function (its default export ` +
        `is ${describeValue(fn)}); a task module must export default async (context, inputs) => output`,
    );
  }
  return fn as TaskFunction;
}

/**
 * Registers tsx's ESM loader in this thread, once (the specifier is a variable: tsx is a development tool, not a
 * dependency).
 */
function ensureTypeScriptLoader(taskModule: string): Promise<void> {
  typeScriptLoader ??= (async () => {
    const specifier = 'tsx/esm/api';
    try {
      const api = (await import(specifier)) as { register: () => unknown };
      api.register();
    } catch (error) {
      typeScriptLoader = undefined;
      throw new Error(
        `task module ${taskModule} is TypeScript, and tsx (its loader) could not be registered in the task ` +
          `thread: ${(error as Error)?.message ?? String(error)}; compile the task to JavaScript or install tsx`,
      );
    }
  })();
  return typeScriptLoader;
}
