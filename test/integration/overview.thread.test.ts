/**
 * `MiniCluster.overview()` for a tool: numbers (cores, bytes, the slot's index) beside the display
 * strings, on a real TaskExecutor thread with a static and a dynamic slot in use.
 */
import { expect } from 'chai';
import { MiB } from '../../lib/core/MemorySize.js';
import { MiniCluster } from '../../lib/MiniCluster.js';
import { until } from '../support/eventually.js';

const sleep = new URL('../fixtures/tasks/sleep.ts', import.meta.url);

describe('the overview of a MiniCluster (worker threads)', function () {
  this.timeout(60_000);

  it(
    'gives every amount as numbers, the slot index as a number ' +
      '(null for a dynamic slot), with the strings beside them',
    async () => {
      const cluster = await MiniCluster.start({
        taskExecutors: 1,
        slotsPerTaskExecutor: 2,
        resources: {
          cpuCores: 4,
          taskHeapMemory: '512m',
          managedMemory: '64m',
          networkMemory: '32m',
          extendedResources: { gpu: 2 },
        },
      });
      try {
        const job = await cluster.submitJob({
          name: 'two slots',
          vertices: [
            { id: 'small', taskModule: sleep, parallelism: 1, config: { ms: 60_000 } },
            {
              id: 'big',
              taskModule: sleep,
              parallelism: 1,
              config: { ms: 60_000 },
              slotSharingGroup: 'big',
              resources: { cpuCores: 1.5, taskHeapMemory: '128m', extendedResources: { gpu: 1 } },
            },
          ],
        });
        const executor = await until('both subtasks to run', () =>
          cluster
            .overview()
            .taskExecutors.find(
              (te) => te.slots.filter((s) => s.tasks.some((t) => t.includes('(running)'))).length === 2,
            ),
        );
        const defaultSlot = {
          cpuCores: 2,
          taskHeapMemory: 256 * MiB,
          taskOffHeapMemory: 0,
          managedMemory: 32 * MiB,
          networkMemory: 16 * MiB,
          extendedResources: { gpu: 1 },
        };
        expect(executor.totalResources).to.deep.equal({
          cpuCores: 4,
          taskHeapMemory: 512 * MiB,
          taskOffHeapMemory: 0,
          managedMemory: 64 * MiB,
          networkMemory: 32 * MiB,
          extendedResources: { gpu: 2 },
        });
        expect(executor.slots.map((s) => [s.index, s.slot, s.state])).to.deep.equal([
          [0, '0', 'allocated'],
          [1, '1', 'unavailable'],
          [null, 'dynamic', 'allocated'],
        ]);
        const [first, second, dynamic] = executor.slots;
        expect(first!.resources).to.deep.equal(defaultSlot);
        expect(first!.jobId).to.equal(job.jobId);
        expect(second!.resources).to.deep.equal(defaultSlot);
        expect(dynamic!.resources).to.deep.equal({
          cpuCores: 1.5,
          taskHeapMemory: 128 * MiB,
          taskOffHeapMemory: 0,
          managedMemory: 0,
          networkMemory: 0,
          extendedResources: { gpu: 1 },
        });
        expect(dynamic!.resourceProfile).to.match(/^ResourceProfile\{cpuCores=1\.5/);
        // What is left after a default slot and the dynamic one: 0.5 cores, 128 mb heap, no gpu.
        expect(executor.availableResources).to.deep.equal({
          cpuCores: 0.5,
          taskHeapMemory: 128 * MiB,
          taskOffHeapMemory: 0,
          managedMemory: 32 * MiB,
          networkMemory: 16 * MiB,
          extendedResources: {},
        });
        expect(executor.available).to.match(/^ResourceProfile\{cpuCores=0\.5/);
        await job.cancel();
      } finally {
        await cluster.close();
      }
    },
  );

  it('gives a waiting request its amounts, or null for a default slot', async () => {
    const cluster = await MiniCluster.start({ taskExecutors: 0 });
    try {
      const job = await cluster.submitJob({
        name: 'waits',
        vertices: [
          { id: 'any', taskModule: sleep, parallelism: 2 },
          {
            id: 'sized',
            taskModule: sleep,
            parallelism: 1,
            slotSharingGroup: 'sized',
            resources: { cpuCores: 0.25, managedMemory: '1m' },
          },
        ],
      });
      const pending = await until('both requests to wait', () => {
        const requests = cluster.overview().pendingRequests.filter((r) => r.jobId === job.jobId);
        return requests.length === 2 ? requests : undefined;
      });
      const byProfile = Object.fromEntries(pending.map((r) => [r.profile === 'default slot' ? 'default' : 'sized', r]));
      expect(byProfile['default']).to.deep.include({ missing: 2, resources: null });
      expect(byProfile['sized']).to.deep.include({
        missing: 1,
        resources: {
          cpuCores: 0.25,
          taskHeapMemory: 0,
          taskOffHeapMemory: 0,
          managedMemory: MiB,
          networkMemory: 0,
          extendedResources: {},
        },
      });
      await job.cancel();
    } finally {
      await cluster.close();
    }
  });
});
