/**
 * A preload for counting the messages every thread of a process posts to another (MessagePort and BroadcastChannel
 * `postMessage`), by kind: what a job costs in cross-thread hops (docs/profiling.md). Load it into every thread with
 * NODE_OPTIONS (worker threads, nested ones included, run it too):
 *
 *   NODE_OPTIONS="--import ./bench/support/countPosts.mjs" JOB_THREADS_POSTS=1 node --import tsx bench/jobThreadsCpu.ts
 *
 * A thread's counts are asked for on the BroadcastChannel `slotwise.count-posts` (`{ ask: id }`) and answered there
 * (`{ answer: id, threadId, counts }`); neither is counted. Plain JavaScript: it runs before tsx in every thread.
 */
import { BroadcastChannel, MessagePort, threadId } from 'node:worker_threads';

const counts = new Map();

/** A message's kind, from what the runtime puts in it: a Link batch's frames, a piscina call, a control message. */
function kindOf(message) {
  if (Array.isArray(message)) {
    const frame = message[1];
    if (frame !== null && typeof frame === 'object') {
      const kind = frame.kind === 'call' ? `call ${frame.method}` : String(frame.kind ?? frame.type ?? 'frame');
      return message.length > 2 ? `link: ${kind} and ${message.length / 2 - 1} more` : `link: ${kind}`;
    }
    return 'link';
  }
  if (message !== null && typeof message === 'object') {
    if (typeof message.name === 'string' && 'taskId' in message) return `pool call ${message.name}`;
    if ('taskId' in message) return 'pool answer';
    if (typeof message.type === 'string') return `control ${message.type}`;
  }
  return typeof message;
}

function count(message) {
  const kind = kindOf(message);
  counts.set(kind, (counts.get(kind) ?? 0) + 1);
}

const portPost = MessagePort.prototype.postMessage;
MessagePort.prototype.postMessage = function (message, transfer) {
  count(message);
  return portPost.call(this, message, transfer);
};
const channelPost = BroadcastChannel.prototype.postMessage;
BroadcastChannel.prototype.postMessage = function (message) {
  if (this !== channel) count(message);
  return channelPost.call(this, message);
};

const channel = new BroadcastChannel('slotwise.count-posts');
channel.unref();
channel.onmessage = (event) => {
  const { ask } = event.data ?? {};
  if (typeof ask === 'number') channel.postMessage({ answer: ask, threadId, counts: Object.fromEntries(counts) });
};
