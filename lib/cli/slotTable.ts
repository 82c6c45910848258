/**
 * The slot table the demo and `slotwise overview` print: one row per held slot (which subtasks run
 * in it), the idle static slots of each executor in one row per state, and the waiting requests
 * with why they wait. It reads plain overview data, so it serves a MiniCluster's `overview()` and
 * the REST API's TaskManager details alike.
 */
import { formatMemorySize } from '../core/MemorySize.js';
import type { ResourceAmounts } from '../ClusterOverview.js';

/** What a row is made of: the fields of ClusterOverview's slots and pending requests. */
export interface SlotTableInput {
  readonly taskExecutors: ReadonlyArray<{
    readonly resourceId: string;
    readonly slots: ReadonlyArray<{
      readonly slot: string;
      readonly state: string;
      readonly resources: ResourceAmounts;
      readonly tasks: readonly string[];
    }>;
  }>;
  readonly pendingRequests: ReadonlyArray<{
    readonly missing: number;
    readonly resources: ResourceAmounts | null;
    readonly profile: string;
    readonly why: string;
  }>;
}

export function renderSlotTable(overview: SlotTableInput): string {
  const rows = [['executor', 'slot', 'state', 'resources', 'subtasks']];
  for (const te of overview.taskExecutors) {
    for (const slot of te.slots) {
      if (slot.state !== 'free' && slot.state !== 'unavailable')
        rows.push([te.resourceId, slot.slot, slot.state, shortProfile(slot.resources), slot.tasks.join(', ') || '-']);
    }
    // Idle static slots in one line each: free, and those whose resources dynamic slots took.
    for (const state of ['free', 'unavailable'] as const) {
      const idle = te.slots.filter((slot) => slot.state === state);
      if (idle.length > 0)
        rows.push([
          te.resourceId,
          `${idle.length} ×`,
          state,
          shortProfile(idle[0]!.resources),
          state === 'unavailable' ? 'resources taken by dynamic slots' : '',
        ]);
    }
  }
  for (const pending of overview.pendingRequests)
    rows.push([
      '(waiting)',
      '',
      `${pending.missing} missing`,
      pending.resources === null ? pending.profile : shortProfile(pending.resources),
      pending.why,
    ]);
  const widths = rows[0]!.map((_, c) => Math.max(...rows.map((r) => r[c]!.length)));
  return `${rows.map((r) => `    ${r.map((cell, c) => cell.padEnd(widths[c]!)).join('  ')}`).join('\n')}\n`;
}

function shortProfile(resources: ResourceAmounts): string {
  return `${resources.cpuCores} core, ${formatMemorySize(resources.taskHeapMemory)} heap`;
}
