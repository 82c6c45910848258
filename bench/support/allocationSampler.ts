/**
 * What each thread of this process allocates while something runs (a profiling aid, docs/profiling.md): V8's sampling
 * heap profiler on the main thread and, through the inspector's NodeWorker domain, on every worker thread alive when
 * sampling starts (a TaskExecutor's thread, its slots' task threads), collected objects included. Bytes allocated move
 * far less between runs than CPU time on a shared machine, so a change to a hot path's allocation shows in two runs.
 */
import { Session } from 'node:inspector/promises';

/** What one thread allocated: `kind` from its entry file (main, TaskExecutor, task thread, other). */
export interface ThreadAllocation {
  readonly kind: 'main' | 'TaskExecutor' | 'task thread' | 'other';
  readonly title: string;
  readonly bytes: number;
}

interface ProfileNode {
  readonly selfSize: number;
  readonly children: readonly ProfileNode[];
}

/** A worker's answer to an inspector call (only stopSampling's is read). */
interface WorkerAnswer {
  readonly result?: { readonly profile?: { readonly head: ProfileNode } };
}

const SAMPLING = {
  samplingInterval: 512,
  includeObjectsCollectedByMajorGC: true,
  includeObjectsCollectedByMinorGC: true,
} as const;

function totalBytes(node: ProfileNode): number {
  let bytes = node.selfSize;
  for (const child of node.children) bytes += totalBytes(child);
  return bytes;
}

function kindOf(url: string): ThreadAllocation['kind'] {
  if (url.includes('taskExecutor')) return 'TaskExecutor';
  if (url.includes('piscina') || url.includes('taskWorker')) return 'task thread';
  return 'other';
}

/** Starts sampling on every thread; `stop()` ends it and says what each thread allocated meanwhile. */
export async function sampleAllocations(): Promise<{ stop(): Promise<ThreadAllocation[]> }> {
  const session = new Session();
  session.connect();
  const workers = new Map<string, { title: string; url: string }>();
  const answers = new Map<number, (message: WorkerAnswer) => void>();
  let nextId = 1;
  session.on('NodeWorker.attachedToWorker', ({ params }) =>
    workers.set(params.sessionId, { title: params.workerInfo.title, url: params.workerInfo.url }),
  );
  session.on('NodeWorker.receivedMessageFromWorker', ({ params }) => {
    const message = JSON.parse(params.message) as WorkerAnswer & { id?: number };
    if (message.id === undefined) return;
    answers.get(message.id)?.(message);
    answers.delete(message.id);
  });
  const toWorker = (sessionId: string, method: string, params: object = {}) =>
    new Promise<WorkerAnswer>((resolve) => {
      const id = nextId++;
      answers.set(id, resolve);
      void session.post('NodeWorker.sendMessageToWorker', {
        sessionId,
        message: JSON.stringify({ id, method, params }),
      });
    });
  // Attaching answers at once; the workers' attachedToWorker events come with it.
  await session.post('NodeWorker.enable', { waitForDebuggerOnStart: false });
  await new Promise((resolve) => setTimeout(resolve, 200));
  await session.post('HeapProfiler.enable');
  await session.post('HeapProfiler.startSampling', SAMPLING);
  for (const sessionId of workers.keys()) {
    await toWorker(sessionId, 'HeapProfiler.enable');
    await toWorker(sessionId, 'HeapProfiler.startSampling', SAMPLING);
  }
  return {
    async stop() {
      const { profile } = await session.post('HeapProfiler.stopSampling');
      const out: ThreadAllocation[] = [{ kind: 'main', title: 'main', bytes: totalBytes(profile.head) }];
      for (const [sessionId, { title, url }] of workers) {
        // A thread that ended meanwhile (a retired task thread) answers nothing: what it allocated is not counted.
        const answer = await Promise.race([
          toWorker(sessionId, 'HeapProfiler.stopSampling'),
          new Promise<undefined>((resolve) => setTimeout(() => resolve(undefined), 2_000)),
        ]);
        const head = answer?.result?.profile?.head;
        if (head !== undefined) out.push({ kind: kindOf(url), title, bytes: totalBytes(head) });
      }
      session.disconnect();
      return out;
    },
  };
}
