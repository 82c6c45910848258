/**
 * What `MiniCluster.start({ inspect })` takes and what its callback receives: plain data, declared
 * here rather than borrowed from `@statelyai/inspect`, whose declarations need the DOM (`Window`,
 * `HTMLIFrameElement`) and would break a Node application's type check (`skipLibCheck: false`).
 * The records are Stately inspection events (the shape the Stately inspector reads) converted to
 * plain JSON data, plus the thread they came from.
 */

/** An actor's snapshot as plain data: its state value, context and status (what JSON keeps of them). */
export interface InspectedSnapshot {
  readonly value?: unknown;
  readonly context?: unknown;
  readonly status?: string;
  readonly [key: string]: unknown;
}

/** An event as plain data. */
export interface InspectedEvent {
  readonly type: string;
  readonly [key: string]: unknown;
}

interface InspectionRecordBase {
  /** The actor's session id; a worker's ids are prefixed with its ResourceID (`taskexecutor-…/x:3`). */
  readonly sessionId: string;
  readonly rootId: string | undefined;
  readonly createdAt: string;
  readonly id: string;
  readonly _version: string;
  /** 'main' for the SlotManager and the JobMasters, the ResourceID of a TaskExecutor for its slots. */
  readonly origin: string;
}

/** One inspection event: an actor started, an event sent, or a new snapshot. */
export type InspectionRecord =
  | (InspectionRecordBase & {
      readonly type: '@xstate.actor';
      /** `taskSlotTable @ taskexecutor-…`, `slot-<n> @ taskexecutor-…`, `slotManager`, `jobStatus`. */
      readonly name: string;
      readonly parentId: string | undefined;
      /** The machine's definition as JSON, for the inspector to draw. */
      readonly definition: string | undefined;
      readonly snapshot: InspectedSnapshot;
    })
  | (InspectionRecordBase & {
      readonly type: '@xstate.event';
      readonly sourceId: string | undefined;
      readonly event: InspectedEvent;
    })
  | (InspectionRecordBase & {
      readonly type: '@xstate.snapshot';
      readonly event: InspectedEvent;
      readonly snapshot: InspectedSnapshot;
    });

/** A callback for every record, or the Stately inspector through a local relay. */
export type InspectOption =
  | ((event: InspectionRecord) => void)
  | {
      readonly stately: {
        /** The relay's HTTP and WebSocket port on localhost (default 8080; 0 picks a free one). */
        readonly port?: number;
        /** Open the system browser on the relay page (default false). */
        readonly open?: boolean;
      };
    };

/**
 * How much of each event a worker or TaskManager sends its coordinator: `full` Stately records (for an application's
 * `inspect` callback or the Stately inspector: snapshots with their context, machine definitions), or only what the
 * dashboard's actor view reads (`actors`: names, parents, state values, statuses and event types).
 */
export type InspectionDetail = 'full' | 'actors';
