/** Small builders shared by the TaskSlot / TaskSlotTable tests. */
import { SimulatedClock } from '../../lib/core/clock.js';
import { AllocationID, ExecutionAttemptID, JobID, type ExecutionAttemptID as EAID } from '../../lib/core/ids.js';
import { ResourceProfile } from '../../lib/core/ResourceProfile.js';
import type { TaskSlotPayload } from '../../machines/taskSlot.machine.js';
import { TaskSlotTable, type SlotActions, type TaskSlotTableOptions } from '../../lib/taskexecutor/TaskSlotTable.js';

export const profile = (cpuCores: number, heapMB = 0, managedMB = 0, extended: Record<string, number> = {}) =>
  ResourceProfile.newBuilder()
    .setCpuCores(cpuCores)
    .setTaskHeapMemoryMB(heapMB)
    .setManagedMemoryMB(managedMB)
    .setExtendedResources(extended)
    .build();

/** A task payload that records being failed; `failed` holds the causes it received. */
export interface FakeTask extends TaskSlotPayload {
  readonly failed: unknown[];
}

export function fakeTask(
  jobId: JobID,
  allocationId: AllocationID,
  executionAttemptId: EAID = ExecutionAttemptID.generate(),
): FakeTask {
  const failed: unknown[] = [];
  return { executionAttemptId, jobId, allocationId, failed, failExternally: (cause) => failed.push(cause) };
}

/** Lets queued microtasks (the table's notifications, promise continuations) run. */
export async function flushMicrotasks(rounds = 5): Promise<void> {
  for (let i = 0; i < rounds; i++) await Promise.resolve();
  await new Promise((resolve) => setImmediate(resolve));
}

/** Records every SlotActions call, in order. */
export function recordingSlotActions(): SlotActions & { calls: Array<[string, ...unknown[]]> } {
  const calls: Array<[string, ...unknown[]]> = [];
  return {
    calls,
    timeoutSlot: (allocationId, ticket) => calls.push(['timeoutSlot', allocationId, ticket]),
    slotFreed: (allocationId, jobId, index) => calls.push(['slotFreed', allocationId, jobId, index]),
    releaseTimedOut: (allocationId, ids) => calls.push(['releaseTimedOut', allocationId, [...ids]]),
    slotClosed: (output) => calls.push(['slotClosed', output.allocationId, output.leaks.leakedPages]),
  };
}

/**
 * A running table of `numberSlots` static slots over a total of `numberSlots` cores, 100 mb heap
 * and 64 mb managed memory per slot, on a simulated clock.
 */
export function startedTable(overrides: Partial<TaskSlotTableOptions> & { numberSlots?: number } = {}) {
  const clock = new SimulatedClock();
  const slotActions = recordingSlotActions();
  const numberSlots = overrides.numberSlots ?? 2;
  const table = new TaskSlotTable({
    totalResourceProfile: profile(numberSlots, 100 * numberSlots, 64 * numberSlots),
    numberSlots,
    clock,
    slotActions,
    pageSize: 64 * 1024,
    ...overrides,
  });
  table.start();
  return { table, clock, slotActions, jobId: JobID.generate() };
}

export { AllocationID, ExecutionAttemptID, JobID, ResourceProfile, SimulatedClock };
