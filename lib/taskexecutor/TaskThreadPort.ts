/**
 * A slot's own way to its task thread: a MessageChannel whose far end the thread took in one
 * piscina call (`attach`, taskWorker.ts). From then on each batch of runs is posted on the port and
 * its end comes back on it, in the order the batches went (the thread makes them one at a time); the
 * end of a batch after which the thread went idle says what it holds ({@link TaskThreadPort.afterLastBatch}),
 * what its reserve judges when the slot goes back, without a message of its own. The runs' aborts,
 * outcomes and log lines go on it too, named by their pool: the pool the thread serves now listens
 * ({@link TaskThreadPort.listen}).
 * One ordered way each direction per thread, made once; before, each slot's pool also made a
 * BroadcastChannel of its own on both threads, and a batch's end could overtake what its runs
 * posted there. piscina keeps the thread's lifecycle: its boot,
 * its replacement after a loss, the heap probe, `destroy`. Its `run` costs more than a post on
 * both threads (a TaskInfo and an AsyncResource per call, its queue, the worker's interface, its
 * handler lookup in the thread): trivial tasks through a TaskExecutor cost 23.8–25.5 µs of CPU
 * each through it, 19.8–20.0 on the port (`npm run bench -- tasks`). What neither avoids is the
 * post's wake-up of a sleeping thread, ~15 µs of the poster's time here (the kernel's).
 *
 * A thread keeps its port for life: given back to a TaskThreadReserve, it serves the next slot on the
 * same port ({@link threadPortOf} finds it by the piscina pool).
 *
 * The batches out on a port are failed by {@link TaskThreadPort.fail} (what the thread posted before
 * is read first): its owner calls it on the thread's uncaught error or out-of-heap error (piscina,
 * which saw no call of its own on the thread, emits them as pool 'error's) and as it destroys the
 * thread; the port fails them itself when the thread exits. While batches are out the port keeps
 * the event loop alive, as piscina's busy thread did.
 */
import { MessageChannel, receiveMessageOnPort, type MessagePort, type Worker } from 'node:worker_threads';
import type { Piscina } from 'piscina';
import type { ControlFromTask, ControlToTask, TaskWorkerBatchEnd as Answer } from './taskThreadProtocol.js';
import type { TaskWorkerBatch, TaskWorkerBatchResult, ThreadAfterJobs } from './taskThreadProtocol.js';

interface Waiting {
  readonly resolve: (result: TaskWorkerBatchResult) => void;
  readonly reject: (error: unknown) => void;
}

export class TaskThreadPort {
  /** The thread on the far end. */
  readonly worker: Worker;
  readonly #port: MessagePort;
  /** The batches out, in the order they were posted (the thread ends them in that order). */
  readonly #waiting: Waiting[] = [];
  #lost = false;
  #afterLastBatch: ThreadAfterJobs | null = null;
  /** The pool the thread serves now, and where its runs' messages go; messages of another pool are dropped. */
  #listener: { readonly pool: string; readonly onControl: (message: ControlFromTask) => void } | null = null;

