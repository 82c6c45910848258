/**
 * The public API of slotwise (`import … from 'slotwise'`): the MiniCluster and its jobs, the task
 * contract, results and events, ResourceProfile and the IDs, every error class, the options, the
 * logger contract, the components docs/slotmanager.md documents (TaskSlotTable, MemoryManager, the
 * FineGrainedSlotManager and its collaborators) and the statecharts. Every export is listed by name;
 * types in their own block. Runtime internals (endpoints, RPC, pools, the task module checker) are in
 * `slotwise/internals`.
 */

// The cluster and its jobs.
export { MiniCluster } from './MiniCluster.js';
export { JobGraph } from './jobmaster/JobGraph.js';

// Errors: one closed family, each class with `_tag`, `reason` and `details`.
export {
  ClusterError,
  PartitionError,
  ConfigurationError,
  DuplicateTaskError,
  EndpointClosedError,
  ERROR_CLASSES,
  IllegalArgumentError,
  IllegalStateError,
  isSlotwiseError,
  JobGraphError,
  MemoryAllocationError,
  ResourceBudgetError,
  ResourceProfileError,
  RestError,
  reviveError,
  RpcTimeoutError,
  SlotAllocationError,
  SlotNotActiveError,
  SlotNotFoundError,
  SlotOwnerMismatchError,
  SlotRequestError,
  SlotwiseError,
  TaskExecutionError,
  TaskNotFoundError,
  TimeoutError,
  UnknownTaskExecutorError,
} from './core/errors.js';

// Values: IDs, profiles, sizes, durations, options, the clock.
export { AllocationID, ExecutionAttemptID, JobID, ResourceID, SlotID } from './core/ids.js';
export { formatShortfall, ResourceProfile, ResourceProfileBuilder } from './core/ResourceProfile.js';
export { ResourceBudgetManager } from './core/ResourceBudgetManager.js';
export { ResourceCounter } from './core/ResourceCounter.js';
export { defaultSlotResourceProfile, totalResourceProfile } from './core/TaskExecutorResourceUtils.js';
export { formatMemorySize, GiB, KiB, MiB, parseMemorySize } from './core/MemorySize.js';
export { formatDuration, parseDuration } from './core/Duration.js';
export { DEFAULTS, describeOptions, OPTIONS, resolveOptions } from './core/options.js';
export { systemClock, SimulatedClock } from './core/clock.js';
export { formatLogRecord, LOG_LEVELS } from './core/Logger.js';

// Components docs/slotmanager.md documents.
export { TaskSlotTable } from './taskexecutor/TaskSlotTable.js';
export { DEFAULT_PAGE_SIZE, MemoryManager } from './taskexecutor/MemoryManager.js';
export { FineGrainedSlotManager } from './resourcemanager/slotmanager/FineGrainedSlotManager.js';
export { DefaultResourceAllocationStrategy } from './resourcemanager/slotmanager/ResourceAllocationStrategy.js';
export { NO_RESOURCE_ALLOCATOR } from './resourcemanager/slotmanager/ResourceAllocator.js';
export { ResourceRequirement, ResourceRequirements } from './resourcemanager/slotmanager/ResourceRequirement.js';
export { SLOT_MATCHING_POLICIES } from './resourcemanager/slotmanager/SlotMatchingStrategy.js';
export { describeWaitReason } from './resourcemanager/slotmanager/WaitReason.js';
export { WorkerResourceSpec } from './resourcemanager/slotmanager/WorkerResourceSpec.js';

// The statecharts (also `slotwise/machines`).
export {
  jobStatusMachine,
  machines,
  resourceSlotMachine,
  slotManagerMachine,
  taskSlotMachine,
  taskSlotTableMachine,
} from '../machines/index.js';

