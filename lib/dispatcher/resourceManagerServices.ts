/**
 * The part of a Dispatcher's services that is the ResourceManager beside it in the same process
 * (a MiniCluster's, a session cluster JobManager's): its gateway as JobMasters call it, each call
 * run on its mailbox, and where JobMasters are served to TaskExecutors.
 */
import type { ResourceManager } from '../resourcemanager/ResourceManager.js';
import type { DispatcherServices } from './Dispatcher.js';

export function resourceManagerServices(
  rm: ResourceManager,
): Pick<DispatcherServices, 'resourceManager' | 'serveJobMaster' | 'withdrawJobMaster'> {
  return {
    resourceManager: {
      registerJobMaster: (jobId, address) => rm.mailbox.callAsync(() => rm.registerJobMaster(jobId, address)),
      declareRequiredResources: (requirements) => rm.mailbox.callAsync(() => rm.declareRequiredResources(requirements)),
      disconnectJobMaster: (jobId, cause, terminal) =>
        rm.mailbox.callAsync(() => rm.disconnectJobMaster(jobId, cause, terminal)),
      notifyNewBlockedNodes: (blocked) => rm.mailbox.callAsync(() => rm.notifyNewBlockedNodes(blocked)),
    },
    serveJobMaster: (address, gateway, mailbox) => rm.serveJobMaster(address, gateway, mailbox),
    withdrawJobMaster: (address) => rm.withdrawJobMaster(address),
  };
}
