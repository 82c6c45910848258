/**
 * The piscina side of a slot's task threads: how a pool of task threads is made (one per slot
 * allocation; its threads' heap limit from the slot's task heap). SlotTaskPool runs attempts on
 * one; TaskThreadReserve keeps some booted ahead of need.
 *
 * Options that matter (found by trying): `atomics: 'disabled'` — an error a task leaves behind (a
 * stray timer, a late rejection) arrives as a pool 'error' instead of inside the next task — and
 * an 'error' listener from the first moment (unhandled, it crashes the TaskExecutor). A pool has
 * one thread, kept warm (`minThreads` = `maxThreads` = 1): piscina boots it at once, and
 * {@link threadsReady} waits until it has loaded the worker file and taken its port
 * (TaskThreadPort.ts), so the first task skips the ~50 ms boot and the attach call.
 *
 * piscina itself is loaded on first need (`loadTaskThreads`), not when a TaskExecutor's worker
 * starts: a TaskExecutor registers first and loads it after, in the background.
 */
import { createRequire } from 'node:module';
import { extname } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Worker } from 'node:worker_threads';
import type { Piscina } from 'piscina';
import { ESBUILD_REAPER_IMPORT, ESBUILD_SYNC_ENV } from '../rpc/esbuildReaper.js';
import { attachThread } from './TaskThreadPort.js';

export interface TaskThreadsOptions {
  /** The slot profile's task heap in MB → each thread's `maxOldGenerationSizeMb`; undefined = no limit. */
  readonly heapLimitMb?: number;
  /** The worker file; default taskWorker next to this module, `.ts` or `.js` like this module. */
  readonly workerFile?: string | URL;
  /** The threads' execArgv; default `--import tsx` and the esbuild reaper when running from `.ts`, `[]` from `.js`. */
  readonly execArgv?: readonly string[];
  /** Receives pool 'error' events (errors no task was there to receive). Attached before any thread starts. */
  readonly onError: (error: unknown) => void;
}

// Run from .ts (tests, under tsx) or from .js (dist/): the worker file follows this module.
const OWN_EXTENSION = extname(fileURLToPath(import.meta.url));
const DEFAULT_WORKER_FILE = fileURLToPath(new URL(`./taskWorker${OWN_EXTENSION}`, import.meta.url));

/**
 * Always added to a thread's execArgv: what jobModules.ts needs to give each job its own module instances, and no
 * require() of ES modules. piscina loads the worker file with require() first; on Node 20.19+ that loads an ES module
 * synchronously, and under --experimental-vm-modules it once aborted the whole process
 * (`v8::Module::IsGraphAsync must be used on an instantiated module`, a fatal error in a churn soak as a task thread
 * booted). Without it require() of an ES module throws, and piscina imports the file instead.
 */
const JOB_MODULE_FLAGS = [
  '--experimental-vm-modules',
  '--experimental-import-meta-resolve',
  '--no-experimental-require-module',
];

const requireHere = createRequire(import.meta.url) as (id: 'piscina') => typeof import('piscina');
let PiscinaClass: typeof Piscina | undefined;
let loading: Promise<typeof Piscina> | undefined;

/** Loads piscina, once; resolves when task threads can be made. */
export function loadTaskThreads(): Promise<void> {
  // require, not import(): piscina is CommonJS, and importing it runs Node's CommonJS lexer over it
  // in every TaskExecutor (~10 ms of CPU) to find the names it exports.
  loading ??= Promise.resolve().then(() => (PiscinaClass = requireHere('piscina').Piscina));
  return loading.then(() => undefined);
}

/** Whether piscina is loaded (task threads can be made at once). */
export function taskThreadsLoaded(): boolean {
  return PiscinaClass !== undefined;
}

/** A piscina pool of task threads, booting now: at once once piscina is loaded, else when it is. */
export function createTaskThreads(options: TaskThreadsOptions): Piscina | Promise<Piscina> {
  return PiscinaClass === undefined ? loadTaskThreads().then(() => createLoaded(options)) : createLoaded(options);
}

