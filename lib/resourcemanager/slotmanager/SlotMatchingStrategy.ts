/**
 * Which TaskExecutor a slot goes to when several can take it. Each policy is a total order over
 * executors (lower first), so every choice is deterministic: ties always fall back to registration
 * order. The index keeps candidates sorted by the cluster's policy, so picking is O(log n).
 *
 * - `first-fit`: the earliest-registered executor that fits (Flink's AnyMatching, made deterministic).
 * - `spread`: the least-utilised executor (Flink's LeastUtilization; `taskmanager.load-balance.mode: slots`).
 * - `pack`: the most-utilised executor that still fits, so that whole executors stay empty and can be released.
 *
 * A preference for a host or an executor (Flink's SlotProfile preferred locations: the input's
 * node) is applied on top of any policy by the index: the preferred candidates first, then
 * everyone.
 */
import { IllegalArgumentError } from '../../core/errors.js';

export type SlotMatchingPolicy = 'first-fit' | 'spread' | 'pack';
export const SLOT_MATCHING_POLICIES: readonly SlotMatchingPolicy[] = ['first-fit', 'spread', 'pack'];

/** What the order looks at: a snapshot of an executor's score taken when it entered the index. */
export interface ScoredCandidate {
  readonly utilization: number;
  readonly seq: number;
}

export type CandidateOrder = (a: ScoredCandidate, b: ScoredCandidate) => number;

/**
 * Each policy's order as a number: 1 when lower utilisation goes first (spread), -1 when higher does
 * (pack), 0 when utilisation does not count (first fit); registration order breaks ties. The heaps
 * of the index compare inline with it (precedes) rather than calling an order: a call site that has
 * seen three orders inlines none, and a comparison per heap step was then a call.
 */
const SIGNS: Record<SlotMatchingPolicy, -1 | 0 | 1> = { 'first-fit': 0, spread: 1, pack: -1 };

/** Whether `a` goes before `b` in the order of `sign` (see SIGNS; ties: registration order). */
export function precedes(a: ScoredCandidate, b: ScoredCandidate, sign: number): boolean {
  if (sign !== 0) {
    const ua = a.utilization;
    const ub = b.utilization;
    if (ua !== ub) return sign > 0 ? ua < ub : ua > ub;
  }
  return a.seq < b.seq;
}

/** The same orders as comparators (for sorting), so that each order is written once, in precedes. */
const ORDERS = Object.fromEntries(
  SLOT_MATCHING_POLICIES.map((policy) => {
    const sign = SIGNS[policy];
    const order: CandidateOrder = (a, b) => (precedes(a, b, sign) ? -1 : precedes(b, a, sign) ? 1 : 0);
    return [policy, order];
  }),
) as Record<SlotMatchingPolicy, CandidateOrder>;
const SIGN_OF_ORDER = new Map<CandidateOrder, -1 | 0 | 1>(SLOT_MATCHING_POLICIES.map((p) => [ORDERS[p], SIGNS[p]]));

/** The sign (see SIGNS) of an order candidateOrder gave; any other function is refused. */
export function utilizationSign(order: CandidateOrder): -1 | 0 | 1 {
  const sign = SIGN_OF_ORDER.get(order);
  if (sign === undefined) {
    throw new IllegalArgumentError(
      'invalid-value',
      `order must be one of candidateOrder's orders, got another function`,
      {
        argument: 'order',
      },
    );
  }
  return sign;
}

export function candidateOrder(policy: SlotMatchingPolicy): CandidateOrder {
  const order = ORDERS[policy];
  if (order === undefined) {
    throw new IllegalArgumentError(
      'invalid-value',
      `slot matching policy must be one ` +
        `of ${SLOT_MATCHING_POLICIES.map((p) => `'${p}'`).join(', ')}, got ${JSON.stringify(policy)}`,
      {
        argument: 'policy',
      },
    );
  }
  return order;
}

/** Flink's `taskmanager.load-balance.mode`: `slots` spreads, `none` takes any fitting executor. */
export function policyForLoadBalanceMode(mode: 'none' | 'slots'): SlotMatchingPolicy {
  return mode === 'slots' ? 'spread' : 'first-fit';
}
