/**
 * A slot's own way to its task thread: a MessageChannel whose far end the thread took in one
 * piscina call (`attach`, taskWorker.ts). From then on each batch of runs is posted on the port and
 * its end comes back on it, in the order the batches went (the thread makes them one at a time).
 * piscina keeps the thread's lifecycle: its boot, its replacement after a loss, the heap probe,
 * `endJobs`, `destroy`. Its `run` cost the TaskExecutor's thread ~12 µs of CPU per call on a quiet
 * thread and ~29 in a TaskExecutor (a TaskInfo and AsyncResource per call, its queue, the worker's
 * interface), before the task thread's own share; a port post costs ~2 µs.
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
import type { TaskWorkerBatch, TaskWorkerBatchEnd, TaskWorkerBatchResult } from './taskThreadProtocol.js';

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

  constructor(worker: Worker, port: MessagePort) {
    this.worker = worker;
    this.#port = port;
    port.on('message', (end: TaskWorkerBatchEnd) => this.#ended(end));
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
   * Posts a batch; resolves with its end's result, rejects with the error it ended with or the one
   * that lost the thread. A batch that cannot be cloned rejects with its DataCloneError, posting nothing.
   */
  post(batch: TaskWorkerBatch): Promise<TaskWorkerBatchResult> {
    if (this.#lost) return Promise.reject(new Error('the task thread was lost before the batch was sent'));
    try {
      this.#port.postMessage(batch);
    } catch (error) {
      return Promise.reject(error);
    }
    if (this.#waiting.length === 0) this.#port.ref();
    return new Promise((resolve, reject) => this.#waiting.push({ resolve, reject }));
  }

  /** The thread is lost (or being destroyed): what it posted is read, the batches still out fail with `error`. */
  fail(error: unknown): void {
    if (this.#lost) return;
    this.#lost = true;
    for (let entry = receiveMessageOnPort(this.#port); entry !== undefined; entry = receiveMessageOnPort(this.#port)) {
      this.#ended(entry.message as TaskWorkerBatchEnd);
    }
    const waiting = this.#waiting.splice(0);
    this.#port.close();
    for (const { reject } of waiting) reject(error);
  }

  #ended(end: TaskWorkerBatchEnd): void {
    const waiting = this.#waiting.shift();
    if (this.#waiting.length === 0) this.#port.unref();
    if (waiting === undefined) return;
    if (end.error === undefined) waiting.resolve(end.result);
    else waiting.reject(end.error);
  }
}

/** Each piscina pool's thread's port, once attached (a pool of task threads has one thread). */
const ports = new WeakMap<Piscina, TaskThreadPort>();

/** The pool's thread's port, when it has one and the thread is not lost. */
export function threadPortOf(pool: Piscina): TaskThreadPort | undefined {
  const port = ports.get(pool);
  return port === undefined || port.lost ? undefined : port;
}

/**
 * Hands the pool's thread (a new one is booted if it has none) a port: one piscina call. Rejects when the call fails
 * or the thread that answered is no longer the pool's (it exited meanwhile).
 */
export async function attachThread(pool: Piscina): Promise<TaskThreadPort> {
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
