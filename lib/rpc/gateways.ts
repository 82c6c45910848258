/**
 * The three gateways (Flink's TaskExecutorGateway, ResourceManagerGateway, JobMasterGateway): what
 * one endpoint may ask another. Every method returns a promise and takes only wire data
 * (protocol.ts), because the caller may sit on another thread or in another process. Calls carry a
 * deadline (`rpc.ask.timeout`) and fail fast once the peer is closed or lost (see connect.ts).
 */
import type { AllocationID, ExecutionAttemptID, JobID, ResourceID } from '../core/ids.js';
import type {
  BlockedTaskManagerWire,
  JobMasterRegistrationResponse,
  RegistrationResponse,
  ResourceRequirementsWire,
  SlotOfferWire,
  SlotReportWire,
  SlotRequestWire,
  TaskDeploymentDescriptor,
  TaskExecutionStateWire,
  TaskExecutorMetricsWire,
  TaskExecutorRegistrationWire,
  HeartbeatPayloadWire,
} from './protocol.js';

/** Served by each TaskExecutor (in its worker); called by the ResourceManager and JobMasters. */
export interface TaskExecutorGateway {
  /** Flink's TaskExecutor.requestSlot: allocate the slot, connect to the job's JobMaster, offer it there. */
  requestSlot(request: SlotRequestWire): Promise<void>;
  /** Frees a slot (its tasks are failed first). */
  freeSlot(allocationId: AllocationID, cause: string): Promise<void>;
  /** Frees every slot of the job that is allocated but not active (job ended). */
  freeInactiveSlots(jobId: JobID): Promise<void>;
  /**
   * Lets go of result partitions of the job here (Flink's TaskExecutorGateway.releasePartitions): those named, once
   * every consumer has read them, or all of the job's (none named) at its end.
   */
  releasePartitions(jobId: JobID, partitionIds?: readonly ExecutionAttemptID[]): Promise<void>;
  /** Runs a subtask attempt in its slot. Resolves once accepted; progress goes to the JobMaster. */
  submitTask(descriptor: TaskDeploymentDescriptor): Promise<void>;
  /** Cancels an attempt: the task is asked to stop (its context.signal), then stopped by force after a deadline. */
  cancelTask(executionAttemptId: ExecutionAttemptID): Promise<void>;
  /** The ResourceManager's heartbeat; answered with the current slot report and result partition figures. */
  heartbeatFromResourceManager(): Promise<HeartbeatPayloadWire>;
  /** A JobMaster's heartbeat for a job; answered with the job's attempts still running here. */
  heartbeatFromJobManager(jobId: JobID): Promise<ExecutionAttemptID[]>;
  /** The ResourceManager lets go of this TaskExecutor (it should re-register or stop). */
  disconnectResourceManager(cause: string): Promise<void>;
  /** Shuts the TaskExecutor down gracefully: tasks failed, slots freed, then it exits. */
  shutdown(cause: string): Promise<void>;
  /** Its figures now: slots by state, running tasks, task threads booted and spare. */
  requestMetrics(): Promise<TaskExecutorMetricsWire>;
}

/** Served by the ResourceManager (main thread); called by TaskExecutors and JobMasters. */
export interface ResourceManagerGateway {
  registerTaskExecutor(registration: TaskExecutorRegistrationWire): Promise<RegistrationResponse>;
  /** The first slot report after registration (Flink: sendSlotReport). */
  sendSlotReport(resourceId: ResourceID, registrationId: string, report: SlotReportWire): Promise<void>;
  /** A slot became free on the TaskExecutor. */
  notifySlotAvailable(resourceId: ResourceID, allocationId: AllocationID): Promise<void>;
  /** A TaskExecutor says goodbye (graceful shutdown). */
  disconnectTaskExecutor(resourceId: ResourceID, cause: string): Promise<void>;
  registerJobMaster(jobId: JobID, address: string): Promise<void>;
  declareRequiredResources(requirements: ResourceRequirementsWire): Promise<void>;
  disconnectJobMaster(jobId: JobID, cause: string, terminal: boolean): Promise<void>;
  /**
   * TaskExecutors a JobMaster found slow take no new slots for a while (Flink's notifyNewBlockedNodes, from the
   * SpeculativeScheduler's blocklist): a later block of one extends it, never shortens it.
   */
  notifyNewBlockedNodes(blocked: readonly BlockedTaskManagerWire[]): Promise<void>;
}

