/**
 * One worker (a TaskExecutor) as its ResourceManager sees it, from the start it asked for to the
 * moment its ResourceID may never register again (Flink's ResourceManager with its
 * WorkerRegistration, and ActiveResourceManager's workers):
 *
 *   starting ──REGISTERED──▶ registered ◀──REGISTERED (again: the registration is replaced)
 *                              │    ▲
 *        HEARTBEAT_TIMED_OUT   ▼    │ REGISTERED (back in time: Flink's reconnect)
 *                             lost ──after heartbeatTimeout: notBackInTime──▶ stopping ──STOPPED──▶ stale
 *   registered ──RELEASED (the SlotManager let it go as idle)──▶ released
 *   registered ──DISCONNECTED | REJECTED──▶ stale
 *   starting | registered | lost | stopping | released ──ENDED (its worker ended)──▶ stale
 *
 * `stale` is final: its ResourceID is refused if it registers again, with `staleReason` (the first
 * reason given). A worker the ResourceManager did not start (a standalone cluster's) is `starting` only
 * until its registration, a moment later. `starting` that ends tells `startFailed` (a pending worker
 * started for the SlotManager is gone).
 *
 * Pure: the effects are the named actions, no-ops here (ResourceManager.ts provides them); `lost`'s
 * deadline runs on the actor's clock (the ResourceManager's mailbox clock).
 */
import { assign, setup } from 'xstate';

export interface WorkerLifecycleInput {
  /** heartbeat.timeout: how long a lost worker has to register again. */
  readonly heartbeatTimeoutMs: number;
}

export interface WorkerLifecycleContext {
  readonly heartbeatTimeoutMs: number;
  /** Why it was declared lost (while `lost` or `stopping`). */
  readonly lostCause: string | null;
  /** Why its ResourceID may not register again (once `stale`). */
  readonly staleReason: string | null;
}

export type WorkerLifecycleEvent =
  | { type: 'REGISTERED' }
  | { type: 'HEARTBEAT_TIMED_OUT'; cause: string }
  | { type: 'RELEASED' }
  /** It said goodbye, the SlotManager refused it, it was stopped, or its worker ended: `reason` says which. */
  | { type: 'DISCONNECTED' | 'REJECTED' | 'STOPPED' | 'ENDED'; reason: string };

type ToStale = Extract<WorkerLifecycleEvent, { reason: string }>;

export const workerLifecycleMachine = setup({
  types: {
    context: {} as WorkerLifecycleContext,
    events: {} as WorkerLifecycleEvent,
    input: {} as WorkerLifecycleInput,
  },
  delays: {
    heartbeatTimeout: ({ context }) => context.heartbeatTimeoutMs,
  },
  actions: {
    /** Effect: a worker started for a pending worker ended before it registered (the SlotManager is told). */
    startFailed: () => {},
    /** Effect: lost and not back within heartbeat.timeout: its worker stopped (a fixed one replaced), then STOPPED. */
    notBackInTime: () => {},
    recordLost: assign({
      lostCause: ({ event }) => (event as Extract<WorkerLifecycleEvent, { type: 'HEARTBEAT_TIMED_OUT' }>).cause,
    }),
    forgetLost: assign({ lostCause: null }),
    recordStale: assign({
      staleReason: ({ context, event }) => context.staleReason ?? (event as ToStale).reason,
    }),
  },
}).createMachine({
  id: 'workerLifecycle',
  context: ({ input }) => ({ ...input, lostCause: null, staleReason: null }),
  initial: 'starting',
  on: {
    ENDED: { target: '.stale', actions: 'recordStale' },
  },
  states: {
    starting: {
      on: {
        REGISTERED: 'registered',
        ENDED: { target: 'stale', actions: ['startFailed', 'recordStale'] },
      },
    },
    registered: {
      on: {
        REGISTERED: { target: 'registered', reenter: true },
        HEARTBEAT_TIMED_OUT: { target: 'lost', actions: 'recordLost' },
        RELEASED: 'released',
        DISCONNECTED: { target: 'stale', actions: 'recordStale' },
        REJECTED: { target: 'stale', actions: 'recordStale' },
      },
    },
    lost: {
      after: { heartbeatTimeout: 'stopping' },
      on: { REGISTERED: { target: 'registered', actions: 'forgetLost' } },
    },
    stopping: {
      entry: 'notBackInTime',
      on: { STOPPED: { target: 'stale', actions: 'recordStale' } },
    },
    released: {},
    stale: { type: 'final' },
  },
});
