/**
 * What the SlotManager shows of itself (executors, slots, pending workers, jobs) and the checks on
 * what a TaskExecutor says of itself (its registration, its slot reports).
 */
import { IllegalArgumentError, UnknownTaskExecutorError } from '../../core/errors.js';
import { ResourceID, type AllocationID, type JobID } from '../../core/ids.js';
import type { ResourceSlotState } from '../../../machines/resourceSlot.machine.js';
import { ResourceProfile, type ResourceProfileJSON } from '../../core/ResourceProfile.js';
import type { SlotReport } from '../../core/SlotReport.js';
import type { ReadonlyResourceTracker } from './ResourceTracker.js';
import type { TaskManagerInfo, TaskManagerRegistration } from './TaskManagerRegistration.js';
import type { TaskManagerTracker } from './TaskManagerTracker.js';

export interface SlotManagerOverview {
  readonly state: 'suspended' | 'started';
  readonly taskManagers: ReadonlyArray<{
    readonly resourceId: ResourceID;
    readonly host: string;
    readonly total: ResourceProfileJSON;
    readonly available: ResourceProfileJSON;
    readonly utilization: number;
    /**
     * `free`: the default slots that still fit in `available` (at most the static slot count), not the free static
     * records.
     */
    readonly slots: { readonly free: number; readonly pending: number; readonly allocated: number };
    readonly idleSince: number | null;
    readonly blocked: boolean;
    /** Every slot record: the static slots in index order (free ones too), then the dynamic ones. */
    readonly records: readonly SlotRecordOverview[];
  }>;
  readonly pendingWorkers: readonly object[];
  readonly slots: { readonly pending: number; readonly allocated: number; readonly inFlight: number };
  readonly jobs: ReadonlyArray<{ readonly jobId: JobID; readonly required: number; readonly acquired: number }>;
}

/** One slot record of a TaskManager as the SlotManager holds it. */
export interface SlotRecordOverview {
  /** The static index, or -1 for a dynamic slot. */
  readonly index: number;
  readonly state: ResourceSlotState;
  readonly jobId: JobID | null;
  readonly allocationId: AllocationID | null;
  /** Static: the executor's default slot profile; dynamic: the profile it was carved for. */
  readonly profile: ResourceProfileJSON;
}

export function describeOverview(
  state: 'suspended' | 'started',
  tracker: TaskManagerTracker,
  resources: ReadonlyResourceTracker,
  inFlight: number,
): SlotManagerOverview {
  let pending = 0;
  let allocated = 0;
  const taskManagers = [...tracker.taskManagers].map((tm) => {
    const slots = { free: freeDefaultSlots(tm), pending: 0, allocated: 0 };
    for (const slot of tracker.slotsOf(tm)) slots[slot.state === 'pending' ? 'pending' : 'allocated']++;
    pending += slots.pending;
    allocated += slots.allocated;
    return {
      resourceId: tm.resourceId,
      host: tm.host,
      total: tm.totalResourceProfile.toJSON(),
      available: tm.available.toJSON(),
      utilization: tm.utilization,
      slots,
      idleSince: tm.idleSince,
      blocked: tm.blocked,
      records: [...tm.staticSlots, ...tm.dynamicSlots.values()].map(
        ({ index, state, jobId, allocationId, profile }) => ({
          index,
          state,
          jobId,
          allocationId,
          profile: profile.toJSON(),
        }),
      ),
    };
  });
  const count = (list: ReadonlyArray<{ numberOfRequiredSlots: number }>) =>
    list.reduce((n, r) => n + r.numberOfRequiredSlots, 0);
  return {
    state,
    taskManagers,
    pendingWorkers: [...tracker.pendingTaskManagers].map((p) => p.toJSON()),
    slots: { pending, allocated, inFlight },
    jobs: resources.jobs().map((jobId) => ({
      jobId,
      required: count(resources.getRequiredResources(jobId)),
      acquired: count(resources.getAcquiredResources(jobId)),
    })),
  };
}

