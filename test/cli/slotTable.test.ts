/**
 * The slot table `slotwise overview` and the demo print: every line within 100 columns, whatever a
 * request's reason or a slot's subtasks say; long cells wrap onto lines of their own, nothing is lost.
 */
import { expect } from 'chai';
import type { ResourceAmounts } from '../../lib/ClusterOverview.js';
import { renderSlotTable, type SlotTableInput } from '../../lib/cli/slotTable.js';

const MB = 1024 * 1024;
const amounts = (cpuCores: number, heapMb: number): ResourceAmounts => ({
  cpuCores,
  taskHeapMemory: heapMb * MB,
  taskOffHeapMemory: 0,
  managedMemory: 0,
  networkMemory: 0,
  extendedResources: {},
});
const slot = (index: string, state: string, tasks: string[] = []) => ({
  slot: index,
  state,
  resources: amounts(1, 128),
  tasks,
});
/** Why a request waits, as long as the SlotManager makes it with a few TaskExecutors short of room. */
const WHY =
  'no TaskExecutor has room: closest ' +
  Array.from({ length: 8 }, (_, i) => `taskmanager-00000000000${i} (cpuCores available 1, required 64)`).join('; ') +
  '; it fits taskmanager-000000000001 once slots there are freed';
const TASKS = Array.from({ length: 12 }, (_, i) => `tokenize#${i} (running)`);

function table(overrides: Partial<SlotTableInput> = {}): string[] {
  const input: SlotTableInput = {
    taskExecutors: [
      { resourceId: 'taskmanager-0123456789ab', slots: [slot('0', 'allocated', TASKS), slot('1', 'free')] },
    ],
    pendingRequests: [{ missing: 3, resources: amounts(64, 512), profile: '', why: WHY }],
    ...overrides,
  };
  const text = renderSlotTable(input);
  expect(text.endsWith('\n')).to.equal(true);
  return text.slice(0, -1).split('\n');
}

/** The text of the last column from `line` on: the line's own cell and the continuation lines under it. */
function lastCell(lines: readonly string[], line: number, start: number): string {
  const parts = [lines[line]!.slice(start)];
  for (let i = line + 1; i < lines.length && lines[i]!.slice(0, start).trim() === ''; i++)
    parts.push(lines[i]!.slice(start));
  return parts.join(' ');
}

describe('the slot table (slotwise overview, the demo)', () => {
  it('keeps every line within 100 columns while a request waits with a long reason, and loses none of it', () => {
    expect(WHY.length).to.be.greaterThan(400);
    const lines = table();
    for (const line of lines) expect([...line].length, line).to.be.at.most(100);
    for (const line of lines) expect(line, 'no trailing padding').to.equal(line.trimEnd());
    const start = lines[0]!.indexOf('subtasks');
    const waiting = lines.findIndex((line) => line.startsWith('    (waiting)'));
    expect(lastCell(lines, waiting, start)).to.equal(WHY);
    const held = lines.findIndex((line) => line.includes(' allocated '));
    expect(lastCell(lines, held, start)).to.equal(TASKS.join(', '));
  });

  it('prints one line per row when everything fits, in the columns it always had', () => {
    const lines = table({
      taskExecutors: [{ resourceId: 'taskexecutor-1', slots: [slot('0', 'allocated', ['a#0 (running)'])] }],
      pendingRequests: [],
    });
    expect(lines).to.deep.equal([
      '    executor        slot  state      resources            subtasks',
      '    taskexecutor-1  0     allocated  1 core, 128 mb heap  a#0 (running)',
    ]);
  });

  it('cuts a first-column cell too wide to leave the last column room, and says so with …', () => {
    const resourceId = `taskmanager-${'x'.repeat(100)}`;
    const lines = table({ taskExecutors: [{ resourceId, slots: [slot('0', 'allocated', TASKS)] }] });
    for (const line of lines) expect([...line].length, line).to.be.at.most(100);
    expect(lines[1]).to.match(/^ {4}taskmanager-x+… /);
  });
});
