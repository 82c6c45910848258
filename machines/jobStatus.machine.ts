/**
 * A job's status, as its JobMaster reports it (Flink's JobStatus, the part slotwise uses), and the
 * restart decision of its RestartBackoffTimeStrategy:
 *
 *   created ──START──▶ running ──ALL_FINISHED──▶ finished
 *                       │  ▲
 *          TASK_FAILED  │  └──after restartDelay: restartTasks── restarting
 *                       ▼                                           ▲
 *                    failing ──HANDLE_FAILURE [canRestart]: countRestart┘
 *                       │────HANDLE_FAILURE [otherwise]: recordNoRestartLeft──▶ failed
 *                       └────FAIL (not recoverable)─────────────────────────────▶ failed
 *   restarting ──FAIL──▶ failed
 *   created | running | failing | restarting ──CANCEL──▶ canceling ──ALL_CANCELED──▶ canceled
 *
 * The JobMaster reports a failed attempt (TASK_FAILED: the job is `failing`, which inspectors and
 * the job's events show) and then asks the machine to handle it (HANDLE_FAILURE); the machine
 * decides with the strategy handed in as input — `canRestart`, then `restartDelay` in `restarting`,
 * after which `restartTasks` (provided by the JobMaster) runs the failed subtasks again. A failure
 * while `restarting` joins that restart. FAIL is a failure no restart can mend (the job's slots never
 * came, the ResourceManager refused it). Terminal states are final.
 *
 * Pure: the only effect is the named `restartTasks`, a no-op here; the delay runs on the actor's
 * clock (the JobMaster's, so a simulated clock crosses it in tests).
 */
import { assign, setup } from 'xstate';

export type JobStatus =
  | 'created'
  | 'running'
  | 'failing'
  | 'restarting'
  | 'finished'
  | 'failed'
  | 'canceling'
  | 'canceled';

/**
 * Flink's RestartBackoffTimeStrategy, the kinds slotwise has: `fixed-delay` restarts up to
 * `attempts` times, each `delayMs` after the failure; `none` never restarts.
 */
export type RestartBackoffTimeStrategy =
  | { readonly type: 'fixed-delay'; readonly attempts: number; readonly delayMs: number }
  | { readonly type: 'none' };

export interface JobStatusInput {
  readonly restartStrategy: RestartBackoffTimeStrategy;
}

export interface JobStatusContext {
  readonly restartStrategy: RestartBackoffTimeStrategy;
  /** Restarts made so far. */
  readonly restarts: number;
  /** Why the job failed or is failing (a readable message). */
  readonly failureCause: string | null;
}

export type JobStatusEvent =
  | { type: 'START' }
  /** An attempt failed; `cause` says which and why. */
  | { type: 'TASK_FAILED'; cause: string }
  /** The failure just reported is to be handled: restart (if the strategy allows) or fail. */
  | { type: 'HANDLE_FAILURE' }
  /** A failure no restart can mend. */
  | { type: 'FAIL'; cause: string }
  | { type: 'ALL_FINISHED' }
  | { type: 'CANCEL' }
  | { type: 'ALL_CANCELED' };

/** Whether the strategy allows one more restart after `restarts` (Flink's canRestart). */
export function canRestart(strategy: RestartBackoffTimeStrategy, restarts: number): boolean {
  return strategy.type === 'fixed-delay' && restarts < strategy.attempts;
}

/** ms from the failure to the restart (Flink's getBackoffTime). */
export function restartDelayOf(strategy: RestartBackoffTimeStrategy): number {
  return strategy.type === 'fixed-delay' ? strategy.delayMs : 0;
}

export const jobStatusMachine = setup({
  types: {
    context: {} as JobStatusContext,
    events: {} as JobStatusEvent,
    input: {} as JobStatusInput,
  },
  guards: {
    canRestart: ({ context }) => canRestart(context.restartStrategy, context.restarts),
  },
  delays: {
    restartDelay: ({ context }) => restartDelayOf(context.restartStrategy),
  },
  actions: {
    recordCause: assign({
      failureCause: ({ event, context }) => ('cause' in event ? event.cause : context.failureCause),
    }),
    countRestart: assign({ restarts: ({ context }) => context.restarts + 1 }),
    recordNoRestartLeft: assign({
      failureCause: ({ context }) => {
        const strategy = context.restartStrategy;
        return strategy.type === 'none'
          ? context.failureCause
          : `${context.failureCause}; no restart left (${context.restarts} of ${strategy.attempts} made)`;
      },
    }),
    /** Provided by the JobMaster: give the failed subtasks their next attempt. */
    restartTasks: () => {},
  },
}).createMachine({
  id: 'jobStatus',
  context: ({ input }) => ({ restartStrategy: input.restartStrategy, restarts: 0, failureCause: null }),
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
        HANDLE_FAILURE: [
          { guard: 'canRestart', target: 'restarting', actions: 'countRestart' },
          { target: 'failed', actions: 'recordNoRestartLeft' },
        ],
        FAIL: { target: 'failed', actions: 'recordCause' },
        CANCEL: 'canceling',
      },
    },
    restarting: {
      after: { restartDelay: { target: 'running', actions: 'restartTasks' } },
      on: {
        // Another failure while waiting to restart joins this restart.
        TASK_FAILED: { actions: 'recordCause' },
        FAIL: { target: 'failed', actions: 'recordCause' },
        CANCEL: 'canceling',
      },
    },
    canceling: { on: { ALL_CANCELED: 'canceled' } },
    finished: { type: 'final' },
    failed: { type: 'final' },
    canceled: { type: 'final' },
  },
});
