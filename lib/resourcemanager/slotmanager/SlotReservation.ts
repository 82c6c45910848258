/**
 * Capacity a plan sets aside on a registered executor for one slot of a job before the executor is
 * asked (the PlanApplier reserves, the SlotStatusSyncer turns a reservation into a pending slot).
 * What happens on the executor itself: the fit checked, a free static slot held when the profile
 * is its default, the open reservations counted (so it is not idle); a reservation is closed once,
 * when it is used or canceled. The capacity it takes, and the index and totals that follow it, are
 * the TaskManagerTracker's, which calls these.
 */
import { IllegalStateError } from '../../core/errors.js';
import type { JobID } from '../../core/ids.js';
import type { ResourceProfile } from '../../core/ResourceProfile.js';
import type { ResourceSlotRecord, TaskManagerRegistration } from './TaskManagerRegistration.js';

/** Capacity a plan set aside on an executor for one slot of a job, not yet asked of the executor. */
export interface SlotReservation {
  /** Open until it is turned into a pending slot or canceled; a reservation is used once. */
  readonly open: boolean;
  readonly taskManager: TaskManagerRegistration;
  /** The static slot it will use, or null for a dynamic slot. */
  readonly staticSlot: ResourceSlotRecord | null;
  /** The effective profile (UNKNOWN resolved to the executor's default slot). */
  readonly profile: ResourceProfile;
  readonly jobId: JobID;
}

/**
 * Opens `count` reservations of `requirement` (whose effective profile there is `profile`) for
 * `jobId` on `taskManager`, as `count` single ones would be made: static slots lowest index first
 * while the profile is the default and one is free, else dynamic ones. The caller takes their
 * capacity. All or nothing: throws, changing nothing, if they do not fit.
 */
export function openReservations(
  taskManager: TaskManagerRegistration,
  requirement: ResourceProfile,
  profile: ResourceProfile,
  jobId: JobID,
  count: number,
): SlotReservation[] {
  if (!taskManager.canFit(requirement) || !taskManager.hasAvailable(profile, count)) {
    const what = `${count === 1 ? '' : `${count} × `}${requirement}`;
    throw new IllegalStateError(
      `TaskExecutor ${taskManager.resourceId} cannot fit ${what} (available ${taskManager.available})`,
      { component: 'TaskManagerTracker', operation: 'reserve', state: 'insufficient', allowed: ['fits'] },
    );
  }
  const reservations: SlotReservation[] = [];
  for (let i = 0; i < count; i++) {
    const staticSlot = taskManager.freeStaticSlotFor(profile) ?? null;
    if (staticSlot !== null) {
      staticSlot.reserved = true;
      taskManager.freeStaticSlots--;
    }
    reservations.push({ open: true, taskManager, staticSlot, profile, jobId });
  }
  taskManager.reservations += count;
  return reservations;
}

/**
 * Closes a reservation, used (its static slot becomes the pending slot) or dropped
 * (`releaseStaticSlot`: its static slot is free again). Throws, changing nothing, if it was closed
 * already; `operation` names the tracker's step in that error.
 */
export function closeReservation(
  reservation: SlotReservation,
  releaseStaticSlot: boolean,
  operation: 'assignPending' | 'endReservation',
): void {
  const { taskManager, staticSlot } = reservation;
  if (!reservation.open) {
    throw new IllegalStateError(
      `the reservation on TaskExecutor ${taskManager.resourceId} was already used or canceled`,
      { component: 'TaskManagerTracker', operation, state: 'closed', allowed: ['open'] },
    );
  }
  if (taskManager.reservations === 0) {
    throw new IllegalStateError(`no reservation is open on TaskExecutor ${taskManager.resourceId}`, {
      component: 'TaskManagerTracker',
      operation: 'endReservation',
      state: 'none',
      allowed: ['reserved'],
    });
  }
  taskManager.reservations--;
  (reservation as { open: boolean }).open = false;
  if (staticSlot !== null) {
    staticSlot.reserved = false;
    if (releaseStaticSlot) taskManager.staticSlotFreed(staticSlot.index);
  }
}
