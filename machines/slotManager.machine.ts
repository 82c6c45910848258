/**
 * SlotManager (Flink's FineGrainedSlotManager): the ResourceManager's matchmaker, as a statechart
 * of its lifecycle and of its requirement checks. The slots themselves are plain records (100,000
 * of them must stay cheap); this machine decides *when* the coordinator looks at them.
 *
 *   suspended ──START──▶ started.idle ──REQUIREMENTS_CHANGED──▶ started.checkSoon
 *       ▲                    ▲  (quiet: no check within the last delay)      │ (more changes: absorbed)
 *       │                    │             at once if isImmediate (delay 0) ─┤ checkResourceRequirements
 *       │                    │          after nextTurn (0 ms, leading edge) ─┤ checkResourceRequirements
 *       │                    │                                               ▼
 *       │                    └── after requirementCheckDelay ─── started.cooling
 *       │                                                          │ ▲  REQUIREMENTS_CHANGED
 *       │                                                          ▼ │  after requirementCheckDelay:
 *       │                                               started.checkScheduled  checkResourceRequirements
 *       └──────────────────SUSPEND (from anywhere in started)──────────────────────────┘
 *
 * A change after a quiet period (no check within the last requirementCheckDelay) is checked at
 * once, on the next turn of the clock (`nextTurn`): the other changes of the same turn join it, and
 * a job of parallelism 1 does not wait the delay for its first slot. Changes after that check and
 * within the delay are coalesced into one trailing check, requirementCheckDelay after the first of
 * them (Flink's slotmanager.requirement-check.delay), after which the delay is watched again
 * (`cooling`). So a burst of changes costs at most two checks: the leading one and the trailing one.
 * With a delay of 0 (`isImmediate`) checkSoon is left at once, the check running inside the
 * change's own step. After each check the coordinator reports a summary (CHECKED) that an inspector
 * can show: how many demands it weighed, slots placed, how many wait and why; it may report a run
 * of checks in one CHECKED (`checks`: how many; the summary is the last one's).
 */
import { assign, setup } from 'xstate';

export interface RequirementCheckSummary {
  /** Demands this check weighed: a job's missing slots of one profile, or a slot request, each waiting for slots. */
  readonly demands: number;
  /** Slots placed on registered executors by this check. */
  readonly placed: number;
  /** Slots waiting for pending or new workers. */
  readonly onWorkers: number;
  /** Slots that cannot be placed now. */
  readonly unfulfilled: number;
  /** Workers asked for by this check. */
  readonly workersRequested: number;
  /** Per waiting job: a readable reason. */
  readonly waiting: Readonly<Record<string, string>>;
}

export interface SlotManagerContext {
  /** ms; 0 runs the check at once. */
  readonly requirementCheckDelay: number;
  readonly checks: number;
  readonly lastCheck: RequirementCheckSummary | null;
}

export type SlotManagerEvent =
  | { type: 'START' }
  | { type: 'SUSPEND' }
  | { type: 'REQUIREMENTS_CHANGED' }
  /** `checks`: how many requirement checks this reports (default 1); `summary` is the last one's. */
  | { type: 'CHECKED'; summary: RequirementCheckSummary; checks?: number };

export const slotManagerMachine = setup({
  types: {
    context: {} as SlotManagerContext,
    events: {} as SlotManagerEvent,
    input: {} as { requirementCheckDelay: number },
  },
  delays: {
    requirementCheckDelay: ({ context }) => context.requirementCheckDelay,
    /** The leading-edge check: on the clock's next turn, so the changes of the same turn join it. */
    nextTurn: 0,
  },
  guards: {
    /** requirementCheckDelay 0: a change is checked at once, in its own step. */
    isImmediate: ({ context }) => context.requirementCheckDelay === 0,
  },
  actions: {
    /** Provided by the coordinator: run the ResourceAllocationStrategy and apply its plan. */
    checkResourceRequirements: () => {},
    /** Provided by the coordinator: forget every executor, slot and requirement (Flink's suspend). */
    clearState: () => {},
    recordCheck: assign({
      checks: ({ context, event }) => context.checks + (event.type === 'CHECKED' ? (event.checks ?? 1) : 1),
      lastCheck: ({ event }) => (event.type === 'CHECKED' ? event.summary : null),
    }),
  },
}).createMachine({
  id: 'slotManager',
  context: ({ input }) => ({ requirementCheckDelay: input.requirementCheckDelay, checks: 0, lastCheck: null }),
  initial: 'suspended',
  states: {
    suspended: {
      on: { START: { target: 'started' } },
    },
    started: {
      initial: 'idle',
      on: {
        SUSPEND: { target: 'suspended', actions: 'clearState' },
        CHECKED: { actions: 'recordCheck' },
      },
      states: {
        idle: {
          on: { REQUIREMENTS_CHANGED: { target: 'checkSoon' } },
        },
        checkSoon: {
          always: { guard: 'isImmediate', target: 'idle', actions: 'checkResourceRequirements' },
          after: { nextTurn: { target: 'cooling', actions: 'checkResourceRequirements' } },
        },
        cooling: {
          on: { REQUIREMENTS_CHANGED: { target: 'checkScheduled' } },
          after: { requirementCheckDelay: { target: 'idle' } },
        },
        checkScheduled: {
          after: { requirementCheckDelay: { target: 'cooling', actions: 'checkResourceRequirements' } },
        },
      },
    },
  },
});
