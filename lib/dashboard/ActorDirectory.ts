/**
 * The statechart actors of a cluster as the dashboard shows them, kept from the inspection stream
 * (the records `MiniCluster.start({ inspect })` would hand a callback): each actor's name, where it
 * runs, its current state value and status, and its last events — so the SlotManager, every
 * TaskSlotTable and TaskSlot, and each job's status are watchable offline, without the Stately
 * inspector. Bounded: RECENT_EVENTS events per actor, and actors that stopped are forgotten after
 * ENDED_KEPT newer ones stopped.
 */
import type { InspectionEvent } from 'xstate';
import type { InspectionRecord } from '../InspectionRecord.js';
import { actorsRecord } from '../workerInspector.js';

/** Events kept per actor. */
export const RECENT_EVENTS = 50;
/** Stopped actors kept (the most recent), so a slot just freed can still be looked at. */
export const ENDED_KEPT = 200;

export interface ActorSummary {
  readonly id: string;
  /** `slotManager`, `taskSlotTable @ taskexecutor-…`, `slot-<n> @ taskexecutor-…`, `jobStatus`. */
  readonly name: string;
  readonly origin: string;
  readonly parentId: string | null;
  /** The state value as the machine has it (a string, or an object for parallel/nested states). */
  readonly value: unknown;
  readonly status: string;
  readonly events: number;
}

export interface ActorEvent {
  /** When it happened, ISO 8601. */
  readonly at: string;
  readonly type: string;
  /** The state value after it. */
  readonly value: unknown;
}

export interface ActorDetail extends ActorSummary {
  readonly recent: readonly ActorEvent[];
}

interface Actor {
  readonly id: string;
  readonly name: string;
  readonly origin: string;
  readonly parentId: string | null;
  value: unknown;
  status: string;
  events: number;
  readonly recent: ActorEvent[];
}

export class ActorDirectory {
  readonly #actors = new Map<string, Actor>();
  readonly #ended: string[] = [];
  readonly #listeners = new Set<(id: string, event: ActorEvent) => void>();

  /** Takes one inspection record (any thread's). */
  record(record: InspectionRecord): void {
    if (record.type === '@xstate.actor') {
      this.#actors.set(record.sessionId, {
        id: record.sessionId,
        name: record.name,
        origin: record.origin,
        parentId: record.parentId ?? null,
        value: record.snapshot?.value ?? null,
        status: record.snapshot?.status ?? 'active',
        events: 0,
        recent: [],
      });
      return;
    }
    if (record.type !== '@xstate.snapshot') return;
    const actor = this.#actors.get(record.sessionId);
    if (actor === undefined) return;
    actor.value = record.snapshot.value ?? actor.value;
    const status = record.snapshot.status ?? actor.status;
    const event: ActorEvent = {
      at: isoTime(record.createdAt),
      type: record.event?.type ?? '(unknown)',
      value: actor.value,
    };
    actor.events++;
    actor.recent.push(event);
    if (actor.recent.length > RECENT_EVENTS) actor.recent.shift();
    if (status !== 'active' && actor.status === 'active') this.#stopped(actor.id);
    actor.status = status;
    for (const listener of this.#listeners) listener(actor.id, event);
  }

  /**
   * An XState `inspect` observer for this thread's actors (`origin`): what the directory keeps, read straight off the
   * events (actorsRecord). Converting them to Stately inspection records first serialized every snapshot twice and ran
   * a timer per event: most of what a JobManager with a dashboard spent on inspection per job.
   */
  observer(origin = 'main'): (event: InspectionEvent) => void {
    return (event) => {
      const record = actorsRecord(event);
      if (record !== undefined) this.record({ ...record, origin } as InspectionRecord);
    };
  }

  list(): ActorSummary[] {
    return [...this.#actors.values()].map(({ recent: _recent, ...summary }) => ({ ...summary }));
  }

  get(id: string): ActorDetail | undefined {
    const actor = this.#actors.get(id);
    return actor === undefined ? undefined : { ...actor, recent: [...actor.recent] };
  }

  /** Calls `listener` with each new event of any actor; returns a function that stops it. */
  subscribe(listener: (id: string, event: ActorEvent) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  #stopped(id: string): void {
    this.#ended.push(id);
    if (this.#ended.length > ENDED_KEPT) this.#actors.delete(this.#ended.shift()!);
  }
}

/** The inspector stamps events with `Date.now().toString()`; a page reads ISO 8601. */
function isoTime(createdAt: string): string {
  const ms = /^\d+$/.test(createdAt) ? Number(createdAt) : Date.parse(createdAt);
  return Number.isFinite(ms) ? new Date(ms).toISOString() : createdAt;
}
