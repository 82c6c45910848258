/**
 * When registered executors have been idle for resourcemanager.taskmanager-timeout (Flink's
 * FineGrainedSlotManager.checkTaskManagerTimeouts, one deadline per executor here instead of a
 * periodic scan): each executor's deadline follows its idleSince; when one passes and the executor
 * is still idle, `onTimedOut` decides (the strategy's reconcile step: release it, or keep it as a
 * redundant worker and `restart` its timeout). Only when workers can be released at all. Keyed by
 * ResourceID.
 */
import type { Clock } from '../../core/clock.js';
import { DeadlineScheduler } from '../../core/DeadlineScheduler.js';
import type { ResourceID } from '../../core/ids.js';
import type { TaskManagerRegistration } from './TaskManagerRegistration.js';

export interface IdleTaskManagerTimeoutsOptions {
  readonly clock: Clock;
  /** resourcemanager.taskmanager-timeout (ms). */
  readonly timeoutMs: number;
  /** Whether idle executors are released at all (the ResourceAllocator can stop workers). */
  readonly enabled: boolean;
  readonly tracker: { getTaskManager(resourceId: ResourceID): TaskManagerRegistration | undefined };
  /** The executor has been idle for the timeout and is idle still. */
  readonly onTimedOut: (taskManager: TaskManagerRegistration) => void;
}

export class IdleTaskManagerTimeouts {
  readonly #o: IdleTaskManagerTimeoutsOptions;
  readonly #deadlines: DeadlineScheduler<ResourceID>;

  constructor(options: IdleTaskManagerTimeoutsOptions) {
    this.#o = options;
    this.#deadlines = new DeadlineScheduler(options.clock, (resourceId) => {
      const taskManager = options.tracker.getTaskManager(resourceId);
      if (taskManager !== undefined && taskManager.idleSince !== null) options.onTimedOut(taskManager);
    });
  }

  /** The executor became idle (idleSince set) or busy again (null). */
  idleChanged(taskManager: TaskManagerRegistration): void {
    if (!this.#o.enabled) return;
    if (taskManager.idleSince === null) this.#deadlines.cancel(taskManager.resourceId);
    else this.#deadlines.schedule(taskManager.resourceId, taskManager.idleSince + this.#o.timeoutMs);
  }

  /** Kept (a redundant worker): asked again one timeout from now. */
  restart(resourceId: ResourceID): void {
    this.#deadlines.schedule(resourceId, this.#o.clock.now() + this.#o.timeoutMs);
  }

  forget(resourceId: ResourceID): void {
    this.#deadlines.cancel(resourceId);
  }

  clear(): void {
    this.#deadlines.clear();
  }
}
