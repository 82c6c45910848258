/**
 * In-process doubles for the ResourceManager's surroundings: a TestingResourceManagerDriver that
 * records what the ResourceManager asks of it and hands out TestingTaskExecutorGateways the test
 * controls (heartbeat answers, slot request answers), and a TestingJobMasterGateway that records
 * freed slots. No threads: the "worker" is the test itself, speaking through the per-worker
 * ResourceManagerGateway the driver got in `start(context)`.
 */
import { ResourceID, type AllocationID, type JobID } from '../../lib/core/ids.js';
import type { JobMasterGateway, ResourceManagerGateway, TaskExecutorGateway } from '../../lib/rpc/gateways.js';
import type {
  JobMasterRegistrationResponse,
  SlotReportWire,
  SlotRequestWire,
  TaskExecutorMetricsWire,
  TaskExecutorRegistrationWire,
} from '../../lib/rpc/protocol.js';
import type {
  ResourceManagerDriver,
  ResourceManagerDriverContext,
  WorkerInfo,
} from '../../lib/resourcemanager/ResourceManagerDriver.js';
import type { PendingTaskManagerID } from '../../lib/resourcemanager/slotmanager/PendingTaskManager.js';
import type { WorkerResourceSpec } from '../../lib/resourcemanager/slotmanager/WorkerResourceSpec.js';

/** An allocation a slot report shows in static slot `index`. */
export interface ReportedSlot {
  readonly index: number;
  readonly jobId: JobID;
  readonly allocationId: AllocationID;
}

/** The wire slot report of a worker of `spec`: every static slot, free unless listed. */
export function slotReportWire(
  resourceId: ResourceID,
  spec: WorkerResourceSpec,
  allocated: readonly ReportedSlot[] = [],
): SlotReportWire {
  const slots = Array.from({ length: spec.numberOfSlots }, (_, index) => {
    const a = allocated.find((x) => x.index === index);
    return {
      slotNumber: index,
      resourceProfile: spec.defaultSlotResourceProfile.toJSON(),
      allocationId: a?.allocationId ?? null,
      jobId: a?.jobId ?? null,
      state: a ? ('allocated' as const) : ('free' as const),
    };
  });
  return { resourceId, slots };
}

/** What a TaskExecutor of `spec` says of itself when it registers. */
export function registrationWire(
  resourceId: ResourceID,
  spec: WorkerResourceSpec,
  pendingWorkerId?: string | null,
): TaskExecutorRegistrationWire {
  return {
    resourceId,
    host: 'localhost',
    totalResourceProfile: spec.totalResourceProfile.toJSON(),
    defaultSlotResourceProfile: spec.defaultSlotResourceProfile.toJSON(),
    numberOfSlots: spec.numberOfSlots,
    mode: 'thread',
    ...(pendingWorkerId == null ? {} : { pendingWorkerId }),
  };
}

/**
 * A TaskExecutor the test plays: heartbeats answered with `report`, never, with a rejection, or when the test says
 * (`held`).
 */
export class TestingTaskExecutorGateway implements TaskExecutorGateway {
  heartbeat: 'answer' | 'silent' | 'reject' | 'held' = 'answer';
  report: SlotReportWire;
  heartbeats = 0;
  readonly #held: Array<() => void> = [];
  readonly slotRequests: SlotRequestWire[] = [];
  readonly freeInactiveSlotsCalls: JobID[] = [];
  readonly calls: Array<[string, ...unknown[]]> = [];
  /** How requestSlot answers (default: acknowledged). */
  requestSlotAnswer: (request: SlotRequestWire) => Promise<void> = async () => {};

  constructor(
    readonly resourceId: ResourceID,
    readonly spec: WorkerResourceSpec,
  ) {
    this.report = slotReportWire(resourceId, spec);
  }

  /** Sets the report heartbeats answer with. */
  reports(allocated: readonly ReportedSlot[]): this {
    this.report = slotReportWire(this.resourceId, this.spec, allocated);
    return this;
  }

  heartbeatFromResourceManager(): Promise<SlotReportWire> {
    this.heartbeats++;
    if (this.heartbeat === 'silent') return new Promise(() => {});
    if (this.heartbeat === 'reject') return Promise.reject(new Error(`${this.resourceId} cannot answer`));
    if (this.heartbeat === 'held') return new Promise((resolve) => this.#held.push(() => resolve(this.report)));
    return Promise.resolve(this.report);
  }

  /** Answers the heartbeats held so far (with the report as it is now); how many. */
  answerHeld(): number {
    const held = this.#held.splice(0);
    for (const answer of held) answer();
    return held.length;
  }
  requestSlot(request: SlotRequestWire): Promise<void> {
    this.slotRequests.push(request);
    return this.requestSlotAnswer(request);
  }
  async releasePartitions(_jobId: JobID): Promise<void> {}

  async freeInactiveSlots(jobId: JobID): Promise<void> {
    this.freeInactiveSlotsCalls.push(jobId);
  }
  async freeSlot(allocationId: AllocationID, cause: string): Promise<void> {
    this.calls.push(['freeSlot', allocationId, cause]);
  }
  async requestMetrics(): Promise<TaskExecutorMetricsWire> {
    return {
      resourceId: this.resourceId,
      slots: { numberOfSlots: this.spec.numberOfSlots, allocated: 0, active: 0, releasing: 0 },
      runningTasks: 0,
      partitions: null,
      taskThreads: null,
    };
  }
  async submitTask(): Promise<void> {
    this.calls.push(['submitTask']);
  }
  async cancelTask(): Promise<void> {
    this.calls.push(['cancelTask']);
  }
  async heartbeatFromJobManager(): Promise<never[]> {
    return [];
  }
  async disconnectResourceManager(cause: string): Promise<void> {
    this.calls.push(['disconnectResourceManager', cause]);
  }
  async shutdown(cause: string): Promise<void> {
    this.calls.push(['shutdown', cause]);
  }
}

interface TestingWorker extends WorkerInfo {
  readonly gateway: TestingTaskExecutorGateway;
}

/** Records every call; "starts" workers as TestingTaskExecutorGateways (nothing registers by itself). */
export class TestingResourceManagerDriver implements ResourceManagerDriver {
  readonly mode = 'thread' as const;
  context: ResourceManagerDriverContext | null = null;
  readonly requestResourceCalls: Array<{
    spec: WorkerResourceSpec;
    pendingWorkerId: PendingTaskManagerID | null;
    resourceId: ResourceID;
    inMailbox: boolean;
  }> = [];
  readonly releaseResourceCalls: Array<{ resourceId: ResourceID; reason: string }> = [];
  readonly cancelPendingWorkerCalls: PendingTaskManagerID[] = [];
  readonly markRegisteredCalls: ResourceID[] = [];
  closed = false;
  readonly #workers = new Map<ResourceID, TestingWorker>();
  #started = 0;

