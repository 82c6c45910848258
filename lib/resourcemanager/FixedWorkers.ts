/**
 * A fixed cluster's workers (a MiniCluster's TaskExecutors, started up front, `workersOnDemand` off) and
 * the spec each was started with: one gone for good — ended, or lost and not back in time — is replaced
 * by a worker of the same spec (Flink's ActiveResourceManager requesting a new worker for a failed one;
 * the driver delays starts while they keep failing).
 */
import type { ResourceID } from '../core/ids.js';
import type { RuntimeLog } from '../core/Logger.js';
import type { ResourceManagerDriver } from './ResourceManagerDriver.js';
import type { WorkerResourceSpec } from './slotmanager/WorkerResourceSpec.js';

export class FixedWorkers {
  readonly #specs = new Map<ResourceID, WorkerResourceSpec>();
  readonly #driver: ResourceManagerDriver;
  readonly #log: RuntimeLog;
  readonly #closed: () => boolean;

  constructor(driver: ResourceManagerDriver, log: RuntimeLog, closed: () => boolean) {
    this.#driver = driver;
    this.#log = log;
    this.#closed = closed;
  }

  has(resourceId: ResourceID): boolean {
    return this.#specs.has(resourceId);
  }

  /** `resourceId` belongs to the fixed cluster, started with `spec`. */
  remember(resourceId: ResourceID, spec: WorkerResourceSpec): void {
    this.#specs.set(resourceId, spec);
  }

  /** Refused on purpose (the SlotManager rejected it): not replaced. */
  forget(resourceId: ResourceID): void {
    this.#specs.delete(resourceId);
  }

  /** A worker of the fixed cluster is gone for good: one of its spec is started in its place; returns it. */
  replace(resourceId: ResourceID, why: string): ResourceID | undefined {
    const spec = this.#specs.get(resourceId);
    if (spec === undefined) return undefined;
    this.#specs.delete(resourceId);
    if (this.#closed() || this.#driver.canStartWorkers === false) return undefined;
    const replacement = this.#driver.requestResource(spec, null);
    this.#specs.set(replacement, spec);
    this.#log(
      `TaskExecutor ${resourceId} of the fixed cluster is gone (${why}): started ${replacement} in its place`,
      { resourceId },
      'warn',
    );
    return replacement;
  }
}
