/**
 * A worker the SlotManager asked for that has not registered yet (Flink's PendingTaskManager).
 * Each requirement check plans which jobs' slots it will carry once it arrives; a TaskExecutor of
 * the same shape that registers takes its place and gets those slots at once.
 */
import type { JobID } from '../../core/ids.js';
import { ResourceCounter } from '../../core/ResourceCounter.js';
import type { ResourceProfile } from '../../core/ResourceProfile.js';
import type { WorkerResourceSpec } from './WorkerResourceSpec.js';

export type PendingTaskManagerID = string & { readonly __pendingTaskManager: unique symbol };

let counter = 0;

export class PendingTaskManager {
  readonly id: PendingTaskManagerID;
  readonly spec: WorkerResourceSpec;
  /** When it was asked for (clock ms). */
  readonly requestedAt: number;
  #allocations = new Map<JobID, ResourceCounter>();
  #unused: ResourceProfile;

  constructor(spec: WorkerResourceSpec, requestedAt: number) {
    this.id = `pending-${++counter}` as PendingTaskManagerID;
    this.spec = spec;
    this.requestedAt = requestedAt;
    this.#unused = spec.totalResourceProfile;
  }

  get totalResourceProfile(): ResourceProfile {
    return this.spec.totalResourceProfile;
  }

  get defaultSlotResourceProfile(): ResourceProfile {
    return this.spec.defaultSlotResourceProfile;
  }

  /** What the planned slots leave free. */
  get unusedResource(): ResourceProfile {
    return this.#unused;
  }

  /** The slots planned on it, per job (effective profiles). */
  get pendingAllocations(): ReadonlyMap<JobID, ResourceCounter> {
    return this.#allocations;
  }

  get hasPendingAllocations(): boolean {
    return this.#allocations.size > 0;
  }

  /** Replaces the plan (Flink recomputes pending allocations from scratch on every check). */
  replaceAllPendingAllocations(allocations: ReadonlyMap<JobID, ResourceCounter>): void {
    this.#allocations = new Map([...allocations].filter(([, counter]) => !counter.isEmpty()));
    let used = ResourceCounter.empty();
    for (const counter of this.#allocations.values()) used = used.add(counter);
    const total = used.getTotalResource();
    this.#unused = this.spec.totalResourceProfile.allFieldsNoLessThan(total)
      ? this.spec.totalResourceProfile.subtract(total)
      : this.spec.totalResourceProfile.multiply(0);
  }

  clearPendingAllocationsOfJob(jobId: JobID): void {
    if (!this.#allocations.has(jobId)) return;
    const rest = new Map(this.#allocations);
    rest.delete(jobId);
    this.replaceAllPendingAllocations(rest);
  }

  toJSON(): object {
    return {
      id: this.id,
      totalResourceProfile: this.spec.totalResourceProfile.toJSON(),
      numberOfSlots: this.spec.numberOfSlots,
      requestedAt: this.requestedAt,
      pendingAllocations: Object.fromEntries([...this.#allocations].map(([job, counter]) => [job, counter.toJSON()])),
    };
  }
}
