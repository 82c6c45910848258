/**
 * Checks task modules before a job starts — that each loads and default-exports a function —
 * without running their top-level code in the coordinator (Flink runs user code only in
 * TaskManagers). Loading a module runs that code: a top-level `await` that never settles, a
 * `process.exit(3)`, a throw, or a patch of `Map.prototype.set` must end the submit with a clear
 * error, not hang it, end the application, or reach the JobMasters' maps.
 *
 * So the modules are loaded in a short-lived checker worker (taskModuleCheckerMain.ts) — a thread
 * of its own, or a child process in process mode — that is never shared with task threads, and
 * each module's loading is bounded by `timeoutMs` (`dispatcher.task-module-check.timeout`).
 *
 * Cost: a worker start (~40–60 ms from dist/, ~200–300 ms under tsx; a process ~100 ms more) is
 * paid once per submit only for modules not seen before. A module that passed is remembered by
 * path and file identity (device, inode, size, modification time in ns): submitting it again costs
 * one `stat` and no worker. A module that failed is not remembered (it is checked again when
 * submitted again). Only the entry file's identity is compared: a module whose imports changed
 * but not itself is not checked again (its tasks would still fail at run time with their error).
 *
 * Submits that need the same unchecked module at the same time share one check of it (a burst of
 * identical jobs starts one worker, not one each). A worker that timed out, exited or threw is
 * ended; the modules it did not get to are left unchecked, and a submit that still needs them
 * checks them in a new worker of its own.
 */
import { isAbsolute } from 'node:path';
import { systemClock, type Clock } from '../core/clock.js';
import { formatDuration } from '../core/Duration.js';
import { IllegalArgumentError, IllegalStateError } from '../core/errors.js';
import { DEFAULTS } from '../core/options.js';
import { fileStamp } from '../fileStamp.js';
import { forkProcess } from '../rpc/forkProcess.js';
import { startWorker } from '../rpc/startWorker.js';
import {
  CHECK_REQUEST_MESSAGE,
  type TaskModuleCheckReport,
  type TaskModuleCheckRequest,
} from './taskModuleCheckProtocol.js';

/** What went wrong with a module (`details.problem` of the JobGraphError `invalid-task-module`). */
export type TaskModuleProblem =
  /** No file at that path. */
  | 'not-found'
  /** Its top-level code did not finish within the timeout (an await that never settles, a busy loop). */
  | 'timed-out'
  /** Its top-level code ended the checker (`process.exit`, a crash). */
  | 'exited'
  /** Its top-level code threw, or left an error nobody caught; or it does not parse. */
  | 'threw'
  /** It loaded, and its default export is not a function. */
  | 'no-default-export'
  /** The checker worker itself could not start or failed before it loaded the module. */
  | 'checker-failed';

export type TaskModuleVerdict =
  | { readonly status: 'valid' }
  | { readonly status: 'invalid'; readonly problem: TaskModuleProblem; readonly message: string }
  /** Not looked at: an earlier module of the same check was invalid. */
  | { readonly status: 'unchecked' };

export interface TaskModuleChecker {
  /**
   * The verdict on each module (absolute paths), in the order given. Modules after the first
   * invalid one may be left unchecked. Rejects with IllegalStateError once closed.
   */
  check(modules: readonly string[]): Promise<readonly TaskModuleVerdict[]>;
  /** Ends every checker worker and resolves once they have exited (bounded); later checks reject. */
  close(): Promise<void>;
}

export interface TaskModuleCheckerOptions {
  /** Where modules are loaded: a worker thread (default) or a child process (`mode: 'process'` clusters). */
  readonly mode?: 'thread' | 'process';
  /** How long one module may take to load (`dispatcher.task-module-check.timeout`, default 10 s). */
  readonly timeoutMs?: number;
  readonly clock?: Clock;
}

/** How long a checker worker may take to start and ask for its first module (not the module's fault). */
const CHECKER_START_TIMEOUT_MS = 30_000;
/** How long close() waits for a checker to exit once told to (a synchronous native call delays exit). */
const CHECKER_EXIT_TIMEOUT_MS = 5_000;
/** Modules remembered as valid, at most (the oldest are forgotten first). */
const MAX_REMEMBERED = 10_000;

