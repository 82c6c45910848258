/**
 * The public API of slotwise. Every export is listed by name; types in their own block.
 */
export { systemClock, SimulatedClock } from './core/clock.js';
export { formatDuration, parseDuration } from './core/Duration.js';
export {
  ConfigurationError,
  DuplicateTaskError,
  ERROR_CLASSES,
  IllegalArgumentError,
  IllegalStateError,
  isSlotwiseError,
  MemoryAllocationError,
  ResourceBudgetError,
  ResourceProfileError,
  reviveError,
  SlotAllocationError,
  SlotNotActiveError,
  SlotNotFoundError,
  SlotOwnerMismatchError,
  SlotwiseError,
  TaskNotFoundError,
  TimeoutError,
  UnknownTaskExecutorError,
  SlotRequestError,
  RpcTimeoutError,
  EndpointClosedError,
  TaskExecutionError,
} from './core/errors.js';
export { AllocationID, ExecutionAttemptID, JobID, ResourceID, SlotID } from './core/ids.js';
export { formatMemorySize, GiB, KiB, MiB, parseMemorySize } from './core/MemorySize.js';
export { DEFAULTS, describeOptions, OPTIONS, resolveOptions } from './core/options.js';
export { ResourceBudgetManager } from './core/ResourceBudgetManager.js';
export { formatShortfall, ResourceProfile, ResourceProfileBuilder } from './core/ResourceProfile.js';
export { DEFAULT_PAGE_SIZE, MemoryManager } from './taskexecutor/MemoryManager.js';
export { defaultSlotResourceProfile, totalResourceProfile } from './core/TaskExecutorResourceUtils.js';
export { TaskSlotTable } from './taskexecutor/TaskSlotTable.js';
export { ResourceCounter } from './core/ResourceCounter.js';
export { DeadlineScheduler } from './core/DeadlineScheduler.js';
export { FineGrainedSlotManager } from './resourcemanager/slotmanager/FineGrainedSlotManager.js';
export { DefaultResourceAllocationStrategy } from './resourcemanager/slotmanager/ResourceAllocationStrategy.js';
export { NO_RESOURCE_ALLOCATOR } from './resourcemanager/slotmanager/ResourceAllocator.js';
export { ResourceRequirement, ResourceRequirements } from './resourcemanager/slotmanager/ResourceRequirement.js';
export { DefaultResourceTracker } from './resourcemanager/slotmanager/ResourceTracker.js';
export { SLOT_MATCHING_POLICIES } from './resourcemanager/slotmanager/SlotMatchingStrategy.js';
export { TaskManagerTracker } from './resourcemanager/slotmanager/TaskManagerTracker.js';
export { describeWaitReason } from './resourcemanager/slotmanager/WaitReason.js';
export { WorkerResourceSpec } from './resourcemanager/slotmanager/WorkerResourceSpec.js';
export { ResourceManager } from './resourcemanager/ResourceManager.js';
export { LocalResourceManagerDriver } from './resourcemanager/LocalResourceManagerDriver.js';
export { TaskExecutor } from './taskexecutor/TaskExecutor.js';
export { SlotTaskPool } from './taskexecutor/SlotTaskPool.js';
export { MainThreadExecutor } from './rpc/MainThreadExecutor.js';
export { GATEWAY } from './rpc/gateways.js';
export { Link } from './rpc/Link.js';
export { connectGateway, serveGateway } from './rpc/connect.js';
export { MiniCluster } from './MiniCluster.js';
export { Dispatcher } from './dispatcher/Dispatcher.js';
export { JobGraph } from './jobmaster/JobGraph.js';
export { DefaultTaskModuleChecker } from './jobmaster/TaskModuleChecker.js';
export { JobMaster } from './jobmaster/JobMaster.js';
export { createInspectionSink } from './inspect.js';
export { machines, jobStatusMachine, resourceSlotMachine, slotManagerMachine, taskSlotMachine, taskSlotTableMachine } from '../machines/index.js';

export type { Clock, TimerHandle } from './core/clock.js';
export type { DurationInput } from './core/Duration.js';
export type { AnySlotwiseError, SerializedSlotwiseError, SlotwiseErrorTag } from './core/errors.js';
export type { MemorySizeInput } from './core/MemorySize.js';
export type { OptionName, ResolvedOptions, SlotwiseOptions } from './core/options.js';
export type { ResourceProfileJSON, ResourceShortfall, ResourceSpec } from './core/ResourceProfile.js';
export type { MemoryLeakReport, MemorySegment, SharedMemoryHandle } from './taskexecutor/MemoryManager.js';
export type { SlotReport, SlotStatus, SlotStatusState } from './core/SlotReport.js';
export type { FreeSlotResult, SlotActions, SlotAllocationRequest, TaskSlotInfo, TaskSlotOutput, TaskSlotPayload, TaskSlotTableOptions } from './taskexecutor/TaskSlotTable.js';
export type { PendingRequestInfo, RegistrationResult, SlotManagerOptions, TaskManagerRegistrationRequest } from './resourcemanager/slotmanager/FineGrainedSlotManager.js';
export type { PendingTaskManagerID } from './resourcemanager/slotmanager/PendingTaskManager.js';
export type { DemandOutcome, ResourceAllocationResult, ResourceAllocationStrategy, ResourceDemand } from './resourcemanager/slotmanager/ResourceAllocationStrategy.js';
export type { ResourceAllocator } from './resourcemanager/slotmanager/ResourceAllocator.js';
export type { ResourceEventListener, WaitingRequirement } from './resourcemanager/slotmanager/ResourceEventListener.js';
export type { SlotManagerOverview } from './resourcemanager/slotmanager/SlotManagerOverview.js';
export type { SlotMatchingPolicy } from './resourcemanager/slotmanager/SlotMatchingStrategy.js';
export type { PlacementPreference } from './resourcemanager/slotmanager/TaskManagerTracker.js';
export type { WaitReason } from './resourcemanager/slotmanager/WaitReason.js';
export type { SlotRequest, TaskExecutorSlotGateway } from './rpc/TaskExecutorSlotGateway.js';
export type { ResourceManagerOptions } from './resourcemanager/ResourceManager.js';
export type { ResourceManagerDriver, ResourceManagerDriverContext, WorkerInfo } from './resourcemanager/ResourceManagerDriver.js';
export type { LocalDriverOptions } from './resourcemanager/LocalResourceManagerDriver.js';
export type { SlotTaskRunner, TaskExecutorOptions } from './taskexecutor/TaskExecutor.js';
export type { TaskContext } from './taskexecutor/taskWorker.js';
export type { JobMasterGateway, ResourceManagerGateway, TaskExecutorGateway } from './rpc/gateways.js';
export type { ExecutionState, SlotOfferWire, TaskDeploymentDescriptor, TaskExecutionStateWire } from './rpc/protocol.js';
export type { Gateway } from './rpc/connect.js';
export type { ClusterOverview, MiniClusterOptions } from './MiniCluster.js';
export type { JobClient, JobSummary } from './dispatcher/Dispatcher.js';
export type { DistributionPattern, JobEdgeSpec, JobGraphSpec, JobVertexSpec, RestartStrategySpec } from './jobmaster/JobGraph.js';
export type { JobEvent, JobResult } from './jobmaster/JobMaster.js';
export type { TaskModuleChecker, TaskModuleCheckerOptions, TaskModuleProblem, TaskModuleVerdict } from './jobmaster/TaskModuleChecker.js';
export type { InspectionRecord, InspectOption } from './inspect.js';
