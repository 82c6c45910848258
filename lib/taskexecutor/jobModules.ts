/**
 * A job's own instances of its task modules, in a task thread that serves job after job: what
 * Flink's per-job user-code class loader is to a TaskManager that outlives its jobs. Every file
 * module a job's task module imports, directly or not, is instantiated and evaluated afresh for that
 * job, so a job never sees the module state another job left in the thread; within a job, its
 * vertices share one instance of each module (one class loader per job, as in Flink).
 *
 * How, by kind of module (what the README's "Where user code runs" table says to users):
 * - ES modules (`.mjs`, `.js` under `"type": "module"`, the user's own files and packages' alike):
 *   a `vm.SourceTextModule` per job, compiled from source kept per thread with its V8 code cache,
 *   so a job pays evaluation, not parsing (~0.05 ms a small module). Needs the thread to run with
 *   `--experimental-vm-modules`; bare specifiers resolve as Node would, from the importing file
 *   (`import.meta.resolve(specifier, parent)`, `--experimental-import-meta-resolve`): taskThreads.ts
 *   starts task threads with both.
 * - JSON modules: parsed afresh per job.
 * - TypeScript modules (only under tsx, a development setting): Node's own loader through tsx, each
 *   job's graph under its own URL query (`?slotwise-job=<n>`), which a resolve hook registered in the
 *   thread passes from every importing module to what it imports. Node never drops those modules:
 *   the thread's heap grows by them until the thread retires (TaskThreadReserve).
 * - Shared by every job the thread serves, as the JDK's classes are by Flink's jobs: Node's built-in
 *   modules, CommonJS modules (Node's require cache is the thread's), native addons, and modules
 *   of other schemes than `file:` (`data:`), which Node's loader keeps.
 * Globals and built-in prototypes are the thread's: a job that patches them is seen by the next
 * job on that thread (`taskmanager.task-threads.max-jobs: 1` gives every job fresh threads).
 */
import { readFileSync, statSync } from 'node:fs';
import { createRequire, isBuiltin, register } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import vm from 'node:vm';
import { prepareEsbuildForThisThread, registerEsbuildReaper } from '../rpc/esbuildReaper.js';
import { noteSourceMap, sourceMappingURLOf } from './sourceMaps.js';

/** What a module's file is, from its extension (and, for `.js`, its package's `type`). */
type Format = 'esm' | 'commonjs' | 'json' | 'typescript' | 'addon';

/** A file as last read: its source and code cache, valid while its size and modification time stay. */
interface SourceEntry {
  readonly mtimeMs: number;
  readonly size: number;
  readonly source: string;
  cachedData: Buffer | undefined;
  /**
   * Whether the source may call `import()`: Node 20 drops a module's dynamic import callback when
   * it is compiled from a code cache ("A dynamic import callback was not specified"), so such a
   * module is compiled from source for every job.
   */
  readonly dynamicImport: boolean;
  /** Where its source map is (sourceMaps.ts), or null. */
  readonly sourceMappingURL: string | null;
}

const TYPESCRIPT = /\.[mc]?tsx?$/i;
const JOB_QUERY = 'slotwise-job';

/** The thread's: sources by path, packages' `type` by directory, modules every job shares. */
const sources = new Map<string, SourceEntry>();
const packageTypes = new Map<string, 'module' | 'commonjs'>();
const shared = new Map<string, Promise<vm.Module>>();
/** Jobs' module graphs by job, each module by its URL (a promise while it is made). */
const graphs = new Map<string, JobGraph>();
let jobTags = 0;
let typeScriptHooks: Promise<void> | undefined;

interface JobGraph {
  readonly modules: Map<string, Promise<vm.Module>>;
  /** The job's query for Node's loader (TypeScript modules), made on first need. */
  tag: string | null;
}

/**
 * The namespace of `url` (a `file:` URL) as the job `jobId` sees it: made, linked and evaluated
 * for that job on first import in this thread, the same object for the job's later imports.
 */
