/**
 * What one requirement check leaves: the outcome of every demand and how many workers it asked
 * for; summarised for the statechart's CHECKED only when the statechart is told (RequirementCheckScheduler).
 */
import { JobID } from '../../core/ids.js';
import type { RequirementCheckSummary } from '../../../machines/slotManager.machine.js';
import type { DemandOutcome } from './ResourceAllocationStrategy.js';
import { describeWaitReason } from './WaitReason.js';

export interface CheckResult {
  readonly outcomes: readonly DemandOutcome[];
  readonly workersRequested: number;
}

/** The demands a check weighed: one outcome each (what makes the SlotManager crowded). */
export function weighedDemands(check: CheckResult): number {
  return check.outcomes.length;
}

/**
 * A check as the statechart's CHECKED shows it: the demands it weighed, slots placed, on workers, unfulfilled, and
 * why each waiting job waits.
 */
export function summarizeCheck(check: CheckResult): RequirementCheckSummary {
  const { outcomes, workersRequested } = check;
  const waiting: Record<string, string> = {};
  let placed = 0;
  let onWorkers = 0;
  let unfulfilled = 0;
  for (const o of outcomes) {
    placed += o.placed;
    onWorkers += o.onWorkers;
    unfulfilled += o.unfulfilled;
    if (o.reason !== undefined)
      waiting[
        `${JobID.short(o.demand.jobId)} ${o.demand.profile.isUnknown() ? 'default' : o.demand.profile.toString()}`
      ] = describeWaitReason(o.reason);
  }
  return { demands: weighedDemands(check), placed, onWorkers, unfulfilled, workersRequested, waiting };
}
