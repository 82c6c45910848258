/**
 * Inspection, the main side: where the statecharts' XState inspection events go when a MiniCluster
 * is started with `inspect`. Main-side actors (the SlotManager, each JobMaster's job status) hand
 * their events to `inspect`; each worker converts its own (its TaskSlotTable and TaskSlots) to plain
 * Stately inspection events (workerInspector.ts, the worker side), sends them over its Link, and
 * the driver hands them to `forward`.
 *
 * Two sinks: a callback that receives every event as plain data (`origin` says which thread it came
 * from), or the Stately inspector — a local relay on `port` (default 8080; 0 picks a free one) that
 * a browser opens at its URL (http://localhost:<port>/?token=<token>, see inspectRelay.ts) to watch
 * every actor live.
 *
 * Session ids of XState actors are counters per thread, so two workers both have an `x:1`: events
 * from a worker get their ids prefixed with its ResourceID and their names suffixed with it.
 */
import { spawn } from 'node:child_process';
import { createInspector, type StatelyInspectionEvent } from '@statelyai/inspect';
import type { InspectionEvent } from 'xstate';
import { ConfigurationError } from './core/errors.js';
import { StatelyRelay } from './inspectRelay.js';
import type { InspectionDetail, InspectionRecord, InspectOption } from './InspectionRecord.js';
import { toPlainInspectionEvent } from './workerInspector.js';

export type { InspectionRecord, InspectOption } from './InspectionRecord.js';

export interface InspectionSink {
  /** For `createActor(machine, { inspect })` on the main thread. */
  readonly inspect: (event: InspectionEvent) => void;
  /** For the events a worker sent (already plain Stately events). */
  readonly forward: (origin: string, event: unknown) => void;
  /** Resolves when the sink can take events (the relay listens). */
  readonly ready: Promise<void>;
  /** The relay's page for the Stately inspector, with its token, once `ready`; null for a callback. */
  readonly url: string | null;
  /** What of each event the workers must send (`actors`: only what the dashboard's actor view reads). */
  readonly detail: InspectionDetail;
  close(): Promise<void>;
}

/** Events held until the relay listens (later ones dropped beyond). */
const MAX_DEFERRED = 10_000;

/**
 * ConfigurationError unless `option` is a callback or `{ stately: { port?, open? } }` with a port in [0, 65535] and a
 * boolean `open`; returns it.
 */
export function checkInspectOption(option: unknown): InspectOption {
  if (typeof option === 'function') return option as InspectOption;
  if (typeof option !== 'object' || option === null) throw notInspectOption();
  const stately = (option as { stately?: unknown }).stately;
  if (typeof stately !== 'object' || stately === null) throw notInspectOption();
  const { port, open } = stately as { port?: unknown; open?: unknown };
  if (port !== undefined && (!Number.isSafeInteger(port) || (port as number) < 0 || (port as number) > 65535)) {
    throw new ConfigurationError(
      'invalid-value',
      `inspect.stately.port must be an integer in [0, 65535] (0: any free port), got ${String(port)}`,
      { option: 'inspect.stately.port' },
    );
  }
  if (open !== undefined && typeof open !== 'boolean') {
    throw new ConfigurationError('invalid-value', `inspect.stately.open must be a boolean, got ${String(open)}`, {
      option: 'inspect.stately.open',
    });
  }
  return option as InspectOption;
}

function notInspectOption(): ConfigurationError {
  return new ConfigurationError(
    'invalid-value',
    'inspect must be a function (event) => void or { stately: { port?, open? } }',
    { option: 'inspect' },
  );
}

export function createInspectionSink(option: InspectOption): InspectionSink {
  checkInspectOption(option);
  if (typeof option === 'function') {
    const callback = option;
    const deliver = (origin: string, event: StatelyInspectionEvent) => {
      try {
        callback({ ...event, origin } as InspectionRecord);
      } catch {
        // A failing observer must not break the runtime it watches.
      }
    };
    const inspector = createInspector(
      { send: (event) => deliver('main', event) },
      { serialize: toPlainInspectionEvent, autoStart: false },
    );
    return {
      inspect: (event) => inspector.inspect.next?.(event),
      forward: (origin, event) => deliver(origin, fromWorker(origin, event)),
      ready: Promise.resolve(),
      url: null,
      detail: 'full',
      close: async () => {},
    };
  }
  const port = option.stately.port ?? 8080;
  return statelySink(port, option.stately.open ?? false);
}

