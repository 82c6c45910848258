/**
 * A JobMaster's slot services, wired together: its slot pool (Flink's DeclarativeSlotPool: what the job holds and
 * needs), the bulk checker (PhysicalSlotRequestBulkChecker: when waiting for slots becomes failing) and the slot
 * sharing allocator (SlotSharingExecutionSlotAllocator: which subtasks share a slot), all on the JobMaster's mailbox
 * clock.
 */
import type { Clock } from '../core/clock.js';
import type { JobID } from '../core/ids.js';
import type { ResolvedOptions } from '../core/options.js';
import type { ExecutionGraph } from './ExecutionGraph.js';
import { JobSlotPool, type JobSlotPoolOptions } from './JobSlotPool.js';
import { PhysicalSlotRequestBulkChecker } from './slotsharing/PhysicalSlotRequestBulkChecker.js';
import { LocalInputPreferredSlotSharingStrategy } from './slotsharing/SlotSharingStrategy.js';
import { SlotSharingExecutionSlotAllocator } from './slotsharing/SlotSharingExecutionSlotAllocator.js';

export interface JobSlotServicesOptions {
  readonly jobId: JobID;
  readonly graph: ExecutionGraph;
  /** The JobMaster's mailbox clock: timers fire into its mailbox. */
  readonly clock: Clock;
  readonly options: ResolvedOptions;
  /** Why the ResourceManager cannot serve the job's requests now (for a bulk that times out). */
  readonly reasonFor: () => string;
  readonly onRequirementsChanged: JobSlotPoolOptions['onRequirementsChanged'];
  readonly freeSlot: JobSlotPoolOptions['freeSlot'];
  readonly isBlocked?: JobSlotPoolOptions['isBlocked'];
}

export function jobSlotServices(o: JobSlotServicesOptions): {
  pool: JobSlotPool;
  bulkChecker: PhysicalSlotRequestBulkChecker;
  allocator: SlotSharingExecutionSlotAllocator;
  slotSharing: LocalInputPreferredSlotSharingStrategy;
} {
  const pool = new JobSlotPool({
    onRequirementsChanged: o.onRequirementsChanged,
    freeSlot: o.freeSlot,
    clock: o.clock,
    idleSlotTimeoutMs: o.options['slot.idle.timeout'],
    ...(o.isBlocked === undefined ? {} : { isBlocked: o.isBlocked }),
  });
  const bulkChecker = new PhysicalSlotRequestBulkChecker({
    clock: o.clock,
    jobId: o.jobId,
    reasonFor: o.reasonFor,
    // A bulk that slots the job holds can serve is waiting for its turn, not failing.
    heldSlotProfiles: () => pool.heldSlots.map((slot) => slot.resourceProfile),
  });
  const slotSharing = new LocalInputPreferredSlotSharingStrategy(o.graph);
  const allocator = new SlotSharingExecutionSlotAllocator({
    jobId: o.jobId,
    strategy: slotSharing,
    provider: pool,
    bulkChecker,
    allocationTimeoutMs: o.options['slot.request.timeout'],
  });
  return { pool, bulkChecker, allocator, slotSharing };
}
