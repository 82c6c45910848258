/**
 * Which registered executors take no new slots, and until when (Beyond Flink, whose
 * BlockedTaskManagerChecker knows only the blocklist): one that refused or missed a slot request is
 * blocked until its next slot report, or heartbeat.interval at the latest, so the retry goes
 * elsewhere; one being released (idle) stays blocked until it unregisters. Unblock deadlines keyed
 * by ResourceID.
 */
import type { Clock } from '../../core/clock.js';
import { DeadlineScheduler } from '../../core/DeadlineScheduler.js';
import type { ResourceID } from '../../core/ids.js';
import type { TaskManagerRegistration } from './TaskManagerRegistration.js';
import type { TaskManagerTracker } from './TaskManagerTracker.js';

export interface BlockedTaskManagersOptions {
  readonly tracker: TaskManagerTracker;
  readonly clock: Clock;
  /** How long an executor in doubt stays blocked without a slot report (heartbeat.interval, ms). */
  readonly doubtMs: number;
  /** An executor in doubt takes slots again (its deadline passed). */
  readonly onUnblocked: () => void;
}

export class BlockedTaskManagers {
  readonly #o: BlockedTaskManagersOptions;
  readonly #releasing = new Set<ResourceID>();
  readonly #unblock: DeadlineScheduler<ResourceID>;

  constructor(options: BlockedTaskManagersOptions) {
    this.#o = options;
    this.#unblock = new DeadlineScheduler(options.clock, (resourceId) => {
      const taskManager = options.tracker.getTaskManager(resourceId);
      if (taskManager === undefined || this.#releasing.has(resourceId)) return;
      options.tracker.setBlocked(taskManager, false);
      options.onUnblocked();
    });
  }

  isReleasing(resourceId: ResourceID): boolean {
    return this.#releasing.has(resourceId);
  }

  /**
   * A slot request to it failed: until its next slot report its view is in doubt (not if the report itself overtook the
   * answer).
   */
  requestFailed(taskManager: TaskManagerRegistration): void {
    if (taskManager.blocked) return;
    this.#o.tracker.setBlocked(taskManager, true);
    this.#unblock.schedule(taskManager.resourceId, this.#o.clock.now() + this.#o.doubtMs);
  }

  /** Its slot report is the fresh view a block in doubt waited for; whether that unblocked it. */
  reported(taskManager: TaskManagerRegistration): boolean {
    if (!taskManager.blocked || this.#releasing.has(taskManager.resourceId)) return false;
    this.#o.tracker.setBlocked(taskManager, false);
    this.#unblock.cancel(taskManager.resourceId);
    return true;
  }

  /** It is being released: no new slots until it is gone. */
  releasing(taskManager: TaskManagerRegistration): void {
    this.#releasing.add(taskManager.resourceId);
    this.#o.tracker.setBlocked(taskManager, true);
  }

  /** It unregistered. */
  forget(resourceId: ResourceID): void {
    this.#releasing.delete(resourceId);
    this.#unblock.cancel(resourceId);
  }

  clear(): void {
    this.#releasing.clear();
    this.#unblock.clear();
  }
}
