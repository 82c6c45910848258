/**
 * The resources of one job (Flink's JobScopedResourceTracker): what it requires, which acquired
 * resources fulfil which requirement, and the excess that fulfils none.
 *
 * Every acquired resource is in exactly one place: assigned to a requirement in the mapping, or
 * in `excess`. Requirements are replaced wholesale by each declaration; acquired resources are
 * never freed by the tracker, only moved between those two places. Everything iterates in
 * insertion order (Flink: hash order), so the same calls give the same answers.
 */
import { IllegalArgumentError, IllegalStateError } from '../../core/errors.js';
import { JobID } from '../../core/ids.js';
import { ResourceCounter } from '../../core/ResourceCounter.js';
import type { ResourceProfile } from '../../core/ResourceProfile.js';
import { checkResourceProfile, checkResourceRequirementList, ResourceRequirement } from './ResourceRequirement.js';
import { ResourceToRequirementMapping } from './ResourceToRequirementMapping.js';

/**
 * Flink's DefaultRequirementMatcher: the requirement an acquired `resource` should fulfil, or
 * undefined. First an exactly equal requirement with room; otherwise the first requirement, in the
 * counter's insertion order, that `resource.isMatching` (equal, or UNKNOWN) and has room. "Room"
 * means its count exceeds `numAssigned(requirement)`. Pure: reads only its arguments.
 */
export function matchRequirement(
  resource: ResourceProfile,
  requirements: ResourceCounter,
  numAssigned: (requirement: ResourceProfile) => number,
): ResourceProfile | undefined {
  if (requirements.getResourceCount(resource) > numAssigned(resource)) return resource;
  for (const [requirement, required] of requirements.entries()) {
    if (resource.isMatching(requirement) && required > numAssigned(requirement)) return requirement;
  }
  return undefined;
}

const NOTHING_MISSING: readonly ResourceRequirement[] = Object.freeze([]);

/** Tracks required, assigned and excess resources for a single job. */
export class JobScopedResourceTracker {
  readonly jobId: JobID;
  readonly #mapping = new ResourceToRequirementMapping();
  #requirements = ResourceCounter.empty();
  #excess = ResourceCounter.empty();
  /**
   * getMissingResources' answer until something changes (every requirement check asks every job, and a job waiting
   * for its slots changes only when one comes): null when it must be worked out again.
   */
  #missing: readonly ResourceRequirement[] | null = null;

  constructor(jobId: JobID) {
    if (!JobID.is(jobId)) {
      throw new IllegalArgumentError(
        'invalid-type',
        `jobId must be a JobID (32 lower-case hex characters), got ${String(jobId)}`,
        { argument: 'jobId' },
      );
    }
    this.jobId = jobId;
  }

