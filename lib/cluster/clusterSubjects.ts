/**
 * The NATS subjects of a session cluster, all under its cluster id: `slotwise.<clusterId>.rm` where
 * the JobManager process listens (its ResourceManager and the JobMasters beside it, each a channel
 * of the Link to a TaskExecutor) and `slotwise.<clusterId>.te.<resourceId>` where each TaskExecutor
 * listens. Two clusters on one NATS server never hear each other.
 */
import { IllegalArgumentError } from '../core/errors.js';

/** 1–64 letters, digits, '_' or '-': one subject token. */
const CLUSTER_ID = /^[A-Za-z0-9_-]{1,64}$/;
/** A TaskExecutor's ResourceID must be one subject token too. */
const TOKEN = /^[A-Za-z0-9_-]{1,128}$/;

export const DEFAULT_CLUSTER_ID = 'default';

/** Who the JobManager is to its TaskExecutors (the sender id on its messages). */
export const JOBMANAGER_PEER_ID = 'jobmanager';

export function checkClusterId(value: unknown, argument = 'clusterId'): string {
  if (typeof value !== 'string' || !CLUSTER_ID.test(value)) {
    throw new IllegalArgumentError(
      'invalid-value',
      `${argument} must be 1-64 letters, digits, '_' or '-' (it ` +
        `becomes a NATS subject token), got ${JSON.stringify(value)}`,
      { argument, value },
    );
  }
  return value;
}

export function checkResourceIdToken(value: unknown, argument = 'resourceId'): string {
  if (typeof value !== 'string' || !TOKEN.test(value)) {
    throw new IllegalArgumentError(
      'invalid-value',
      `${argument} must be 1-128 letters, digits, '_' or '-' (it ` +
        `becomes a NATS subject token), got ${JSON.stringify(value)}`,
      { argument, value },
    );
  }
  return value;
}

export interface ClusterSubjects {
  readonly resourceManager: string;
  taskExecutor(resourceId: string): string;
}

export function clusterSubjects(clusterId: string): ClusterSubjects {
  checkClusterId(clusterId);
  return {
    resourceManager: `slotwise.${clusterId}.rm`,
    taskExecutor: (resourceId) => `slotwise.${clusterId}.te.${checkResourceIdToken(resourceId)}`,
  };
}
