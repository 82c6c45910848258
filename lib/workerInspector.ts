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
import type { InspectionEvent } from 'xstate';

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

/** The worker side: an XState `inspect` observer that posts plain events with `send` (loads the inspector first). */
export async function loadWorkerInspector(
  send: (event: StatelyInspectionEvent) => void,
): Promise<(event: InspectionEvent) => void> {
  const { createInspector } = await import('@statelyai/inspect');
  const inspector = createInspector({ send }, { serialize: toPlainInspectionEvent, autoStart: false });
  return (event) => inspector.inspect.next?.(event);
}