  /**
   * Replaces the requirements with `requirements` (a profile listed twice is summed; a count of 0
   * is ignored). Resources assigned beyond the new needs become excess; excess then fills any gap.
   */
  notifyResourceRequirements(requirements: readonly ResourceRequirement[]): void {
    checkResourceRequirementList(requirements, 'requirements', 0);
    this.#missing = null;
    this.#requirements = ResourceCounter.fromEntries(
      requirements.map((r) => [r.resourceProfile, r.numberOfRequiredSlots] as const),
    );
    this.#findExcessResources();
    this.#tryAssigningExcessResources();
  }

  /** Assigns a newly acquired resource (a concrete profile) to a matching requirement, else to excess. */
  notifyAcquiredResource(resource: ResourceProfile): void {
    checkResourceProfile(resource, 'resourceProfile', { known: true });
    this.#missing = null;
    const requirement = this.#match(resource);
    if (requirement !== undefined) this.#mapping.incrementCount(requirement, resource, 1);
    else this.#excess = this.#excess.add(resource, 1);
  }

  /**
   * What `count` calls of notifyAcquiredResource do: each would go to the requirement it matches
   * until that one has no room left, then to the next it matches, then to excess; so the resources
   * go there a run at a time.
   */
  notifyAcquiredResources(resource: ResourceProfile, count: number): void {
    checkResourceProfile(resource, 'resourceProfile', { known: true });
    this.#missing = null;
    let left = count;
    while (left > 0) {
      const requirement = this.#match(resource);
      if (requirement === undefined) {
        this.#excess = this.#excess.add(resource, left);
        return;
      }
      const n = Math.min(
        left,
        this.#requirements.getResourceCount(requirement) - this.#mapping.getNumFulfillingResources(requirement),
      );
      this.#mapping.incrementCount(requirement, resource, n);
      left -= n;
    }
  }

  /**
   * Forgets one resource of `resource`'s profile: from excess if there is one, else from the first
   * requirement it fulfils, after which excess may fill the gap. Callers must report only what they
   * acquired: a profile this job does not hold throws IllegalStateError and changes nothing.
   */
  notifyLostResource(resource: ResourceProfile): void {
    checkResourceProfile(resource, 'resourceProfile', { known: true });
    this.#missing = null;
    if (this.#excess.containsResource(resource)) {
      this.#excess = this.#excess.subtract(resource, 1);
      return;
    }
    // Flink: the choice among fulfilled requirements is arbitrary for correctness; we take the first.
    const requirement = this.#mapping.getFirstRequirementFulfilledBy(resource);
    if (requirement === undefined) {
      throw new IllegalStateError(
        `job ${this.jobId} lost a resource ${resource} but holds ` +
          `no such resource; report only resources the job acquired`,
        {
          component: 'JobScopedResourceTracker',
          operation: 'notifyLostResource',
          state: 'not-acquired',
          allowed: ['acquired'],
        },
      );
    }
    this.#mapping.decrementCount(requirement, resource, 1);
    this.#tryAssigningExcessResources();
  }

  /** Every requirement not fully fulfilled, with the number missing, in declaration order. */
  getMissingResources(): readonly ResourceRequirement[] {
    if (this.#missing !== null) return this.#missing;
    if (this.#requirements.isEmpty()) return (this.#missing = NOTHING_MISSING); // holding slots it no longer declares
    const missing: ResourceRequirement[] = [];
    for (const [requirement, required] of this.#requirements.entries()) {
      const fulfilled = this.#mapping.getNumFulfillingResources(requirement);
      if (fulfilled < required) missing.push(ResourceRequirement.create(requirement, required - fulfilled));
    }
    this.#missing = missing.length === 0 ? NOTHING_MISSING : missing;
    return this.#missing;
  }

  /** Every acquired profile with its count (assigned + excess): assigned profiles first, then excess-only ones. */
  getAcquiredResources(): ResourceRequirement[] {
    const profiles = new Map<string, ResourceProfile>();
    for (const p of [...this.#mapping.getAllResourceProfiles(), ...this.#excess.getResources()])
      if (!profiles.has(p.key)) profiles.set(p.key, p);
    return [...profiles.values()].map((p) =>
      ResourceRequirement.create(p, this.#mapping.getNumFulfilledRequirements(p) + this.#excess.getResourceCount(p)),
    );
  }

  /** The current requirements as declared (summed per profile), in declaration order. */
  getRequiredResources(): ResourceRequirement[] {
    return this.#requirements.entries().map(([p, n]) => ResourceRequirement.create(p, n));
  }

  /** The acquired resources that fulfil `requirement`, by profile. */
  getResourcesFulfilling(requirement: ResourceProfile): ResourceCounter {
    return this.#mapping.getResourcesFulfilling(requirement);
  }

  /** The acquired resources that fulfil no requirement. */
  getExcessResources(): ResourceCounter {
    return this.#excess;
  }

  /** No requirements and no excess (so, by the invariant, nothing held at all). */
  isEmpty(): boolean {
    return this.#requirements.isEmpty() && this.#excess.isEmpty();
  }

  isRequirementEmpty(): boolean {
    return this.#requirements.isEmpty();
  }

  #match(resource: ResourceProfile): ResourceProfile | undefined {
    return matchRequirement(resource, this.#requirements, (r) => this.#mapping.getNumFulfillingResources(r));
  }

  /** Moves resources assigned beyond each requirement's count (all of them, for a dropped requirement) to excess. */
  #findExcessResources(): void {
    const moves: Array<readonly [requirement: ResourceProfile, resource: ResourceProfile, n: number]> = [];
    for (const requirement of this.#mapping.getAllRequirementProfiles()) {
      let surplus =
        this.#mapping.getNumFulfillingResources(requirement) - this.#requirements.getResourceCount(requirement);
      // Take whole counts in insertion order, then whatever remains from the last one.
      for (const [resource, n] of this.#mapping.getResourcesFulfilling(requirement).entries()) {
        if (surplus <= 0) break;
        const taken = Math.min(n, surplus);
        moves.push([requirement, resource, taken]);
        surplus -= taken;
      }
    }
    // Collected first, applied after: the walk above must not see its own changes.
    for (const [requirement, resource, n] of moves) {
      this.#mapping.decrementCount(requirement, resource, n);
      this.#excess = this.#excess.add(resource, n);
    }
  }

  /** Assigns excess resources to requirements with room; per profile, stops at its first miss. */
  #tryAssigningExcessResources(): void {
    let assigned = ResourceCounter.empty();
    for (const [resource, n] of this.#excess.entries()) {
      for (let i = 0; i < n; i++) {
        const requirement = this.#match(resource);
        if (requirement === undefined) break;
        this.#mapping.incrementCount(requirement, resource, 1);
        assigned = assigned.add(resource, 1);
      }
    }
    this.#excess = this.#excess.subtract(assigned);
  }
}
