/**
 * Starts a worker thread from a module, whether it is TypeScript (tests, `tsx`) or compiled
 * JavaScript (`dist/` after `tsc`): the caller passes its entry URL with the extension it has
 * (`new URL('./worker.js', import.meta.url)` resolves to `.ts` or `.js` alike after tsx's rewrite
 * — derive it from `import.meta.url` so the same code serves both).
 *
 * Worker threads on Node 20 do not inherit tsx's hooks, even with `execArgv: ['--import', 'tsx']`
 * (found by trying). For a `.ts` entry the worker starts from a two-line eval bootstrap that calls
 * `register()` from `tsx/esm/api` inside the worker (with what ends and reaps the esbuild children
 * tsx starts there: esbuildReaper.ts) and then imports the entry (~200 ms to start
 * under tsx, against ~40–60 ms for compiled JS: reuse workers). A failure to load the entry arrives
 * as the worker's `error` event, like any uncaught error in it.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Worker, type WorkerOptions } from 'node:worker_threads';
import { ESBUILD_REAPER_HOOK, ESBUILD_SYNC_ENV } from './esbuildReaper.js';

/** A file URL for `entry`: a URL, a `file:` URL string, or a path (relative to the working directory). */
export function entryUrl(entry: URL | string): URL {
  if (entry instanceof URL) return entry;
  if (typeof entry !== 'string' || entry === '')
    throw new TypeError(`an entry must be a URL or a non-empty path, got ${String(entry)}`);
  return entry.startsWith('file:') ? new URL(entry) : pathToFileURL(resolve(entry));
}

/** Whether `url` names a TypeScript module (which needs tsx's hooks to load). */
export function isTypeScriptEntry(url: URL): boolean {
  return /\.[cm]?ts$/.test(url.pathname);
}

/** The file URL of tsx's loader (`.`) or of its ESM API (`./esm/api`), or an error saying a .ts entry needs tsx. */
export function resolveTsx(subpath: '.' | './esm/api', entry: URL): string {
  const specifier = subpath === '.' ? 'tsx' : 'tsx/esm/api';
  try {
    // Run as a real ES module, import.meta.resolve applies the "import" condition. Under mocha,
    // tsx compiles this file to CommonJS (Node 20.19 lets mocha require() ES modules) and there is
    // no import.meta.resolve: read the "import" target from tsx's exports map ourselves (the
    // "require" one, dist/esm/api/index.cjs, cannot register the hooks from inside a worker).
    if (typeof import.meta.resolve === 'function') return import.meta.resolve(specifier);
    const manifest = createRequire(import.meta.url).resolve('tsx/package.json');
    const { exports } = JSON.parse(readFileSync(manifest, 'utf8')) as { exports: Record<string, unknown> };
    return pathToFileURL(join(dirname(manifest), importTarget(exports[subpath], specifier))).href;
  } catch (error) {
    throw new Error(
      `cannot start ${entry.href}: a .ts entry needs tsx (${specifier}) ` +
        `to load; build with tsc and start the .js entry instead`,
      { cause: error },
    );
  }
}

/** The file an exports-map entry names under the "import" condition. */
function importTarget(target: unknown, specifier: string): string {
  if (typeof target === 'string') return target;
  if (typeof target === 'object' && target !== null) {
    const conditions = target as Record<string, unknown>;
    return importTarget(conditions['import'] ?? conditions['default'], specifier);
  }
  throw new Error(`tsx's package.json has no "import" target for ${specifier}`);
}

/**
 * Starts a worker thread on `entry` (`.ts` through the tsx bootstrap, `.js` directly), with
 * `workerData` and the other Worker options as given (`execArgv` is inherited unless set).
 */
export function startWorker(
  entry: URL | string,
  workerData?: unknown,
  options: Omit<WorkerOptions, 'eval' | 'workerData'> = {},
): Worker {
  const url = entryUrl(entry);
  if (!isTypeScriptEntry(url)) return new Worker(url, { ...options, workerData });
  const tsx = resolveTsx('./esm/api', url);
  // tsx, then the hook that ends and reaps the esbuild children tsx starts in this thread (esbuildReaper.ts).
  const bootstrap =
    `Object.assign(process.env, ${JSON.stringify(ESBUILD_SYNC_ENV)}); ` +
    `import(${JSON.stringify(tsx)}).then(({ register }) => { register(); return import('node:module'); })` +
    `.then(({ register }) => { register(${JSON.stringify(ESBUILD_REAPER_HOOK)}); ` +
    `return import(${JSON.stringify(url.href)}); });`;
  return new Worker(bootstrap, { ...options, workerData, eval: true });
}