export async function importForJob(jobId: string, url: string): Promise<Record<string, unknown>> {
  if (SourceTextModule === undefined) {
    throw new Error(
      'task threads need --experimental-vm-modules to give each job its own module instances ' +
        '(taskThreads.ts starts them with it; a custom execArgv must keep it)',
    );
  }
  swallowVmWarning();
  resolver ??= await loadResolver();
  const graph = graphOf(jobId);
  try {
    const module = await moduleFor(graph, url, undefined);
    await linkAndEvaluate(graph, module);
    return module.namespace as Record<string, unknown>;
  } catch (error) {
    // What failed is made again at the job's next attempt (a file fixed meanwhile loads).
    for (const [key, made] of graph.modules) {
      made.then(
        (m) => {
          if (m.status !== 'evaluated' && graph.modules.get(key) === made) graph.modules.delete(key);
        },
        () => graph.modules.delete(key),
      );
    }
    throw error;
  }
}

/** Forgets every job's module instances (the thread's slot has gone back: it serves another job next, or none). */
export function forgetJobs(): void {
  graphs.clear();
}

function graphOf(jobId: string): JobGraph {
  let graph = graphs.get(jobId);
  if (graph === undefined) graphs.set(jobId, (graph = { modules: new Map(), tag: null }));
  return graph;
}

// ------------------------------------------------------------------------------ modules

const { SourceTextModule, SyntheticModule } = vm as Partial<typeof vm>;

/** The module for `url` in the job's graph (or the thread's shared one), made once. */
function moduleFor(graph: JobGraph, url: string, attributes: ImportAttributes | undefined): Promise<vm.Module> {
  // node: and data: (any scheme Node's loader takes but file:): Node's own module, shared by the jobs.
  if (!url.startsWith('file:')) return sharedModule(url, () => loadedModule(url));
  const format = formatOf(url);
  if (format === 'commonjs' || format === 'addon') return sharedModule(url, () => requiredModule(url));
  if (attributes?.type === 'json' && format !== 'json') {
    return Promise.reject(new TypeError(`module ${url} is not a JSON module, but was imported with type 'json'`));
  }
  let made = graph.modules.get(url);
  if (made === undefined) {
    made =
      format === 'esm'
        ? Promise.resolve(sourceTextModule(graph, url))
        : format === 'json'
          ? Promise.resolve(jsonModule(url))
          : typeScriptModule(graph, url);
    graph.modules.set(url, made);
  }
  return made;
}

function sharedModule(key: string, make: () => Promise<vm.Module>): Promise<vm.Module> {
  let made = shared.get(key);
  if (made === undefined) {
    made = make();
    shared.set(key, made);
    made.catch(() => shared.delete(key));
  }
  return made;
}

function sourceTextModule(graph: JobGraph, url: string): vm.Module {
  const path = fileURLToPath(url);
  const entry = sourceOf(path);
  let module: vm.SourceTextModule;
  try {
    module = new SourceTextModule!(entry.source, {
      identifier: url,
      ...(entry.cachedData === undefined ? {} : { cachedData: entry.cachedData }),
      initializeImportMeta: (meta) => {
        const fields = meta as unknown as Record<string, unknown>;
        fields['url'] = url;
        fields['filename'] = path;
        fields['dirname'] = dirname(path);
        fields['resolve'] = (specifier: string) => resolveFrom(specifier, url);
      },
      importModuleDynamically: (async (specifier: string, _referrer: unknown, attributes: ImportAttributes) => {
        const imported = await moduleFor(graph, resolveFrom(specifier, url), attributes);
        await linkAndEvaluate(graph, imported);
        return imported;
      }) as unknown as vm.SourceTextModuleOptions['importModuleDynamically'],
    });
  } catch (error) {
    if (error instanceof SyntaxError) error.message = `${error.message} (in ${url})`;
    throw error;
  }
  // Its frames in a task's stack are mapped to the user's files (a bundle's inline map, a compiled file's .map).
  noteSourceMap(url, entry.sourceMappingURL);
  // Node 20 has it (since 13.7); @types/node 20 leaves it out.
  if (!entry.dynamicImport)
    entry.cachedData ??= (module as unknown as { createCachedData(): Buffer }).createCachedData();
  return module;
}

