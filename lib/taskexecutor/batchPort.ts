/**
 * A task thread's side of its pool's port (TaskThreadPort.ts): the batches that come on it are made
 * one at a time, in the order they came, and each one's end goes back on it. Kept apart from
 * taskWorker.ts, which makes a batch's runs.
 */
import type { MessagePort } from 'node:worker_threads';
import type { TaskWorkerBatch, TaskWorkerBatchEnd, TaskWorkerBatchResult } from './taskThreadProtocol.js';

/** The port batches come on, once one was handed over; a later one replaces it. */
let served: MessagePort | null = null;

/** Serves `port`: each batch is made by `run` once the one before it has ended. */
export function serveBatches(port: MessagePort, run: (batch: TaskWorkerBatch) => Promise<TaskWorkerBatchResult>): void {
  served?.close();
  served = port;
  const waiting: TaskWorkerBatch[] = [];
  let running = false;
  const start = (batch: TaskWorkerBatch): void => {
    running = true;
    run(batch).then(
      (result) => end({ result }),
      (error: unknown) => end({ error: error instanceof Error ? error : new Error(String(error)) }),
    );
  };
  const end = (batchEnd: TaskWorkerBatchEnd): void => {
    postBatchEnd(port, batchEnd);
    running = false;
    const next = waiting.shift();
    if (next !== undefined) start(next);
  };
  port.on('message', (batch: TaskWorkerBatch) => {
    if (running) waiting.push(batch);
    else start(batch);
  });
  // The thread lives as long as its pool wants it (piscina's own port), not as long as this one.
  port.unref();
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
