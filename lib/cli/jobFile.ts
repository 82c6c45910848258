/**
 * `slotwise run JOB_FILE`: the job file is an ES module whose default export is a JobGraphSpec, or a
 * function (sync or async) returning one. Its task modules are named by absolute path, by `file:`
 * URL (`new URL('./square.mjs', import.meta.url)`) or by a path relative to the job file. The
 * client checks the graph as JobGraph would (the JobManager checks it again), then bundles each
 * task module with its imports into one ES module (esbuild; Node's built-ins stay imports) to upload
 * with the spec, each vertex naming its bundle. The job file itself runs here, in the client, as
 * Flink's CLI runs a job's main(); task code never does.
 */
import { access, constants } from 'node:fs/promises';
import { dirname, isAbsolute, relative, resolve, sep } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { IllegalArgumentError, JobGraphError } from '../core/errors.js';
import { JobGraph, type JobGraphSpec, PRECHECK_OPTIONS } from '../jobmaster/JobGraph.js';
import { bundleTaskModule } from '../cluster/bundleTaskModule.js';
import type { TaskCodeUpload } from '../rest/RestTarget.js';

/** What POST /jobs takes: the spec with each vertex naming its bundle, and the bundles. */
export interface JobSubmission {
  readonly job: JobGraphSpec;
  readonly taskCode: TaskCodeUpload[];
}

/** Loads the job file (relative to `cwd`) and returns its JobGraphSpec, task modules as absolute paths. */
export async function loadJobFile(file: string, cwd: string): Promise<JobGraphSpec> {
  const path = resolve(cwd, file);
  try {
    await access(path, constants.R_OK);
  } catch (error) {
    throw new IllegalArgumentError(
      'invalid-value',
      `cannot read job ` +
        `file ${file}: ${(error as { code?: string }).code === 'ENOENT' ? 'no such file' : (error as Error).message}`,
      { argument: 'JOB_FILE' },
    );
  }
  let exported: unknown;
  try {
    exported = ((await import(pathToFileURL(path).href)) as { default?: unknown }).default;
  } catch (error) {
    const code = (error as { code?: string }).code;
    const syntax = code === undefined ? await syntaxErrorAt(error, path, cwd) : null;
    const why =
      code === 'ERR_UNKNOWN_FILE_EXTENSION'
        ? 'Node cannot load this kind of file (a .ts job file needs tsx: node --import tsx …, or compile it to .mjs)'
        : syntax !== null
          ? `${syntax.file}:${syntax.line}:${syntax.column}: ${syntax.message}`
          : `it threw while loading: ${(error as Error).message?.split('\n')[0]}`;
    throw new IllegalArgumentError('invalid-value', `job file ${file} could not be loaded: ${why}`, {
      argument: 'JOB_FILE',
      ...(syntax === null ? {} : { file: syntax.file, line: syntax.line, column: syntax.column }),
    });
  }
  let spec = exported;
  if (typeof exported === 'function') {
    try {
      spec = await (exported as () => unknown)();
    } catch (error) {
      throw new IllegalArgumentError(
        'invalid-value',
        `job file ${file}: its default export threw: ${(error as Error).message?.split('\n')[0]}`,
        { argument: 'JOB_FILE' },
      );
    }
  }
  if (typeof spec !== 'object' || spec === null || !Array.isArray((spec as { vertices?: unknown }).vertices)) {
    throw new IllegalArgumentError(
      'invalid-value',
      `job file ${file} must export default a JobGraphSpec ({ name, vertices, edges? ` +
        `}) or a function returning one, got ${spec === null ? 'null' : typeof spec}`,
      { argument: 'JOB_FILE' },
    );
  }
  const base = dirname(path);
  const job = spec as JobGraphSpec;
  const vertices = job.vertices.map((vertex) => {
    const taskModule = (vertex as { taskModule?: unknown }).taskModule;
    // A relative path is the job file's neighbour; JobGraph takes the rest as it is.
    if (typeof taskModule === 'string' && !taskModule.startsWith('file:') && !isAbsolute(taskModule))
      return { ...vertex, taskModule: resolve(base, taskModule) };
    return vertex;
  });
  const resolved = { ...job, vertices };
  JobGraph.create(resolved, PRECHECK_OPTIONS);
  checkJsonConfig(resolved);
  return resolved;
}

