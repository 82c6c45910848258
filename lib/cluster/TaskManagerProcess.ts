/**
 * A TaskManager in mode 'process': its TaskExecutor in a child process of its own
 * (taskManagerProcessMain.ts) with a hard heap limit — the slots' task heap plus the runtime's
 * overhead — so a task that outgrows its memory takes down that child, never this process; the
 * child is started again (a fresh TaskExecutor under a new ResourceID) until `close()`. The same
 * surface as a TaskManager in thread mode.
 */
import type { ChildProcess } from 'node:child_process';
import { IllegalStateError } from '../core/errors.js';
import type { ResolvedOptions } from '../core/options.js';
import { forkProcess } from '../rpc/forkProcess.js';
import { PROCESS_HEAP_OVERHEAD_MB } from '../resourcemanager/spawnWorker.js';
import type { TaskManagerOptions } from './TaskManager.js';
import { CLOSE_MESSAGE, START_MESSAGE, STATUS_MESSAGE, type TaskManagerStatus } from './taskManagerProcessProtocol.js';
import { TaskManagerRegistrations, type TaskManagerRegistrationListener } from './TaskManagerRegistrations.js';

const extension = import.meta.url.endsWith('.ts') ? '.ts' : '.js';
const ENTRY = new URL(`./taskManagerProcessMain${extension}`, import.meta.url);
/** How long a first start may take before `start` gives up (a child under tsx compiles for a few seconds). */
const START_TIMEOUT_MS = 60_000;
const RESTART_DELAY_MS = 1_000;

export class TaskManagerProcess {
  readonly clusterId: string;
  readonly options: ResolvedOptions;
  readonly #childOptions: Omit<TaskManagerOptions, 'logger'>;
  #child: ChildProcess;
  #status: TaskManagerStatus | null = null;
  #children = 0;
  #closed: Promise<void> | null = null;
  readonly #registrations = new TaskManagerRegistrations();

  private constructor(clusterId: string, options: ResolvedOptions, childOptions: Omit<TaskManagerOptions, 'logger'>) {
    this.clusterId = clusterId;
    this.options = options;
    this.#childOptions = childOptions;
    this.#child = this.#fork();
  }

  /**
   * Starts the child; resolves once it has connected and started its TaskExecutor (options are checked by the caller).
   */
  static async start(
    clusterId: string,
    options: ResolvedOptions,
    childOptions: Omit<TaskManagerOptions, 'logger'>,
  ): Promise<TaskManagerProcess> {
    const manager = new TaskManagerProcess(clusterId, options, childOptions);
    const child = manager.#child;
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(
        () => fail(new Error(`the TaskManager process did not start within ${START_TIMEOUT_MS} ms`)),
        START_TIMEOUT_MS,
      );
      const onMessage = () => manager.#status !== null && done();
      const onExit = (code: number | null) =>
        fail(
          new IllegalStateError(`the TaskManager process exited (${code}) before it started; its stderr says why`, {
            component: 'TaskManager',
            operation: 'start',
            state: 'exited',
            allowed: ['started'],
          }),
        );
      const done = () => {
        clearTimeout(timer);
        child.off('message', onMessage).off('exit', onExit);
        resolve();
      };
      const fail = (error: Error) => {
        clearTimeout(timer);
        child.off('message', onMessage).off('exit', onExit);
        manager.#closed = Promise.resolve();
        child.kill('SIGKILL');
        reject(error);
      };
      child.on('message', onMessage).once('exit', onExit);
    });
    return manager;
  }

  /** The ResourceID of its TaskExecutor now. */
  get resourceId(): string {
    return this.#status?.resourceId ?? '';
  }

  get registered(): boolean {
    return this.#status?.registered ?? false;
  }

  /** Calls `listener` each time a TaskExecutor of its children is registered (as TaskManager.onRegistered). */
  onRegistered(listener: TaskManagerRegistrationListener): () => void {
    return this.#registrations.add(listener);
  }

  /** TaskExecutors started, over every child. */
  get incarnations(): number {
    return (this.#status?.incarnations ?? 0) + this.#children - 1;
  }

  /** The child's pid now (for drills). */
  get pid(): number | undefined {
    return this.#child.pid;
  }

  /** Tells the child to close gracefully; SIGKILL after task.cancellation.grace-period + rpc.ask.timeout. */
  close(): Promise<void> {
    this.#closed ??= (async () => {
      this.#registrations.clear();
      const child = this.#child;
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      if (child.connected) child.send({ [CLOSE_MESSAGE]: true });
      const forced = setTimeout(
        () => child.kill('SIGKILL'),
        this.options['task.cancellation.grace-period'] + this.options['rpc.ask.timeout'],
      );
      await exited;
      clearTimeout(forced);
    })();
    return this.#closed;
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.close();
  }

  #fork(): ChildProcess {
    this.#children++;
    const heapMb =
      Math.ceil(this.options['taskmanager.memory.task.heap.size'] / (1024 * 1024)) + PROCESS_HEAP_OVERHEAD_MB;
    const child = forkProcess(ENTRY, [], {
      execArgv: [...process.execArgv, `--max-old-space-size=${heapMb}`],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    // Its options over IPC, not as arguments: natsAuth may hold secrets (taskManagerProcessProtocol.ts).
    child.send({ [START_MESSAGE]: this.#childOptions });
    let registrations = 0;
    child.on('message', (message) => {
      const status = (message as Record<string, unknown> | null)?.[STATUS_MESSAGE] as TaskManagerStatus | undefined;
      if (status === undefined) return;
      this.#status = status;
      if (status.registrations > registrations) this.#registrations.registered(status.resourceId);
      registrations = status.registrations;
    });
    child.once('exit', () => {
      if (this.#closed !== null) return;
      // Died (out of memory, killed): a fresh TaskExecutor in a fresh process.
      this.#status = null;
      setTimeout(() => {
        if (this.#closed === null) this.#child = this.#fork();
      }, RESTART_DELAY_MS).unref();
    });
    return child;
  }
}
