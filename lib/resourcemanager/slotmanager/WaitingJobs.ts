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
import { describeWaitReason, sameWaitReason, type WaitReason } from './WaitReason.js';

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

/** How many distinct reasons a check keeps to give the next check's equal ones (ReasonsSeen). */
const REASONS_KEPT = 16;

export class WaitingJobs {
  readonly #o: WaitingJobsOptions;
  readonly #waits = new Map<JobID, JobWait>();
  readonly #deadlines: DeadlineScheduler<JobID>;
  /** The last check's distinct reasons. */
  #reasons: readonly WaitReason[] = [];

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
    const seen = new ReasonsSeen(this.#reasons);
    for (const outcome of outcomes) {
      const { demand } = outcome;
      const waiting = outcome.onWorkers + outcome.unfulfilled;
      if (waiting === 0 || outcome.reason === undefined) continue;
      const requirements = byJob.get(demand.jobId);
      const previous = this.#waits.get(demand.jobId);
      const reason = seen.canonical(outcome.reason);
      // What the job waited for at the last check, when it is the same: kept as it was (a check of many waiting jobs
      // then makes no new object for those that wait as before).
      const before = previous?.requirements[requirements?.length ?? 0];
      const requirement =
        before !== undefined &&
        before.resourceProfile.key === demand.profile.key &&
        before.missing === waiting &&
        before.onWorkers === outcome.onWorkers &&
        before.reason === reason
          ? before
          : {
              resourceProfile: demand.profile,
              missing: waiting,
              onWorkers: outcome.onWorkers,
              reason,
              since: previous?.since ?? now,
            };
      if (requirements === undefined) byJob.set(demand.jobId, [requirement]);
      else requirements.push(requirement);
    }
    this.#reasons = seen.kept;
    if (this.#waits.size > 0) for (const jobId of [...this.#waits.keys()]) if (!byJob.has(jobId)) this.forget(jobId);
    for (const [jobId, requirements] of byJob) {
      const previous = this.#waits.get(jobId);
      if (previous !== undefined && sameRequirements(requirements, previous.requirements)) continue;
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
    this.#reasons = [];
  }
}

/**
 * A check's reasons, each replaced by an equal one of the last check's (or of this check's) when there is one: jobs
 * that wait for the same thing then hold one reason object, and comparing a job's reasons with the last check's is
 * `===` (sameWaitReason's first step) instead of a walk through both. A check of a thousand waiting jobs compares a few
 * reasons, not a thousand. The strategy gives the jobs of one profile the same object already (UntakenProfiles); the
 * distinct ones are few, and past REASONS_KEPT a reason is kept as it came.
 */
class ReasonsSeen {
  readonly kept: WaitReason[] = [];
  readonly #canonical = new Map<WaitReason, WaitReason>();

  constructor(private readonly before: readonly WaitReason[]) {}

  canonical(reason: WaitReason): WaitReason {
    let known = this.#canonical.get(reason);
    if (known !== undefined) return known;
    known =
      this.kept.find((r) => sameWaitReason(r, reason)) ?? this.before.find((r) => sameWaitReason(r, reason)) ?? reason;
    this.#canonical.set(reason, known);
    if (this.kept.length < REASONS_KEPT && !this.kept.includes(known)) this.kept.push(known);
    return known;
  }
}

/** Whether the two lists hold the very same requirement objects (record keeps those that did not change). */
function sameRequirements(now: readonly WaitingRequirement[], before: readonly WaitingRequirement[]): boolean {
  if (now.length !== before.length) return false;
  for (let i = 0; i < now.length; i++) if (now[i] !== before[i]) return false;
  return true;
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
