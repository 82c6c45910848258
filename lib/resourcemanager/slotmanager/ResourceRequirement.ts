/**
 * What a JobMaster declares to the ResourceManager (Flink's ResourceRequirement and
 * ResourceRequirements): "job J, reachable at address A, needs n slots of profile P, …".
 * Declarations are declarative: each one replaces the job's previous one as a whole.
 */
import { describeValue, IllegalArgumentError } from '../../core/errors.js';
import { JobID } from '../../core/ids.js';
import { ResourceProfile } from '../../core/ResourceProfile.js';

/** `numberOfRequiredSlots` slots of `resourceProfile` (UNKNOWN: slots of the default size). */
export interface ResourceRequirement {
  readonly resourceProfile: ResourceProfile;
  readonly numberOfRequiredSlots: number;
}

/** A job's whole declaration: every requirement it has now, and where to reach its JobMaster. */
export interface ResourceRequirements {
  readonly jobId: JobID;
  readonly targetAddress: string;
  readonly resourceRequirements: readonly ResourceRequirement[];
}

/**
 * Checks that `value` is a ResourceProfile; with `known`, also that it is not UNKNOWN (an acquired
 * slot always has a concrete profile). Throws IllegalArgumentError naming `argument`.
 */
export function checkResourceProfile(value: unknown, argument: string, { known = false } = {}): ResourceProfile {
  if (!(value instanceof ResourceProfile)) {
    throw new IllegalArgumentError(
      'invalid-type',
      `${argument} must be a ResourceProfile, got ${describeValue(value)}`,
      {
        argument,
        value: describeValue(value),
      },
    );
  }
  if (known && value.isUnknown()) {
    throw new IllegalArgumentError(
      'invalid-value',
      `${argument} must be a concrete profile, not UNKNOWN: an acquired slot always has a size`,
      { argument, value: 'UNKNOWN' },
    );
  }
  return value;
}

/**
 * Checks one requirement. `minimum` is the least allowed numberOfRequiredSlots: 1 when building a
 * declaration, 0 when a tracker accepts a list (a zero entry is simply ignored there).
 */
export function checkResourceRequirement(value: unknown, argument: string, minimum: 0 | 1 = 1): ResourceRequirement {
  if (typeof value !== 'object' || value === null) {
    throw new IllegalArgumentError(
      'invalid-type',
      `${argument} must be a ResourceRequirement { resourceProfile, numberOfRequiredSlots }, ` +
        `got ${describeValue(value)}`,
      { argument },
    );
  }
  const { resourceProfile, numberOfRequiredSlots: n } = value as Partial<ResourceRequirement>;
  checkResourceProfile(resourceProfile, `${argument}.resourceProfile`);
  if (typeof n !== 'number' || !Number.isSafeInteger(n) || n < minimum) {
    const rule = minimum === 1 ? 'a positive safe integer' : 'a non-negative safe integer';
    throw new IllegalArgumentError(
      'invalid-value',
      `${argument}.numberOfRequiredSlots must be ${rule}, got ${describeValue(n)}`,
      {
        argument: `${argument}.numberOfRequiredSlots`,
        value: describeValue(n),
      },
    );
  }
  return value as ResourceRequirement;
}

/** Checks a list of requirements (an array; every entry as {@link checkResourceRequirement}). */
export function checkResourceRequirementList(
  value: unknown,
  argument: string,
  minimum: 0 | 1 = 1,
): readonly ResourceRequirement[] {
  if (!Array.isArray(value)) {
    throw new IllegalArgumentError(
      'invalid-type',
      `${argument} must be an array of ResourceRequirement, got ${describeValue(value)}`,
      { argument },
    );
  }
  value.forEach((entry: unknown, i) => checkResourceRequirement(entry, `${argument}[${i}]`, minimum));
  return value as readonly ResourceRequirement[];
}

export const ResourceRequirement = {
  /**
   * A frozen requirement. `numberOfRequiredSlots` must be a positive safe integer: a declaration
   * lists only what is needed, and a need of zero is expressed by leaving the profile out.
   */
  create(resourceProfile: ResourceProfile, numberOfRequiredSlots: number): ResourceRequirement {
    return Object.freeze({ ...checkResourceRequirement({ resourceProfile, numberOfRequiredSlots }, 'requirement') });
  },
  /** `ResourceRequirement{resourceProfile=…, numberOfRequiredSlots=n}`, as Flink prints it. */
  toString(requirement: ResourceRequirement): string {
    return (
      `ResourceRequirement{resourceProfile=${requirement.resourceProfile}, ` +
      `numberOfRequiredSlots=${requirement.numberOfRequiredSlots}}`
    );
  },
};

export const ResourceRequirements = {
  /**
   * A frozen declaration. `jobId` must be a JobID and `targetAddress` a non-empty string; every
   * requirement is checked as {@link ResourceRequirement.create}. A profile listed more than once is
   * summed into one entry at the place it first appears (Flink keeps the list as given; its
   * trackers sum it anyway), so each profile appears at most once.
   */
  create(
    jobId: JobID,
    targetAddress: string,
    resourceRequirements: readonly ResourceRequirement[],
  ): ResourceRequirements {
    if (!JobID.is(jobId)) {
      throw new IllegalArgumentError(
        'invalid-type',
        `jobId must be a JobID (32 lower-case hex characters), got ${describeValue(jobId)}`,
        { argument: 'jobId', value: describeValue(jobId) },
      );
    }
    if (typeof targetAddress !== 'string' || targetAddress.length === 0) {
      throw new IllegalArgumentError(
        'invalid-value',
        `targetAddress must be a non-empty string, got ${describeValue(targetAddress)}`,
        {
          argument: 'targetAddress',
          value: describeValue(targetAddress),
        },
      );
    }
    const summed = new Map<string, { resourceProfile: ResourceProfile; numberOfRequiredSlots: number }>();
    for (const { resourceProfile, numberOfRequiredSlots } of checkResourceRequirementList(
      resourceRequirements,
      'resourceRequirements',
    )) {
      const seen = summed.get(resourceProfile.key);
      if (seen === undefined) summed.set(resourceProfile.key, { resourceProfile, numberOfRequiredSlots });
      else seen.numberOfRequiredSlots += numberOfRequiredSlots;
    }
    const list = [...summed.values()].map((r) =>
      ResourceRequirement.create(r.resourceProfile, r.numberOfRequiredSlots),
    );
    return Object.freeze({ jobId, targetAddress, resourceRequirements: Object.freeze(list) });
  },
  /** A declaration that the job needs nothing (Flink's ResourceRequirements.empty). */
  empty(jobId: JobID, targetAddress: string): ResourceRequirements {
    return ResourceRequirements.create(jobId, targetAddress, []);
  },
};
