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

/**
 * The table as text, every line within `width` columns (default 100): a long cell of the last
 * column — the subtasks of a slot, why a request waits — wraps onto lines of its own.
 */
export function renderSlotTable(overview: SlotTableInput, width = 100): string {
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
  return `${layOut(rows, width).join('\n')}\n`;
}

/** The indent of every row, and the gap between columns. */
const INDENT = '    ';
const GAP = '  ';
/** The last column (subtasks, why a request waits) gets at least this many columns; it wraps within them. */
const MIN_LAST_COLUMN = 24;
/** A fixed column is never cut narrower than this. */
const MIN_COLUMN = 6;

/**
 * The rows as lines of at most `width` columns (when the first columns' minima allow): the first
 * columns padded to their widest cell, the widest of them cut (its cells ending in '…') while the
 * last column would get fewer than MIN_LAST_COLUMN; the last column wrapped onto lines of its own,
 * indented to where it starts.
 */
function layOut(rows: readonly (readonly string[])[], width: number): string[] {
  const fixed = rows[0]!.length - 1;
  const widths = Array.from({ length: fixed }, (_, c) => Math.max(...rows.map((r) => columns(r[c]!))));
  const start = () => INDENT.length + widths.reduce((sum, w) => sum + w + GAP.length, 0);
  while (width - start() < MIN_LAST_COLUMN) {
    const widest = widths.indexOf(Math.max(...widths));
    if (widths[widest]! <= MIN_COLUMN) break;
    widths[widest]!--;
  }
  const lastWidth = Math.max(MIN_LAST_COLUMN, width - start());
  const lines: string[] = [];
  for (const row of rows) {
    const head = INDENT + widths.map((w, c) => cut(row[c]!, w).padEnd(w) + GAP).join('');
    const [first = '', ...rest] = wrap(row[fixed]!, lastWidth);
    lines.push((head + first).trimEnd());
    for (const more of rest) lines.push(' '.repeat(head.length) + more);
  }
  return lines;
}

/** Columns a cell takes (a code point is one column, as a terminal shows these). */
const columns = (text: string) => [...text].length;

/** `text` cut to `width` columns, its last one '…' when cut. */
function cut(text: string, width: number): string {
  const chars = [...text];
  return chars.length <= width ? text : `${chars.slice(0, width - 1).join('')}…`;
}

/** `text` in lines of at most `width` columns, broken after spaces (a word longer than a line is cut across lines). */
function wrap(text: string, width: number): string[] {
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(/(?<= )/)) {
    if (columns(line) + columns(word.trimEnd()) > width && line !== '') {
      lines.push(line.trimEnd());
      line = '';
    }
    let rest = word;
    while (columns(rest.trimEnd()) > width) {
      const chars = [...rest];
      lines.push(chars.slice(0, width).join(''));
      rest = chars.slice(width).join('');
    }
    line += rest;
  }
  if (line.trimEnd() !== '' || lines.length === 0) lines.push(line.trimEnd());
  return lines;
}

function shortProfile(resources: ResourceAmounts): string {
  return `${resources.cpuCores} core, ${formatMemorySize(resources.taskHeapMemory)} heap`;
}
