/**
 * Which TaskExecutor a slot goes to when several can take it. Each policy is a total order over
 * executors (lower first), so every choice is deterministic: ties always fall back to registration
 * order. The index keeps candidates sorted by the cluster's policy, so picking is O(log n).
 *
 * - `first-fit`: the earliest-registered executor that fits (Flink's AnyMatching, made deterministic).
 * - `spread`: the least-utilised executor (Flink's LeastUtilization; `taskmanager.load-balance.mode: slots`).
 * - `pack`: the most-utilised executor that still fits, so that whole executors stay empty and can be released.
 *
 * A preference for a host or an executor (seed 000's affinity to the input's node) is applied on
 * top of any policy by the index: the preferred candidates first, then everyone.
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

const ORDERS: Record<SlotMatchingPolicy, CandidateOrder> = {
  'first-fit': (a, b) => a.seq - b.seq,
  spread: (a, b) => a.utilization - b.utilization || a.seq - b.seq,
  pack: (a, b) => b.utilization - a.utilization || a.seq - b.seq,
};

/**
 * The order as a number, for the index's heaps: 1 when lower utilisation goes first (spread), -1
 * when higher does (pack), 0 when utilisation does not count (first fit); registration order breaks
 * ties. The heaps compare inline with it (precedes) rather than calling the order: a call site that
 * has seen three orders does not inline any, and a comparison per heap step was then a call.
 */
export function utilizationSign(order: CandidateOrder): -1 | 0 | 1 {
  return order === ORDERS.spread ? 1 : order === ORDERS.pack ? -1 : 0;
}

/** Whether `a` goes before `b` in the order `utilizationSign` describes (ties: registration order). */
export function precedes(a: ScoredCandidate, b: ScoredCandidate, sign: number): boolean {
  if (sign !== 0) {
    const ua = a.utilization;
    const ub = b.utilization;
    if (ua !== ub) return sign > 0 ? ua < ub : ua > ub;
  }
  return a.seq < b.seq;
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
