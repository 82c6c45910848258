/**
 * SlotManager (seeds 000 and 003): the ResourceManager's matchmaker, as a statechart of its
 * lifecycle and of its requirement checks. The slots themselves are plain records (100,000 of them
 * must stay cheap); this machine decides *when* the coordinator looks at them.
 *
 *   suspended ──START──▶ started.idle ──REQUIREMENTS_CHANGED──▶ started.checkScheduled
 *       ▲                     ▲                                     │ (more changes: absorbed)
 *       │                     ├──── after requirementCheckDelay: checkResourceRequirements
 *       │                     └──── at once if isImmediate (delay 0): checkResourceRequirements
 *       └──────────────────SUSPEND (from anywhere in started)───────┘
 *
 * Changes arriving while a check is scheduled are coalesced into that one check (Flink's
 * slotmanager.requirement-check.delay). With a delay of 0 (`isImmediate`) checkScheduled is left at
 * once, the check running inside the change's own step. After each check the coordinator reports a
 * summary (CHECKED) that an inspector can show: how many slots were placed, how many wait and why;
 * it may report a run of checks in one CHECKED (`checks`: how many; the summary is the last one's).
 */
import { assign, setup } from 'xstate';

export interface RequirementCheckSummary {
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
          on: { REQUIREMENTS_CHANGED: { target: 'checkScheduled' } },
        },
        checkScheduled: {
          always: { guard: 'isImmediate', target: 'idle', actions: 'checkResourceRequirements' },
          after: { requirementCheckDelay: { target: 'idle', actions: 'checkResourceRequirements' } },
        },
      },
    },
  },
});
