/**
 * A JobManager's part in its cluster's leader election (Flink's LeaderElectionService with a lease,
 * as its Kubernetes HA services hold one): it contends for the cluster's lease, leads while it renews
 * it, and stands by otherwise. The lease is a record in the cluster's store whose sequence at claim
 * is the leadership's fencing token; it lapses `leaseDurationMs` after its last renewal.
 *
 *   contending ──CLAIMED──▶ leading ──RENEWED──▶ leading (its renew deadline starts again)
 *     ▲   │ claiming ──REFUSED / CLAIM_FAILED──▶ waiting ──after retryPeriod, or RELEASED──▶ claiming
 *     │   │
 *     │   leading ──TAKEN (another holds the lease) | FENCED (a newer token was seen)
 *     │            | after renewDeadline since the last renewal────────────────────┐
 *     └─────────────────────────────────────────────────────────────────────────────┘ (revoke)
 *   any ──CLOSE──▶ closed (release, when it led)
 *
 * A leader renews every `retryPeriodMs`; when it could not renew for `renewDeadlineMs`
 * (< leaseDurationMs) it steps down on its own, before a contender could claim the lapsed lease:
 * two leaders never act at once as long as clocks run at the same rate. The deadline is measured from
 * when the last successful renewal was sent (RENEWED carries its age), not when its answer came.
 *
 * Pure: the effects are the named actions `claim`, `renew`, `grant`, `revoke` and `release`, no-ops
 * here (LeaderElection.ts provides them); delays run on the actor's clock.
 */
import { assign, setup } from 'xstate';

export interface LeaderElectionInput {
  /** How long the lease lasts unrenewed (the store's TTL): a contender claims it once it lapsed. */
  readonly leaseDurationMs: number;
  /** A leader that could not renew for this long steps down (< leaseDurationMs). */
  readonly renewDeadlineMs: number;
  /** How often a leader renews and a contender tries to claim. */
  readonly retryPeriodMs: number;
}

export interface LeaderElectionContext extends LeaderElectionInput {
  /** The fencing token of our leadership (the claim's sequence), or null while not leading. */
  readonly token: number | null;
  /** How old the last successful renewal (or the claim) was when its answer came, in ms. */
  readonly renewalAgeMs: number;
  /** Why we last stopped leading (null before that ever happened). */
  readonly revokedBecause: string | null;
}

export type LeaderElectionEvent =
  /** Our claim took the lapsed (or released) lease: `token` is its sequence, `ageMs` how long ago it was sent. */
  | { type: 'CLAIMED'; token: number; ageMs: number }
  /** The lease is held by another. */
  | { type: 'REFUSED' }
  /** The claim could not be made (the store out of reach). */
  | { type: 'CLAIM_FAILED'; error: string }
  /** The lease's holder let go of it: claim now, not at the next retry. */
  | { type: 'RELEASED' }
  /** Our renewal was written; sent `ageMs` ago. */
  | { type: 'RENEWED'; ageMs: number }
  /** A renewal could not be made (the store out of reach): the deadline keeps running. */
  | { type: 'RENEW_FAILED'; error: string }
  /** The lease is another's now. */
  | { type: 'TAKEN'; by: string }
  /** A message carried a fencing token newer than ours: another leads. */
  | { type: 'FENCED'; token: number }
  | { type: 'CLOSE' };

export const leaderElectionMachine = setup({
  types: {
    context: {} as LeaderElectionContext,
    events: {} as LeaderElectionEvent,
    input: {} as LeaderElectionInput,
  },
  delays: {
    retryPeriod: ({ context }) => context.retryPeriodMs,
    /** What is left of the renew deadline since the last renewal was sent. */
    renewDeadline: ({ context }) => Math.max(0, context.renewDeadlineMs - context.renewalAgeMs),
  },
  actions: {
    /** Effect: try to take the lease (answers CLAIMED, REFUSED or CLAIM_FAILED). */
    claim: () => {},
    /** Effect: renew the lease (answers RENEWED, RENEW_FAILED or TAKEN). */
    renew: () => {},
    /** Effect: we lead with `context.token`; the leader's services start. */
    grant: () => {},
    /** Effect: we no longer lead (`context.revokedBecause`); the leader's services stop at once. */
    revoke: () => {},
    /** Effect: let go of the lease we hold (only ours). */
    release: () => {},
    recordClaim: assign(({ event }) => {
      const claimed = event as Extract<LeaderElectionEvent, { type: 'CLAIMED' }>;
      return { token: claimed.token, renewalAgeMs: claimed.ageMs, revokedBecause: null };
    }),
    recordRenewal: assign({
      renewalAgeMs: ({ event }) => (event as Extract<LeaderElectionEvent, { type: 'RENEWED' }>).ageMs,
    }),
    recordRevocation: assign({
      revokedBecause: ({ context, event }) => {
        switch (event.type) {
          case 'TAKEN':
            return `another JobManager (${event.by}) holds the lease`;
          case 'FENCED':
            return `a message carried fencing token ${event.token}, newer than ours (${context.token})`;
          case 'CLOSE':
            return 'the JobManager is closing';
          default:
            return `the lease could not be renewed within ${context.renewDeadlineMs} ms`;
        }
      },
    }),
    forgetToken: assign({ token: null }),
  },
  guards: {
    /** A token newer than the one we lead with. */
    newerToken: ({ context, event }) =>
      context.token !== null && (event as Extract<LeaderElectionEvent, { type: 'FENCED' }>).token > context.token,
  },
}).createMachine({
  id: 'leaderElection',
  context: ({ input }) => ({ ...input, token: null, renewalAgeMs: 0, revokedBecause: null }),
  initial: 'contending',
  on: {
    CLOSE: '.closed',
  },
  states: {
    contending: {
      initial: 'claiming',
      states: {
        claiming: {
          entry: 'claim',
          on: {
            CLAIMED: { target: '#leaderElection.leading', actions: 'recordClaim' },
            REFUSED: 'waiting',
            CLAIM_FAILED: 'waiting',
          },
        },
        waiting: {
          after: { retryPeriod: 'claiming' },
          on: { RELEASED: 'claiming' },
        },
      },
    },
    leading: {
      type: 'parallel',
      entry: 'grant',
      exit: ['recordRevocation', 'revoke', 'forgetToken'],
      on: {
        TAKEN: '#leaderElection.contending',
        FENCED: { guard: 'newerToken', target: '#leaderElection.contending' },
        CLOSE: { target: '#leaderElection.closed', actions: 'release' },
      },
      states: {
        lease: {
          initial: 'held',
          states: {
            held: {
              after: { renewDeadline: '#leaderElection.contending' },
              on: { RENEWED: { target: 'held', reenter: true, actions: 'recordRenewal' } },
            },
          },
        },
        renewal: {
          initial: 'scheduled',
          states: {
            scheduled: {
              after: { retryPeriod: { target: 'scheduled', reenter: true, actions: 'renew' } },
            },
          },
        },
      },
    },
    closed: { type: 'final' },
  },
});