function jsonModule(url: string): vm.Module {
  const { source } = sourceOf(fileURLToPath(url));
  let value: unknown;
  try {
    value = JSON.parse(source);
  } catch (error) {
    throw new SyntaxError(`${url}: ${(error as Error).message}`);
  }
  return new SyntheticModule!(['default'], function (this: vm.SyntheticModule) {
    this.setExport('default', value);
  });
}

async function loadedModule(url: string): Promise<vm.Module> {
  return namespaceModule((await import(url)) as Record<string, unknown>, url);
}

async function requiredModule(url: string): Promise<vm.Module> {
  const exports = createRequire(url)(fileURLToPath(url)) as unknown;
  const names = exports !== null && typeof exports === 'object' ? Object.keys(exports) : [];
  return namespaceModule(
    { ...Object.fromEntries(names.map((name) => [name, (exports as never)[name]])), default: exports },
    url,
  );
}

async function typeScriptModule(graph: JobGraph, url: string): Promise<vm.Module> {
  await ensureTypeScriptHooks(url);
  graph.tag ??= String(++jobTags);
  const tagged = `${url}${url.includes('?') ? '&' : '?'}${JOB_QUERY}=${graph.tag}`;
  return namespaceModule((await import(tagged)) as Record<string, unknown>, url);
}

/** A module whose exports are a namespace's (a module loaded by Node's own loader). */
function namespaceModule(namespace: Record<string, unknown>, url: string): vm.Module {
  const names = Object.keys(namespace);
  return new SyntheticModule!(
    names,
    function (this: vm.SyntheticModule) {
      for (const name of names) this.setExport(name, namespace[name]);
    },
    { identifier: url },
  );
}

async function linkAndEvaluate(graph: JobGraph, module: vm.Module): Promise<void> {
  if (module.status === 'unlinked') {
    await module.link((specifier, referencing, extra) =>
      moduleFor(graph, resolveFrom(specifier, referencing.identifier), attributesOf(extra)),
    );
  }
  if (module.status === 'linked') await module.evaluate();
  else if (module.status === 'evaluating') await module.evaluate();
  if (module.status === 'errored') throw module.error;
}

// ------------------------------------------------------------------------------ files

type ImportAttributes = Readonly<Record<string, string>>;

function attributesOf(extra: unknown): ImportAttributes | undefined {
  const { attributes, assert } = (extra ?? {}) as { attributes?: ImportAttributes; assert?: ImportAttributes };
  return attributes ?? assert;
}

type Resolve = (specifier: string, parent: string) => string;
/** Node's own resolution from a given module, once loaded (importForJob). */
let resolver: Resolve | undefined;

/**
 * `import.meta.resolve(specifier, parent)` (its second argument under --experimental-import-meta-resolve)
 * of an ES module of its own: this file may run as CommonJS (tsx compiles it so under a test's
 * require), where `import.meta` is only tsx's stand-in.
 */
async function loadResolver(): Promise<Resolve> {
  const source = 'export const resolve = (specifier, parent) => import.meta.resolve(specifier, parent);';
  const module = (await import(`data:text/javascript,${encodeURIComponent(source)}`)) as { resolve: Resolve };
  return module.resolve;
}

/** Where `specifier` leads from the module `parent`, as Node's loader resolves it (packages' exports included). */
function resolveFrom(specifier: string, parent: string): string {
  if (isBuiltin(specifier)) return specifier.startsWith('node:') ? specifier : `node:${specifier}`;
  return resolver!(specifier, parent);
}

function formatOf(url: string): Format {
  const path = new URL(url).pathname;
  if (path.endsWith('.mjs')) return 'esm';
  if (path.endsWith('.cjs')) return 'commonjs';
  if (path.endsWith('.json')) return 'json';
  if (path.endsWith('.node')) return 'addon';
  if (TYPESCRIPT.test(path)) return 'typescript';
  if (path.endsWith('.js')) return packageTypeOf(dirname(fileURLToPath(url))) === 'module' ? 'esm' : 'commonjs';
  throw new TypeError(
    `unknown file extension of module ${url}: a task module and what it imports are .mjs, .js, .cjs, .json ` +
      'or, under tsx, .ts files',
  );
}

