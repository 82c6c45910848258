/**
 * The piscina side of a slot's task threads: how a pool of task threads is made (one per slot
 * allocation; its threads' heap limit from the slot's task heap). SlotTaskPool runs attempts on
 * one; TaskThreadReserve keeps some booted ahead of need.
 *
 * Options that matter (TOOLCHAIN.md): `atomics: 'disabled'` — an error a task leaves behind (a
 * stray timer, a late rejection) arrives as a pool 'error' instead of inside the next task — and
 * an 'error' listener from the first moment (unhandled, it crashes the TaskExecutor). The pool
 * keeps its threads warm (`minThreads` = `maxThreads`): piscina boots them at once and loads the
 * worker file in each before it reports ready, so the first task skips the ~50 ms boot.
 */
import { extname } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Piscina } from 'piscina';

export interface TaskThreadsOptions {
  /** The slot profile's task heap in MB → each thread's `maxOldGenerationSizeMb`; undefined = no limit. */
  readonly heapLimitMb?: number;
  /** Threads of the pool; default 1 (a slot runs one task at a time). */
  readonly maxThreads?: number;
  /** When set, threads idle this long end (none kept warm); unset, `maxThreads` threads stay warm. */
  readonly idleTimeoutMs?: number;
  /** The worker file; default taskWorker next to this module, `.ts` or `.js` like this module. */
  readonly workerFile?: string | URL;
  /** The threads' execArgv; default `['--import', 'tsx']` when running from `.ts`, `[]` from `.js`. */
  readonly execArgv?: readonly string[];
  /** Receives pool 'error' events (errors no task was there to receive). Attached before any thread starts. */
  readonly onError: (error: unknown) => void;
}

// Run from .ts (tests, under tsx) or from .js (dist/): the worker file follows this module.
const OWN_EXTENSION = extname(fileURLToPath(import.meta.url));
const DEFAULT_WORKER_FILE = fileURLToPath(new URL(`./taskWorker${OWN_EXTENSION}`, import.meta.url));

/** A piscina pool of task threads, booting now. */
export function createTaskThreads(options: TaskThreadsOptions): Piscina {
  const { heapLimitMb, maxThreads = 1, idleTimeoutMs, workerFile } = options;
  const filename = workerFile === undefined ? DEFAULT_WORKER_FILE : workerFile instanceof URL || workerFile.startsWith('file:') ? fileURLToPath(workerFile) : workerFile;
  const execArgv = options.execArgv ?? (OWN_EXTENSION === '.ts' ? ['--import', 'tsx'] : []);
  const pool = new Piscina({
    filename,
    name: 'default',
    execArgv: [...execArgv],
    atomics: 'disabled',
    maxThreads,
    minThreads: idleTimeoutMs === undefined ? maxThreads : 0,
    ...(idleTimeoutMs === undefined ? {} : { idleTimeout: idleTimeoutMs }),
    concurrentTasksPerWorker: 1,
    // Its run/wait histograms cost a sample per call; nothing reads them.
    recordTiming: false,
    ...(heapLimitMb === undefined ? {} : { resourceLimits: { maxOldGenerationSizeMb: heapLimitMb } }),
  });
  pool.on('error', options.onError);
  return pool;
}

/**
 * Resolves once the pool's threads have booted and loaded the worker file (a no-op call went
 * through; piscina marks threads it starts with the pool ready at once, so no event says it).
 * Rejects if the thread could not boot.
 */
export async function threadsReady(pool: Piscina): Promise<void> {
  await pool.run(null, { name: 'heapLimit' });
}
