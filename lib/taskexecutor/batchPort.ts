/**
 * A task thread's side of its pool's port (TaskThreadPort.ts): the batches that come on it are made
 * one at a time, in the order they came, and each one's end goes back; the end of one after which
 * nothing waits carries what the thread holds as it goes idle (its reserve judges it when the slot
 * goes back). Kept apart from taskWorker.ts, which makes a batch's runs.
 */
import type { MessagePort } from 'node:worker_threads';
import type { ControlFromTask, ControlToTask } from './taskThreadProtocol.js';
import type {
  TaskWorkerBatch,
  TaskWorkerBatchEnd,
  TaskWorkerBatchResult,
  ThreadAfterJobs,
} from './taskThreadProtocol.js';

/** What a thread does for its port: make a batch, say what it holds as it goes idle, abort a run (at once). */
export interface BatchWork {
  readonly run: (batch: TaskWorkerBatch) => Promise<TaskWorkerBatchResult>;
  readonly afterBatch: () => ThreadAfterJobs;
  readonly abort: (message: ControlToTask) => void;
}

/** The port batches come on, once one was handed over; a later one replaces it. */
let served: MessagePort | null = null;

/** Posts a run's message (its outcome, a log line) to its pool; nothing before a port was handed over. */
export function postToPool(message: ControlFromTask): void {
  served?.postMessage(message);
}

/** Serves `port`: each batch is made once the batch before it has ended. */
export function serveBatches(port: MessagePort, work: BatchWork): void {
  served?.close();
  served = port;
  const waiting: TaskWorkerBatch[] = [];
  let running = false;
  const start = (batch: TaskWorkerBatch): void => {
    running = true;
    work.run(batch).then(
      (result) => end({ result }),
      (error: unknown) => end({ error: error instanceof Error ? error : new Error(String(error)) }),
    );
  };
  const end = (batchEnd: TaskWorkerBatchEnd): void => {
    running = false;
    // Nothing waits: the thread goes idle, and this may be its slot's last batch.
    postBatchEnd(port, waiting.length === 0 ? withAfter(batchEnd, work) : batchEnd);
    const next = waiting.shift();
    if (next !== undefined) start(next);
  };
  port.on('message', (message: TaskWorkerBatch | ControlToTask) => {
    if ('type' in message) work.abort(message);
    else if (running) waiting.push(message);
    else start(message);
  });
  // The thread lives as long as its pool wants it (piscina's own port), not as long as this one.
  port.unref();
}

/** The batch's end with what the thread holds now; without it when that cannot be read (the end still goes). */
function withAfter(batchEnd: TaskWorkerBatchEnd, work: BatchWork): TaskWorkerBatchEnd {
  try {
    return { ...batchEnd, after: work.afterBatch() };
  } catch {
    return batchEnd;
  }
}

/** Posts a batch's end; one that cannot be cloned (the last outcome was made cloneable: defensive) as an error. */
function postBatchEnd(port: MessagePort, batchEnd: TaskWorkerBatchEnd): void {
  try {
    port.postMessage(batchEnd);
  } catch (error) {
    try {
      port.postMessage({ error: new Error(`the batch's end could not be sent: ${String(error)}`) });
    } catch {
      // The port is closed (the thread is ending): its pool sees the thread go.
    }
  }
}
