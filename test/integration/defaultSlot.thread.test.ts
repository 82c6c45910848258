/**
 * A TaskExecutor whose total does not divide evenly among its slots (Flink rounds the default slot
 * down): 2 cores and 2 gpu over 3 static slots start, register, and serve three subtasks at once.
 * One real cluster; no timing assertions.
 */
import { expect } from 'chai';
import { MiniCluster } from '../../lib/MiniCluster.js';
import type { JobEvent } from '../../lib/jobmaster/JobMaster.js';

describe('a default slot rounded down (worker threads)', function () {
  this.timeout(60_000);
  let cluster: MiniCluster | undefined;

  after(async () => {
    await cluster?.close();
  });

  it('starts 1 TaskExecutor of 2 cores and 2 gpu in 3 slots, and runs 3 subtasks in 3 static slots', async () => {
    cluster = await MiniCluster.start({
      taskExecutors: 1,
      slotsPerTaskExecutor: 3,
      resources: { cpuCores: 2, taskHeapMemory: '384m', extendedResources: { gpu: 2 } },
    });
    const [executor] = cluster.overview().taskExecutors;
    expect(executor!.slots.map((s) => [s.slot, s.state])).to.deep.equal([
      ['0', 'free'],
      ['1', 'free'],
      ['2', 'free'],
    ]);
    for (const s of executor!.slots) expect(s.resourceProfile).to.match(/cpuCores=0\.66666666,.*gpu=0\.66666666/);

    const job = await cluster.submitJob({
      name: 'three slots',
      vertices: [
        {
          id: 'sleep',
          taskModule: new URL('../fixtures/tasks/sleep.ts', import.meta.url),
          parallelism: 3,
          config: { ms: 200 },
        },
      ],
      edges: [],
    });
    const running: JobEvent[] = [];
    job.onEvent((event) => {
      if (event.type === 'task' && event.state === 'running') running.push(event);
    });
    const result = await job.result;
    expect(result.status, result.error?.message).to.equal('finished');
    expect(new Set(running.map((e) => e.type === 'task' && e.allocationId)).size, 'three slots held at once').to.equal(
      3,
    );
  });
});
