/**
 * The gateways the ResourceManager hands out: to one worker (it may speak only for itself), a JobMaster's to the
 * workers (through its mailbox), and to the SlotManager.
 */
import { IllegalArgumentError } from '../core/errors.js';
import type { ResourceID, ResourceManagerId } from '../core/ids.js';
import type { JobMasterGateway, ResourceManagerGateway, TaskExecutorGateway } from '../rpc/gateways.js';
import type { MainThreadExecutor } from '../rpc/MainThreadExecutor.js';
import type { TaskExecutorSlotGateway } from '../rpc/TaskExecutorSlotGateway.js';

/** The gateway a worker gets: every call runs on the mailbox and may only speak for that worker. */
export function workerGateway(
  resourceManager: ResourceManagerGateway,
  resourceId: ResourceID,
  mailbox: MainThreadExecutor,
): ResourceManagerGateway {
  const guard = (claimed: ResourceID, method: string) => {
    if (claimed !== resourceId)
      throw new IllegalArgumentError(
        'invalid-value',
        `${method}: worker ${resourceId} may not speak for ${String(claimed)}`,
        { argument: 'resourceId' },
      );
  };
  return {
    registerTaskExecutor: (registration) =>
      mailbox.callAsync(
        () => (
          guard(registration?.resourceId, 'registerTaskExecutor'), resourceManager.registerTaskExecutor(registration)
        ),
      ),
    sendSlotReport: (id, registrationId, report) =>
      mailbox.callAsync(
        () => (guard(id, 'sendSlotReport'), resourceManager.sendSlotReport(id, registrationId, report)),
      ),
    notifySlotAvailable: (id, allocationId) =>
      mailbox.callAsync(
        () => (guard(id, 'notifySlotAvailable'), resourceManager.notifySlotAvailable(id, allocationId)),
      ),
    disconnectTaskExecutor: (id, cause) =>
      mailbox.callAsync(() => (guard(id, 'disconnectTaskExecutor'), resourceManager.disconnectTaskExecutor(id, cause))),
    registerJobMaster: () =>
      Promise.reject(
        new IllegalArgumentError('invalid-value', 'a TaskExecutor may not register a JobMaster', {
          argument: 'caller',
        }),
      ),
    declareRequiredResources: () =>
      Promise.reject(
        new IllegalArgumentError('invalid-value', 'a TaskExecutor may not declare requirements', {
          argument: 'caller',
        }),
      ),
    disconnectJobMaster: () =>
      Promise.reject(
        new IllegalArgumentError('invalid-value', 'a TaskExecutor may not disconnect a JobMaster', {
          argument: 'caller',
        }),
      ),
    notifyNewBlockedNodes: () =>
      Promise.reject(
        new IllegalArgumentError('invalid-value', 'a TaskExecutor may not block TaskExecutors', {
          argument: 'caller',
        }),
      ),
  };
}

/**
 * The SlotManager's view of a TaskExecutor's gateway: profiles go on the wire as JSON; requests name
 * this ResourceManager. A driver's TaskExecutorGateway carries the rpc layer's deadlines (every
 * gateway call does: docs/runtime.md, Gateways), so the SlotStatusSyncer adds none of its own.
 */
export function slotGateway(
  gateway: TaskExecutorGateway,
  resourceManagerId: ResourceManagerId,
): TaskExecutorSlotGateway {
  return {
    deadline: 'transport',
    requestSlot: (request) =>
      gateway.requestSlot({ ...request, resourceProfile: request.resourceProfile.toJSON(), resourceManagerId }),
    freeInactiveSlots: (jobId) => gateway.freeInactiveSlots(jobId),
  };
}

/** A JobMaster's gateway whose every call runs on its mailbox: what TaskExecutors call it through. */
export function jobMasterInMailbox(gateway: JobMasterGateway, mailbox: MainThreadExecutor): JobMasterGateway {
  return {
    registerTaskManager: (jobId, resourceId) => mailbox.callAsync(() => gateway.registerTaskManager(jobId, resourceId)),
    disconnectTaskManager: (resourceId, cause) =>
      mailbox.callAsync(() => gateway.disconnectTaskManager(resourceId, cause)),
    offerSlots: (resourceId, offers) => mailbox.callAsync(() => gateway.offerSlots(resourceId, offers)),
    updateTaskExecutionState: (state) => mailbox.callAsync(() => gateway.updateTaskExecutionState(state)),
    updateTaskExecutionStates: (states) => mailbox.callAsync(() => gateway.updateTaskExecutionStates(states)),
    notifySlotFreed: (resourceId, allocationId, cause) =>
      mailbox.callAsync(() => gateway.notifySlotFreed(resourceId, allocationId, cause)),
  };
}
