/**
 * `slotwise/cluster`: a standalone session cluster over NATS — a JobManager (Dispatcher,
 * ResourceManager, JobMasters) and TaskManagers on any host that register with it. Its own entry
 * so that `slotwise` itself does not load the NATS client.
 */
export { JobManager, startJobManager } from './JobManager.js';
export { TaskManager, startTaskManager } from './TaskManager.js';
export { TaskManagerProcess } from './TaskManagerProcess.js';
export { bundleTaskModule } from './bundleTaskModule.js';
export { clusterSubjects, DEFAULT_CLUSTER_ID } from './clusterSubjects.js';
export { DEFAULT_NATS_URL } from './natsConnection.js';
export { TASK_CODE_SCHEME } from './TaskCodeCache.js';

export type { JobManagerOptions, StoredTaskCode, TaskCodeUpload } from './JobManager.js';
export type { JobManagerRestOptions } from './jobManagerOptions.js';
export type { NatsAuthOptions } from './natsAuth.js';
export type { TaskManagerOptions } from './TaskManager.js';
export type { BundledTaskModule } from './bundleTaskModule.js';
export type { ClusterSubjects } from './clusterSubjects.js';