const extension = import.meta.url.endsWith('.ts') ? '.ts' : '.js';
const CHECKER_ENTRY = new URL(`./taskModuleCheckerMain${extension}`, import.meta.url);

const VALID: TaskModuleVerdict = Object.freeze({ status: 'valid' });
const UNCHECKED: TaskModuleVerdict = Object.freeze({ status: 'unchecked' });
const invalid = (problem: TaskModuleProblem, message: string): TaskModuleVerdict =>
  Object.freeze({ status: 'invalid', problem, message });

/** Loads modules in short-lived checker workers, remembering those that passed. */
export class DefaultTaskModuleChecker implements TaskModuleChecker {
  readonly mode: 'thread' | 'process';
  readonly timeoutMs: number;
  readonly #clock: Clock;
  /** Identities of modules that passed, oldest first. */
  readonly #valid = new Set<string>();
  /** Checks under way, by identity: a submit needing the same module waits for that one. */
  readonly #inFlight = new Map<string, Promise<TaskModuleVerdict>>();
  readonly #runs = new Set<CheckerRun>();
  #workersStarted = 0;
  #closed: Promise<void> | null = null;

  constructor(options: TaskModuleCheckerOptions = {}) {
    const mode = options.mode ?? 'thread';
    if (mode !== 'thread' && mode !== 'process')
      throw new IllegalArgumentError('invalid-value', `mode must be 'thread' or 'process', got ${String(mode)}`, {
        argument: 'mode',
      });
    const timeoutMs = options.timeoutMs ?? DEFAULTS['dispatcher.task-module-check.timeout'];
    if (typeof timeoutMs !== 'number' || !Number.isFinite(timeoutMs) || timeoutMs <= 0) {
      throw new IllegalArgumentError(
        'invalid-value',
        `timeoutMs must be a finite number of ms > 0, got ${String(timeoutMs)}`,
        { argument: 'timeoutMs' },
      );
    }
    this.mode = mode;
    this.timeoutMs = timeoutMs;
    this.#clock = options.clock ?? systemClock;
  }

  /** How many checker workers this checker has started (each check of unseen modules starts one). */
  get workersStarted(): number {
    return this.#workersStarted;
  }

