/**
 * ResourceTracker: how many resources each job requires and has acquired (Flink's ResourceTracker
 * and DefaultResourceTracker). One {@link JobScopedResourceTracker} per job, created on the first
 * declaration or acquisition, removed when the job neither requires nor holds anything.
 *
 * Jobs iterate in the order their trackers were created (a job dropped and tracked again goes to
 * the end); Flink iterates a HashMap. Every method validates its arguments before touching any
 * state, so a call that throws IllegalArgumentError changes nothing.
 */
import { IllegalArgumentError } from '../../core/errors.js';
import { JobID } from '../../core/ids.js';
import type { ResourceProfile } from '../../core/ResourceProfile.js';
import { JobScopedResourceTracker } from './JobScopedResourceTracker.js';
import { checkResourceProfile, checkResourceRequirementList, type ResourceRequirement } from './ResourceRequirement.js';

/** The read side of a {@link ResourceTracker}: what a strategy or an inspector may look at. */
export interface ReadonlyResourceTracker {
  /** Per job with something missing, the missing requirements in declaration order; jobs in tracking order. */
  getMissingResources(): Map<JobID, readonly ResourceRequirement[]>;
  /** The job's acquired resources by profile (assigned + excess); empty for an untracked job. */
  getAcquiredResources(jobId: JobID): ResourceRequirement[];
  /** The job's current requirements as declared (summed per profile); empty for an untracked job. */
  getRequiredResources(jobId: JobID): ResourceRequirement[];
  /** Whether the job requires nothing; true for an untracked job. */
  isRequirementEmpty(jobId: JobID): boolean;
  /** Whether no job is tracked. */
  isEmpty(): boolean;
  /** The tracked jobs, in tracking order. */
  jobs(): JobID[];
}

/** Tracks required and acquired resources per job (Flink's ResourceTracker). */
export interface ResourceTracker extends ReadonlyResourceTracker {
  /**
   * Replaces the job's requirements (a declaration, not a delta). Resources no longer needed
   * become excess; nothing is freed. An empty list drops the job once it holds nothing.
   */
  notifyResourceRequirements(jobId: JobID, requirements: readonly ResourceRequirement[]): void;
  /** The job acquired one resource of `resourceProfile` (a concrete profile, never UNKNOWN). */
  notifyAcquiredResource(jobId: JobID, resourceProfile: ResourceProfile): void;
  /**
   * The job acquired `count` (≥ 1) resources of `resourceProfile`: what `count` calls of notifyAcquiredResource do, at
   * once.
   */
  notifyAcquiredResources(jobId: JobID, resourceProfile: ResourceProfile, count: number): void;
  /**
   * The job lost one resource of `resourceProfile`. Callers must report only what the job acquired:
   * a profile a tracked job does not hold throws IllegalStateError. An untracked job is ignored.
   */
  notifyLostResource(jobId: JobID, resourceProfile: ResourceProfile): void;
  /** Forgets every job. */
  clear(): void;
}

/**
 * The JobID checkJobId passed last: a job's slots arrive by the thousand, and its ID need not be matched against the
 * pattern for each.
 */
let lastValidJobId: JobID | undefined;

function checkJobId(jobId: unknown): JobID {
  if (jobId === lastValidJobId) return jobId as JobID;
  if (!JobID.is(jobId)) {
    const shown = typeof jobId === 'string' ? JSON.stringify(jobId) : String(jobId);
    throw new IllegalArgumentError(
      'invalid-type',
      `jobId must be a JobID (32 lower-case hex characters), got ${shown}`,
      { argument: 'jobId', value: shown },
    );
  }
  lastValidJobId = jobId;
  return jobId;
}

/** The default {@link ResourceTracker}: a map JobID → {@link JobScopedResourceTracker}. */
export class DefaultResourceTracker implements ResourceTracker {
  readonly #trackers = new Map<JobID, JobScopedResourceTracker>();

  notifyResourceRequirements(jobId: JobID, requirements: readonly ResourceRequirement[]): void {
    checkJobId(jobId);
    checkResourceRequirementList(requirements, 'requirements', 0);
    this.#getOrCreate(jobId).notifyResourceRequirements(requirements);
    // Flink checks only after an empty list; checking always also drops a job whose list held
    // nothing but zero counts. With positive counts the two agree.
    this.#removeIfEmpty(jobId);
  }

  notifyAcquiredResource(jobId: JobID, resourceProfile: ResourceProfile): void {
    checkJobId(jobId);
    checkResourceProfile(resourceProfile, 'resourceProfile', { known: true });
    // A resource of a job that declared nothing is tracked too, as excess.
    this.#getOrCreate(jobId).notifyAcquiredResource(resourceProfile);
  }

  notifyAcquiredResources(jobId: JobID, resourceProfile: ResourceProfile, count: number): void {
    checkJobId(jobId);
    checkResourceProfile(resourceProfile, 'resourceProfile', { known: true });
    if (!Number.isSafeInteger(count) || count < 1)
      throw new IllegalArgumentError('invalid-value', `count must be a positive safe integer, got ${String(count)}`, {
        argument: 'count',
        value: String(count),
      });
    this.#getOrCreate(jobId).notifyAcquiredResources(resourceProfile, count);
  }

  notifyLostResource(jobId: JobID, resourceProfile: ResourceProfile): void {
    checkJobId(jobId);
    checkResourceProfile(resourceProfile, 'resourceProfile', { known: true });
    const tracker = this.#trackers.get(jobId);
    // As Flink: during shutdown the tracker is cleared before TaskExecutors go, and their slots'
    // losses must not count (nor start new allocations).
    if (tracker === undefined) return;
    tracker.notifyLostResource(resourceProfile);
    this.#removeIfEmpty(jobId);
  }

  clear(): void {
    this.#trackers.clear();
  }

  getMissingResources(): Map<JobID, readonly ResourceRequirement[]> {
    const missing = new Map<JobID, readonly ResourceRequirement[]>();
    for (const [jobId, tracker] of this.#trackers) {
      const list = tracker.getMissingResources();
      if (list.length > 0) missing.set(jobId, list);
    }
    return missing;
  }

  getAcquiredResources(jobId: JobID): ResourceRequirement[] {
    return this.#trackers.get(checkJobId(jobId))?.getAcquiredResources() ?? [];
  }

  getRequiredResources(jobId: JobID): ResourceRequirement[] {
    return this.#trackers.get(checkJobId(jobId))?.getRequiredResources() ?? [];
  }

  isRequirementEmpty(jobId: JobID): boolean {
    return this.#trackers.get(checkJobId(jobId))?.isRequirementEmpty() ?? true;
  }

  isEmpty(): boolean {
    return this.#trackers.size === 0;
  }

  jobs(): JobID[] {
    return [...this.#trackers.keys()];
  }

  #getOrCreate(jobId: JobID): JobScopedResourceTracker {
    let tracker = this.#trackers.get(jobId);
    if (tracker === undefined) {
      tracker = new JobScopedResourceTracker(jobId);
      this.#trackers.set(jobId, tracker);
    }
    return tracker;
  }

  #removeIfEmpty(jobId: JobID): void {
    if (this.#trackers.get(jobId)?.isEmpty() === true) this.#trackers.delete(jobId);
  }
}
