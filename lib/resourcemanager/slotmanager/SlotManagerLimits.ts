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

/** How many registered TaskExecutors a never-satisfiable refusal names; the rest are counted. */
const NAMED_TASK_MANAGERS = 3;

/**
 * Throws when neither a worker of `workerSpec` nor any registered executor could ever hold `profile`
 * (Flink's SlotManager would let such a requirement wait for slot.request.timeout). The refusal names
 * what the registered TaskExecutors offer against it, and the worker's shape only where the
 * ResourceManager starts workers on demand (`canStartWorkers`): a standalone cluster's TaskManagers
 * join on their own, whatever shape its own options describe.
 */
export function refuseNeverSatisfiable(
  jobId: JobID,
  profile: ResourceProfile,
  workerSpec: WorkerResourceSpec | null,
  tracker: TaskManagerTracker,
  canStartWorkers: boolean,
): void {
  if (profile.isUnknown() || workerSpec === null) return;
  if (workerSpec.totalResourceProfile.allFieldsNoLessThan(profile)) return;
  const registered = [...tracker.taskManagers].map((taskManager) => ({
    resourceId: taskManager.resourceId,
    shortfall: taskManager.totalResourceProfile.shortfall(profile),
  }));
  if (registered.some((taskManager) => taskManager.shortfall.length === 0)) return;
  const named = registered
    .slice(0, NAMED_TASK_MANAGERS)
    .map(({ resourceId, shortfall }) => `${resourceId}: ${formatShortfall(shortfall, ['has', 'asked'])}`);
  if (registered.length > NAMED_TASK_MANAGERS) named.push(`${registered.length - NAMED_TASK_MANAGERS} more`);
  const offered =
    registered.length === 0
      ? 'no TaskExecutor is registered'
      : registered.length === 1
        ? `the registered TaskExecutor falls short (${named.join('; ')})`
        : `the ${registered.length} registered TaskExecutors fall short (${named.join('; ')})`;
  const workerShortfall = workerSpec.totalResourceProfile.shortfall(profile);
  const workers = canStartWorkers
    ? `a worker started for it would fall short${registered.length === 0 ? '' : ' too'} ` +
      `(${formatShortfall(workerShortfall, ['a worker has', 'asked'])})`
    : 'none is started on demand';
  throw new SlotRequestError(
    'never-satisfiable',
    `job ${JobID.short(jobId)} asks for ${profile}, which no TaskExecutor can ever hold: ${offered}; ${workers}`,
    {
      jobId,
      profile: profile.toJSON(),
      registered,
      ...(canStartWorkers ? { shortfall: workerShortfall } : {}),
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