/**
 * How many default slots the executor could still give: as many as fit in what it has left, at most
 * its slot count. Free static records overstate it once dynamic slots have taken from the same
 * resources (10 × (1 core, 100 mb) holding (1, 100) and (3, 200) has 9 free records, room for 6);
 * Flink's FineGrainedTaskManagerTracker counts default slots minus slots held (8), which still does.
 */
function freeDefaultSlots(tm: TaskManagerRegistration): number {
  const slot = tm.defaultSlotResourceProfile;
  const left = tm.available;
  if (left.isAny()) return tm.numberOfStaticSlots;
  let fits = tm.numberOfStaticSlots;
  slot.amounts.forEach((units, i) => {
    if (units > 0) fits = Math.min(fits, Math.floor(left.amounts[i]! / units));
  });
  for (const [name, units] of slot.extended) fits = Math.min(fits, Math.floor((left.extended.get(name) ?? 0) / units));
  return fits;
}

/** The registered executor a slot report comes from; refuses one from an unknown executor, or malformed. */
export function checkSlotReport(
  resourceId: ResourceID,
  report: SlotReport,
  taskManager: TaskManagerRegistration | undefined,
): TaskManagerRegistration {
  if (taskManager === undefined) {
    throw new UnknownTaskExecutorError(
      `slot report from TaskExecutor ${String(resourceId)}, which is not registered; register it first`,
      { resourceId: String(resourceId) },
    );
  }
  if (report?.resourceId !== resourceId || !Array.isArray(report.slots)) {
    throw new IllegalArgumentError(
      'invalid-value',
      `the slot report must be { resourceId: '${resourceId}', slots: [...] }`,
      { argument: 'report' },
    );
  }
  return taskManager;
}

/** Refuses a registration whose description of the executor is malformed or disagrees with its report. */
export function checkRegistration(info: TaskManagerInfo, report: SlotReport): void {
  const fail = (argument: string, rule: string) =>
    new IllegalArgumentError('invalid-value', `registerTaskManager: ${argument} ${rule}`, { argument });
  if (typeof info !== 'object' || info === null) throw fail('request', 'must be an object describing the TaskExecutor');
  if (!ResourceID.is(info.resourceId)) throw fail('resourceId', `must be a ResourceID, got ${String(info.resourceId)}`);
  if (typeof info.host !== 'string' || info.host === '') throw fail('host', 'must be a non-empty string');
  if (!(info.totalResourceProfile instanceof ResourceProfile) || info.totalResourceProfile.kind !== 'specified')
    throw fail('totalResourceProfile', 'must be a specified ResourceProfile');
  if (
    !(info.defaultSlotResourceProfile instanceof ResourceProfile) ||
    info.defaultSlotResourceProfile.kind !== 'specified'
  )
    throw fail('defaultSlotResourceProfile', 'must be a specified ResourceProfile');
  if (info.defaultSlotResourceProfile.equals(ResourceProfile.ZERO)) {
    // A slot of nothing always fits: such an executor would take any number of UNKNOWN slots.
    throw fail(
      'defaultSlotResourceProfile',
      `must hold some resource, got ResourceProfile.ZERO (the total ${info.totalResourceProfile} ` +
        `over ${info.numberOfStaticSlots} slots); give the TaskExecutor resources or fewer slots`,
    );
  }
  if (!Number.isSafeInteger(info.numberOfStaticSlots) || info.numberOfStaticSlots < 0)
    throw fail('numberOfStaticSlots', 'must be an integer >= 0');
  if (
    !info.totalResourceProfile.allFieldsNoLessThan(info.defaultSlotResourceProfile.multiply(info.numberOfStaticSlots))
  ) {
    throw fail(
      'totalResourceProfile',
      `must hold ${info.numberOfStaticSlots} default slots ` +
        `of ${info.defaultSlotResourceProfile}, got ${info.totalResourceProfile}`,
    );
  }
  if (typeof info.gateway?.requestSlot !== 'function' || typeof info.gateway.freeInactiveSlots !== 'function')
    throw fail('gateway', 'must have requestSlot and freeInactiveSlots');
  if (report?.resourceId !== info.resourceId || !Array.isArray(report.slots))
    throw fail('initialSlotReport', `must be the slot report of ${info.resourceId}`);
}