function statelySink(port: number, open: boolean): InspectionSink {
  let relay: StatelyRelay | null = null;
  // Events published before the relay listens (the SlotManager starting, the first workers) wait
  // here instead of being lost; the relay keeps them for the pages that connect later.
  const early: StatelyInspectionEvent[] = [];
  const publish = (event: StatelyInspectionEvent) => {
    if (relay) relay.publish(event);
    else if (early.length < MAX_DEFERRED) early.push(event);
  };
  const inspector = createInspector({ send: publish }, { serialize: toPlainInspectionEvent, autoStart: false });
  inspector.start();
  const ready = (async () => {
    relay = await StatelyRelay.start({ port });
    for (const event of early.splice(0)) relay.publish(event);
    if (open) openBrowser(relay.url);
  })();
  return {
    inspect: (event) => inspector.inspect.next?.(event),
    forward: (origin, event) => publish(fromWorker(origin, event)),
    ready,
    get url() {
      return relay?.url ?? null;
    },
    detail: 'full',
    close: async () => {
      if (
        !(await ready.then(
          () => true,
          () => false,
        ))
      )
        return;
      await relay?.close();
    },
  };
}

/** Best effort: the page is also printed, and a missing opener must not fail the cluster. */
function openBrowser(url: string): void {
  const command = process.platform === 'darwin' ? 'open' : process.platform === 'win32' ? 'explorer' : 'xdg-open';
  try {
    const child = spawn(command, [url], { detached: true, stdio: 'ignore' });
    child.on('error', () => {});
    child.unref();
  } catch {
    // No opener on this machine.
  }
}

/** A worker's event with its session ids made unique across threads. */
function fromWorker(origin: string, raw: unknown): StatelyInspectionEvent {
  const event = { ...(raw as Record<string, unknown>) };
  for (const key of ['sessionId', 'rootId', 'parentId', 'sourceId'] as const) {
    if (typeof event[key] === 'string' && event[key] !== 'anonymous') event[key] = `${origin}/${event[key] as string}`;
  }
  if (event['type'] === '@xstate.actor' && typeof event['name'] === 'string')
    event['name'] = `${event['name'] as string} @ ${origin}`;
  return event as unknown as StatelyInspectionEvent;
}

/**
 * A sink for an observer of this thread's raw XState events (`inspect`, called as they happen, no conversion) that
 * takes the workers' records (`forward`, plain Stately events with their origin) apart: the dashboard's actor view.
 */
export function observerSink(
  inspect: (event: InspectionEvent) => void,
  forward: (record: InspectionRecord) => void,
): InspectionSink {
  return {
    inspect: (event) => {
      try {
        inspect(event);
      } catch {
        // A failing observer must not break the runtime it watches.
      }
    },
    forward: (origin, event) => forward({ ...fromWorker(origin, event), origin } as InspectionRecord),
    ready: Promise.resolve(),
    url: null,
    detail: 'actors',
    close: async () => {},
  };
}

/** One sink feeding two: every event to both, ready when both are, the first one's URL. */
export function combineInspectionSinks(a: InspectionSink, b: InspectionSink): InspectionSink {
  return {
    inspect: (event) => {
      a.inspect(event);
      b.inspect(event);
    },
    forward: (origin, event) => {
      a.forward(origin, event);
      b.forward(origin, event);
    },
    ready: Promise.all([a.ready, b.ready]).then(() => {}),
    detail: a.detail === 'full' || b.detail === 'full' ? 'full' : 'actors',
    get url() {
      return a.url ?? b.url;
    },
    close: async () => {
      await Promise.all([a.close(), b.close()]);
    },
  };
}