  async check(modules: readonly string[]): Promise<readonly TaskModuleVerdict[]> {
    this.#requireOpen();
    if (!Array.isArray(modules) || modules.some((m) => typeof m !== 'string' || !isAbsolute(m))) {
      throw new IllegalArgumentError('invalid-value', 'modules must be an array of absolute paths of task modules', {
        argument: 'modules',
      });
    }
    const unique = [...new Set(modules)];
    const verdicts = new Map<string, TaskModuleVerdict>();
    const identities = new Map<string, string>();
    for (const path of unique) {
      const identity = identify(path);
      if (identity === null) verdicts.set(path, invalid('not-found', 'does not exist or is not a file'));
      else if (this.#valid.has(identity)) verdicts.set(path, VALID);
      else identities.set(path, identity);
    }
    // Join checks under way first; what they leave unchecked (they stopped at another module) is
    // checked by this call's own worker, so that it never waits on strangers twice.
    let join = true;
    for (;;) {
      const firstInvalid = unique.findIndex((path) => verdicts.get(path)?.status === 'invalid');
      const todo = unique.filter(
        (path, index) =>
          (firstInvalid === -1 || index < firstInvalid) && (verdicts.get(path) ?? UNCHECKED).status === 'unchecked',
      );
      if (todo.length === 0) break;
      this.#requireOpen();
      const joined = join ? todo.filter((path) => this.#inFlight.has(identities.get(path)!)) : [];
      const own = todo.filter((path) => !joined.includes(path));
      const ownVerdicts =
        own.length > 0
          ? this.#start(own.map((path) => ({ path, identity: identities.get(path)! })))
          : Promise.resolve([]);
      const [fromOthers, fromOwn] = await Promise.all([
        Promise.all(joined.map((path) => this.#inFlight.get(identities.get(path)!)!)),
        ownVerdicts,
      ]);
      joined.forEach((path, i) => verdicts.set(path, fromOthers[i]!));
      own.forEach((path, i) => verdicts.set(path, fromOwn[i]!));
      join = false;
    }
    return modules.map((path) => verdicts.get(path) ?? UNCHECKED);
  }

  close(): Promise<void> {
    this.#closed ??= (async () => {
      const runs = [...this.#runs];
      for (const run of runs) run.stop();
      await Promise.all(runs.map((run) => run.exited));
    })();
    return this.#closed;
  }

  #start(entries: ReadonlyArray<{ path: string; identity: string }>): Promise<TaskModuleVerdict[]> {
    const run = new CheckerRun(
      this.mode,
      entries.map((e) => e.path),
      this.timeoutMs,
      this.#clock,
    );
    this.#workersStarted++;
    this.#runs.add(run);
    void run.exited.then(() => this.#runs.delete(run));
    entries.forEach(({ identity }, i) => {
      const verdict = run.verdicts.then((all) => all[i]!);
      this.#inFlight.set(identity, verdict);
      void verdict.then((v) => {
        if (this.#inFlight.get(identity) === verdict) this.#inFlight.delete(identity);
        if (v.status === 'valid') this.#remember(identity);
      });
    });
    return run.verdicts;
  }

  #remember(identity: string): void {
    this.#valid.add(identity);
    if (this.#valid.size > MAX_REMEMBERED) this.#valid.delete(this.#valid.values().next().value!);
  }

  #requireOpen(): void {
    if (this.#closed !== null) {
      throw new IllegalStateError('the task module checker is closed: no module is checked any more', {
        component: 'TaskModuleChecker',
        operation: 'check',
        state: 'closed',
        allowed: ['open'],
      });
    }
  }
}

/** Path and file identity of a module (fileStamp.ts), or null when there is no file. */
function identify(path: string): string | null {
  const file = fileStamp(path);
  return file === null ? null : `${path}\u0000${file.stamp}`;
}

/**
 * One checker worker and what it is told: it loads `modules` in order; each 'loading' report
 * starts that module's timer. The first invalid module ends the run (the rest stay unchecked),
 * and so does the last valid one; either way the worker is ended.
 */
class CheckerRun {
  readonly verdicts: Promise<TaskModuleVerdict[]>;
  /** Resolves once the worker has exited (or CHECKER_EXIT_TIMEOUT_MS after it was told to). */
  readonly exited: Promise<void>;
  readonly #modules: readonly string[];
  readonly #timeoutMs: number;
  readonly #clock: Clock;
  readonly #results: TaskModuleVerdict[];
  #kill: () => void = () => {};
  #resolve!: (verdicts: TaskModuleVerdict[]) => void;
  #exitedNow!: () => void;
  #timer: unknown;
  /** The module being loaded, or -1 while the worker starts. */
  #current = -1;
  #done = false;
  #killed = false;

  constructor(mode: 'thread' | 'process', modules: readonly string[], timeoutMs: number, clock: Clock) {
    this.#modules = modules;
    this.#timeoutMs = timeoutMs;
    this.#clock = clock;
    this.#results = modules.map(() => UNCHECKED);
    this.verdicts = new Promise((resolve) => (this.#resolve = resolve));
    this.exited = new Promise((resolve) => (this.#exitedNow = resolve));
    this.#timer = clock.setTimeout(
      () =>
        this.#fail(
          'checker-failed',
          `could not be checked: the checker ${mode} did not start within ${formatDuration(CHECKER_START_TIMEOUT_MS)}`,
        ),
      CHECKER_START_TIMEOUT_MS,
    );
    try {
      this.#kill = spawnChecker(
        mode,
        { modules },
        {
          report: (message) => this.#onReport(message as TaskModuleCheckReport),
          uncaught: (message) => this.#onUncaught(message),
          exit: (how) => this.#onExit(how),
        },
      );
    } catch (error) {
      this.#exitedNow();
      this.#fail(
        'checker-failed',
        `could not be checked: the checker ${mode} did not start (${(error as Error).message})`,
      );
    }
  }

  /** Ends the run now (the cluster closes): what was not checked stays unchecked. */
  stop(): void {
    this.#finish();
  }

  #onReport(message: TaskModuleCheckReport): void {
    if (this.#done || typeof message !== 'object' || message === null) return;
    switch (message.type) {
      case 'loading':
        this.#clock.clearTimeout(this.#timer);
        this.#current = message.index;
        this.#timer = this.#clock.setTimeout(
          () =>
            this.#fail(
              'timed-out',
              `cannot be loaded: its top-level code did not finish within ${formatDuration(this.#timeoutMs)} ` +
                `(dispatcher.task-module-check.timeout); a top-level await that never settles, or a busy loop?`,
            ),
          this.#timeoutMs,
        );
        return;
      case 'loaded': {
        if (message.index !== this.#current) return;
        this.#clock.clearTimeout(this.#timer);
        if (message.defaultExport !== 'function') {
          const exported = message.exports.length > 0 ? message.exports.join(', ') : 'nothing';
          const seen =
            message.defaultExport === 'undefined'
              ? `it exports ${exported}`
              : `its default export is a ${message.defaultExport}; it also exports ${exported}`;
          return this.#fail(
            'no-default-export',
            `has no default export function (${seen}); export the task ` +
              `as 'export default async function (context, inputs) { ... }'`,
          );
        }
        this.#results[this.#current] = VALID;
        if (this.#current === this.#modules.length - 1) this.#finish();
        return;
      }
      case 'failed':
        return this.#fail('threw', `cannot be loaded: its top-level code threw ${message.message}`);
      case 'uncaught':
        return this.#onUncaught(message.message);
    }
  }

  #onUncaught(message: string): void {
    if (this.#current === -1)
      this.#fail('checker-failed', `could not be checked: the checker failed before loading it (${message})`);
    else this.#fail('threw', `cannot be loaded: an error nobody caught while it loaded: ${message}`);
  }

  #onExit(how: string): void {
    this.#exitedNow();
    if (this.#killed) return;
    this.#killed = true;
    if (this.#current === -1)
      this.#fail('checker-failed', `could not be checked: the checker ${how} before loading it`);
    else this.#fail('exited', `cannot be loaded: its top-level code ended the checker, which ${how}`);
  }

  #fail(problem: TaskModuleProblem, message: string): void {
    if (this.#done) return;
    this.#results[Math.max(this.#current, 0)] = invalid(problem, message);
    this.#finish();
  }

  #finish(): void {
    if (this.#done) return;
    this.#done = true;
    this.#clock.clearTimeout(this.#timer);
    this.#resolve(this.#results);
    if (!this.#killed) {
      this.#killed = true;
      this.#kill();
      const deadline = this.#clock.setTimeout(() => this.#exitedNow(), CHECKER_EXIT_TIMEOUT_MS);
      void this.exited.then(() => this.#clock.clearTimeout(deadline));
    }
  }
}

/** Starts a checker worker on `request` and returns how to end it. */
function spawnChecker(
  mode: 'thread' | 'process',
  request: TaskModuleCheckRequest,
  on: { report: (message: unknown) => void; uncaught: (message: string) => void; exit: (how: string) => void },
): () => void {
  if (mode === 'thread') {
    const worker = startWorker(CHECKER_ENTRY, request);
    worker.on('message', on.report);
    worker.on('error', (error) => on.uncaught(`${error.name}: ${error.message}`));
    worker.on('exit', (code) => on.exit(`exited with code ${code}`));
    return () => void worker.terminate().catch(() => {});
  }
  const child = forkProcess(CHECKER_ENTRY);
  child.on('message', on.report);
  child.on('error', (error) => on.uncaught(`${error.name}: ${error.message}`));
  child.on('exit', (code, signal) => on.exit(signal !== null ? `was killed by ${signal}` : `exited with code ${code}`));
  // A write failing because the child is already gone is reported by its 'exit'.
  child.send({ [CHECK_REQUEST_MESSAGE]: request }, () => {});
  return () => void child.kill('SIGKILL');
}
