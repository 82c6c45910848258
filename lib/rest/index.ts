/**
 * `slotwise/rest`: the REST API in Flink's shape, for an application that serves its MiniCluster
 * (or a session cluster's JobManager) over HTTP. Its own entry so that `import 'slotwise'` does
 * not load the HTTP framework.
 */
export { startRestServer } from './RestServer.js';
export { clusterTarget, miniClusterTarget } from './miniClusterTarget.js';
export { MAX_TASK_CODE_BYTES, sha256Hex, TaskCodeCache } from './TaskCodeCache.js';
export { toJsonValue } from './jsonValue.js';

export type { RestServer, RestServerOptions, RestTlsOptions } from './RestServer.js';
export type { MiniClusterTargetOptions, TargetCluster } from './miniClusterTarget.js';
export type {
  JobDetails,
  JobEventPage,
  RestTarget,
  SequencedJobEvent,
  StoredTaskCode,
  TaskCodeUpload,
  TaskDetails,
  VertexDetails,
} from './RestTarget.js';
export type { TaskCodeCacheOptions } from './TaskCodeCache.js';
export type { JsonValue } from './jsonValue.js';
