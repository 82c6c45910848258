/**
 * The free registered resource (Flink's TaskManagerTracker.getFreeResource): what the registered
 * executors that are not blocked can still take, summed. A requirement check that keeps spare
 * workers reads it, and summing 100,000 executors' profiles on demand cost a profile per executor
 * per check; so once it has been read it is kept as running numbers (the executors' own raw
 * amounts: integer units, so exact), which the TaskManagerTracker moves around every change of an
 * unblocked executor's capacity (until the first read nobody pays for it). Given up (the sum then
 * made on demand again) once an executor's capacity is kept as profiles (UNKNOWN or ANY involved,
 * or an overflow).
 */
import { runningAmounts } from '../../core/resourceAmounts.js';
import { ResourceProfile } from '../../core/ResourceProfile.js';
import type { TaskManagerRegistration } from './TaskManagerRegistration.js';

export class FreeResourceSum {
  /** The registered executors, blocked or not. */
  readonly #taskManagers: () => Iterable<TaskManagerRegistration>;
  /** The sum as a profile; undefined when a change made it stale. */
  #sum: ResourceProfile | undefined = ResourceProfile.ZERO;
  /** The running numbers (ResourceProfile.amounts order and units; extended resources without zeros). */
  readonly #amounts = runningAmounts();
  readonly #extended = new Map<string, number>();
  /** Whether the running numbers are kept (the sum has been read). */
  #counted = false;
  /** False once an executor's capacity is kept as profiles: the sum is made on demand. */
  #numeric = true;

  constructor(taskManagers: () => Iterable<TaskManagerRegistration>) {
    this.#taskManagers = taskManagers;
  }

  /**
   * Adds (1) or takes away (−1) the executor's available resources to or from the sum: taken away
   * before a change of an unblocked executor's capacity and added after, added when one registers
   * or is unblocked, taken away when one leaves or is blocked.
   */
  count(taskManager: TaskManagerRegistration, sign: 1 | -1): void {
    this.#sum = undefined;
    if (this.#counted && this.#numeric && !taskManager.addAvailableTo(this.#amounts, this.#extended, sign))
      this.#numeric = false;
  }

  /** The sum over the executors that are not blocked of what they can still take. */
  get sum(): ResourceProfile {
    if (this.#sum === undefined && this.#numeric && !this.#counted) {
      this.#counted = true;
      for (const taskManager of this.#taskManagers()) if (!taskManager.blocked) this.count(taskManager, 1);
    }
    if (this.#sum === undefined && this.#numeric)
      this.#sum = ResourceProfile.fromAmounts(this.#amounts, this.#extended);
    if (this.#sum === undefined) {
      let free = ResourceProfile.ZERO;
      for (const taskManager of this.#taskManagers())
        if (!taskManager.blocked) free = free.merge(taskManager.available);
      this.#sum = free;
    }
    return this.#sum;
  }
}
