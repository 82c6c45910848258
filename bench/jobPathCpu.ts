/**
 * Not a benchmark but a profiling aid (issue 23, item 2): the CPU the job path costs our own code,
 * with every endpoint on one thread. The real ResourceManager, Dispatcher, JobMasters and
 * TaskExecutors talk through their gateways over Links on memory transports (every call crosses
 * as frames, structured-cloned, with its deadline: test/rpc/memoryDriver.ts), and a slot's task
 * runner computes the output in this thread, so no cross-thread hop, no thread boot and no task
 * thread is counted: what remains is the bookkeeping a job pays between `submitJob` and its
 * result. On one thread, wall time is CPU time, so `node --cpu-prof` profiles it faithfully.
 *
 *   node --import tsx bench/jobPathCpu.ts [jobs] [parallelism] [in flight]   # default 3000 jobs of p = 1, 1 in flight
 *   node --cpu-prof --cpu-prof-dir=/tmp/prof --import tsx bench/jobPathCpu.ts 3000 1
 *
 * Prints µs of CPU per job (and per subtask) over `jobs` jobs, `in flight` at a time, after a
 * warm-up of as many, on 4 TaskExecutors × 8 slots.
 */
import { systemClock } from '../lib/core/clock.js';
import type { ResourceID } from '../lib/core/ids.js';
import { resolveOptions } from '../lib/core/options.js';
import { Dispatcher } from '../lib/dispatcher/Dispatcher.js';
import { resourceManagerServices } from '../lib/dispatcher/resourceManagerServices.js';
import type { TaskModuleChecker } from '../lib/jobmaster/TaskModuleChecker.js';
import { ResourceManager } from '../lib/resourcemanager/ResourceManager.js';
import { WorkerResourceSpec } from '../lib/resourcemanager/slotmanager/WorkerResourceSpec.js';
import { MemoryResourceManagerDriver } from '../test/rpc/memoryDriver.js';

const JOBS = Number(process.argv[2] ?? 3000);
const PARALLELISM = Number(process.argv[3] ?? 1);
const IN_FLIGHT = Number(process.argv[4] ?? 1);
const TASK = new URL('./support/tasks/subtaskIndex.mjs', import.meta.url);

/** Every module is fine: nothing is loaded in this thread (the checker's own cost is not the job path's). */
const acceptAll: TaskModuleChecker = {
  check: async (modules) => modules.map(() => ({ status: 'valid' as const })),
  close: async () => {},
};

const options = resolveOptions({ 'taskmanager.numberOfTaskSlots': 8, 'taskmanager.cpu.cores': 8 });
const driver = new MemoryResourceManagerDriver(options, systemClock, (invocation) => invocation.context.subtaskIndex);
const rm = new ResourceManager({ configuration: options, clock: systemClock, driver, workersOnDemand: false });
const dispatcher = new Dispatcher({
  options,
  ...resourceManagerServices(rm),
  taskExecutor: (resourceId) => driver.taskExecutorGateway(resourceId),
  reasonFor: () => 'not enough slots',
  taskModuleChecker: acceptAll,
});
rm.start();
const ids: ResourceID[] = [];
await rm.mailbox.callAsync(() => {
  for (let i = 0; i < 4; i++) ids.push(driver.requestResource(WorkerResourceSpec.fromOptions(options), null));
});
while (!ids.every((id) => rm.slotManager.tracker.getTaskManager(id) !== undefined))
  await new Promise((resolve) => setTimeout(resolve, 10));

async function runJobs(count: number): Promise<void> {
  let next = 0;
  const lane = async () => {
    while (next < count) {
      const i = next++;
      const job = await dispatcher.submitJob({
        name: `p=${PARALLELISM} #${i}`,
        vertices: [{ id: 'v', taskModule: TASK, parallelism: PARALLELISM }],
      });
      const result = await job.result;
      if (result.status !== 'finished') throw new Error(`job ${i} ${result.status}: ${result.error?.message}`);
    }
  };
  await Promise.all(Array.from({ length: IN_FLIGHT }, lane));
}

await runJobs(JOBS);
const before = process.cpuUsage();
const started = performance.now();
await runJobs(JOBS);
const used = process.cpuUsage(before);
const wall = performance.now() - started;
const perJob = (used.user + used.system) / JOBS;
console.log(
  `${JOBS} jobs of p = ${PARALLELISM}, ${IN_FLIGHT} in flight, every endpoint on this thread: ` +
    `${perJob.toFixed(0)} µs CPU per job (${(perJob / PARALLELISM).toFixed(1)} µs per subtask), ` +
    `${((wall * 1000) / JOBS).toFixed(0)} µs wall per job`,
);
await dispatcher.close(1_000);
await rm.close();
await driver.close();
