/**
 * A driver's live workers by ResourceID, each with the Link to it and its TaskExecutor's gateway:
 * the bookkeeping every driver answers the ResourceManager from (registered yet, its gateway while
 * the Link is open, the listing). `LinkedWorkersDriver` answers those three calls of the driver
 * interface from it.
 */
import type { ResourceID } from '../core/ids.js';
import type { TaskExecutorGateway } from '../rpc/gateways.js';
import type { Link } from '../rpc/Link.js';
import type { WorkerInfo } from './ResourceManagerDriver.js';

export interface LinkedWorker extends WorkerInfo {
  readonly link: Link;
  readonly gateway: TaskExecutorGateway;
}

export class LinkedWorkers<W extends LinkedWorker> extends Map<ResourceID, W> {
  /** A worker registered: its start succeeded. */
  markRegistered(resourceId: ResourceID): void {
    const worker = this.get(resourceId);
    if (worker !== undefined && worker.state === 'starting') worker.state = 'running';
  }

  /** The TaskExecutor of a live worker, connected; undefined once its Link closed. */
  gatewayOf(resourceId: ResourceID): TaskExecutorGateway | undefined {
    const worker = this.get(resourceId);
    return worker === undefined || worker.link.closed ? undefined : worker.gateway;
  }

  infos(): WorkerInfo[] {
    return [...this.values()].map(({ resourceId, pendingWorkerId, spec, startedAt, state }) => ({
      resourceId,
      pendingWorkerId,
      spec,
      startedAt,
      state,
    }));
  }
}

/** The part of a ResourceManagerDriver that its LinkedWorkers answer. */
export abstract class LinkedWorkersDriver<W extends LinkedWorker> {
  protected readonly linkedWorkers = new LinkedWorkers<W>();

  /** Marks a worker registered (its start succeeded). */
  markRegistered(resourceId: ResourceID): void {
    this.linkedWorkers.markRegistered(resourceId);
  }

  /** The TaskExecutor of a live worker, connected. */
  taskExecutorGateway(resourceId: ResourceID): TaskExecutorGateway | undefined {
    return this.linkedWorkers.gatewayOf(resourceId);
  }

  workers(): readonly WorkerInfo[] {
    return this.linkedWorkers.infos();
  }
}
