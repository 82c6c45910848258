/**
 * A task thread's side of its pool's port (TaskThreadPort.ts): what comes on it is done one at a
 * time, in the order it came — a batch is made and its end goes back, the slot's give-back
 * (`endJobs`) is done and answered. Kept apart from taskWorker.ts, which makes a batch's runs.
 */
import type { MessagePort } from 'node:worker_threads';
import type { ControlFromTask, ControlToTask, TaskThreadAnswer, TaskThreadRequest } from './taskThreadProtocol.js';
import type {
  TaskWorkerBatch,
  TaskWorkerBatchEnd,
  TaskWorkerBatchResult,
  ThreadAfterJobs,
} from './taskThreadProtocol.js';

/** What a thread does for its port: make a batch, end its slot's jobs, abort a run (at once, not in turn). */
export interface BatchWork {
  readonly run: (batch: TaskWorkerBatch) => Promise<TaskWorkerBatchResult>;
  readonly endJobs: () => ThreadAfterJobs;
  readonly abort: (message: ControlToTask) => void;
}

/** The port batches come on, once one was handed over; a later one replaces it. */
let served: MessagePort | null = null;

/** Posts a run's message (its outcome, a log line) to its pool; nothing before a port was handed over. */
export function postToPool(message: ControlFromTask): void {
  served?.postMessage(message);
}

/** Serves `port`: each message is done once the batch before it has ended. */
export function serveBatches(port: MessagePort, work: BatchWork): void {
  served?.close();
  served = port;
  const waiting: Array<TaskThreadRequest> = [];
  let running = false;
  const start = (message: TaskThreadRequest): void => {
    if ('endJobs' in message) {
      answer(port, () => work.endJobs());
      return;
    }
    running = true;
    work.run(message).then(
      (result) => end({ result }),
      (error: unknown) => end({ error: error instanceof Error ? error : new Error(String(error)) }),
    );
  };
  const end = (batchEnd: TaskWorkerBatchEnd): void => {
    postBatchEnd(port, batchEnd);
    running = false;
    while (!running) {
      const next = waiting.shift();
      if (next === undefined) return;
      start(next);
    }
  };
  port.on('message', (message: TaskThreadRequest | ControlToTask) => {
    if ('type' in message) work.abort(message);
    else if (running) waiting.push(message);
    else start(message);
  });
  // The thread lives as long as its pool wants it (piscina's own port), not as long as this one.
  port.unref();
}

/** Posts what `endJobs` answers, or the error it threw. */
function answer(port: MessagePort, endJobs: () => ThreadAfterJobs): void {
  let batchEnd: TaskThreadAnswer;
  try {
    batchEnd = { afterJobs: endJobs() };
  } catch (error) {
    batchEnd = { error: error instanceof Error ? error : new Error(String(error)) };
  }
  postBatchEnd(port, batchEnd);
}

/** Posts a batch's end; one that cannot be cloned (the last outcome was made cloneable: defensive) as an error. */
function postBatchEnd(port: MessagePort, batchEnd: TaskThreadAnswer): void {
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
