/**
 * SlotManager (Flink's FineGrainedSlotManager): the ResourceManager's matchmaker, as a statechart
 * of its lifecycle and of its requirement checks. The slots themselves are plain records (100,000
 * of them must stay cheap); this machine decides *when* the coordinator looks at them.
 *
 *   suspended ──START──▶ started.idle ──REQUIREMENTS_CHANGED──▶ started.checkSoon
 *       ▲                   ▲  ▲  (quiet: no check within the last delay)    │ (more changes: absorbed)
 *       │                   │  ├─ at once if isImmediateAndNotCrowded ───────┤ checkResourceRequirements
 *       │                   │  └─ after nextTurn (0 ms) if isImmediate ──────┤ checkResourceRequirements
 *       │                   │                                                │
 *       │                   │        after nextTurn (0 ms, leading edge) ────┤ checkResourceRequirements
 *       │                   │                                                ▼
 *       │                   └── after requirementCheckDelay ─────────── started.cooling
 *       │                                                                 │ ▲  REQUIREMENTS_CHANGED
 *       │                                                                 ▼ │  after requirementCheckDelay:
 *       │                                                      started.checkScheduled  checkResourceRequirements
 *       └──────────────────SUSPEND (from anywhere in started; forgets crowded)──────────────┘
 *
 *   CHECKED (anywhere in started): counts the checks, keeps the last summary, and is crowded when
 *   the delay is 0 and that check weighed more than `crowdedAbove` demands.
 *
 * A change after a quiet period (no check within the last requirementCheckDelay) is checked at
 * once, on the next turn of the clock (`nextTurn`): the other changes of the same turn join it, and
 * a job of parallelism 1 does not wait the delay for its first slot. Changes after that check and
 * within the delay are coalesced into one trailing check, requirementCheckDelay after the first of
 * them (Flink's slotmanager.requirement-check.delay), after which the delay is watched again
 * (`cooling`). So a burst of changes costs at most two checks: the leading one and the trailing one.
 *
 * With a delay of 0 (`isImmediate`) checkSoon is left at once, the check running inside the
 * change's own step — unless the SlotManager is `crowded`: a check weighs every demand that waits
 * (a job's missing slots of one profile, a slot request), so while the last one weighed more than
 * `crowdedAbove`, a change waits in checkSoon for the clock's next turn, the other changes of that
 * turn join it (a thousand jobs submitted at once, the frees the TaskExecutors' batches bring), and
 * their one check leads back to idle: with no delay there is nothing to cool down, and the next
 * change waits for the next turn again only while the checks stay crowded. Without that, n waiting
 * jobs would cost n checks of n demands each. A suspend forgets every demand, so it forgets
 * `crowded` too (a start's first check runs inside the call).
 *
 * After each check the coordinator reports a summary (CHECKED) that an inspector can show: how many
 * demands it weighed, slots placed, how many wait and why. It may report a run of checks in one
 * CHECKED (`checks`: how many; the summary is the last one's) as long as none of them would make
 * the machine crowded or not: the next change must find `crowded` as the last check left it.
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
  /** Demands a check may weigh before the changes that follow wait for the clock's next turn (delay 0). */
  readonly crowdedAbove: number;
  readonly checks: number;
  readonly lastCheck: RequirementCheckSummary | null;
  /** Delay 0 and the last check weighed more than crowdedAbove demands: a change waits for the next turn. */
  readonly crowded: boolean;
}

export interface SlotManagerInput {
  readonly requirementCheckDelay: number;
  readonly crowdedAbove: number;
}

export type SlotManagerEvent =
  | { type: 'START' }
  | { type: 'SUSPEND' }
  | { type: 'REQUIREMENTS_CHANGED' }
  /** `checks`: how many requirement checks this reports (default 1); `summary` is the last one's. */
  | { type: 'CHECKED'; summary: RequirementCheckSummary; checks?: number };

/**
 * Whether a check that weighed `demands` makes a delay-0 SlotManager crowded: the rule CHECKED applies, for a
 * coordinator that reports a run of checks in one CHECKED and must know which check changes it.
 */
export function weighsCrowded(demands: number, crowdedAbove: number): boolean {
  return demands > crowdedAbove;
}

export const slotManagerMachine = setup({
  types: {
    context: {} as SlotManagerContext,
    events: {} as SlotManagerEvent,
    input: {} as SlotManagerInput,
  },
  delays: {
    requirementCheckDelay: ({ context }) => context.requirementCheckDelay,
    /** The leading-edge check (and a crowded one): on the clock's next turn, so the changes of that turn join it. */
    nextTurn: 0,
  },
  guards: {
    /** requirementCheckDelay 0: no delay to watch after a check (a change is checked at once unless crowded). */
    isImmediate: ({ context }) => context.requirementCheckDelay === 0,
    /** requirementCheckDelay 0 and not crowded: the change is checked in its own step. */
    isImmediateAndNotCrowded: ({ context }) => context.requirementCheckDelay === 0 && !context.crowded,
  },
  actions: {
    /** Provided by the coordinator: run the ResourceAllocationStrategy and apply its plan. */
    checkResourceRequirements: () => {},
    /** Provided by the coordinator: forget every executor, slot and requirement (Flink's suspend). */
    clearState: () => {},
    recordCheck: assign(({ context, event }) => {
      if (event.type !== 'CHECKED') return {};
      return {
        checks: context.checks + (event.checks ?? 1),
        lastCheck: event.summary,
        crowded: context.requirementCheckDelay === 0 && weighsCrowded(event.summary.demands, context.crowdedAbove),
      };
    }),
    /** Nothing waits after a suspend: the first check of the next start runs inside the call. */
    forgetCrowded: assign({ crowded: false }),
  },
}).createMachine({
  id: 'slotManager',
  context: ({ input }) => ({
    requirementCheckDelay: input.requirementCheckDelay,
    crowdedAbove: input.crowdedAbove,
    checks: 0,
    lastCheck: null,
    crowded: false,
  }),
  initial: 'suspended',
  states: {
    suspended: {
      on: { START: { target: 'started' } },
    },
    started: {
      initial: 'idle',
      on: {
        SUSPEND: { target: 'suspended', actions: ['clearState', 'forgetCrowded'] },
        CHECKED: { actions: 'recordCheck' },
      },
      states: {
        idle: {
          on: { REQUIREMENTS_CHANGED: { target: 'checkSoon' } },
        },
        checkSoon: {
          always: { guard: 'isImmediateAndNotCrowded', target: 'idle', actions: 'checkResourceRequirements' },
          after: {
            nextTurn: [
              // Crowded with no delay: the turn's changes are checked together, and nothing to cool down.
              { guard: 'isImmediate', target: 'idle', actions: 'checkResourceRequirements' },
              { target: 'cooling', actions: 'checkResourceRequirements' },
            ],
          },
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
