/**
 * A job's status, as its JobMaster reports it (Flink's JobStatus, the part slotwise uses):
 *
 *   created ──START──▶ running ──ALL_FINISHED──▶ finished
 *                        │  ▲
 *          TASK_FAILED   │  └──RESTARTED── restarting ◀──[restart allowed]── failing
 *                        └──────────────────────────────────────────────────────┘
 *                                                    [no restart left] ──▶ failed
 *   created | running | failing | restarting ──CANCEL──▶ canceling ──ALL_CANCELED──▶ canceled
 *
 * `failing` is transient: the JobMaster decides at once whether the restart strategy allows another
 * attempt (RESTART → restarting, or FAIL → failed). Terminal states are final. Pure; the JobMaster
 * drives it and reads the status from it.
 */
import { assign, setup } from 'xstate';

export type JobStatus = 'created' | 'running' | 'failing' | 'restarting' | 'finished' | 'failed' | 'canceling' | 'canceled';

export interface JobStatusContext {
  /** Restarts made so far. */
  readonly restarts: number;
  /** Why the job failed or is failing (a readable message). */
  readonly failureCause: string | null;
}

export type JobStatusEvent =
  | { type: 'START' }
  | { type: 'TASK_FAILED'; cause: string }
  | { type: 'RESTART' }
  | { type: 'FAIL'; cause: string }
  | { type: 'RESTARTED' }
  | { type: 'ALL_FINISHED' }
  | { type: 'CANCEL' }
  | { type: 'ALL_CANCELED' };

export const jobStatusMachine = setup({
  types: {
    context: {} as JobStatusContext,
    events: {} as JobStatusEvent,
  },
  actions: {
    recordCause: assign({ failureCause: ({ event }) => ('cause' in event ? event.cause : null) }),
    countRestart: assign({ restarts: ({ context }) => context.restarts + 1 }),
  },
}).createMachine({
  id: 'jobStatus',
  context: { restarts: 0, failureCause: null },
  initial: 'created',
  states: {
    created: { on: { START: 'running', CANCEL: 'canceling' } },
    running: {
      on: {
        TASK_FAILED: { target: 'failing', actions: 'recordCause' },
        ALL_FINISHED: 'finished',
        CANCEL: 'canceling',
      },
    },
    failing: {
      on: {
        RESTART: { target: 'restarting', actions: 'countRestart' },
        FAIL: { target: 'failed', actions: 'recordCause' },
        CANCEL: 'canceling',
      },
    },
    restarting: {
      on: {
        RESTARTED: 'running',
        // Another failure while waiting to restart joins this restart.
        TASK_FAILED: { actions: 'recordCause' },
        CANCEL: 'canceling',
      },
    },
    canceling: { on: { ALL_CANCELED: 'canceled' } },
    finished: { type: 'final' },
    failed: { type: 'final' },
    canceled: { type: 'final' },
  },
});
