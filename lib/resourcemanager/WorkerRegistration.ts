/**
 * The ResourceManager's record of a registered TaskExecutor (Flink's WorkerRegistration) and of one declared lost
 * that may register again, and the slot report as the SlotManager may see it.
 */
import { type AllocationID, ResourceID } from '../core/ids.js';
import { describeError, IllegalArgumentError } from '../core/errors.js';
import type { TaskExecutorGateway } from '../rpc/gateways.js';
import type { MainThreadExecutor } from '../rpc/MainThreadExecutor.js';
import type { SlotReportWire, TaskExecutorRegistrationWire, PartitionFiguresWire } from '../rpc/protocol.js';

export interface TaskExecutorRegistration {
  readonly resourceId: ResourceID;
  readonly registrationId: string;
  readonly gateway: TaskExecutorGateway;
  readonly info: TaskExecutorRegistrationWire;
  inSlotManager: boolean;
  /** Its result partitions as its last heartbeat told (null: none kept, or no heartbeat yet). */
  partitions: PartitionFiguresWire | null;
  /**
   * Allocations its jobs were told are lost (when it was declared lost): freed on it, and kept out
   * of the SlotManager while its reports still show them.
   */
  readonly revoked: Map<AllocationID, 'to-free' | 'freeing'>;
}

/**
 * Checks a registration at the ResourceManager's door (it may come over NATS from any peer): its
 * ResourceID, and how its TaskExecutor runs — a worker thread or the TaskManager's own process
 * ('thread'), or a child process ('process') — which the overview reports as it is told.
 */
export function checkRegistration(registration: TaskExecutorRegistrationWire): void {
  if (!ResourceID.is(registration?.resourceId))
    throw new IllegalArgumentError(
      'invalid-value',
      `registerTaskExecutor: resourceId must be a ResourceID, got ${String(registration?.resourceId)}`,
      { argument: 'resourceId' },
    );
  if (registration.mode !== 'thread' && registration.mode !== 'process')
    throw new IllegalArgumentError(
      'invalid-value',
      `registerTaskExecutor: mode must be 'thread' or 'process', got ${JSON.stringify(registration.mode)}`,
      { argument: 'mode', value: registration.mode },
    );
}

/**
 * The report as the SlotManager may see it: without the allocations whose jobs were told they
 * are lost. The first report showing one asks the executor to free it; one it no longer shows is
 * forgotten. Until then the SlotManager sees that slot free: a request for it is refused (the
 * index is taken) and goes elsewhere, as for any slot whose report is behind.
 */
export function reportWithoutRevoked(
  registration: TaskExecutorRegistration,
  report: SlotReportWire,
  mailbox: MainThreadExecutor,
  log: (message: string) => void,
): SlotReportWire {
  const { revoked } = registration;
  if (revoked.size === 0) return report;
  const shown = new Set<AllocationID>();
  const slots = report.slots.filter((slot) => {
    if (slot.allocationId === null || !revoked.has(slot.allocationId)) return true;
    shown.add(slot.allocationId);
    if (revoked.get(slot.allocationId) === 'to-free') {
      revoked.set(slot.allocationId, 'freeing');
      const cause = `its job was told it is lost when ${registration.resourceId} was declared lost`;
      mailbox.whenComplete(registration.gateway.freeSlot(slot.allocationId, cause), (_, error) => {
        if (error !== undefined)
          log(
            `freeing revoked slot ${slot.allocationId} on ${registration.resourceId} failed: ${describeError(error)}`,
          );
      });
    }
    return false;
  });
  for (const allocationId of [...revoked.keys()]) if (!shown.has(allocationId)) revoked.delete(allocationId);
  return { ...report, slots };
}
