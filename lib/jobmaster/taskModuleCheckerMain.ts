/**
 * The entry of a task module checker worker (see TaskModuleChecker.ts): a short-lived thread or
 * child process that loads user task modules so that their top-level code never runs in the
 * coordinator. It loads the modules it was given one after another and reports, for each, that it
 * starts, then what it exports or how loading failed; the main side times each module and ends
 * this worker when it has heard enough (or a module hangs, exits or throws).
 *
 * It imports only Node built-ins, the wire types and the esbuild reaper's registration: user code
 * shares this realm with nothing of slotwise. A `.ts` module needs tsx's loader: it is already there
 * when this entry is itself `.ts` (started through tsx, with the reaper), otherwise it is registered
 * on the first `.ts` module, with the hook that ends and reaps the esbuild child it starts.
 */
import { execFileSync } from 'node:child_process';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parentPort, workerData } from 'node:worker_threads';
import { prepareEsbuildForThisThread, registerEsbuildReaper } from '../rpc/esbuildReaper.js';
import {
  CHECK_REQUEST_MESSAGE,
  type TaskModuleCheckReport,
  type TaskModuleCheckRequest,
} from './taskModuleCheckProtocol.js';

const report: (message: TaskModuleCheckReport) => void =
  parentPort !== null ? (message) => parentPort!.postMessage(message) : (message) => void process.send?.(message);

function describeError(error: unknown): string {
  if (error instanceof Error) return `${error.name}: ${error.message}`;
  return String(error);
}

// A module's stray timer that throws, or a promise it leaves rejected, is reported instead of
// ending this worker with a bare exit code.
process.on('uncaughtException', (error) => report({ type: 'uncaught', message: describeError(error) }));

const TYPESCRIPT = /\.[cm]?ts$/;
let typeScriptLoader: Promise<void> | undefined;

function ensureTypeScriptLoader(): Promise<void> {
  if (import.meta.url.endsWith('.ts')) return Promise.resolve();
  typeScriptLoader ??= (async () => {
    // A variable specifier: tsx is a development tool, not a dependency.
    const specifier = 'tsx/esm/api';
    try {
      prepareEsbuildForThisThread();
      ((await import(specifier)) as { register: () => unknown }).register();
    } catch (error) {
      throw new Error(
        `it is TypeScript, and tsx (its loader) could not be ` +
          `registered: ${describeError(error)}; compile the task to JavaScript or install tsx`,
      );
    }
    // Its esbuild children ended and reaped before this worker ends (esbuildReaper.ts).
    registerEsbuildReaper();
  })();
  return typeScriptLoader;
}

/**
 * Where a module's loading failed, as ` (at file:line:column)`, or ''. A top-level throw: the first frame of its stack
 * in a file. A syntax error in JavaScript: Node 20's `import()` says no place, `node --check` on the file does (it
 * parses, runs nothing; a syntax error in a module the file imports is not found so, and is said without a place).
 */
function where(error: unknown, path: string): string {
  if (error instanceof SyntaxError && /\.[cm]?js$/.test(path)) {
    try {
      execFileSync(process.execPath, ['--check', path], { stdio: ['ignore', 'ignore', 'pipe'], timeout: 5_000 });
    } catch (failed) {
      const lines = String((failed as { stderr?: unknown }).stderr ?? '').split('\n');
      const at = lines.findIndex((line) => line.startsWith(`${path}:`));
      const line = at === -1 ? Number.NaN : Number(lines[at]!.slice(path.length + 1));
      const caret = at === -1 ? -1 : (lines[at + 2] ?? '').indexOf('^');
      if (Number.isSafeInteger(line)) return ` (at ${path}:${line}${caret >= 0 ? `:${caret + 1}` : ''})`;
    }
    return '';
  }
  // tsx's TransformError says where in its message; its stack is esbuild's.
  if ((error as { name?: unknown } | null)?.name === 'TransformError') return '';
  // The first frame in a file (a file: URL, or a path where a loader such as tsx maps it), not Node's own.
  const stack = error instanceof Error ? (error.stack ?? '') : '';
  const frame = /^\s+at (?:.*?\()?((?:file:\/\/|\/)[^()\s]*?):(\d+):(\d+)\)?$/m.exec(stack);
  if (frame === null) return '';
  try {
    const file = frame[1]!.startsWith('file:') ? fileURLToPath(frame[1]!) : frame[1]!;
    return ` (at ${file}:${frame[2]}:${frame[3]})`;
  } catch {
    return '';
  }
}

async function check(request: TaskModuleCheckRequest): Promise<void> {
  for (const [index, path] of request.modules.entries()) {
    report({ type: 'loading', index });
    let module: Record<string, unknown>;
    try {
      if (TYPESCRIPT.test(path)) await ensureTypeScriptLoader();
      module = (await import(pathToFileURL(path).href)) as Record<string, unknown>;
    } catch (error) {
      report({ type: 'failed', index, message: describeError(error) + where(error, path) });
      return;
    }
    const exports = Object.keys(module).filter((name) => name !== 'default');
    report({ type: 'loaded', index, defaultExport: typeof module.default, exports });
  }
}

// The listeners also keep this worker alive while a module's top-level await waits on nothing (an
// empty event loop would end it with code 0): such a module times out, as it would hang a submit.
if (parentPort !== null) {
  parentPort.on('message', () => {});
  void check(workerData as TaskModuleCheckRequest);
} else {
  let started = false;
  process.on('message', (message: Record<string, unknown>) => {
    if (started || typeof message !== 'object' || message === null || !(CHECK_REQUEST_MESSAGE in message)) return;
    started = true;
    void check(message[CHECK_REQUEST_MESSAGE] as TaskModuleCheckRequest);
  });
}
