/**
 * The jobs whose declared requirements wait after a check, what they wait for and why, and their
 * deadlines: a job is told (notEnoughResourcesAvailable) when it waits for something new or for a
 * new reason, and once it has waited slot.request.timeout (resourceRequirementsTimedOut, Beyond
 * Flink: a reason instead of a bare timeout). Deadlines keyed by JobID.
 */
import type { Clock } from '../../core/clock.js';
import { DeadlineScheduler } from '../../core/DeadlineScheduler.js';
import type { JobID } from '../../core/ids.js';
import type { DemandOutcome } from './ResourceAllocationStrategy.js';
import type { WaitingRequirement } from './ResourceEventListener.js';
import { describeWaitReason, sameWaitReason } from './WaitReason.js';

interface JobWait {
  readonly since: number;
  requirements: WaitingRequirement[];
  timedOut: boolean;
}

/** A declared requirement that waits, and why (FineGrainedSlotManager.getPendingRequests). */
export type RequirementInfo = {
  readonly kind: 'requirement';
  readonly jobId: JobID;
  readonly description: string;
} & WaitingRequirement;

export interface WaitingJobsOptions {
  readonly clock: Clock;
  /** slot.request.timeout (ms). */
  readonly timeoutMs: number;
  /** The job waits for something new, or for a new reason, and some of it for no worker. */
  readonly notEnoughResources: (jobId: JobID, requirements: readonly WaitingRequirement[]) => void;
  /** The job has waited `timeoutMs`. */
  readonly timedOut: (jobId: JobID, requirements: readonly WaitingRequirement[]) => void;
}

export class WaitingJobs {
  readonly #o: WaitingJobsOptions;
  readonly #waits = new Map<JobID, JobWait>();
  readonly #deadlines: DeadlineScheduler<JobID>;

  constructor(options: WaitingJobsOptions) {
    this.#o = options;
    this.#deadlines = new DeadlineScheduler(options.clock, (jobId) => {
      const wait = this.#waits.get(jobId);
      if (wait === undefined || wait.timedOut) return;
      wait.timedOut = true;
      options.timedOut(jobId, wait.requirements);
    });
  }

  /** The outcomes of a check's declared demands (those of requests excluded): who waits now, and who no longer does. */
  record(outcomes: readonly DemandOutcome[]): void {
    const now = this.#o.clock.now();
    const byJob = new Map<JobID, WaitingRequirement[]>();
    for (const outcome of outcomes) {
      const { demand } = outcome;
      const waiting = outcome.onWorkers + outcome.unfulfilled;
      if (waiting === 0 || outcome.reason === undefined) continue;
      const since = this.#waits.get(demand.jobId)?.since ?? now;
      byJob.set(demand.jobId, [
        ...(byJob.get(demand.jobId) ?? []),
        {
          resourceProfile: demand.profile,
          missing: waiting,
          onWorkers: outcome.onWorkers,
          reason: outcome.reason,
          since,
        },
      ]);
    }
    for (const jobId of this.#waits.size === 0 ? [] : [...this.#waits.keys()])
      if (!byJob.has(jobId)) this.forget(jobId);
    for (const [jobId, requirements] of byJob) {
      const previous = this.#waits.get(jobId);
      if (previous === undefined) this.#deadlines.schedule(jobId, now + this.#o.timeoutMs);
      this.#waits.set(jobId, { since: previous?.since ?? now, requirements, timedOut: previous?.timedOut ?? false });
      const unfulfilled = requirements.some((r) => r.missing > r.onWorkers);
      if (unfulfilled && !sameWaiting(requirements, previous?.requirements))
        this.#o.notEnoughResources(jobId, requirements);
    }
  }

  /** The job no longer waits (it ended, or its requirements were placed). */
  forget(jobId: JobID): void {
    this.#waits.delete(jobId);
    this.#deadlines.cancel(jobId);
  }

  infos(): RequirementInfo[] {
    const out: RequirementInfo[] = [];
    for (const [jobId, wait] of this.#waits) {
      for (const requirement of wait.requirements)
        out.push({ kind: 'requirement', jobId, description: describeWaitReason(requirement.reason), ...requirement });
    }
    return out;
  }

  clear(): void {
    this.#waits.clear();
    this.#deadlines.clear();
  }
}

/** Whether a job waits for the same slots for the same reasons as at the last check (its start aside). */
function sameWaiting(now: readonly WaitingRequirement[], before: readonly WaitingRequirement[] | undefined): boolean {
  if (before === undefined || before.length !== now.length) return false;
  return now.every((r, i) => {
    const b = before[i]!;
    return (
      r.resourceProfile.key === b.resourceProfile.key &&
      r.missing === b.missing &&
      r.onWorkers === b.onWorkers &&
      sameWaitReason(r.reason, b.reason)
    );
  });
}
