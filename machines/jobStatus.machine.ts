/**
 * A job's status, as its JobMaster reports it (Flink's JobStatus, the part slotwise uses), and the
 * restart decision of its RestartBackoffTimeStrategy (restartBackoff.ts):
 *
 *   created ──START──▶ running ──ALL_FINISHED──▶ finished
 *                       │  ▲
 *          TASK_FAILED  │  └──after restartDelay: restartTasks── restarting ◀─┐
 *                       ▼                                           ▲    │  HANDLE_FAILURE [postpones]:
 *                    failing ──HANDLE_FAILURE [canRestart]: handle───┘    └──handle (re-entered)
 *                       │────HANDLE_FAILURE [otherwise]: recordNoRestartLeft──▶ failed
 *                       └────FAIL (not recoverable)─────────────────────────────▶ failed
 *   restarting ──HANDLE_FAILURE [otherwise]: recordNoRestartLeft──▶ failed
 *   restarting ──FAIL──▶ failed
 *   running | restarting ──LOCAL_FAILURE [canRestart]: handleLocal (stays)
 *                        └─LOCAL_FAILURE [otherwise]: recordCause, recordNoRestartLeft──▶ failed
 *   created | running | failing | restarting ──CANCEL──▶ canceling ──ALL_CANCELED──▶ canceled
 *
 * The JobMaster reports a failed attempt (TASK_FAILED: the job is `failing`, which inspectors and
 * the job's events show; while `restarting` it only records the cause) and then asks the machine to
 * handle it (HANDLE_FAILURE, with the time of the failure and a draw of the JobMaster's random
 * source). As Flink's ExecutionFailureHandler, the machine notifies the strategy handed in as input
 * of every failure — restarting or not — and asks it whether the job may restart and when: one
 * restart is pending at a time, due when the backoff of every failure it covers has passed (a
 * failure the strategy counts while restarting re-enters `restarting` with the later due time; one
 * exponential-delay merges into the pending restart changes nothing), after which `restartTasks`
 * (provided by the JobMaster) runs the failed subtasks again. `restarts` counts the failures that
 * were new restart attempts (Flink's numberOfRestarts). FAIL is a failure no restart can mend (the
 * job's slots never came, the ResourceManager refused it). LOCAL_FAILURE is the failure of one attempt of a subtask
 * another attempt of which can still finish (speculative execution): as Flink's handleLocalExecutionAttemptFailure,
 * the strategy counts it and nothing restarts — but when the strategy allows no more restarts, the job fails.
 * Terminal states are final.
 *
 * Pure: the only effect is the named `restartTasks`, a no-op here; time comes in with the events and
 * the delay runs on the actor's clock (the JobMaster's, so a simulated clock crosses it in tests).
 */
import { assign, setup } from 'xstate';
import {
  backoffTime,
  canRestart,
  INITIAL_BACKOFF_STATE,
  noRestartReason,
  notifyFailure,
  type RestartBackoffState,
  type RestartBackoffTimeStrategy,
} from './restartBackoff.js';

export type { RestartBackoffState, RestartBackoffTimeStrategy } from './restartBackoff.js';

export type JobStatus =
  | 'created'
  | 'running'
  | 'failing'
  | 'restarting'
  | 'finished'
  | 'failed'
  | 'canceling'
  | 'canceled';

export interface JobStatusInput {
  readonly restartStrategy: RestartBackoffTimeStrategy;
}

export interface JobStatusContext {
  readonly restartStrategy: RestartBackoffTimeStrategy;
  /** What the strategy remembers of the failures so far. */
  readonly backoff: RestartBackoffState;
  /** Restarts made so far: the failures that were new restart attempts (Flink's numberOfRestarts). */
  readonly restarts: number;
  /** When the pending restart is due (the clock of the failures' `at`), or null when none is. */
  readonly restartAt: number | null;
  /** How long `restarting` waits from its (re-)entry: its restart due time less the failure's time. */
  readonly restartDelayMs: number;
  /** Why the job failed or is failing (a readable message). */
  readonly failureCause: string | null;
}

export type JobStatusEvent =
  | { type: 'START' }
  /** An attempt failed; `cause` says which and why. */
  | { type: 'TASK_FAILED'; cause: string }
  /**
   * The failure just reported is to be handled: restart (if the strategy allows) or fail. `at` is
   * when it happened, on the clock the actor's delays run on; `random`, in [0, 1), draws the
   * exponential delay's jitter (default 0.5: no jitter).
   */
  | { type: 'HANDLE_FAILURE'; at: number; random?: number }
  /** One attempt failed while another of its subtask can still finish: counted, no restart (fields as above). */
  | { type: 'LOCAL_FAILURE'; cause: string; at: number; random?: number }
  /** A failure no restart can mend. */
  | { type: 'FAIL'; cause: string }
  | { type: 'ALL_FINISHED' }
  | { type: 'CANCEL' }
  | { type: 'ALL_CANCELED' };