/** The `type` of the package a directory is in (the nearest package.json; none: commonjs, as Node). */
function packageTypeOf(dir: string): 'module' | 'commonjs' {
  const known = packageTypes.get(dir);
  if (known !== undefined) return known;
  let type: 'module' | 'commonjs';
  let text: string | undefined;
  try {
    text = readFileSync(join(dir, 'package.json'), 'utf8');
  } catch {
    text = undefined;
  }
  if (text !== undefined) {
    let parsed: { type?: unknown } = {};
    try {
      parsed = JSON.parse(text) as { type?: unknown };
    } catch {
      // A package.json Node cannot read either: its loader would fail on it; here it counts as commonjs.
    }
    type = parsed.type === 'module' ? 'module' : 'commonjs';
  } else {
    const parent = dirname(dir);
    type = parent === dir ? 'commonjs' : packageTypeOf(parent);
  }
  packageTypes.set(dir, type);
  return type;
}

/** A file's source, read again only when its size or modification time changed (a file edited between jobs). */
function sourceOf(path: string): SourceEntry {
  const stats = statSync(path);
  const known = sources.get(path);
  if (known !== undefined && known.mtimeMs === stats.mtimeMs && known.size === stats.size) return known;
  const source = readFileSync(path, 'utf8');
  const entry: SourceEntry = {
    mtimeMs: stats.mtimeMs,
    size: stats.size,
    source,
    cachedData: undefined,
    dynamicImport: /\bimport\s*\(/.test(source),
    sourceMappingURL: sourceMappingURLOf(source),
  };
  sources.set(path, entry);
  return entry;
}

// ------------------------------------------------------------------------------ the thread's set-up

/**
 * Node warns once per thread, at its first VM module, that VM modules are experimental: a warning
 * that says nothing to a user of the thread. That first module is made here, with the warning held back.
 */
let vmWarningSwallowed = false;
function swallowVmWarning(): void {
  if (vmWarningSwallowed) return;
  vmWarningSwallowed = true;
  const emit = process.emitWarning;
  process.emitWarning = ((warning: string | Error, ...rest: unknown[]) => {
    const text = typeof warning === 'string' ? warning : warning.message;
    if (!text.startsWith('VM Modules')) (emit as (...args: unknown[]) => void).call(process, warning, ...rest);
  }) as typeof process.emitWarning;
  try {
    new SyntheticModule!([], () => {});
  } finally {
    process.emitWarning = emit;
  }
}

/**
 * tsx's loader and the hook that keeps a job's TypeScript modules its own, registered in this
 * thread once (worker threads on Node 20 do not inherit tsx's hooks, even with `--import tsx`;
 * tsx is a development tool, not a dependency: its specifier is a variable).
 */
function ensureTypeScriptHooks(url: string): Promise<void> {
  typeScriptHooks ??= (async () => {
    const specifier = 'tsx/esm/api';
    try {
      prepareEsbuildForThisThread();
      const api = (await import(specifier)) as { register: () => unknown };
      api.register();
    } catch (error) {
      typeScriptHooks = undefined;
      throw new Error(
        `task module ${url} is TypeScript, and tsx (its loader) could not be registered in the task thread: ` +
          `${(error as Error)?.message ?? String(error)}; compile the task to JavaScript or install tsx`,
      );
    }
    // Its esbuild children ended and reaped before this thread ends (esbuildReaper.ts).
    registerEsbuildReaper();
    register(`data:text/javascript,${encodeURIComponent(JOB_TAG_HOOK)}`);
  })();
  return typeScriptHooks;
}

/** A resolve hook: what a module of a job's graph imports from a file is that job's too (same query). */
const JOB_TAG_HOOK = `
const TAG = /[?&]${JOB_QUERY}=([^&#]+)/;
export async function resolve(specifier, context, next) {
  const resolved = await next(specifier, context);
  const parent = context.parentURL === undefined ? null : TAG.exec(context.parentURL);
  if (parent === null || !resolved.url.startsWith('file:') || TAG.test(resolved.url)) return resolved;
  const separator = resolved.url.includes('?') ? '&' : '?';
  return { ...resolved, url: resolved.url + separator + '${JOB_QUERY}=' + parent[1] };
}
`;
