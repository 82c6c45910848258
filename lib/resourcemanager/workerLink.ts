/**
 * What a driver serves and calls on the Link to one of its workers, wherever the worker runs (a
 * thread, a child process, another host over NATS): the ResourceManager's gateway on `rm` (on its
 * mailbox, speaking for that worker only), each JobMaster's on `jm:<address>` as the worker first
 * calls it, the worker's log records on LOG_CHANNEL, and the TaskExecutor's gateway called on `te`
 * with the submissions of one turn sent as one call. Each gateway's control methods go by comlink
 * on its control channel (`rm/control`, …; CONTROL_METHODS in gateways.ts).
 */
import type { Clock } from '../core/clock.js';
import type { ResourceID } from '../core/ids.js';
import type { LogRecord, LogSink } from '../core/Logger.js';
import { batchSubmissions, type BatchingTaskExecutorGateway } from '../rpc/batchedSubmissions.js';
import { closeGatewayChannels, connectGateway, serveGateway, type ServedGateway } from '../rpc/connect.js';
import { gatewayChannel } from '../rpc/gatewayMethods.js';
import { CONTROL_METHODS, GATEWAY, type TaskExecutorGateway } from '../rpc/gateways.js';
import type { Link } from '../rpc/Link.js';
import { LOG_CHANNEL } from '../rpc/WorkerBootstrap.js';
import type { ResourceManagerDriverContext } from './ResourceManagerDriver.js';

export interface WorkerLinkOptions {
  readonly resourceId: ResourceID;
  /** rpc.ask.timeout: the deadline of a call to the TaskExecutor. */
  readonly timeoutMs: number;
  readonly clock: Clock;
  /** Where the worker's log records go (with its ResourceID added); none when unset. */
  readonly logger?: LogSink | null;
}

/** Serves the ResourceManager and the JobMasters to the worker on `link`; returns the worker's TaskExecutor gateway. */
export function wireWorkerLink(
  link: Link,
  context: ResourceManagerDriverContext,
  options: WorkerLinkOptions,
): TaskExecutorGateway {
  const { resourceId, logger } = options;
  serveGateway(link, 'rm', context.resourceManagerGateway(resourceId), {
    mailbox: context.mailbox,
    control: CONTROL_METHODS.resourceManager,
  });
  // A JobMaster withdrawn (its job ended a while ago) is let go of here: its channels, and with them the JobMaster.
  const servedJobMasters = new Map<string, ServedGateway>();
  const unsubscribe = context.onJobMasterWithdrawn?.((address) => {
    const channel = `jm:${address}`;
    const served = servedJobMasters.get(channel);
    if (served === undefined) return;
    servedJobMasters.delete(channel);
    served.stop();
    closeGatewayChannels(link, channel, 'its job ended');
  });
  if (unsubscribe !== undefined) link.onClosed(() => unsubscribe());
  // The first call to a JobMaster comes on its channel or on its control channel: both are served then.
  link.onUnknownChannel('jm:', (name) => {
    const channel = gatewayChannel(name);
    const gateway = context.jobMasterGateway(channel.slice('jm:'.length));
    // Not on our mailbox: a JobMaster served by the ResourceManager runs its calls on its own.
    if (gateway !== undefined)
      servedJobMasters.set(channel, serveGateway(link, channel, gateway, { control: CONTROL_METHODS.jobMaster }));
  });
  if (logger !== undefined && logger !== null)
    link
      .channel(LOG_CHANNEL)
      .addEventListener('message', (event) => logger({ ...(event.data as LogRecord), resourceId }));
  // The submitTask calls of one turn (a JobMaster deploying, the next tasks after a finished batch) go as one call.
  return batchSubmissions(
    connectGateway<BatchingTaskExecutorGateway>(link, 'te', {
      gateway: GATEWAY.taskExecutor,
      timeoutMs: options.timeoutMs,
      clock: options.clock,
      endpoint: resourceId,
      control: CONTROL_METHODS.taskExecutor,
    }),
  );
}
