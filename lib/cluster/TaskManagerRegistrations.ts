/**
 * What a TaskManager tells of its registrations at the cluster's ResourceManager (`onRegistered`):
 * each time its TaskExecutor is accepted, under which ResourceID, and under which one it was before
 * (a fresh TaskExecutor's is new: Flink's TaskManagerRunner starting a TaskExecutor again).
 */
import { describeValue, IllegalArgumentError } from '../core/errors.js';

/** A TaskManager's TaskExecutor was registered at the ResourceManager. */
export interface TaskManagerRegistered {
  /** The ResourceID it registered under. */
  readonly resourceId: string;
  /**
   * The ResourceID of the TaskManager's last registration before this one: null for its first, the
   * same when it registered again under its ResourceID, another when a fresh TaskExecutor did.
   */
  readonly previous: string | null;
}

export type TaskManagerRegistrationListener = (event: TaskManagerRegistered) => void;

/** The listeners of one TaskManager's registrations, and the ResourceID it was last registered under. */
export class TaskManagerRegistrations {
  readonly #listeners = new Set<TaskManagerRegistrationListener>();
  #last: string | null = null;

  /** Adds a listener of the registrations to come; returns a function that removes it. */
  add(listener: TaskManagerRegistrationListener): () => void {
    if (typeof listener !== 'function')
      throw new IllegalArgumentError('invalid-type', `onRegistered takes a function, got ${describeValue(listener)}`, {
        argument: 'listener',
      });
    this.#listeners.add(listener);
    return () => void this.#listeners.delete(listener);
  }

  /** A registration was accepted under `resourceId`: every listener is told (one that throws is skipped). */
  registered(resourceId: string): void {
    const event: TaskManagerRegistered = { resourceId, previous: this.#last };
    this.#last = resourceId;
    for (const listener of [...this.#listeners]) {
      try {
        listener(event);
      } catch {
        // A listener's failure is its own: the TaskManager and the other listeners go on.
      }
    }
  }

  /** Drops every listener (the TaskManager is closing). */
  clear(): void {
    this.#listeners.clear();
  }
}
