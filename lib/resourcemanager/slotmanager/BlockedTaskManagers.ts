/**
 * Which registered executors take no new slots, and until when (Beyond Flink, whose
 * BlockedTaskManagerChecker knows only the blocklist): one that refused or missed a slot request is
 * blocked until its next slot report, or heartbeat.interval at the latest, so the retry goes
 * elsewhere; one being released (idle) stays blocked until it unregisters. Unblock deadlines keyed
 * by ResourceID.
 *
 * And Flink's blocklist: an executor a JobMaster found slow (speculative execution) is blocked until its deadline,
 * whatever it reports meanwhile, and again should it register anew before then.
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
  /** The blocklist: executors found slow, each until its deadline (epoch ms of the clock). */
  readonly #blocklist = new Map<ResourceID, number>();
  readonly #blocklistEnds: DeadlineScheduler<ResourceID>;

  constructor(options: BlockedTaskManagersOptions) {
    this.#o = options;
    this.#unblock = new DeadlineScheduler(options.clock, (resourceId) => this.#tryUnblock(resourceId));
    this.#blocklistEnds = new DeadlineScheduler(options.clock, (resourceId) => {
      this.#blocklist.delete(resourceId);
      this.#tryUnblock(resourceId);
    });
  }

  #tryUnblock(resourceId: ResourceID): void {
    const taskManager = this.#o.tracker.getTaskManager(resourceId);
    if (taskManager === undefined || this.#releasing.has(resourceId) || this.#blocklist.has(resourceId)) return;
    this.#o.tracker.setBlocked(taskManager, false);
    this.#o.onUnblocked();
  }

  /**
   * The executor takes no new slots for `durationMs` (a later deadline than one it has replaces it, an earlier one is
   * ignored); it need not be registered yet.
   */
  blocklist(resourceId: ResourceID, durationMs: number): void {
    const until = this.#o.clock.now() + durationMs;
    if ((this.#blocklist.get(resourceId) ?? -Infinity) >= until) return;
    this.#blocklist.set(resourceId, until);
    this.#blocklistEnds.schedule(resourceId, until);
    this.#unblock.cancel(resourceId);
    const taskManager = this.#o.tracker.getTaskManager(resourceId);
    if (taskManager !== undefined) this.#o.tracker.setBlocked(taskManager, true);
  }

  /** Whether the executor is on the blocklist now. */
  isBlocklisted(resourceId: ResourceID): boolean {
    return this.#blocklist.has(resourceId);
  }

  /** It registered: on the blocklist, it is blocked from the start. */
  registered(taskManager: TaskManagerRegistration): void {
    if (this.#blocklist.has(taskManager.resourceId)) this.#o.tracker.setBlocked(taskManager, true);
  }

  isReleasing(resourceId: ResourceID): boolean {
    return this.#releasing.has(resourceId);
  }

  /**
   * A slot request to it failed: until its next slot report its view is in doubt (not if the report itself overtook the
   * answer).
   */
  requestFailed(taskManager: TaskManagerRegistration): void {
    if (taskManager.blocked || this.#blocklist.has(taskManager.resourceId)) return;
    this.#o.tracker.setBlocked(taskManager, true);
    this.#unblock.schedule(taskManager.resourceId, this.#o.clock.now() + this.#o.doubtMs);
  }

  /** Its slot report is the fresh view a block in doubt waited for; whether that unblocked it. */
  reported(taskManager: TaskManagerRegistration): boolean {
    const { resourceId } = taskManager;
    if (!taskManager.blocked || this.#releasing.has(resourceId) || this.#blocklist.has(resourceId)) return false;
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
    this.#blocklist.clear();
    this.#blocklistEnds.clear();
  }
}