  constructor(readonly defaultSpec: WorkerResourceSpec) {}

  start(context: ResourceManagerDriverContext): void {
    this.context = context;
  }

  requestResource(spec: WorkerResourceSpec, pendingWorkerId: PendingTaskManagerID | null): ResourceID {
    const resourceId = this.startWorker(spec, pendingWorkerId);
    this.requestResourceCalls.push({
      spec,
      pendingWorkerId,
      resourceId,
      inMailbox: this.context?.mailbox.isInMainThread ?? false,
    });
    return resourceId;
  }

  /** A worker started outside requestResource (a fixed cluster): its fake TaskExecutor. */
  startWorker(
    spec: WorkerResourceSpec = this.defaultSpec,
    pendingWorkerId: PendingTaskManagerID | null = null,
  ): ResourceID {
    const resourceId = ResourceID.parse(`worker-${++this.#started}`);
    this.#workers.set(resourceId, {
      resourceId,
      pendingWorkerId,
      spec,
      startedAt: 0,
      state: 'starting',
      gateway: new TestingTaskExecutorGateway(resourceId, spec),
    });
    return resourceId;
  }

  releaseResource(resourceId: ResourceID, reason: string): void {
    this.releaseResourceCalls.push({ resourceId, reason });
    const worker = this.#workers.get(resourceId);
    if (worker !== undefined) worker.state = 'stopping';
  }

  cancelPendingWorker(pendingWorkerId: PendingTaskManagerID): void {
    this.cancelPendingWorkerCalls.push(pendingWorkerId);
  }

  markRegistered(resourceId: ResourceID): void {
    this.markRegisteredCalls.push(resourceId);
    const worker = this.#workers.get(resourceId);
    if (worker?.state === 'starting') worker.state = 'running';
  }

  taskExecutorGateway(resourceId: ResourceID): TaskExecutorGateway | undefined {
    return this.#workers.get(resourceId)?.gateway;
  }

  /** The fake TaskExecutor of a started worker (throws for an unknown one: a test mistake). */
  executor(resourceId: ResourceID): TestingTaskExecutorGateway {
    const worker = this.#workers.get(resourceId);
    if (worker === undefined) throw new Error(`the driver started no worker ${resourceId}`);
    return worker.gateway;
  }

  /** The ResourceManager as worker `resourceId` calls it (on the mailbox, checked against that id). */
  gateway(resourceId: ResourceID): ResourceManagerGateway {
    if (this.context === null) throw new Error('the driver was not started');
    return this.context.resourceManagerGateway(resourceId);
  }

  /** The worker ended (as the real driver reports an exit): it is no longer live. */
  terminate(resourceId: ResourceID, reason: string): void {
    if (this.context === null) throw new Error('the driver was not started');
    this.#workers.delete(resourceId);
    this.context.onWorkerTerminated(resourceId, reason);
  }

  workers(): readonly WorkerInfo[] {
    return [...this.#workers.values()].map(({ resourceId, pendingWorkerId, spec, startedAt, state }) => ({
      resourceId,
      pendingWorkerId,
      spec,
      startedAt,
      state,
    }));
  }

  async close(): Promise<void> {
    this.closed = true;
  }
}

/** A JobMaster that records the slots the ResourceManager says were freed. */
export class TestingJobMasterGateway implements JobMasterGateway {
  readonly freed: Array<{ resourceId: ResourceID; allocationId: AllocationID; cause: string }> = [];

  async registerTaskManager(): Promise<JobMasterRegistrationResponse> {
    return { kind: 'accepted' };
  }
  async disconnectTaskManager(): Promise<void> {}
  async offerSlots(
    _resourceId: ResourceID,
    offers: ReadonlyArray<{ allocationId: AllocationID }>,
  ): Promise<AllocationID[]> {
    return offers.map((o) => o.allocationId);
  }
  async updateTaskExecutionState(): Promise<void> {}
  async updateTaskExecutionStates(): Promise<void> {}
  async notifySlotFreed(resourceId: ResourceID, allocationId: AllocationID, cause: string): Promise<void> {
    this.freed.push({ resourceId, allocationId, cause });
  }
}
