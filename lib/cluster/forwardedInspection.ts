/**
 * A session cluster's TaskManagers' statecharts in their JobManager's inspection (the dashboard's actor
 * view, the `inspect` option of `startJobManager`), as a MiniCluster's workers send theirs to its main
 * thread: each TaskManager converts its TaskSlotTable's and TaskSlots' inspection events to plain
 * Stately events and sends them on the `inspect` channel of its Link to the JobManager.
 *
 * Only when asked: inspection costs a TaskManager a serialization of every event (a snapshot of its
 * table per slot change), so it sends nothing until the JobManager it follows asks (an
 * {@link InspectionRequest} on that channel, which a JobManager with an inspection sink sends when a
 * TaskExecutor first reaches it). Asked, it announces the actors alive now (the table and its slots,
 * with their current snapshots: the JobManager may have started long after them) and forwards every
 * event from then on, in batches at most every FLUSH_MS. A new leader (a newer fencing token) stops it
 * until that leader asks; a JobManager that did not ask drops what still arrives.
 */
import type { AnyActorRef, InspectionEvent } from 'xstate';
import type { InspectionDetail } from '../InspectionRecord.js';
import type { Channel } from '../rpc/Link.js';

/** How often a TaskManager sends what its statecharts did. */
const FLUSH_MS = 100;
/** The most events in one batch; older ones of a burst are dropped (and counted). */
const MAX_BATCH = 2_000;

/** The JobManager to a TaskExecutor: send me your statecharts, with this much of each event (default 'full'). */
export interface InspectionRequest {
  readonly type: 'inspect';
  readonly detail?: InspectionDetail;
}

/** A TaskExecutor to its JobManager: plain Stately inspection events, oldest first. */
export interface InspectionBatch {
  readonly events: readonly unknown[];
  /** Events of this interval dropped for the batch bound. */
  readonly dropped: number;
}

export function isInspectionBatch(message: unknown): message is InspectionBatch {
  return (
    typeof message === 'object' &&
    message !== null &&
    Array.isArray((message as InspectionBatch).events) &&
    typeof (message as InspectionBatch).dropped === 'number'
  );
}

/**
 * The TaskManager's side for one TaskExecutor: `inspect` is its statecharts' observer (cheap while
 * nobody asked), `root` its TaskSlotTable's actor once there is one.
 */
export class InspectionForwarder {
  readonly #channel: Channel;
  readonly #onError: (message: string) => void;
  #root: (() => AnyActorRef) | null = null;
  /** The loaded observer while forwarding; null while nobody asked. */
  #observer: ((event: InspectionEvent) => void) | null = null;
  /** Bumped by every start and stop: a load that finishes after a newer one began is dropped. */
  #generation = 0;
  #batch: unknown[] = [];
  #dropped = 0;
  #timer: ReturnType<typeof setTimeout> | null = null;

  constructor(channel: Channel, onError: (message: string) => void) {
    this.#channel = channel;
    this.#onError = onError;
    channel.addEventListener('message', (event) => {
      const request = event.data as InspectionRequest | null;
      if (request?.type === 'inspect') void this.#start(request.detail === 'actors' ? 'actors' : 'full');
    });
  }

  /** The XState `inspect` observer for the TaskExecutor's table and slots. */
  readonly inspect = (event: InspectionEvent): void => {
    this.#observer?.(event);
  };

  /** The actor whose tree is announced when forwarding starts. */
  attach(root: () => AnyActorRef): void {
    this.#root = root;
  }

  /** Whether events are being forwarded. */
  get forwarding(): boolean {
    return this.#observer !== null;
  }

  /** Stops forwarding (a new leader has not asked yet, or the TaskExecutor ended); what is batched goes first. */
  stop(): void {
    this.#generation++;
    this.#observer = null;
    this.#flush();
  }

  async #start(detail: InspectionDetail): Promise<void> {
    const generation = ++this.#generation;
    try {
      const { loadWorkerInspector } = await import('../workerInspector.js');
      // The inspector converts each event on a later turn: one converted after a stop is not sent.
      const observer = await loadWorkerInspector(
        (event) => generation === this.#generation && this.#push(event),
        detail,
      );
      if (generation !== this.#generation) return;
      this.#observer = observer;
      const root = this.#root?.();
      if (root !== undefined) announce(root, root.sessionId, observer);
    } catch (error) {
      this.#onError(`could not forward its statecharts to the JobManager: ${(error as Error).message}`);
    }
  }

  #push(event: unknown): void {
    this.#batch.push(event);
    if (this.#batch.length > MAX_BATCH) {
      this.#batch.shift();
      this.#dropped++;
    }
    if (this.#timer === null) {
      this.#timer = setTimeout(() => this.#flush(), FLUSH_MS);
      this.#timer.unref();
    }
  }

  #flush(): void {
    if (this.#timer !== null) clearTimeout(this.#timer);
    this.#timer = null;
    if (this.#batch.length === 0) return;
    const batch: InspectionBatch = { events: this.#batch, dropped: this.#dropped };
    this.#batch = [];
    this.#dropped = 0;
    try {
      this.#channel.postMessage(batch);
    } catch {
      // The Link closed: nobody to tell.
    }
  }
}

/** `actor` and its descendants as XState announces a new actor, each with its snapshot as it is now. */
function announce(actor: AnyActorRef, rootId: string, observer: (event: InspectionEvent) => void): void {
  observer({ type: '@xstate.actor', actorRef: actor, rootId });
  const children = (actor.getSnapshot() as { children?: Record<string, AnyActorRef | undefined> }).children ?? {};
  for (const child of Object.values(children)) if (child !== undefined) announce(child, rootId, observer);
}
