/**
 * What a task costs the TaskSlotTable: 10,000 tasks added to and removed from 8 active slots, the
 * way a TaskExecutor does it for a job of 10,000 subtasks — (a) one call per task (addTask, then
 * removeTaskIfPresent), (b) in turns of 64 (addTasks / removeTasksIfPresent: what one mailbox turn
 * of submissions or endings hands the table), (c) all 10,000 live at once, added and removed in
 * turns of 64. Each figure is CPU µs per task (its add and its remove together), the median over the
 * rounds, on the same table (its slots stay; only the tasks come and go).
 *
 * Run with `npm run bench -- taskSlotTableTasks` or
 * `node --expose-gc --import tsx bench/taskSlotTableTasks.bench.ts`. It reports; nothing asserts a
 * timing. The last line of output is one JSON object with every figure.
 */
import { SimulatedClock } from '../lib/core/clock.js';
import { AllocationID, ExecutionAttemptID, JobID } from '../lib/core/ids.js';
import { ResourceProfile } from '../lib/core/ResourceProfile.js';
import { TaskSlotTable, type TaskSlotPayload } from '../lib/taskexecutor/TaskSlotTable.js';
import { exposedGc, printJson, round } from './support/report.js';

const TASKS = 10_000;
const SLOTS = 8;
const TURN = 64;
const ROUNDS = 7;

const jobId = JobID.generate();
const noop = (): void => {};

function startedTable(): { table: TaskSlotTable; allocations: AllocationID[] } {
  const total = ResourceProfile.newBuilder()
    .setCpuCores(SLOTS)
    .setTaskHeapMemoryMB(100 * SLOTS)
    .setManagedMemoryMB(8 * SLOTS)
    .build();
  const table = new TaskSlotTable({
    totalResourceProfile: total,
    numberSlots: SLOTS,
    clock: new SimulatedClock(),
    pageSize: 32 * 1024,
  });
  table.start();
  const allocations = Array.from({ length: SLOTS }, (_, index) => {
    const allocationId = AllocationID.generate();
    table.allocateSlot({ index, jobId, allocationId, resourceProfile: ResourceProfile.UNKNOWN });
    table.markSlotActive(allocationId);
    return allocationId;
  });
  return { table, allocations };
}

/** The payloads of one round, made before the clock starts (IDs cost more than the table). */
function payloads(allocations: readonly AllocationID[]): TaskSlotPayload[] {
  return Array.from({ length: TASKS }, (_, i) => ({
    executionAttemptId: ExecutionAttemptID.generate(),
    jobId,
    allocationId: allocations[i % SLOTS]!,
    failExternally: noop,
  }));
}

function oneByOne(table: TaskSlotTable, tasks: readonly TaskSlotPayload[]): void {
  for (const task of tasks) {
    table.addTask(task);
    table.removeTaskIfPresent(task.executionAttemptId);
  }
}

function inTurns(table: TaskSlotTable, tasks: readonly TaskSlotPayload[]): void {
  for (let at = 0; at < tasks.length; at += TURN) {
    const turn = tasks.slice(at, at + TURN);
    table.addTasks(turn);
    table.removeTasksIfPresent(turn.map((t) => t.executionAttemptId));
  }
}

function allLive(table: TaskSlotTable, tasks: readonly TaskSlotPayload[]): void {
  for (let at = 0; at < tasks.length; at += TURN) table.addTasks(tasks.slice(at, at + TURN));
  for (let at = 0; at < tasks.length; at += TURN)
    table.removeTasksIfPresent(tasks.slice(at, at + TURN).map((t) => t.executionAttemptId));
}

/**
 * CPU µs per task (this process's CPU time, not the wall clock: the machine is shared, and a loop
 * that runs on one thread is charged only for what it ran): the median of ROUNDS rounds after one
 * warm-up round.
 */
function measure(name: string, run: (table: TaskSlotTable, tasks: readonly TaskSlotPayload[]) => void): number {
  const { table, allocations } = startedTable();
  const gc = exposedGc();
  const figures: number[] = [];
  for (let round = 0; round <= ROUNDS; round++) {
    const tasks = payloads(allocations);
    gc?.();
    const started = process.cpuUsage();
    run(table, tasks);
    const used = process.cpuUsage(started);
    const micros = (used.user + used.system) / TASKS;
    if (table.getTaskSlots().some((slot) => slot.tasks.length > 0)) throw new Error(`${name}: tasks left in the table`);
    if (round > 0) figures.push(micros);
  }
  void table.closeAsync();
  const sorted = [...figures].sort((a, b) => a - b);
  const median = sorted[Math.floor(sorted.length / 2)]!;
  console.log(`${name.padEnd(44)} ${round(median, 2)} µs per task  [${figures.map((f) => round(f, 1)).join(', ')}]`);
  return median;
}

console.log(
  `taskSlotTableTasks bench · node ${process.version} · ${TASKS} tasks ` +
    `over ${SLOTS} active slots, add + remove, median of ${ROUNDS} rounds`,
);
const oneByOneMicros = measure('(a) addTask + removeTaskIfPresent, one by one', oneByOne);
const inTurnsMicros = measure(`(b) addTasks + removeTasksIfPresent, turns of ${TURN}`, inTurns);
const allLiveMicros = measure(`(c) all ${TASKS} live, in turns of ${TURN}`, allLive);

printJson({
  bench: 'taskSlotTableTasks',
  node: process.version,
  tasks: TASKS,
  slots: SLOTS,
  turn: TURN,
  oneByOneMicrosPerTask: round(oneByOneMicros, 2),
  inTurnsMicrosPerTask: round(inTurnsMicros, 2),
  allLiveMicrosPerTask: round(allLiveMicros, 2),
});
