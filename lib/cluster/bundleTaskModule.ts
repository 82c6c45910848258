/**
 * The submitter's side of shipping task code: a task module and everything it imports bundled
 * into one ES module (esbuild), named by the SHA-256 of its text — the shape a client uploads
 * (TaskCodeUpload of lib/rest/RestTarget.ts). Node's built-in modules stay imports; TypeScript is
 * compiled on the way. Used by `slotwise run` (lib/cli/jobFile.ts) and by a JobManager given a
 * task module by path (ClusterTaskCode.ts); it loads no NATS client, so the CLI can import it.
 *
 * The bundle carries its source map inline, its sources named by `file:` URL where the submitter
 * has them (no sources' text: the map only points): a task thread maps a failing task's stack back
 * to the user's files and lines with it (lib/taskexecutor/sourceMaps.ts). The map is part of the
 * text the hash is of, so the same files at the same place bundle to the same hash.
 */
import { basename, dirname, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { JobGraphError } from '../core/errors.js';
import { sha256Hex } from '../rest/TaskCodeCache.js';

export interface BundledTaskModule {
  /** The module's file name, for messages. */
  readonly name: string;
  /** The bundle's source text. */
  readonly code: string;
  /** Lowercase hex SHA-256 of the UTF-8 bytes of `code`. */
  readonly sha256: string;
  /** The absolute paths of the files the bundle was made of (the module and everything it imports). */
  readonly inputs: readonly string[];
}

/** A bundled CommonJS dependency that require()s a Node built-in needs a require in an ES module. */
const REQUIRE_BANNER =
  "import { createRequire as __slotwiseCreateRequire } from 'node:module'; " +
  'const require = __slotwiseCreateRequire(import.meta.url);';

/**
 * Bundles the module at `taskModule` (an absolute path or file: URL); JobGraphError('invalid-task-module',
 * `problem: 'not-bundled'`) when it cannot be, naming the file, line and column esbuild stopped at (a syntax error,
 * an import that does not resolve). `vertexId`, when given, is named in the error.
 */
export async function bundleTaskModule(taskModule: string | URL, vertexId?: string): Promise<BundledTaskModule> {
  const path = taskModule instanceof URL || taskModule.startsWith('file:') ? fileURLToPath(taskModule) : taskModule;
  const dir = dirname(path);
  const { build } = await import('esbuild');
  let code: string;
  let inputs: string[];
  try {
    const result = await build({
      metafile: true,
      entryPoints: [path],
      absWorkingDir: dir,
      bundle: true,
      format: 'esm',
      platform: 'node',
      target: 'node20',
      write: false,
      logLevel: 'silent',
      banner: { js: REQUIRE_BANNER },
      sourcemap: 'inline',
      sourcesContent: false,
      // The map's sources are relative to the entry's directory; this root makes them the submitter's file: URLs.
      sourceRoot: pathToFileURL(dir).href.replace(/\/?$/, '/'),
    });
    code = result.outputFiles[0]!.text;
    // The metafile names its inputs relative to absWorkingDir.
    inputs = Object.keys(result.metafile.inputs).map((input) => resolve(dir, input));
  } catch (error) {
    const first = (error as { errors?: EsbuildMessage[] }).errors?.[0];
    const location = first?.location;
    const at =
      location === undefined || location === null
        ? {}
        : { file: resolve(dir, location.file), line: location.line, column: location.column + 1 };
    const why =
      first === undefined
        ? error instanceof Error
          ? error.message.split('\n').slice(0, 3).join(' ')
          : String(error)
        : 'file' in at
          ? `${at.file}:${at.line}:${at.column}: ${first.text}`
          : first.text;
    const of = vertexId === undefined ? '' : ` of vertex '${vertexId}'`;
    throw new JobGraphError('invalid-task-module', `task module ${path}${of} could not be bundled: ${why}`, {
      ...(vertexId === undefined ? {} : { vertexId }),
      taskModule: path,
      problem: 'not-bundled',
      ...at,
    });
  }
  return { name: basename(path), code, sha256: sha256Hex(code), inputs };
}

/** The part of esbuild's message this file reads. */
interface EsbuildMessage {
  readonly text: string;
  readonly location?: { readonly file: string; readonly line: number; readonly column: number } | null;
}