  constructor(worker: Worker, port: MessagePort) {
    this.worker = worker;
    this.#port = port;
    port.on('message', (message: Answer | ControlFromTask) => this.#received(message));
    port.unref();
    worker.once('exit', (code: number) => this.fail(new Error(`worker exited with code: ${code}`)));
  }

  /** Whether the thread is gone (it exited, or its owner failed it): a new one must be attached. */
  get lost(): boolean {
    return this.#lost;
  }

  /** Whether batches are out on the thread. */
  get busy(): boolean {
    return this.#waiting.length > 0;
  }

  /**
   * What the thread held when it last went idle after a batch (taskWorker's `afterBatch`), or null before it did: what
   * its reserve judges as the slot goes back. Read with no batch out, it is what the thread holds now.
   */
  get afterLastBatch(): ThreadAfterJobs | null {
    return this.#afterLastBatch;
  }

  /**
   * Posts a batch; resolves with its end's result, rejects with the error it ended with or the one
   * that lost the thread. A batch that cannot be cloned rejects with its DataCloneError, posting nothing.
   */
  post(batch: TaskWorkerBatch): Promise<TaskWorkerBatchResult> {
    if (this.#lost) return Promise.reject(new Error('the task thread was lost before the message was sent'));
    try {
      this.#port.postMessage(batch);
    } catch (error) {
      return Promise.reject(error);
    }
    if (this.#waiting.length === 0) this.#port.ref();
    return new Promise<TaskWorkerBatchResult>((resolve, reject) => this.#waiting.push({ resolve, reject }));
  }

  /** The runs' messages of `pool` (its outcomes and log lines) go to `onControl` from now on. */
  listen(pool: string, onControl: (message: ControlFromTask) => void): void {
    this.#listener = { pool, onControl };
  }

  /** `pool` no longer hears its runs' messages (its slot has gone back). */
  unlisten(pool: string): void {
    if (this.#listener?.pool === pool) this.#listener = null;
  }

  /** Fires a running run's context.signal (the thread acts on it as it comes, even while its batch runs). */
  abort(pool: string, run: number, reason: string): void {
    if (this.#lost) return;
    this.#port.postMessage({ type: 'abort', pool, run, reason } satisfies ControlToTask);
  }

  /** Handles what the thread posted and is still waiting on this end, in order, without waiting for its events. */
  drain(): void {
    for (let entry = receiveMessageOnPort(this.#port); entry !== undefined; entry = receiveMessageOnPort(this.#port)) {
      this.#received(entry.message as Answer | ControlFromTask);
    }
  }

  /** The thread is lost (or being destroyed): what it posted is read, the batches still out fail with `error`. */
  fail(error: unknown): void {
    if (this.#lost) return;
    this.drain();
    this.#lost = true;
    const waiting = this.#waiting.splice(0);
    this.#port.close();
    for (const { reject } of waiting) reject(error);
  }

  #received(message: Answer | ControlFromTask): void {
    if ('type' in message) {
      const listener = this.#listener;
      if (listener !== null && message.pool === listener.pool) listener.onControl(message);
      return;
    }
    this.#ended(message);
  }

  #ended(answer: Answer): void {
    if (answer.after !== undefined) this.#afterLastBatch = answer.after;
    const waiting = this.#waiting.shift();
    if (this.#waiting.length === 0) this.#port.unref();
    if (waiting === undefined) return;
    if (answer.error !== undefined) waiting.reject(answer.error);
    else waiting.resolve(answer.result);
  }
}

/** Each piscina pool's thread's port, once attached (a pool of task threads has one thread). */
const ports = new WeakMap<Piscina, TaskThreadPort>();

/** The pool's thread's port, when it has one and the thread is not lost. */
export function threadPortOf(pool: Piscina): TaskThreadPort | undefined {
  const port = ports.get(pool);
  return port === undefined || port.lost ? undefined : port;
}

/** Attaches in progress, by pool: a spare taken while its thread still boots is not attached twice. */
const attaching = new WeakMap<Piscina, Promise<TaskThreadPort>>();

/**
 * The port of the pool's thread: the one it has, or a new one handed over (a new thread is booted if it has none) in
 * one piscina call, shared by whoever asks while it is on its way. Rejects when the call fails or the thread that
 * answered is no longer the pool's (it exited meanwhile).
 */
export function attachThread(pool: Piscina): Promise<TaskThreadPort> {
  const attached = threadPortOf(pool);
  if (attached !== undefined) return Promise.resolve(attached);
  let made = attaching.get(pool);
  if (made === undefined) {
    made = attach(pool);
    attaching.set(pool, made);
    const done = () => void (attaching.get(pool) === made && attaching.delete(pool));
    made.then(done, done);
  }
  return made;
}

async function attach(pool: Piscina): Promise<TaskThreadPort> {
  const { port1, port2 } = new MessageChannel();
  let worker: Worker | undefined;
  try {
    const threadId = await pool.run({ port: port2 }, { name: 'attach', transferList: [port2] });
    worker = pool.threads.find((thread) => thread.threadId === threadId);
    if (worker === undefined) throw new Error(`the task thread ${String(threadId)} that took the port has exited`);
  } catch (error) {
    port1.close();
    throw error;
  }
  const thread = new TaskThreadPort(worker, port1);
  ports.set(pool, thread);
  return thread;
}
