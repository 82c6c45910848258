/**
 * Starts one TaskExecutor worker, on a thread or in a child process, and hands back the transport
 * to it. The worker entry is chosen by this module's own extension (.ts under tsx in tests, .js
 * from dist/ after tsc), so the same code runs in both; from dist/, the one-file bundle of the
 * entry that `npm run build` writes beside it (scripts/bundleWorkers.ts) when it is there, run by
 * taskExecutorStart.cjs through its V8 code cache: a worker then neither resolves ~40 modules nor
 * compiles them.
 */
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { forkProcess } from '../rpc/forkProcess.js';
import { startWorker } from '../rpc/startWorker.js';
import { portTransport, processTransport, type Transport } from '../rpc/Transport.js';
import { BOOTSTRAP_MESSAGE, type WorkerBootstrap } from '../rpc/WorkerBootstrap.js';

export interface SpawnedWorker {
  readonly transport: Transport;
  /** Forced stop: terminate the thread, SIGKILL the process. */
  kill(): void;
  /**
   * Resolves when the thread has stopped or the child process has been reaped (its `exit`): later
   * than its transport's close, which a child's IPC `disconnect` or a thread's `error` triggers first.
   */
  readonly exited: Promise<void>;
}

const extension = import.meta.url.endsWith('.ts') ? '.ts' : '.js';
// taskExecutorStart.cjs runs the bundle (through its V8 code cache when there is one).
const BUNDLE = new URL('../taskexecutor/taskExecutorMain.bundle.cjs', import.meta.url);
const BUNDLED_ENTRY = new URL('../taskexecutor/taskExecutorStart.cjs', import.meta.url);
export const DEFAULT_WORKER_ENTRY =
  extension === '.js' && existsSync(fileURLToPath(BUNDLE)) && existsSync(fileURLToPath(BUNDLED_ENTRY))
    ? BUNDLED_ENTRY
    : new URL(`../taskexecutor/taskExecutorMain${extension}`, import.meta.url);

/** Heap above the tasks' own for the TaskExecutor runtime in a child process. */
export const PROCESS_HEAP_OVERHEAD_MB = 96;

export function spawnWorker(
  mode: 'thread' | 'process',
  bootstrap: WorkerBootstrap,
  options: { entry?: URL; heapLimitMb: number },
): SpawnedWorker {
  const entry = options.entry ?? DEFAULT_WORKER_ENTRY;
  if (mode === 'thread') {
    // The compiled runtime needs none of the application's Node options: a preload (`--import`,
    // `--require`: a loader such as tsx, an agent) would load again in every TaskExecutor, for
    // ~60 ms of CPU each under tsx. A child process gets only its heap limit too, and task
    // threads get none either (taskThreads.ts).
    const worker = startWorker(entry, bootstrap, entry.href === BUNDLED_ENTRY.href ? { execArgv: [] } : {});
    const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
    return { transport: portTransport(worker), kill: () => void worker.terminate(), exited };
  }
  // The process's own heap limit is the hard bound: a task that blows it takes down this one process only.
  const child = forkProcess(entry, [], {
    execArgv: [`--max-old-space-size=${options.heapLimitMb + PROCESS_HEAP_OVERHEAD_MB}`],
  });
  const exited = new Promise<void>((resolve) => {
    child.once('exit', () => resolve());
    // A child that could not be spawned has no pid and may never emit 'exit'.
    child.once('error', () => void (child.pid === undefined && resolve()));
  });
  child.send({ [BOOTSTRAP_MESSAGE]: bootstrap });
  return { transport: processTransport(child), kill: () => void child.kill('SIGKILL'), exited };
}