// The cluster, jobs, tasks, results and events.
export type { MiniClusterOptions } from './MiniClusterOptions.js';
export type { MetricsOptions } from './metrics/MetricsOptions.js';
export type { HistogramSnapshot, MetricsSnapshot } from './metrics/MetricsSnapshot.js';
export type { DashboardOptions } from './dashboard/DashboardOptions.js';
export type {
  ClusterOverview,
  PendingRequestOverview,
  ResourceAmounts,
  SlotOverview,
  TaskExecutorOverview,
} from './ClusterOverview.js';
export type {
  JobClient,
  JobStatusChangedEvent,
  JobSummary,
  SubmitJobOptions,
  TaskStateChangedEvent,
  VertexParallelismDecidedEvent,
} from './dispatcher/Dispatcher.js';
export type {
  DistributionPattern,
  JobEdgeSpec,
  JobGraphSpec,
  JobVertexSpec,
  RestartStrategySpec,
} from './jobmaster/JobGraph.js';
export type { JobEvent, JobResult } from './jobmaster/JobMaster.js';
export type { JobStatus } from '../machines/jobStatus.machine.js';
export type { TaskContext, TaskFunction } from './taskexecutor/taskModule.js';
export type { TaskInvocationContext } from './taskexecutor/taskThreadProtocol.js';
export type { ExecutionState, SerializedError, TaskExecutorMetricsWire } from './rpc/protocol.js';
export type { InspectedEvent, InspectedSnapshot, InspectionRecord, InspectOption } from './InspectionRecord.js';
export type { Logger, LoggerFields, LogFields, LogLevel, LogRecord, RuntimeLogFields } from './core/Logger.js';

// Errors and values.
export type { AnySlotwiseError, SerializedSlotwiseError, SlotwiseErrorTag } from './core/errors.js';
export type { ResourceProfileJSON, ResourceShortfall, ResourceSpec } from './core/ResourceProfile.js';
export type { MemorySizeInput } from './core/MemorySize.js';
export type { DurationInput } from './core/Duration.js';
export type { OptionName, ResolvedOptions, SlotwiseOptions } from './core/options.js';
export type { Clock, TimerHandle } from './core/clock.js';

// The components.
export type { MemoryLeakReport, MemorySegment, SharedMemoryHandle } from './taskexecutor/MemoryManager.js';
export type { SlotReport, SlotStatus, SlotStatusState } from './core/SlotReport.js';
export type {
  FreeSlotResult,
  SlotActions,
  SlotAllocationRequest,
  TaskSlotInfo,
  TaskSlotOutput,
  TaskSlotPayload,
  TaskSlotTableOptions,
} from './taskexecutor/TaskSlotTable.js';
export type {
  PendingRequestInfo,
  RegistrationResult,
  SlotManagerOptions,
  TaskManagerRegistrationRequest,
} from './resourcemanager/slotmanager/SlotManagerOptions.js';
export type { PendingTaskManagerID } from './resourcemanager/slotmanager/PendingTaskManager.js';
export type {
  DemandOutcome,
  PlannedSlot,
  ResourceAllocationResult,
  ResourceAllocationStrategy,
  ResourceDemand,
  ResourceReconcileResult,
} from './resourcemanager/slotmanager/ResourceAllocationStrategy.js';
export type {
  PendingTaskManagerInfo,
  RankedTaskManagers,
  RegisteredTaskManagerInfo,
  TaskManagerResourceInfoProvider,
} from './resourcemanager/slotmanager/TaskManagerResourceInfoProvider.js';
export type { ResourceAllocator } from './resourcemanager/slotmanager/ResourceAllocator.js';
export type { ResourceEventListener, WaitingRequirement } from './resourcemanager/slotmanager/ResourceEventListener.js';
export type { SlotManagerOverview } from './resourcemanager/slotmanager/SlotManagerOverview.js';
export type { SlotMatchingPolicy } from './resourcemanager/slotmanager/SlotMatchingStrategy.js';
export type { PlacementPreference } from './resourcemanager/slotmanager/TaskManagerTracker.js';
export type { WaitReason } from './resourcemanager/slotmanager/WaitReason.js';
export type { SlotRequest, TaskExecutorSlotGateway } from './rpc/TaskExecutorSlotGateway.js';
