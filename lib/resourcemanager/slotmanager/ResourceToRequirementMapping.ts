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

/** One profile's side: the profiles on the other side with their counts, kept as mutable numbers. */
interface Side {
  readonly profile: ResourceProfile;
  /** Other profile's key → [profile, count > 0], in insertion order (as ResourceCounter keeps them). */
  readonly counts: Map<string, [ResourceProfile, number]>;
  /** The sum of the counts. */
  total: number;
  /** The counts as a ResourceCounter, built when first read after a change. */
  counter: ResourceCounter | undefined;
}

function checkAmount(value: unknown, argument: string): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value <= 0) {
    throw new IllegalArgumentError(
      'invalid-value',
      `${argument} must be a positive safe integer, got ${String(value)}`,
      { argument, value: String(value) },
    );
  }
  return value;
}

/** The pair's count and its side's total, or undefined when the pair is not recorded. */
function lookup(
  map: Map<string, Side>,
  primary: ResourceProfile,
  secondary: ResourceProfile,
): { side: Side | undefined; entry: [ResourceProfile, number] | undefined } {
  const side = map.get(primary.key);
  return { side, entry: side?.counts.get(secondary.key) };
}

/**
 * Refuses an increment that would take a count or a total past the safe integers (as ResourceCounter does), before
 * anything changes.
 */
function checkIncrement(at: ReturnType<typeof lookup>, secondary: ResourceProfile, n: number): void {
  if (!Number.isSafeInteger((at.side?.total ?? 0) + n) || !Number.isSafeInteger((at.entry?.[1] ?? 0) + n)) {
    throw new IllegalArgumentError(
      'out-of-range',
      `the count of ${secondary} would exceed ${Number.MAX_SAFE_INTEGER}`,
      { argument: 'count', value: n },
    );
  }
}

/**
 * Adds `delta` to the pair's count (a decrement never goes below zero: checked by the caller). A
 * pair that reaches zero is removed, and a side left empty with it; a pair or side added again
 * goes to the end, as in a ResourceCounter. Counts change in place: every acquired slot passes
 * here, and a new counter (a Map copy) per slot was most of what acquiring a slot cost.
 */
function update(
  map: Map<string, Side>,
  at: ReturnType<typeof lookup>,
  primary: ResourceProfile,
  secondary: ResourceProfile,
  delta: number,
): void {
  let side = at.side;
  if (side === undefined) {
    side = { profile: primary, counts: new Map(), total: 0, counter: undefined };
    map.set(primary.key, side);
  }
  const entry = at.entry;
  const count = (entry?.[1] ?? 0) + delta;
  if (count > 0) {
    if (entry === undefined) side.counts.set(secondary.key, [secondary, count]);
    else entry[1] = count;
  } else {
    side.counts.delete(secondary.key);
  }
  side.total += delta;
  side.counter = undefined;
  if (side.counts.size === 0) map.delete(primary.key);
}

function counterOf(side: Side | undefined): ResourceCounter {
  if (side === undefined) return ResourceCounter.empty();
  return (side.counter ??= ResourceCounter.fromEntries(side.counts.values()));
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
    const forward = lookup(this.#requirementToFulfillingResources, requirement, resource);
    const backward = lookup(this.#resourceToFulfilledRequirements, resource, requirement);
    checkIncrement(forward, resource, n);
    checkIncrement(backward, requirement, n);
    update(this.#requirementToFulfillingResources, forward, requirement, resource, n);
    update(this.#resourceToFulfilledRequirements, backward, resource, requirement, n);
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
    const forward = lookup(this.#requirementToFulfillingResources, requirement, resource);
    const recorded = forward.entry?.[1] ?? 0;
    if (recorded < n) {
      throw new IllegalStateError(
        `cannot take ${n} of ${resource} away from requirement ${requirement}: only ${recorded} recorded`,
        {
          component: 'ResourceToRequirementMapping',
          operation: 'decrementCount',
          state: `${recorded} recorded`,
          allowed: [`at least ${n} recorded`],
        },
      );
    }
    update(this.#requirementToFulfillingResources, forward, requirement, resource, -n);
    update(
      this.#resourceToFulfilledRequirements,
      lookup(this.#resourceToFulfilledRequirements, resource, requirement),
      resource,
      requirement,
      -n,
    );
  }

  /** The resources fulfilling `requirement`, with counts (empty when none). */
  getResourcesFulfilling(requirement: ResourceProfile): ResourceCounter {
    return counterOf(this.#requirementToFulfillingResources.get(checkResourceProfile(requirement, 'requirement').key));
  }

  /** The requirements that resources of profile `resource` fulfil, with counts (empty when none). */
  getRequirementsFulfilledBy(resource: ResourceProfile): ResourceCounter {
    return counterOf(this.#resourceToFulfilledRequirements.get(checkResourceProfile(resource, 'resource').key));
  }

  /** The first requirement (in insertion order) that resources of profile `resource` fulfil, if any. */
  getFirstRequirementFulfilledBy(resource: ResourceProfile): ResourceProfile | undefined {
    const side = this.#resourceToFulfilledRequirements.get(checkResourceProfile(resource, 'resource').key);
    if (side === undefined) return undefined;
    for (const [requirement] of side.counts.values()) return requirement;
    return undefined;
  }

  /** How many resources fulfil `requirement`. */
  getNumFulfillingResources(requirement: ResourceProfile): number {
    return this.#requirementToFulfillingResources.get(checkResourceProfile(requirement, 'requirement').key)?.total ?? 0;
  }

  /** How many requirement units resources of profile `resource` fulfil (= how many such resources are assigned). */
  getNumFulfilledRequirements(resource: ResourceProfile): number {
    return this.#resourceToFulfilledRequirements.get(checkResourceProfile(resource, 'resource').key)?.total ?? 0;
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
