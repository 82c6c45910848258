/**
 * A fixed cluster keeps its size on real worker threads (issue 10 B): a TaskExecutor that dies is
 * replaced through the driver, and replacements that keep failing to start are paced by
 * resourcemanager.start-worker.max-failure-rate. The driver and the ResourceManager run on a
 * SimulatedClock, so the pause between starts is crossed without sleeping.
 */
import { expect } from 'chai';
import { SimulatedClock } from '../../lib/core/clock.js';
import { resolveOptions, type SlotwiseOptions } from '../../lib/core/options.js';
import { LocalResourceManagerDriver } from '../../lib/resourcemanager/LocalResourceManagerDriver.js';
import { ResourceManager } from '../../lib/resourcemanager/ResourceManager.js';
import { WorkerResourceSpec } from '../../lib/resourcemanager/slotmanager/WorkerResourceSpec.js';
import { until } from '../support/eventually.js';
import { SMALL_WORKER } from './support/cluster.js';

const OPTIONS: SlotwiseOptions = { ...SMALL_WORKER, 'resourcemanager.start-worker.max-failure-rate': 1 };

describe('a fixed cluster replaces a lost TaskExecutor (worker threads)', function () {
  this.timeout(60_000);
  let rm: ResourceManager | undefined;

  afterEach(async () => {
    delete process.env['SLOTWISE_FAIL_START'];
    await rm?.close();
  });

  it(
    'starts a replacement through the driver, and paces ' + 'replacements that fail to start by the failure rate',
    async () => {
      const clock = new SimulatedClock();
      const lines: string[] = [];
      const configuration = resolveOptions(OPTIONS);
      const driver = new LocalResourceManagerDriver({
        mode: 'thread',
        configuration,
        clock,
        entry: new URL('../fixtures/failingStartTaskExecutorMain.ts', import.meta.url),
        log: (m) => lines.push(m),
      });
      rm = new ResourceManager({ configuration, clock, driver, workersOnDemand: false, log: (m) => lines.push(m) });
      const cluster = rm;
      cluster.start();
      const first = await cluster.mailbox.callAsync(() =>
        driver.requestResource(WorkerResourceSpec.fromOptions(configuration), null),
      );
      const inSlotManager = () => [...cluster.slotManager.tracker.taskManagers].map((tm) => tm.resourceId);
      await until('the first TaskExecutor to register', () => inSlotManager().includes(first));

      process.env['SLOTWISE_FAIL_START'] = '1'; // the next workers fail to start
      driver.killWorker(first);
      // The first replacement fails before it registers (1 failure: the rate); the next start waits.
      const paused = await until('a replacement start to be paused', () =>
        lines.find((m) => /worker starts are failing \(1 in the last minute\): starting (\S+) in 3000 ms/.test(m)),
      );
      const pending = /starting (\S+) in 3000 ms/.exec(paused)![1]!;
      expect(driver.workers().map((w) => w.resourceId)).to.not.include(pending);
      expect(inSlotManager()).to.deep.equal([]);

      delete process.env['SLOTWISE_FAIL_START'];
      clock.increment(3_000);
      await until('the paused replacement to register', () => inSlotManager().includes(pending as never));
      expect(inSlotManager()).to.deep.equal([pending]);
      expect(lines.filter((m) => /of the fixed cluster is gone/.test(m))).to.have.length(2);
    },
  );
});
