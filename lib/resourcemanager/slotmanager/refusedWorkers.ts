/**
 * The plan's outcomes once the ResourceAllocator refused some of the workers it asked for (Flink's
 * FineGrainedSlotManager marks the jobs allocated on a failed pending worker unfulfillable): the
 * slots planned on a refused worker no longer wait for a worker, they cannot be placed, and the
 * outcome says so — so that the job hears `notEnoughResourcesAvailable` at once and
 * getPendingRequests tells why, instead of "waiting for 1 worker to start and register".
 */
import type { DemandOutcome, PlannedWorker } from './ResourceAllocationStrategy.js';

/** `outcomes` with every slot planned on a `refused` worker moved from `onWorkers` to `unfulfilled`. */
export function withRefusedWorkers(
  outcomes: readonly DemandOutcome[],
  refused: readonly PlannedWorker[],
): readonly DemandOutcome[] {
  if (refused.length === 0) return outcomes;
  const moved = new Map<DemandOutcome, { slots: number; workers: Set<PlannedWorker> }>();
  for (const worker of refused) {
    for (const [jobId, counter] of worker.allocations) {
      for (const [profile, count] of counter.entries()) {
        // The worker holds effective profiles (UNKNOWN became its default slot): find the demands they came from, in
        // plan order.
        let left = count;
        for (const outcome of outcomes) {
          if (left === 0) break;
          const { demand } = outcome;
          const effective = demand.profile.isUnknown() ? worker.spec.defaultSlotResourceProfile : demand.profile;
          if (demand.jobId !== jobId || !effective.equals(profile)) continue;
          const entry = moved.get(outcome) ?? { slots: 0, workers: new Set<PlannedWorker>() };
          const n = Math.min(left, outcome.onWorkers - entry.slots);
          if (n <= 0) continue;
          entry.slots += n;
          entry.workers.add(worker);
          moved.set(outcome, entry);
          left -= n;
        }
      }
    }
  }
  return outcomes.map((outcome) => {
    const entry = moved.get(outcome);
    if (entry === undefined) return outcome;
    return {
      ...outcome,
      onWorkers: outcome.onWorkers - entry.slots,
      unfulfilled: outcome.unfulfilled + entry.slots,
      reason: { kind: 'worker-start-refused', workers: entry.workers.size },
    };
  });
}
