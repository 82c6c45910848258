/**
 * The real endpoints — ResourceManager, Dispatcher and JobMaster, TaskExecutors — talking only
 * through their gateways over Links on memory transports (memoryDriver.ts), on a SimulatedClock:
 * no threads, and every call crosses as frames, structured-cloned, with its deadline.
 */
import { expect } from 'chai';
import { SimulatedClock } from '../../lib/core/clock.js';
import { SlotAllocationError } from '../../lib/core/errors.js';
import { AllocationID, JobID, type ResourceID } from '../../lib/core/ids.js';
import { resolveOptions } from '../../lib/core/options.js';
import { resourceManagerServices } from '../../lib/dispatcher/resourceManagerServices.js';
import { Dispatcher } from '../../lib/dispatcher/Dispatcher.js';
import type { TaskModuleChecker } from '../../lib/jobmaster/TaskModuleChecker.js';
import { ResourceManager } from '../../lib/resourcemanager/ResourceManager.js';
import { WorkerResourceSpec } from '../../lib/resourcemanager/slotmanager/WorkerResourceSpec.js';
import type { TaskInvocation } from '../../lib/taskexecutor/SlotTaskPool.js';
import { MemoryResourceManagerDriver } from './memoryDriver.js';

const TASK = new URL('../fixtures/tasks/ok.ts', import.meta.url);

/** Sources return 10 × their subtask index; a sink returns the sum of the outputs it gets. */
function compute(invocation: TaskInvocation): unknown {
  const { vertexId, subtaskIndex } = invocation.context;
  if (vertexId === 'source') return 10 * subtaskIndex;
  return ((invocation.inputs as { source: number[] }).source ?? []).reduce((a, b) => a + b, 0);
}

/** Every module is fine: nothing is loaded in this thread. */
const acceptAll: TaskModuleChecker = {
  check: async (modules) => modules.map(() => ({ status: 'valid' as const })),
  close: async () => {},
};

async function cluster(taskExecutors: number) {
  const clock = new SimulatedClock();
  const options = resolveOptions({
    'taskmanager.numberOfTaskSlots': 2,
    'taskmanager.cpu.cores': 2,
    'taskmanager.memory.managed.size': '1m',
    'taskmanager.memory.segment-size': '64k',
  });
  const driver = new MemoryResourceManagerDriver(options, clock, compute);
  const rm = new ResourceManager({ configuration: options, clock, driver, workersOnDemand: false });
  const dispatcher = new Dispatcher({
    options,
    clock,
    ...resourceManagerServices(rm),
    taskExecutor: (resourceId) => driver.taskExecutorGateway(resourceId),
    reasonFor: () => 'not enough slots',
    taskModuleChecker: acceptAll,
  });
  rm.start();
  const ids: ResourceID[] = [];
  await rm.mailbox.callAsync(() => {
    for (let i = 0; i < taskExecutors; i++)
      ids.push(driver.requestResource(WorkerResourceSpec.fromOptions(options), null));
  });
  /**
   * Moves the clock in 10 ms steps, letting every frame and mailbox run between them, until `done` (at most `limitMs`).
   */
  const until = async (done: () => boolean, what: string, limitMs = 60_000) => {
    for (let waited = 0; !done(); waited += 10) {
      if (waited >= limitMs) throw new Error(`${what} did not happen within ${limitMs} ms of simulated time`);
      clock.increment(10);
      for (let i = 0; i < 4; i++) await new Promise((resolve) => setImmediate(resolve));
    }
  };
  const registered = () => ids.every((id) => rm.slotManager.tracker.getTaskManager(id) !== undefined);
  await until(registered, 'the TaskExecutors registering');
  return {
    clock,
    driver,
    rm,
    dispatcher,
    ids,
    until,
    async close() {
      await dispatcher.close(1_000);
      await rm.close();
    },
  };
}

describe('the real gateways over memory transports', () => {
  let running: Awaited<ReturnType<typeof cluster>> | undefined;
  afterEach(async () => {
    await running?.close();
    running = undefined;
  });

  it(
    'runs a job end to end — registration, slot requests and ' +
      'offers, deployment, task states — with every call crossing a Link',
    async () => {
      running = await cluster(2);
      const { dispatcher, driver, until } = running;
      const job = await dispatcher.submitJob({
        name: 'sum over memory links',
        vertices: [
          { id: 'source', taskModule: TASK, parallelism: 4 },
          { id: 'sink', taskModule: TASK, parallelism: 1 },
        ],
        edges: [{ from: 'source', to: 'sink', pattern: 'all-to-all' }],
      });
      let result: Awaited<typeof job.result> | undefined;
      void job.result.then((r) => (result = r));
      await until(() => result !== undefined, 'the job ending');
      expect(result!.status).to.equal('finished');
      expect(result!.outputs['sink']).to.deep.equal([0 + 10 + 20 + 30]);
      // Control calls (registration, heartbeats, slot reports) by comlink on a gateway's control
      // channel; what every job makes (slot requests, offers, frees, deployments, task states, a
      // slot's return to the ResourceManager, the job's idle slots freed at its end) in frames on
      // the gateway's own: a JobMaster's gateway has no control channel, and a job alone calls
      // nothing on a TaskExecutor's.
      const jobMaster = `jm:jobmaster-${job.jobId}`;
      expect([...driver.channelsUsed].sort()).to.deep.equal([jobMaster, 'rm', 'rm/control', 'te'].sort());
    },
  );

  it(
    "delivers the real TaskExecutor's SlotAllocationError " + "to the ResourceManager's side as a SlotAllocationError",
    async () => {
      running = await cluster(1);
      const { driver, ids, rm } = running;
      const gateway = driver.taskExecutorGateway(ids[0]!)!;
      const request = (allocationId: AllocationID, jobId: JobID) => ({
        index: 0,
        jobId,
        allocationId,
        resourceProfile: 'UNKNOWN' as const,
        targetAddress: 'jobmaster-nobody',
        resourceManagerId: rm.resourceManagerId,
      });
      const jobId = JobID.generate();
      const [first, second] = await Promise.allSettled([
        gateway.requestSlot(request(AllocationID.generate(), jobId)),
        gateway.requestSlot(request(AllocationID.generate(), JobID.generate())),
      ]);
      expect(first.status).to.equal('fulfilled');
      expect(second.status).to.equal('rejected');
      const error = (second as PromiseRejectedResult).reason as SlotAllocationError;
      expect(error).to.be.instanceOf(SlotAllocationError);
      expect(error._tag).to.equal('SlotAllocationError');
    },
  );
});
