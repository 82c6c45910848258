/**
 * `slotwise/internals`: the runtime's parts below the MiniCluster — the endpoints (ResourceManager,
 * TaskExecutor, JobMaster, Dispatcher), the driver that starts workers, the RPC layer (mailbox,
 * Link and its transports, gateways), a slot's task pool and the Dispatcher's task module checker —
 * for tools, tests and experiments that wire a runtime by hand. No stability promise: these change
 * with the runtime. The supported API is `slotwise`.
 */
export { ResourceManager } from './resourcemanager/ResourceManager.js';
export { LocalResourceManagerDriver } from './resourcemanager/LocalResourceManagerDriver.js';
export { DefaultResourceTracker } from './resourcemanager/slotmanager/ResourceTracker.js';
export { TaskManagerTracker } from './resourcemanager/slotmanager/TaskManagerTracker.js';
export { TaskExecutor } from './taskexecutor/TaskExecutor.js';
export { SlotTaskPool } from './taskexecutor/SlotTaskPool.js';
export { Dispatcher } from './dispatcher/Dispatcher.js';
export { JobMaster } from './jobmaster/JobMaster.js';
export { ArchivedJob } from './jobmaster/ArchivedJob.js';
export { DefaultTaskModuleChecker } from './jobmaster/TaskModuleChecker.js';
export { DeadlineScheduler } from './core/DeadlineScheduler.js';
export { MainThreadExecutor } from './rpc/MainThreadExecutor.js';
export { GATEWAY } from './rpc/gateways.js';
export { Link } from './rpc/Link.js';
export { connectGateway, serveGateway } from './rpc/connect.js';
export { portTransport, processTransport } from './rpc/Transport.js';
export { memoryTransportPair } from './rpc/memoryTransport.js';
// Metrics and the dashboard, for a server other than the MiniCluster's (the JobManager's REST server).
export { Observability } from './Observability.js';
export { ClusterMetrics } from './metrics/ClusterMetrics.js';
export { resolveMetricsOptions } from './metrics/MetricsOptions.js';
export { ActorDirectory } from './dashboard/ActorDirectory.js';
export { ClusterDashboard } from './dashboard/ClusterDashboard.js';
export { dashboardPlugin } from './dashboard/dashboardPlugin.js';
export { createAccessToken } from './dashboard/accessToken.js';

export type { ResourceManagerOptions } from './resourcemanager/ResourceManager.js';
export type {
  ResourceManagerDriver,
  ResourceManagerDriverContext,
  WorkerInfo,
} from './resourcemanager/ResourceManagerDriver.js';
export type { LocalDriverOptions } from './resourcemanager/LocalResourceManagerDriver.js';
export type { SlotTaskRunner, TaskExecutorOptions } from './taskexecutor/TaskExecutor.js';
export type { SlotTaskPoolLogEntry, SlotTaskPoolOptions } from './taskexecutor/SlotTaskPool.js';
export type { DispatcherServices } from './dispatcher/Dispatcher.js';
export type { JobMasterOptions } from './jobmaster/JobMaster.js';
export type { JobView } from './jobmaster/ArchivedJob.js';
export type {
  TaskModuleChecker,
  TaskModuleCheckerOptions,
  TaskModuleProblem,
  TaskModuleVerdict,
} from './jobmaster/TaskModuleChecker.js';
export type { JobMasterGateway, ResourceManagerGateway, TaskExecutorGateway } from './rpc/gateways.js';
export type { SlotOfferWire, TaskDeploymentDescriptor, TaskExecutionStateWire } from './rpc/protocol.js';
export type { ConnectOptions, Gateway, ServedGateway, ServeOptions } from './rpc/connect.js';
export type { Transport } from './rpc/Transport.js';
export type { MemoryTransport } from './rpc/memoryTransport.js';
export type { ObservabilityOptions } from './Observability.js';
export type { ClusterMetricsSource } from './metrics/ClusterMetrics.js';
export type { ClusterDashboardOptions, DashboardSource, DashboardView } from './dashboard/ClusterDashboard.js';
export type { DashboardPluginOptions } from './dashboard/dashboardPlugin.js';
export type { JobObserver } from './dispatcher/Dispatcher.js';
export type { TaskExecutorLossCause } from './resourcemanager/ResourceManager.js';
