/**
 * The esbuild children tsx starts in the threads we start, ended and reaped before their thread
 * ends (see docs/runtime.md, What a TaskExecutor loads to start).
 *
 * Only the event loop that spawned a child reaps it (waits for its exit status): a child whose
 * thread has ended exits when its stdin closes and stays defunct until this process ends. tsx
 * compiles `.ts` with esbuild in two ways, each with a child process of its own:
 *
 * - its module hooks run in Node's hooks thread (one per thread that registers hooks) and compile
 *   with esbuild's service: a child spawned there, unreferenced, alive until that thread ends (a
 *   task module checker, a retired task thread, a stopped TaskExecutor thread). So, in every thread
 *   where we register tsx, a hook of ours is registered right after it: it tracks the children
 *   spawned in the hooks thread and, whenever no module is loading any more, stops esbuild's service
 *   (it starts again for the next compile) and waits until each child has exited and been reaped,
 *   before the last load resolves. A thread that has loaded its modules has no such child left,
 *   however it ends afterwards; one terminated in the middle of a compile can still leave one.
 * - its `require` path compiles with esbuild's synchronous API, which by default runs the service
 *   in a worker thread of esbuild's own, ended with the thread that loaded it. In those threads
 *   `ESBUILD_WORKER_THREADS=0` is set before tsx loads esbuild: each synchronous compile then runs
 *   esbuild once and waits for it (reaped at once). Tasks of such a thread see the variable.
 *
 * It costs a process start (a few ms) per burst of compiles, and nothing when tsx's cache serves
 * the module; compiled JavaScript never loads tsx.
 */
import { register } from 'node:module';

/** The hook, run in the hooks thread (plain JavaScript: it must load before any `.ts` can). */
const HOOK_SOURCE = `
import { createRequire } from 'node:module';

const EXIT_WAIT_MS = 5000;
// Registered twice in one thread (tsx from its execArgv, then again for a task module): the first does the work.
const INSTALLED = Symbol.for('slotwise.esbuildReaper');
const first = globalThis[INSTALLED] === undefined;
globalThis[INSTALLED] = true;
const require = createRequire('/');
// The object esbuild spawns through (it calls child_process.spawn at each start).
const childProcess = require('node:child_process');
const cache = require.cache;
const live = new Set();
const spawn = childProcess.spawn;
if (first) childProcess.spawn = function (...args) {
  const child = spawn.apply(this, args);
  if (child.pid !== undefined && child.exitCode === null && child.signalCode === null) {
    live.add(child);
    child.once('exit', () => live.delete(child));
  }
  return child;
};

function exited(child, ms) {
  return new Promise((resolve) => {
    if (!live.has(child)) return resolve(true);
    const timer = setTimeout(() => resolve(false), ms);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve(true);
    });
  });
}

async function reap() {
  const children = [...live];
  // Referenced again: this loop must stay up until each exit is seen (that is when it is reaped).
  for (const child of children) child.ref();
  for (const [path, module] of Object.entries(cache))
    if (/[\\\\/]esbuild[\\\\/]lib[\\\\/]main\\.js$/.test(path) && typeof module?.exports?.stop === 'function')
      module.exports.stop();
  for (const child of children) {
    if (await exited(child, EXIT_WAIT_MS)) continue;
    child.kill('SIGKILL');
    if (!(await exited(child, EXIT_WAIT_MS)))
      process.emitWarning('slotwise: esbuild child ' + child.pid + ' did not exit within ' +
        2 * EXIT_WAIT_MS + ' ms of being stopped, even killed: no longer waiting for it');
  }
}

let loading = 0;
export async function load(url, context, nextLoad) {
  if (!first) return nextLoad(url, context);
  loading++;
  try {
    return await nextLoad(url, context);
  } finally {
    if (--loading === 0 && live.size > 0) await reap();
  }
}
`;

/** The hook as a module URL for `module.register`. */
export const ESBUILD_REAPER_HOOK = `data:text/javascript,${encodeURIComponent(HOOK_SOURCE)}`;

/**
 * The Node options that register the hook in a thread at its start, after `--import tsx` (a
 * thread whose tsx comes from its execArgv: a task thread run from `.ts`).
 */
export const ESBUILD_REAPER_IMPORT: readonly string[] = [
  '--import',
  `data:text/javascript,${encodeURIComponent(
    `import { register } from 'node:module'; register(${JSON.stringify(ESBUILD_REAPER_HOOK)});`,
  )}`,
];

/** What this thread's environment needs before tsx loads esbuild in it (see the module comment). */
export const ESBUILD_SYNC_ENV = { ESBUILD_WORKER_THREADS: '0' } as const;

/**
 * Call before loading tsx in this thread: esbuild's synchronous API will run without a worker of its own. A thread's
 * `process.env` is its own copy: other threads are not touched.
 */
export function prepareEsbuildForThisThread(): void {
  Object.assign(process.env, ESBUILD_SYNC_ENV);
}

/** Registers the hook in this thread; call it right after registering tsx's loader. */
export function registerEsbuildReaper(): void {
  register(ESBUILD_REAPER_HOOK);
}
