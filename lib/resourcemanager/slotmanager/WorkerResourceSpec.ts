/**
 * The shape of a worker the ResourceManager can start (Flink's WorkerResourceSpec): its total
 * resources and how many static slots it cuts them into. The SlotManager plans new workers of this
 * shape, and a registering TaskExecutor of the same shape takes a pending worker's place.
 */
import { IllegalArgumentError } from '../../core/errors.js';
import type { ResolvedOptions } from '../../core/options.js';
import { ResourceProfile } from '../../core/ResourceProfile.js';
import { defaultSlotResourceProfile, totalResourceProfile } from '../../core/TaskExecutorResourceUtils.js';

export interface WorkerResourceSpec {
  readonly totalResourceProfile: ResourceProfile;
  readonly numberOfSlots: number;
  /** totalResourceProfile divided by numberOfSlots. */
  readonly defaultSlotResourceProfile: ResourceProfile;
}

export const WorkerResourceSpec = {
  create(totalResourceProfile: ResourceProfile, numberOfSlots: number): WorkerResourceSpec {
    if (!(totalResourceProfile instanceof ResourceProfile) || totalResourceProfile.kind !== 'specified') {
      throw new IllegalArgumentError(
        'invalid-value',
        `a worker's totalResourceProfile must be a specified ResourceProfile ` +
          `(not UNKNOWN or ANY), got ${String(totalResourceProfile)}`,
        {
          argument: 'totalResourceProfile',
        },
      );
    }
    if (!Number.isSafeInteger(numberOfSlots) || numberOfSlots < 1) {
      throw new IllegalArgumentError(
        'out-of-range',
        `a worker's numberOfSlots must be an integer >= 1, got ${numberOfSlots}`,
        { argument: 'numberOfSlots', value: numberOfSlots },
      );
    }
    return Object.freeze({
      totalResourceProfile,
      numberOfSlots,
      defaultSlotResourceProfile: defaultSlotResourceProfile(totalResourceProfile, numberOfSlots),
    });
  },

  /** The worker the options describe: the TaskExecutor's total and `taskmanager.numberOfTaskSlots`. */
  fromOptions(options: ResolvedOptions): WorkerResourceSpec {
    return WorkerResourceSpec.create(totalResourceProfile(options), options['taskmanager.numberOfTaskSlots']);
  },

  /** Whether two shapes are the same worker (equal totals and default slots). */
  sameShape(total: ResourceProfile, defaultSlot: ResourceProfile, spec: WorkerResourceSpec): boolean {
    return total.equals(spec.totalResourceProfile) && defaultSlot.equals(spec.defaultSlotResourceProfile);
  },
};
