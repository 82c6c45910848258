/**
 * A TaskExecutor's gateways on its link to the ResourceManager's side — a worker's link in thread and process mode
 * (taskExecutorMain.ts), a TaskManager's over NATS (lib/cluster/TaskManager.ts): the ResourceManager and the JobMasters
 * it calls, and how it is served to them (its control methods by comlink, its answers to submitTask and submitTasks
 * with its next batch: ANSWERED_WITH_NEXT).
 */
import { closeGatewayChannels, connectGateway, serveGateway, type ServedGateway } from '../rpc/connect.js';
import {
  ANSWERED_WITH_NEXT,
  CONTROL_METHODS,
  GATEWAY,
  type JobMasterGateway,
  type ResourceManagerGateway,
} from '../rpc/gateways.js';
import type { Link } from '../rpc/Link.js';
import type { TaskExecutor, TaskExecutorOptions } from './TaskExecutor.js';

/** The gateways a TaskExecutor calls over `link`, each call bounded by `timeoutMs` (`rpc.ask.timeout`). */
export function taskExecutorGateways(
  link: Link,
  timeoutMs: number,
): Pick<TaskExecutorOptions, 'resourceManager' | 'connectJobMaster' | 'disconnectJobMaster'> {
  return {
    resourceManager: connectGateway<ResourceManagerGateway>(link, 'rm', {
      gateway: GATEWAY.resourceManager,
      timeoutMs,
      endpoint: 'ResourceManager',
      control: CONTROL_METHODS.resourceManager,
    }),
    connectJobMaster: (address) =>
      connectGateway<JobMasterGateway>(link, `jm:${address}`, {
        gateway: GATEWAY.jobMaster,
        timeoutMs,
        endpoint: address,
        control: CONTROL_METHODS.jobMaster,
      }),
    disconnectJobMaster: (address) => closeGatewayChannels(link, `jm:${address}`, 'its job was let go of'),
  };
}

/** Serves `taskExecutor` on `link`, its calls run on its mailbox. */
export function serveTaskExecutor(link: Link, taskExecutor: TaskExecutor): ServedGateway {
  return serveGateway(link, 'te', taskExecutor, {
    mailbox: taskExecutor.mailbox,
    control: CONTROL_METHODS.taskExecutor,
    answerWithNext: ANSWERED_WITH_NEXT.taskExecutor,
  });
}