/** Where a job file's syntax error is: file (relative to `cwd` when inside it), line and column, both from 1. */
interface SyntaxErrorAt {
  readonly file: string;
  readonly line: number;
  readonly column: number;
  readonly message: string;
}

/**
 * The file, line and column of a syntax error in the job file or a module it imports, or null when `error` is none.
 * Node 20's `import()` rejects with a bare `SyntaxError: Unexpected token ']'` (no file, no line), and tsx with a
 * `TransformError` whose first line says nothing: esbuild, which bundles the task modules anyway, parses the same
 * files and says where (V8's message kept, for a SyntaxError).
 */
async function syntaxErrorAt(error: unknown, path: string, cwd: string): Promise<SyntaxErrorAt | null> {
  type Located = { errors?: Array<{ text: string; location?: { file: string; line: number; column: number } | null }> };
  const at = (found: Located, message?: string): SyntaxErrorAt | null => {
    // An import esbuild cannot resolve is not the syntax error Node met.
    const first = found.errors?.find((e) => !e.text.startsWith('Could not resolve'));
    const location = first?.location;
    if (first === undefined || location === undefined || location === null) return null;
    const absolute = resolve(cwd, location.file);
    const inside = relative(cwd, absolute);
    const file = inside.startsWith('..') || isAbsolute(inside) ? absolute : inside;
    return { file, line: location.line, column: location.column + 1, message: message ?? first.text };
  };
  const syntax = error instanceof SyntaxError;
  if (!syntax && (error as { name?: unknown } | null)?.name !== 'TransformError') return null;
  const { build } = await import('esbuild');
  try {
    await build({
      entryPoints: [path],
      absWorkingDir: cwd,
      bundle: true,
      packages: 'external',
      format: 'esm',
      platform: 'node',
      target: 'node20',
      write: false,
      logLevel: 'silent',
    });
  } catch (failure) {
    return at(failure as Located, syntax ? `${error.name}: ${error.message}` : undefined);
  }
  // esbuild parsed it all: a syntax error only V8 sees; say it without a place.
  return null;
}

/**
 * Bundles every task module once and names each vertex's bundle by its path relative to `base` (the job file's
 * directory).
 */
export async function bundleJob(spec: JobGraphSpec, base: string): Promise<JobSubmission> {
  const byPath = new Map<string, TaskCodeUpload>();
  const vertices = [];
  for (const vertex of spec.vertices) {
    const path =
      vertex.taskModule instanceof URL || vertex.taskModule.startsWith('file:')
        ? fileURLToPath(vertex.taskModule)
        : vertex.taskModule;
    let upload = byPath.get(path);
    if (upload === undefined) {
      const { code, sha256 } = await bundleTaskModule(path, vertex.id);
      const inside = relative(base, path);
      const name = inside.startsWith('..') || isAbsolute(inside) ? path : inside.split(sep).join('/');
      upload = { name, code, sha256 };
      byPath.set(path, upload);
    }
    vertices.push({ ...vertex, taskModule: upload.name });
  }
  return { job: { ...spec, vertices }, taskCode: [...byPath.values()] };
}

/**
 * A vertex's config travels as JSON: refuse what JSON would lose (a Map, a BigInt, undefined, a Date) instead of
 * sending less.
 */
function checkJsonConfig(spec: JobGraphSpec): void {
  for (const vertex of spec.vertices) {
    if (vertex.config === undefined) continue;
    const problem = nonJson(vertex.config, 'config');
    if (problem !== null)
      throw new JobGraphError(
        'invalid-config',
        `vertex '${vertex.id}': ${problem}; a job sent to a JobManager carries its config as JSON`,
        { vertexId: vertex.id },
      );
  }
}

function nonJson(value: unknown, path: string): string | null {
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return null;
  if (typeof value === 'number') return Number.isFinite(value) ? null : `${path} is ${value}, which JSON cannot hold`;
  if (typeof value !== 'object') return `${path} is a ${typeof value}, which JSON cannot hold`;
  if (Array.isArray(value)) {
    for (const [i, item] of value.entries()) {
      const problem = nonJson(item, `${path}[${i}]`);
      if (problem !== null) return problem;
    }
    return null;
  }
  const proto = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null)
    return `${path} is a ${(value as object).constructor?.name ?? 'class instance'}, which JSON cannot hold`;
  for (const [key, item] of Object.entries(value)) {
    const problem = nonJson(item, `${path}.${key}`);
    if (problem !== null) return problem;
  }
  return null;
}
