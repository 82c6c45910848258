/**
 * What a compiled build starts for a TaskExecutor (a worker thread's file, a child process's
 * module): it runs the one-file CommonJS bundle of the worker entry beside it
 * (taskExecutorMain.bundle.cjs, written by `npm run build`, scripts/bundleWorkers.ts) through
 * V8's code cache for it (taskExecutorMain.bundle.cjs.codecache), so that a new isolate does not
 * parse and compile the runtime again: compiling it was a third of a TaskExecutor's start.
 *
 * - The cache holds the code of every function a TaskExecutor ran from its start to its stop in
 *   the build's own warm-up run (V8 compiles functions lazily; the cache is taken as that worker
 *   exits), not just the bundle's top level.
 * - A cache V8 rejects (another Node or V8 version, other V8 flags) or a missing one costs time,
 *   never correctness: the bundle is compiled from source then, as without a cache.
 * - With `SLOTWISE_WRITE_CODE_CACHE` set (the build's warm-up does), the cache is written as this
 *   worker's TaskExecutor stops, to a temporary file renamed over the old one (another worker may
 *   be writing too).
 *
 * CommonJS, not an ES module: a worker or process started on a `.cjs` file does not bring up the
 * ES module loader, and only a classic script can be compiled with a code cache on Node 20.
 */
import fs = require('node:fs');
import path = require('node:path');
import url = require('node:url');
import vm = require('node:vm');
import worker = require('node:worker_threads');

const BUNDLE = path.join(__dirname, 'taskExecutorMain.bundle.cjs');
// V8 takes a code cache only under the V8 flags it was made with. A thread has its process's (the
// build's warm-up makes the cache of a plain `node`); a child process has the flags its driver
// gave it (the heap limit, `--max-old-space-size`): one cache per such set of flags.
const FLAGS = worker.isMainThread
  ? process.execArgv.map((arg) => arg.replace(/^-+/, '').replace(/[^\w=.-]/g, '_')).join('_')
  : '';
const CODE_CACHE = `${BUNDLE}${FLAGS === '' ? '' : `.${FLAGS}`}.codecache`;
const ENTRY_URL = url.pathToFileURL(path.join(__dirname, 'taskExecutorMain.js')).href;

function readCodeCache(): Buffer | undefined {
  try {
    return fs.readFileSync(CODE_CACHE);
  } catch {
    return undefined;
  }
}

const source = fs.readFileSync(BUNDLE, 'utf8');
const cachedData = process.env['SLOTWISE_WRITE_CODE_CACHE'] === undefined ? readCodeCache() : undefined;
// The bundle's own parameters: CommonJS's, and the URL its `import.meta.url` stood for (the
// unbundled entry, in the same directory, whose siblings it finds: taskWorker.js, ../workerInspector.js).
const script = new vm.Script(
  `(function (exports, require, module, __filename, __dirname, __importMetaUrl) {${source}\n})`,
  {
    filename: BUNDLE,
    ...(cachedData === undefined ? {} : { cachedData }),
  },
);
// A vm script cannot `import()` on Node 20 (without --experimental-vm-modules): the bundle's one ES
// module (the worker inspector, when asked for) comes through this module's own `import()`,
// resolved against the unbundled entry as in the source (taskExecutorMain.ts).
(globalThis as Record<symbol, unknown>)[Symbol.for('slotwise.importFromEntry')] = (specifier: string) =>
  import(new URL(specifier, ENTRY_URL).href);

if (process.env['SLOTWISE_WRITE_CODE_CACHE'] !== undefined) {
  // Called by the worker entry as its TaskExecutor stops (taskExecutorMain.ts), when every
  // function of its run has been compiled.
  (globalThis as Record<symbol, unknown>)[Symbol.for('slotwise.writeCodeCache')] = () => {
    try {
      const temporary = `${CODE_CACHE}.${process.pid}.${Math.random().toString(36).slice(2)}`;
      fs.writeFileSync(temporary, script.createCachedData());
      fs.renameSync(temporary, CODE_CACHE);
    } catch (error) {
      process.stderr.write(
        `slotwise: the TaskExecutor's code cache could not be written: ` +
          `${error instanceof Error ? error.message : String(error)}\n`,
      );
    }
  };
} else if (process.env['SLOTWISE_DEBUG'] !== undefined) {
  const cache =
    cachedData === undefined
      ? 'none'
      : script.cachedDataRejected === true
        ? 'rejected by V8 (made by another Node version or under other V8 flags)'
        : 'accepted';
  process.stderr.write(
    `slotwise: a TaskExecutor ${worker.isMainThread ? 'process' : 'thread'} runs ${BUNDLE}; ` +
      `its code cache ${CODE_CACHE}: ${cache}\n`,
  );
}

const bundle = { exports: {} };
(script.runInThisContext() as (...args: unknown[]) => void).call(
  bundle.exports,
  bundle.exports,
  require,
  bundle,
  BUNDLE,
  __dirname,
  ENTRY_URL,
);