/** Served by each JobMaster (main thread); called by TaskExecutors. */
export interface JobMasterGateway {
  /**
   * A TaskExecutor connects for the job (Flink's registerTaskManager): the JobMaster accepts slots
   * only from the TaskExecutors registered with it, and accepts one only while it can reach it.
   */
  registerTaskManager(jobId: JobID, resourceId: ResourceID): Promise<JobMasterRegistrationResponse>;
  /**
   * The TaskExecutor lets go of the job (it holds none of its slots any more, Flink's
   * disconnectTaskManager): the JobMaster forgets it, and any slot it still counted there is lost.
   */
  disconnectTaskManager(resourceId: ResourceID, cause: string): Promise<void>;
  /**
   * Slots offered for the job by a TaskExecutor registered with it; resolves with the AllocationIDs it
   * accepts (the rest are freed). An unregistered TaskExecutor's offers are all rejected.
   */
  offerSlots(resourceId: ResourceID, offers: readonly SlotOfferWire[]): Promise<AllocationID[]>;
  updateTaskExecutionState(state: TaskExecutionStateWire): Promise<void>;
  /**
   * Several state changes at once, applied in their order as if each came through
   * updateTaskExecutionState (a TaskExecutor sends what one turn of its mailbox produced as one call).
   */
  updateTaskExecutionStates(states: readonly TaskExecutionStateWire[]): Promise<void>;
  /** A slot of the job was freed on the TaskExecutor (its tasks, if any, are gone). */
  notifySlotFreed(resourceId: ResourceID, allocationId: AllocationID, cause: string): Promise<void>;
}

/** The gateway names, as they appear in RpcTimeoutError and channel names. */
export const GATEWAY = {
  taskExecutor: 'TaskExecutorGateway',
  resourceManager: 'ResourceManagerGateway',
  jobMaster: 'JobMasterGateway',
} as const;

/**
 * The control methods of each gateway, carried by comlink on the gateway's control channel
 * (connect.ts, docs/runtime.md Gateways): registration, heartbeats, slot reports, disconnects of a
 * TaskExecutor, metrics, shutdown — calls made per TaskExecutor or per heartbeat, a few a second at
 * most. Every other method is the hot path and goes as batched frames, among them every call a job
 * makes however small (slot requests, offers and frees, its JobMaster's registration, resource
 * declarations, deployments, task states, a slot's return to the ResourceManager, a job's idle slots and
 * partitions let go of): comlink cost a p = 1 job ~10 % of its path's CPU
 * (bench/jobPathCpu.ts, 6 alternating runs of 2,000 jobs: 1,606 → 1,442 µs median) and a
 * JobMaster's gateway a second channel per job.
 */
export const CONTROL_METHODS = {
  taskExecutor: [
    'heartbeatFromResourceManager',
    'heartbeatFromJobManager',
    'disconnectResourceManager',
    'shutdown',
    'requestMetrics',
  ] as const satisfies readonly (keyof TaskExecutorGateway)[],
  resourceManager: [
    'registerTaskExecutor',
    'sendSlotReport',
    'disconnectTaskExecutor',
  ] as const satisfies readonly (keyof ResourceManagerGateway)[],
  jobMaster: [] as const satisfies readonly (keyof JobMasterGateway)[],
} as const;

/**
 * Of a TaskExecutor's methods, those whose answers go with the next batch its link sends, or within 2 ms
 * (serveGateway's `answerWithNext`), not in one of their own: a JobMaster acts only on a refused deployment, and a
 * short task's states follow its acceptance within microseconds. One post to the JobMaster's thread per task instead
 * of two (a post that wakes a thread costs both sides ~25 µs here: docs/profiling.md).
 */
export const ANSWERED_WITH_NEXT = { taskExecutor: ['submitTask', 'submitTasks'] } as const;

/** The hot path: every method not in CONTROL_METHODS (the type check below keeps the two lists whole). */
export const HOT_PATH_METHODS = {
  taskExecutor: [
    'requestSlot',
    'freeSlot',
    'freeInactiveSlots',
    'releasePartitions',
    'submitTask',
    'cancelTask',
  ] as const satisfies readonly (keyof TaskExecutorGateway)[],
  resourceManager: [
    'registerJobMaster',
    'declareRequiredResources',
    'notifySlotAvailable',
    'disconnectJobMaster',
    'notifyNewBlockedNodes',
  ] as const satisfies readonly (keyof ResourceManagerGateway)[],
  jobMaster: [
    'registerTaskManager',
    'disconnectTaskManager',
    'offerSlots',
    'notifySlotFreed',
    'updateTaskExecutionState',
    'updateTaskExecutionStates',
  ] as const satisfies readonly (keyof JobMasterGateway)[],
} as const;

type Unsorted<G, K extends keyof typeof CONTROL_METHODS> = Exclude<
  keyof G,
  (typeof CONTROL_METHODS)[K][number] | (typeof HOT_PATH_METHODS)[K][number]
>;
// A method added to a gateway must be put in one of the two lists (never: none left out).
const everyMethodSorted: [
  Unsorted<TaskExecutorGateway, 'taskExecutor'>,
  Unsorted<ResourceManagerGateway, 'resourceManager'>,
  Unsorted<JobMasterGateway, 'jobMaster'>,
] extends [never, never, never]
  ? true
  : false = true;
void everyMethodSorted;