/** What the strategy makes of a failure: its next state, whether it may restart, and when. */
export interface FailureDecision {
  readonly backoff: RestartBackoffState;
  readonly newAttempt: boolean;
  readonly canRestart: boolean;
  /** When the pending restart is due once this failure is in: never earlier than one already pending. */
  readonly restartAt: number;
}

/** The decision on a failure at `at` (pure: the machine's guards and actions all read it). */
export function decideFailure(context: JobStatusContext, at: number, random = 0.5): FailureDecision {
  const strategy = context.restartStrategy;
  const { state, newAttempt } = notifyFailure(strategy, context.backoff, at, random);
  const due = at + backoffTime(strategy, state, at);
  return {
    backoff: state,
    newAttempt,
    canRestart: canRestart(strategy, state, at),
    restartAt: context.restartAt === null ? due : Math.max(context.restartAt, due),
  };
}

type HandleFailure = Extract<JobStatusEvent, { type: 'HANDLE_FAILURE' | 'LOCAL_FAILURE' }>;
const decisionOf = (context: JobStatusContext, event: JobStatusEvent): FailureDecision =>
  decideFailure(context, (event as HandleFailure).at, (event as HandleFailure).random);

export const jobStatusMachine = setup({
  types: {
    context: {} as JobStatusContext,
    events: {} as JobStatusEvent,
    input: {} as JobStatusInput,
  },
  guards: {
    canRestart: ({ context, event }) => decisionOf(context, event).canRestart,
    /** The job may restart, but the failure's backoff ends after the pending restart: it moves. */
    postpones: ({ context, event }) => {
      const decision = decisionOf(context, event);
      return decision.canRestart && decision.restartAt > (context.restartAt ?? -Infinity);
    },
  },
  delays: {
    restartDelay: ({ context }) => context.restartDelayMs,
  },
  actions: {
    recordCause: assign({
      failureCause: ({ event, context }) => ('cause' in event ? event.cause : context.failureCause),
    }),
    /** The strategy took the failure in: a restart is pending, due at restartAt. */
    handle: assign(({ context, event }) => {
      const decision = decisionOf(context, event);
      return {
        backoff: decision.backoff,
        restarts: context.restarts + (decision.newAttempt ? 1 : 0),
        restartAt: decision.restartAt,
        restartDelayMs: Math.max(0, decision.restartAt - (event as HandleFailure).at),
      };
    }),
    /** The strategy counted a failure of one attempt: no restart is pending for it. */
    handleLocal: assign({ backoff: ({ context, event }) => decisionOf(context, event).backoff }),
    recordNoRestartLeft: assign(({ context, event }) => {
      const { backoff } = decisionOf(context, event);
      const reason = noRestartReason(context.restartStrategy, backoff, context.restarts);
      return { backoff, failureCause: reason === null ? context.failureCause : `${context.failureCause}; ${reason}` };
    }),
    restarted: assign({ restartAt: null }),
    /** Provided by the JobMaster: give the failed subtasks their next attempt. */
    restartTasks: () => {},
  },
}).createMachine({
  id: 'jobStatus',
  context: ({ input }) => ({
    restartStrategy: input.restartStrategy,
    backoff: INITIAL_BACKOFF_STATE,
    restarts: 0,
    restartAt: null,
    restartDelayMs: 0,
    failureCause: null,
  }),
  initial: 'created',
  states: {
    created: { on: { START: 'running', CANCEL: 'canceling' } },
    running: {
      on: {
        TASK_FAILED: { target: 'failing', actions: 'recordCause' },
        LOCAL_FAILURE: [
          { guard: 'canRestart', actions: 'handleLocal' },
          { target: 'failed', actions: ['recordCause', 'recordNoRestartLeft'] },
        ],
        ALL_FINISHED: 'finished',
        CANCEL: 'canceling',
      },
    },
    failing: {
      on: {
        HANDLE_FAILURE: [
          { guard: 'canRestart', target: 'restarting', actions: 'handle' },
          { target: 'failed', actions: 'recordNoRestartLeft' },
        ],
        FAIL: { target: 'failed', actions: 'recordCause' },
        CANCEL: 'canceling',
      },
    },
    restarting: {
      after: { restartDelay: { target: 'running', actions: ['restarted', 'restartTasks'] } },
      on: {
        // Another failure while waiting to restart: the strategy counts it (Flink notifies it of
        // every failure), and the restart covers it — later if its backoff ends later.
        TASK_FAILED: { actions: 'recordCause' },
        HANDLE_FAILURE: [
          { guard: 'postpones', target: 'restarting', reenter: true, actions: 'handle' },
          { guard: 'canRestart', actions: 'handle' },
          { target: 'failed', actions: 'recordNoRestartLeft' },
        ],
        LOCAL_FAILURE: [
          { guard: 'canRestart', actions: 'handleLocal' },
          { target: 'failed', actions: ['recordCause', 'recordNoRestartLeft'] },
        ],
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
