/**
 * MainThreadExecutor: one FIFO mailbox per endpoint (Flink's RpcEndpoint main thread).
 *
 * Every gateway call, timer and async completion of an endpoint is a task in its mailbox; tasks
 * run one at a time, each to completion, in the order they were enqueued. Endpoint state is only
 * touched from inside a task: `assertRunningInMainThread()` fails loudly otherwise. An `await`
 * inside a task cannot be intercepted, so async results re-enter through `whenComplete` (or
 * `callAsync`) as new tasks instead of running wherever the promise settles.
 *
 * Draining happens on a microtask after the first enqueue, so a burst of messages runs in one go;
 * delayed tasks wait on the injected clock, then queue like any other task. A drain that has run
 * for {@link DRAIN_BUDGET_MS} on the clock stops there and goes on from a timer of 0 ms, so one
 * burst (the states of thousands of subtasks, their slots going back) never holds the thread past
 * that: other endpoints, timers and I/O run in between, in order. Closing rejects what is still
 * queued, and what is enqueued later, with an EndpointClosedError.
 */
import { systemClock, type Clock, type TimerHandle } from '../core/clock.js';
import { EndpointClosedError, IllegalArgumentError, IllegalStateError } from '../core/errors.js';

interface Task {
  run(): void;
  reject(error: EndpointClosedError): void;
}

export interface ScheduledTask {
  /** Cancels it if it has not run yet; true if it was still waiting. */
  cancel(): boolean;
}

/** How long (ms, on the executor's clock) one drain runs tasks before it lets the event loop turn. */
export const DRAIN_BUDGET_MS = 10;

/** The executor whose task is running right now (tasks of different endpoints never nest). */
let current: MainThreadExecutor | null = null;

export class MainThreadExecutor {
  readonly #queue: Task[] = [];
  readonly #timers = new Set<TimerHandle>();
  #head = 0;
  #draining = false;
  #scheduled = false;
  #closed = false;
  /** The timer that resumes a drain that used up its budget, while it waits. */
  #resume: TimerHandle | null = null;

  constructor(
    /** The endpoint's name, for messages: `ResourceManager`, `TaskExecutor taskexecutor-1a2b`. */
    readonly name: string,
    readonly clock: Clock = systemClock,
    /** Called with an error a task threw (default: rethrown on a later tick, so it is not lost). */
    private readonly onUncaught: (error: unknown) => void = (error) =>
      queueMicrotask(() => {
        throw error;
      }),
  ) {}

  get isClosed(): boolean {
    return this.#closed;
  }

  /** Whether the calling code runs inside one of this endpoint's tasks. */
  get isInMainThread(): boolean {
    return current === this;
  }

  /** Tasks waiting to run. */
  get queued(): number {
    return this.#queue.length - this.#head;
  }

  /** Fails loudly when endpoint state is touched from outside the mailbox. */
  assertRunningInMainThread(what = 'endpoint state'): void {
    if (current !== this) {
      throw new IllegalStateError(
        `${what} of ${this.name} was touched outside its main ` +
          `thread${current ? ` (from ${current.name}'s)` : ''}; go through its mailbox (execute / callAsync)`,
        {
          component: this.name,
          operation: what,
          state: current ? `in ${current.name}` : 'outside any mailbox',
          allowed: [`in ${this.name}`],
        },
      );
    }
  }

  /** Queues `task`. After close it is dropped (there is nobody to tell). */
  execute(task: () => void): void {
    this.#enqueue({ run: task, reject: () => {} });
  }

  /** Runs `fn` in the mailbox and settles with its result; an async `fn`'s result settles when its promise does. */
  callAsync<T>(fn: () => T | Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.#enqueue({
        run: () => {
          try {
            Promise.resolve(fn()).then(resolve, reject);
          } catch (error) {
            reject(error);
          }
        },
        reject,
      });
    });
  }

  /** Delivers a promise's outcome to `handler` as a mailbox task (never wherever it happens to settle). */
  whenComplete<T>(promise: Promise<T>, handler: (value: T | undefined, error: unknown) => void): void {
    promise.then(
      (value) => this.execute(() => handler(value, undefined)),
      (error: unknown) => this.execute(() => handler(undefined, error ?? new Error('rejected without a reason'))),
    );
  }

  /** Queues `task` after `delayMs` on the clock. */
  schedule(task: () => void, delayMs: number): ScheduledTask {
    if (!Number.isFinite(delayMs) || delayMs < 0) {
      throw new IllegalArgumentError(
        'out-of-range',
        `${this.name}: a delay must be a finite number of ms >= 0, got ${delayMs}`,
        { argument: 'delayMs', value: delayMs },
      );
    }
    let waiting = true;
    const handle = this.clock.setTimeout(() => {
      this.#timers.delete(handle);
      waiting = false;
      this.execute(task);
    }, delayMs);
    this.#timers.add(handle);
    return {
      cancel: () => {
        if (!waiting) return false;
        waiting = false;
        this.#timers.delete(handle);
        this.clock.clearTimeout(handle);
        return true;
      },
    };
  }

  /** Rejects everything queued (EndpointClosedError), cancels every timer; later tasks are refused. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    for (const handle of this.#timers) this.clock.clearTimeout(handle);
    this.#timers.clear();
    this.#resume = null;
    const left = this.#queue.splice(this.#head);
    this.#queue.length = 0;
    this.#head = 0;
    for (const task of left) task.reject(this.#closedError());
  }

  #enqueue(task: Task): void {
    if (this.#closed) {
      task.reject(this.#closedError());
      return;
    }
    this.#queue.push(task);
    if (!this.#scheduled && !this.#draining && this.#resume === null) {
      this.#scheduled = true;
      queueMicrotask(() => this.#drain());
    }
  }

  #drain(): void {
    this.#scheduled = false;
    if (this.#draining) return;
    this.#draining = true;
    const previous = current;
    const until = this.clock.now() + DRAIN_BUDGET_MS;
    try {
      while (this.#head < this.#queue.length && !this.#closed) {
        if (this.clock.now() >= until) {
          // The rest after the event loop has turned (the clock's timers run after I/O).
          this.#resume = this.clock.setTimeout(() => {
            this.#timers.delete(this.#resume!);
            this.#resume = null;
            this.#drain();
          }, 0);
          this.#timers.add(this.#resume);
          break;
        }
        const task = this.#queue[this.#head++]!;
        current = this;
        try {
          task.run();
        } catch (error) {
          this.onUncaught(error);
        } finally {
          current = previous;
        }
      }
    } finally {
      this.#queue.splice(0, this.#head);
      this.#head = 0;
      this.#draining = false;
    }
  }

  #closedError(): EndpointClosedError {
    return new EndpointClosedError(`${this.name} is closed: the call was not run`, { endpoint: this.name });
  }
}
