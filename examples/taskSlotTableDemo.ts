/**
 * `npm run demo:slots`: one TaskExecutor's slot table at work, on the real clock, without threads.
 *
 * A TaskExecutor with 3 cores, 768 mb heap and 192 mb managed memory: 2 static slots of 1 core,
 * 256 mb heap and 64 mb managed memory each, and room left for a dynamic slot.
 * Job A gets slot 0, activates it and runs two tasks in it (slot sharing); job B gets slot 1 but
 * never activates it, so the slot times out and the TaskExecutor frees it; a dynamic slot asks
 * for a custom profile; finally job A's slot is freed while a task still runs in it, and the table
 * closes. (`npm start` runs a real job on a whole cluster.)
 */
import { AllocationID, ExecutionAttemptID, JobID, ResourceID, SlotID } from '../lib/core/ids.js';
import { formatMemorySize } from '../lib/core/MemorySize.js';
import { ResourceProfile } from '../lib/core/ResourceProfile.js';
import { TaskSlotTable, type TaskSlotPayload } from '../lib/taskexecutor/TaskSlotTable.js';

const SLOT_TIMEOUT_MS = 300;
const resourceId = ResourceID.parse('taskexecutor-demo');
const started = Date.now();
const log = (line: string) => console.log(`${String(Date.now() - started).padStart(5)} ms  ${line}`);

let timedOut: () => void = () => {};
const slotTimedOut = new Promise<void>((resolve) => (timedOut = resolve));

const table: TaskSlotTable = new TaskSlotTable({
  totalResourceProfile: ResourceProfile.fromSpec({
    cpuCores: 3,
    taskHeapMemory: '768m',
    managedMemory: '192m',
    networkMemory: '96m',
  }),
  defaultSlotResourceProfile: ResourceProfile.fromSpec({
    cpuCores: 1,
    taskHeapMemory: '256m',
    managedMemory: '64m',
    networkMemory: '32m',
  }),
  numberSlots: 2,
  slotTimeout: SLOT_TIMEOUT_MS,
  slotActions: {
    // What the TaskExecutor does with a timeout (Flink's TaskExecutor.timeoutSlot): free the slot if the timeout is
    // still current.
    timeoutSlot(allocationId, ticket) {
      if (!table.isValidTimeout(allocationId, ticket))
        return log(`slot ${AllocationID.short(allocationId)}: stale timeout ignored`);
      log(
        `slot ${AllocationID.short(allocationId)} was not activated ` +
          `within ${SLOT_TIMEOUT_MS} ms: the TaskExecutor frees it`,
      );
      table.freeSlot(allocationId, new Error('slot timed out'));
      timedOut();
    },
    slotFreed: (allocationId, _job, index) =>
      log(`slot ${index} (${AllocationID.short(allocationId)}) left the table; its resources are back`),
    slotClosed: ({ index, leaks }) =>
      log(
        `slot ${index} closed; managed memory never released: ${
          leaks.leakedPages === 0
            ? 'none'
            : leaks.owners.map((o) => `${o.pages} pages by ${o.owner.slice(0, 8)}…`).join(', ')
        }`,
      ),
  },
});

function printReport(title: string): void {
  console.log(`\n  ${title}`);
  console.log('  slot                    state      job       allocation  profile');
  for (const s of table.createSlotReport(resourceId).slots) {
    const slot = table.getTaskSlot(s.allocationId!);
    const tasks =
      slot && slot.tasks.length > 0 ? `  tasks: ${slot.tasks.map(ExecutionAttemptID.short).join(', ')}` : '';
    const job = (s.jobId ? JobID.short(s.jobId) : '-').padEnd(9);
    const allocation = (s.allocationId ? AllocationID.short(s.allocationId) : '-').padEnd(11);
    console.log(
      `  ${SlotID.toString(s.slotId).padEnd(23)} ${s.state.padEnd(10)} ${job} ${allocation} ` +
        `${s.resourceProfile}${tasks}`,
    );
  }
  console.log(`  available for new slots: ${table.availableResources}\n`);
}

function task(jobId: JobID, allocationId: AllocationID, vertex: string, subtask: number): TaskSlotPayload {
  const executionAttemptId = ExecutionAttemptID.generate({ vertex, subtask, attempt: 0 });
  return {
    executionAttemptId,
    jobId,
    allocationId,
    failExternally: (cause) =>
      log(`task ${ExecutionAttemptID.short(executionAttemptId)} asked to fail: ${(cause as Error).message}`),
  };
}

table.start();
log(`table ${table.state}: ${table.numberSlots} static slots of ${table.defaultSlotResourceProfile}`);
printReport('slot report of a fresh TaskExecutor');

const jobA = JobID.generate();
const jobB = JobID.generate();
const slotA = AllocationID.generate();
const slotB = AllocationID.generate();
const dynamic = AllocationID.generate();

table.allocateSlot({ index: 0, jobId: jobA, allocationId: slotA, resourceProfile: ResourceProfile.UNKNOWN });
log(`job ${JobID.short(jobA)} allocated slot 0 as ${AllocationID.short(slotA)} (default profile)`);
table.allocateSlot({ index: 1, jobId: jobB, allocationId: slotB, resourceProfile: ResourceProfile.UNKNOWN });
log(`job ${JobID.short(jobB)} allocated slot 1 as ${AllocationID.short(slotB)}; it will never activate it`);
try {
  table.allocateSlot({
    index: 0,
    jobId: jobB,
    allocationId: AllocationID.generate(),
    resourceProfile: ResourceProfile.UNKNOWN,
  });
} catch (error) {
  log(`refused: ${(error as Error).name} (${(error as { reason: string }).reason}): ${(error as Error).message}`);
}

table.markSlotActive(slotA);
const source = task(jobA, slotA, 'source', 0);
const tokenize = task(jobA, slotA, 'tokenize', 0);
table.addTask(source);
table.addTask(tokenize);
log(
  `slot 0 active; tasks ${ExecutionAttemptID.short(source.executionAttemptId)} ` +
    `and ${ExecutionAttemptID.short(tokenize.executionAttemptId)} share it`,
);
const pages = table.getTaskMemoryManager(slotA).allocatePages(tokenize.executionAttemptId, 4);
const taken = formatMemorySize(pages.length * pages[0]!.bytes.byteLength);
const left = formatMemorySize(table.getTaskMemoryManager(slotA).availableMemory);
log(`tokenize took ${pages.length} pages of managed memory (${taken}); ${left} left in its slot`);

table.allocateSlot({
  index: -1,
  jobId: jobA,
  allocationId: dynamic,
  resourceProfile: ResourceProfile.fromSpec({ cpuCores: 0.5, taskHeapMemory: '64m' }),
});
table.markSlotActive(dynamic);
log(`a dynamic slot for a custom profile landed at index ${table.getTaskSlot(dynamic)!.index}`);
printReport('slot report with two jobs');

await slotTimedOut;
table.removeTask(source.executionAttemptId);
log(`task ${ExecutionAttemptID.short(source.executionAttemptId)} finished and left its slot`);
printReport('after the timeout and one finished task');

const { state, closed } = table.freeSlot(slotA, new Error('job A canceled'));
log(`freeing slot 0 with a task still in it: ${state}`);
// tokenize terminates without giving its pages back: the slot's close reports the leak.
table.removeTask(tokenize.executionAttemptId);
await closed;

await table.closeAsync();
log(`table ${table.state}`);
printReport('final slot report');