function createLoaded(options: TaskThreadsOptions): Piscina {
  const { heapLimitMb, workerFile } = options;
  const filename =
    workerFile === undefined
      ? DEFAULT_WORKER_FILE
      : workerFile instanceof URL || workerFile.startsWith('file:')
        ? fileURLToPath(workerFile)
        : workerFile;
  // Under tsx, with what ends and reaps the esbuild children tsx starts in the thread (esbuildReaper.ts).
  const underTsx = options.execArgv === undefined && OWN_EXTENSION === '.ts';
  const execArgv = options.execArgv ?? (underTsx ? ['--import', 'tsx', ...ESBUILD_REAPER_IMPORT] : []);
  const pool = new PiscinaClass!({
    filename,
    // The handler piscina loads as a thread boots: the first call any thread gets (TaskThreadPort.ts).
    name: 'attach',
    ...(underTsx ? { env: { ...process.env, ...ESBUILD_SYNC_ENV } } : {}),
    execArgv: [...execArgv, ...JOB_MODULE_FLAGS.filter((flag) => !execArgv.includes(flag))],
    atomics: 'disabled',
    // One thread, kept: a slot runs one task at a time, its runs go to that thread on its own port
    // (TaskThreadPort.ts), so piscina must neither start a second thread nor end an idle one.
    maxThreads: 1,
    minThreads: 1,
    concurrentTasksPerWorker: 1,
    // Its run/wait histograms cost a sample per call; nothing reads them.
    recordTiming: false,
    ...(heapLimitMb === undefined ? {} : { resourceLimits: { maxOldGenerationSizeMb: heapLimitMb } }),
  });
  pool.on('error', options.onError);
  return pool;
}

/**
 * Resolves once the pool's thread has booted, loaded the worker file and taken its port
 * (TaskThreadPort.ts: the call that hands it over is the first to go through). Rejects if the
 * thread could not boot.
 */
export async function threadsReady(pool: Piscina): Promise<void> {
  await attachThread(pool);
}

/**
 * The exit codes of a pool's threads, from each thread's own 'exit' event: piscina tells the call a
 * thread held that it exited only in its error's text (`worker exited with code: N`). Node emits
 * 'exit' (after 'error', for a thread out of heap) in the same turn as piscina fails that call, so a
 * code is kept for that turn of the event loop only, and read there (taskFailure.ts).
 */
export class ThreadExits {
  /** The threads watched, each with its 'exit' listener. */
  readonly #watched = new Map<Worker, (code: number) => void>();
  #pool: Piscina | null = null;
  readonly #onCreate = () => this.#watchNew();
  #last: { readonly code: number } | null = null;

  /** Watches the pool's threads, and each one it starts later (a replaced thread). One pool at a time. */
  watch(pool: Piscina): void {
    this.#pool = pool;
    this.#watchNew();
    pool.on('workerCreate', this.#onCreate);
  }

  /** Stops watching (the pool's threads go to another owner): no listener of this one is left on them. */
  unwatch(): void {
    this.#pool?.off('workerCreate', this.#onCreate);
    this.#pool = null;
    for (const [worker, onExit] of this.#watched) worker.off('exit', onExit);
    this.#watched.clear();
  }

  /** The exit code of a thread that ended in this turn, or null. */
  get lastCode(): number | null {
    return this.#last?.code ?? null;
  }

  #watchNew(): void {
    for (const worker of this.#pool?.threads ?? []) {
      if (this.#watched.has(worker)) continue;
      const onExit = (code: number) => {
        this.#watched.delete(worker);
        const exit = { code };
        this.#last = exit;
        setImmediate(() => {
          if (this.#last === exit) this.#last = null;
        });
      };
      this.#watched.set(worker, onExit);
      worker.once('exit', onExit);
    }
  }
}
