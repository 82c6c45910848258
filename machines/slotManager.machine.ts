/**
 * SlotManager (seeds 000 and 003): the ResourceManager's matchmaker, as a statechart of its
 * lifecycle and of its requirement checks. The slots themselves are plain records (100,000 of them
 * must stay cheap); this machine decides *when* the coordinator looks at them.
 *
 *   suspended ──START──▶ started.idle ──REQUIREMENTS_CHANGED──▶ started.checkScheduled
 *       ▲                     ▲                                     │ (more changes: absorbed)
 *       │                     └──── after requirementCheckDelay: checkResourceRequirements
 *       └──────────────────SUSPEND (from anywhere in started)───────┘
 *
 * Changes arriving while a check is scheduled are coalesced into that one check (Flink's
 * slotmanager.requirement-check.delay). After each check the coordinator reports a summary
 * (CHECKED) that an inspector can show: how many slots were placed, how many wait and why. With a
 * delay of 0 the coordinator runs a check per change itself and may report a run of them in one
 * CHECKED (`checks`: how many; the summary is the last one's).
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
          after: { requirementCheckDelay: { target: 'idle', actions: 'checkResourceRequirements' } },
        },
      },
    },
  },
});
