/**
 * Which acquired resources fulfil which requirements, indexed both ways (Flink's
 * BiDirectionalResourceToRequirementMapping). One job's tracker owns one of these.
 *
 * Invariant: for every pair, `getResourcesFulfilling(req).getResourceCount(res)` equals
 * `getRequirementsFulfilledBy(res).getResourceCount(req)`; neither side holds an empty counter.
 * Both maps iterate in insertion order.
 */
import { IllegalArgumentError, IllegalStateError } from '../../core/errors.js';
import { ResourceCounter } from '../../core/ResourceCounter.js';
import type { ResourceProfile } from '../../core/ResourceProfile.js';
import { checkResourceProfile } from './ResourceRequirement.js';

interface Side {
  readonly profile: ResourceProfile;
  readonly counter: ResourceCounter;
}

function checkAmount(value: unknown, argument: string): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value <= 0) {
    throw new IllegalArgumentError('invalid-value', `${argument} must be a positive safe integer, got ${String(value)}`, { argument, value: String(value) });
  }
  return value;
}

function update(map: Map<string, Side>, primary: ResourceProfile, secondary: ResourceProfile, delta: number): void {
  const before = map.get(primary.key)?.counter ?? ResourceCounter.empty();
  const counter = delta > 0 ? before.add(secondary, delta) : before.subtract(secondary, -delta);
  if (counter.isEmpty()) map.delete(primary.key);
  else map.set(primary.key, { profile: map.get(primary.key)?.profile ?? primary, counter });
}

/** A two-way index requirement profile ⇄ acquired resource profile, with counts. */
export class ResourceToRequirementMapping {
  readonly #requirementToFulfillingResources = new Map<string, Side>();
  readonly #resourceToFulfilledRequirements = new Map<string, Side>();

  /** Records that `n` (> 0) resources of profile `resource` now fulfil `requirement`. */
  incrementCount(requirement: ResourceProfile, resource: ResourceProfile, n: number): void {
    checkResourceProfile(requirement, 'requirement');
    checkResourceProfile(resource, 'resource');
    checkAmount(n, 'n');
    update(this.#requirementToFulfillingResources, requirement, resource, n);
    update(this.#resourceToFulfilledRequirements, resource, requirement, n);
  }

  /**
   * Records that `n` (> 0) resources of profile `resource` no longer fulfil `requirement`.
   * Throws IllegalStateError, changing nothing, when fewer than `n` are recorded for that pair
   * (Flink checks only that the requirement is known and silently clamps the rest).
   */
  decrementCount(requirement: ResourceProfile, resource: ResourceProfile, n: number): void {
    checkResourceProfile(requirement, 'requirement');
    checkResourceProfile(resource, 'resource');
    checkAmount(n, 'n');
    const recorded = this.getResourcesFulfilling(requirement).getResourceCount(resource);
    if (recorded < n) {
      throw new IllegalStateError(`cannot take ${n} of ${resource} away from requirement ${requirement}: only ${recorded} recorded`, {
        component: 'ResourceToRequirementMapping',
        operation: 'decrementCount',
        state: `${recorded} recorded`,
        allowed: [`at least ${n} recorded`],
      });
    }
    update(this.#requirementToFulfillingResources, requirement, resource, -n);
    update(this.#resourceToFulfilledRequirements, resource, requirement, -n);
  }

  /** The resources fulfilling `requirement`, with counts (empty when none). */
  getResourcesFulfilling(requirement: ResourceProfile): ResourceCounter {
    return this.#requirementToFulfillingResources.get(checkResourceProfile(requirement, 'requirement').key)?.counter ?? ResourceCounter.empty();
  }

  /** The requirements that resources of profile `resource` fulfil, with counts (empty when none). */
  getRequirementsFulfilledBy(resource: ResourceProfile): ResourceCounter {
    return this.#resourceToFulfilledRequirements.get(checkResourceProfile(resource, 'resource').key)?.counter ?? ResourceCounter.empty();
  }

  /** How many resources fulfil `requirement`. */
  getNumFulfillingResources(requirement: ResourceProfile): number {
    return this.getResourcesFulfilling(requirement).getTotalResourceCount();
  }

  /** How many requirement units resources of profile `resource` fulfil (= how many such resources are assigned). */
  getNumFulfilledRequirements(resource: ResourceProfile): number {
    return this.getRequirementsFulfilledBy(resource).getTotalResourceCount();
  }

  /** Every requirement profile with at least one fulfilling resource, in insertion order. */
  getAllRequirementProfiles(): ResourceProfile[] {
    return [...this.#requirementToFulfillingResources.values()].map((side) => side.profile);
  }

  /** Every resource profile fulfilling at least one requirement, in insertion order. */
  getAllResourceProfiles(): ResourceProfile[] {
    return [...this.#resourceToFulfilledRequirements.values()].map((side) => side.profile);
  }

  isEmpty(): boolean {
    return this.#requirementToFulfillingResources.size === 0 && this.#resourceToFulfilledRequirements.size === 0;
  }
}
