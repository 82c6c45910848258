/**
 * The SlotManager's two checks against the cluster's shape: a requirement no worker can ever hold
 * is refused at the door (SlotRequestError 'never-satisfiable'), and a TaskExecutor whose
 * registration would pass the cluster's maxima is rejected (Flink: REJECTED).
 */
import { SlotRequestError } from '../../core/errors.js';
import { JobID } from '../../core/ids.js';
import type { ResolvedOptions } from '../../core/options.js';
import { formatShortfall, type ResourceProfile } from '../../core/ResourceProfile.js';
import type { SlotReport } from '../../core/SlotReport.js';
import type { PendingTaskManager, PendingTaskManagerID } from './PendingTaskManager.js';
import type { TaskManagerInfo } from './TaskManagerRegistration.js';
import type { TaskManagerTracker } from './TaskManagerTracker.js';
import type { WorkerResourceSpec } from './WorkerResourceSpec.js';

/** Throws when neither a worker of `workerSpec` nor any registered executor could ever hold `profile`. */
export function refuseNeverSatisfiable(
  jobId: JobID,
  profile: ResourceProfile,
  workerSpec: WorkerResourceSpec | null,
  tracker: TaskManagerTracker,
): void {
  if (profile.isUnknown() || workerSpec === null) return;
  if (workerSpec.totalResourceProfile.allFieldsNoLessThan(profile)) return;
  for (const taskManager of tracker.taskManagers)
    if (taskManager.totalResourceProfile.allFieldsNoLessThan(profile)) return;
  const shortfall = workerSpec.totalResourceProfile.shortfall(profile);
  throw new SlotRequestError(
    'never-satisfiable',
    `job ${JobID.short(jobId)} asks for ${profile}, which no worker can ` +
      `ever hold (${formatShortfall(shortfall, ['a worker has', 'asked'])})`,
    {
      jobId,
      profile: profile.toJSON(),
      shortfall,
    },
  );
}

/**
 * Whether a registering TaskExecutor is admitted: one of the same shape as a pending worker takes
 * that worker's place (not one that reports allocations already); any other is rejected over the maxima.
 */
export function admitTaskManager(
  request: TaskManagerInfo & { readonly pendingWorkerId?: PendingTaskManagerID },
  report: SlotReport,
  tracker: TaskManagerTracker,
  options: ResolvedOptions,
): { readonly rejected?: string; readonly matched?: PendingTaskManager; readonly hasAllocations: boolean } {
  const hasAllocations = report.slots.some((s) => s.allocationId !== null);
  const matched = hasAllocations
    ? undefined
    : tracker.findMatchingPendingTaskManager(
        request.totalResourceProfile,
        request.defaultSlotResourceProfile,
        request.pendingWorkerId,
      );
  if (matched !== undefined) return { matched, hasAllocations };
  const rejected = exceedsMaxima(request, tracker, options);
  return rejected === undefined ? { hasAllocations } : { rejected, hasAllocations };
}

/** Why registering `request` would pass slotmanager.number-of-slots.max or max-total-resource.*, or undefined. */
export function exceedsMaxima(
  request: TaskManagerInfo,
  tracker: TaskManagerTracker,
  options: ResolvedOptions,
): string | undefined {
  const slots = tracker.numberOfRegisteredSlots + tracker.numberOfPendingSlots + request.numberOfStaticSlots;
  const max = options['slotmanager.number-of-slots.max'];
  if (slots > max) return `it would make ${slots} slots, over slotmanager.number-of-slots.max = ${max}`;
  const total = tracker.registeredResource.merge(tracker.pendingResource).merge(request.totalResourceProfile);
  if (total.cpuCores > options['slotmanager.max-total-resource.cpu'])
    return `it would make ${total.cpuCores} cores, over slotmanager.max-total-resource.cpu`;
  if (total.totalMemory > options['slotmanager.max-total-resource.memory'])
    return `it would make ${total.totalMemory} bytes, over slotmanager.max-total-resource.memory`;
  return undefined;
}
