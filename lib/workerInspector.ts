/**
 * Inspection, the worker side: what a TaskExecutor worker (thread or child process) needs to send
 * its statecharts' inspection events (its TaskSlotTable and TaskSlots) over its Link as plain
 * Stately inspection events. The main side (inspect.ts: the sinks, the Stately relay, the browser
 * opener) takes them from there.
 *
 * Nothing here reaches the relay, `ws`, `node:http` or `node:child_process`, and the worker entry
 * loads this module only when inspection is asked for. `@statelyai/inspect` itself (whose
 * conversion keeps `parentId` and `rootId`, which its manual API drops) is loaded by
 * {@link loadWorkerInspector}, on that same demand; test/architecture.test.ts allows that one
 * dynamic import by name and nothing else of the kind in a worker.
 */
import type { StatelyInspectionEvent } from '@statelyai/inspect';
import { configure } from 'safe-stable-stringify';
import type { AnyActorRef, InspectionEvent } from 'xstate';
import type { InspectionDetail, InspectionRecord } from './InspectionRecord.js';

const SERIALIZE_DEPTH = 8;
const stringify = configure({ maximumDepth: SERIALIZE_DEPTH, bigint: true });

/**
 * Plain data a structured clone and JSON both carry: functions dropped, cycles and depth cut. The
 * inspector's own conversion leaves an actor's first snapshot and the events' payloads as they are,
 * and those hold functions and actor references.
 */
export function toPlainInspectionEvent(event: StatelyInspectionEvent): StatelyInspectionEvent {
  const text = stringify(event);
  return text === undefined ? event : (JSON.parse(text) as StatelyInspectionEvent);
}

/** An inspection record without the thread it came from (the coordinator adds that). */
export type UnplacedRecord = InspectionRecord extends infer R ? (R extends unknown ? Omit<R, 'origin'> : never) : never;

/**
 * What the dashboard's actor view reads of an XState inspection event, as a plain record of the Stately shape: an
 * actor's name, parent, state value and status as it starts, and each new snapshot's value, status and event type;
 * undefined for the events it does not read. No conversion by the Stately inspector (a timer per event, every
 * snapshot serialized twice): the value and status are the snapshot's own (plain strings and objects).
 */
export function actorsRecord(event: InspectionEvent): UnplacedRecord | undefined {
  if (event.type === '@xstate.actor') {
    const actor = event.actorRef as AnyActorRef & { _parent?: AnyActorRef };
    // A child's first snapshot is not there yet as its parent starts it.
    const snapshot = actor.getSnapshot() as { value?: unknown; status?: string } | undefined;
    return {
      type: '@xstate.actor',
      sessionId: actor.sessionId,
      rootId: event.rootId,
      parentId: actor._parent?.sessionId,
      name: actorName(actor),
      definition: undefined,
      snapshot: snapshot === undefined ? {} : { value: snapshot.value, status: snapshot.status },
      createdAt: String(Date.now()),
      id: '',
      _version: '',
    };
  }
  if (event.type === '@xstate.snapshot') {
    const snapshot = event.snapshot as { value?: unknown; status?: string };
    return {
      type: '@xstate.snapshot',
      sessionId: event.actorRef.sessionId,
      rootId: event.rootId,
      event: { type: event.event.type },
      snapshot: { value: snapshot.value, status: snapshot.status },
      createdAt: String(Date.now()),
      id: '',
      _version: '',
    };
  }
  return undefined;
}

/** An actor's name as the Stately inspector gives it: its id, or its machine's when the id is only its session's. */
function actorName(actor: AnyActorRef): string {
  const config = (actor as { logic?: { config?: { id?: unknown } } }).logic?.config;
  return actor.id === actor.sessionId && typeof config?.id === 'string' ? config.id : actor.id;
}

/**
 * The worker side: an XState `inspect` observer that posts plain events with `send`: `full` Stately records (loads the
 * inspector first), or only what the dashboard reads (`actors`: {@link actorsRecord}, at once).
 */
export async function loadWorkerInspector(
  send: (event: StatelyInspectionEvent | UnplacedRecord) => void,
  detail: InspectionDetail = 'full',
): Promise<(event: InspectionEvent) => void> {
  if (detail === 'actors')
    return (event) => {
      const record = actorsRecord(event);
      if (record !== undefined) send(record);
    };
  const { createInspector } = await import('@statelyai/inspect');
  const inspector = createInspector({ send }, { serialize: toPlainInspectionEvent, autoStart: false });
  return (event) => inspector.inspect.next?.(event);
}
