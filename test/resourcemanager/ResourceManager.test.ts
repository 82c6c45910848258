/**
 * The ResourceManager endpoint in-process: a TestingResourceManagerDriver whose fake TaskExecutors
 * the test plays, a SimulatedClock for heartbeats (interval 1 s, timeout 3 s) and requirement
 * checks (50 ms). Real threads and processes are in test/integration.
 */
import { expect } from 'chai';
import { SimulatedClock } from '../../lib/core/clock.js';
import { IllegalArgumentError } from '../../lib/core/errors.js';
import { AllocationID, JobID, ResourceID } from '../../lib/core/ids.js';
import { resolveOptions, type SlotwiseOptions } from '../../lib/core/options.js';
import { ResourceProfile } from '../../lib/core/ResourceProfile.js';
import type { RegistrationResponse } from '../../lib/rpc/protocol.js';
import { ResourceManager, STALE_KEPT } from '../../lib/resourcemanager/ResourceManager.js';
import { WorkerResourceSpec } from '../../lib/resourcemanager/slotmanager/WorkerResourceSpec.js';
import { RecordingListener, WORKER_OPTIONS } from './slotmanager/doubles.js';
import {
  registrationWire,
  slotReportWire,
  TestingJobMasterGateway,
  TestingResourceManagerDriver,
  type ReportedSlot,
} from './driverDoubles.js';

const settle = async () => {
  for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve));
};

const ADDRESS = 'jobmaster@test';
const OPTIONS: SlotwiseOptions = { ...WORKER_OPTIONS, 'heartbeat.interval': 1_000, 'heartbeat.timeout': 3_000 };
const running: ResourceManager[] = [];

async function harness(o: { configuration?: SlotwiseOptions; workersOnDemand?: boolean } = {}) {
  const clock = new SimulatedClock();
  const configuration = resolveOptions({ ...OPTIONS, ...o.configuration });
  const spec = WorkerResourceSpec.fromOptions(configuration);
  const driver = new TestingResourceManagerDriver(spec);
  const listener = new RecordingListener();
  const logs: string[] = [];
  const losses: Array<[ResourceID, string]> = [];
  const rm = new ResourceManager({
    configuration,
    clock,
    driver,
    listener,
    log: (m) => logs.push(m),
    onTaskExecutorLost: (id, cause) => losses.push([id, cause]),
    ...(o.workersOnDemand === undefined ? {} : { workersOnDemand: o.workersOnDemand }),
  });
  running.push(rm);
  rm.start();
  await settle();
  const jobId = JobID.generate();
  const jobMaster = new TestingJobMasterGateway();
  const call = <T>(fn: () => Promise<T>) => rm.mailbox.callAsync(fn);
  const h = {
    rm,
    clock,
    driver,
    listener,
    logs,
    losses,
    spec,
    jobId,
    jobMaster,
    call,
    overview: () => rm.slotManager.overview(),
    /**
     * Moves the clock in 50 ms steps, letting the mailbox run between them (each heartbeat round reschedules the next).
     */
    async advance(ms: number) {
      for (let left = ms; left > 0; left -= 50) {
        clock.increment(Math.min(50, left));
        await settle();
      }
    },
    /** The worker registers through its own gateway (no report yet). */
    registerOnly: (resourceId: ResourceID, pendingWorkerId?: string | null) =>
      driver.gateway(resourceId).registerTaskExecutor(registrationWire(resourceId, spec, pendingWorkerId)),
    /** Registers worker `resourceId` and sends its first slot report; returns its registrationId. */
    async register(
      resourceId: ResourceID,
      options: { pendingWorkerId?: string | null; allocated?: readonly ReportedSlot[] } = {},
    ) {
      const response = await h.registerOnly(resourceId, options.pendingWorkerId);
      if (response.kind !== 'accepted') throw new Error(`refused: ${response.reason}`);
      // Heartbeats answer with the same report until the test says otherwise.
      driver.executor(resourceId).reports(options.allocated ?? []);
      await driver
        .gateway(resourceId)
        .sendSlotReport(resourceId, response.registrationId, slotReportWire(resourceId, spec, options.allocated));
      return response.registrationId;
    },
    /** A started and registered worker with its first report. */
    async worker(allocated: readonly ReportedSlot[] = []) {
      const resourceId = driver.startWorker();
      await h.register(resourceId, { allocated });
      return resourceId;
    },
    async connectJob() {
      rm.serveJobMaster(ADDRESS, jobMaster);
      await call(() => rm.registerJobMaster(jobId, ADDRESS));
    },
    declare: (slots: number) =>
      call(() =>
        rm.declareRequiredResources({
          jobId,
          targetAddress: ADDRESS,
          requirements: slots === 0 ? [] : [{ resourceProfile: 'UNKNOWN', numberOfRequiredSlots: slots }],
        }),
      ),
    slot: (index = 0): ReportedSlot => ({ index, jobId, allocationId: AllocationID.generate() }),
  };
  return h;
}

const refusal = (response: RegistrationResponse) =>
  response.kind === 'refused' ? response.reason : `accepted as ${response.registrationId}`;

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected a rejection');
}

afterEach(async () => {
  for (const rm of running.splice(0)) await rm.close();
});

describe('ResourceManager endpoint', () => {
  describe('TaskExecutor registration', () => {
    it('accepts a worker the driver started, and puts it in the SlotManager on its first slot report', async () => {
      const h = await harness();
      const id = h.driver.startWorker();
      const response = await h.registerOnly(id);
      expect(response).to.include({ kind: 'accepted', heartbeatIntervalMs: 1_000, heartbeatTimeoutMs: 3_000 });
      expect(response.kind === 'accepted' && response.registrationId).to.be.a('string');
      expect(h.driver.markRegisteredCalls).to.deep.equal([id]);
      expect(h.rm.taskExecutors).to.deep.equal([id]);
      expect(h.overview().taskManagers).to.have.length(0);
      if (response.kind !== 'accepted') return;
      await h.driver.gateway(id).sendSlotReport(id, response.registrationId, slotReportWire(id, h.spec));
      expect(h.overview().taskManagers.map((tm) => [tm.resourceId, tm.slots.free])).to.deep.equal([[id, 2]]);
    });

    it("refuses a ResourceID the driver never started as 'unknown'", async () => {
      const h = await harness();
      const stranger = ResourceID.parse('stranger-1');
      const response = await h.call(() => h.rm.registerTaskExecutor(registrationWire(stranger, h.spec)));
      expect(refusal(response)).to.match(/^unknown: .*stranger-1/);
      expect(h.rm.taskExecutors).to.deep.equal([]);
      expect(h.driver.markRegisteredCalls).to.deep.equal([]);
    });

    it("keeps the mode a registration tells ('thread' or 'process') and refuses any other", async () => {
      const h = await harness();
      const id = h.driver.startWorker();
      const bad = { ...registrationWire(id, h.spec), mode: 'fiber' as 'thread' };
      const error = await rejection(h.driver.gateway(id).registerTaskExecutor(bad));
      expect(error).to.be.instanceOf(IllegalArgumentError);
      expect((error as IllegalArgumentError).message).to.equal(
        `registerTaskExecutor: mode must be 'thread' or 'process', got "fiber"`,
      );
      expect(h.rm.taskExecutors).to.deep.equal([]);
      await h.driver.gateway(id).registerTaskExecutor({ ...registrationWire(id, h.spec), mode: 'process' });
      expect(h.rm.taskExecutorMode(id)).to.equal('process');
    });

    it('rejects a worker that speaks for another ResourceID through its own gateway', async () => {
      const h = await harness();
      const [a, b] = [h.driver.startWorker(), h.driver.startWorker()];
      const error = await rejection(h.driver.gateway(a).registerTaskExecutor(registrationWire(b, h.spec)));
      expect(error).to.be.instanceOf(IllegalArgumentError);
      expect(await rejection(h.driver.gateway(a).notifySlotAvailable(b, AllocationID.generate()))).to.be.instanceOf(
        IllegalArgumentError,
      );
      expect(h.rm.taskExecutors).to.deep.equal([]);
    });

    it(
      'accepts the same worker registering again, replacing ' + 'the old registration; its slots are re-reported',
      async () => {
        const h = await harness();
        const slot = h.slot();
        const id = h.driver.startWorker();
        const first = await h.register(id, { allocated: [slot] });
        expect(h.overview().slots.allocated).to.equal(1);
        const second = await h.registerOnly(id);
        expect(second.kind).to.equal('accepted');
        if (second.kind !== 'accepted') return;
        expect(second.registrationId).to.not.equal(first);
        expect(h.rm.taskExecutors).to.deep.equal([id]);
        expect(
          await rejection(h.driver.gateway(id).sendSlotReport(id, first, slotReportWire(id, h.spec, [slot]))),
        ).to.be.instanceOf(IllegalArgumentError);
        await h.driver.gateway(id).sendSlotReport(id, second.registrationId, slotReportWire(id, h.spec, [slot]));
        expect(h.overview().taskManagers.map((tm) => [tm.resourceId, tm.slots.allocated])).to.deep.equal([[id, 1]]);
      },
    );

    it('does not tell the JobMaster that the slots of a re-registering worker were freed', async () => {
      const h = await harness();
      await h.connectJob();
      const slot = h.slot();
      const id = await h.worker([slot]);
      await h.register(id, { allocated: [slot] });
      await settle();
      expect(h.jobMaster.freed).to.deep.equal([]);
      expect(h.overview().slots.allocated).to.equal(1);
    });

    it(
      'accepts a worker declared lost on heartbeat timeout that registers ' +
        'again, as a new registration reconciled from its slot report',
      async () => {
        const h = await harness();
        await h.connectJob();
        const [lostSlot, keptSlot] = [h.slot(0), h.slot(1)];
        const id = await h.worker([lostSlot]);
        h.driver.executor(id).heartbeat = 'silent';
        await h.advance(3_000);
        expect(h.rm.taskExecutors).to.deep.equal([]);
        expect(h.jobMaster.freed.map((f) => f.allocationId)).to.deep.equal([lostSlot.allocationId]);
        expect(h.driver.executor(id).calls.filter((c) => c[0] === 'disconnectResourceManager')).to.have.length(1);
        // Alive after all: it registers again, still holding the slot its job was told is lost, and
        // one allocated meanwhile that nobody was told about.
        h.driver.executor(id).heartbeat = 'answer';
        const response = await h.registerOnly(id);
        expect(refusal(response)).to.match(/^accepted as registration-/);
        if (response.kind !== 'accepted') return;
        h.driver.executor(id).reports([lostSlot, keptSlot]);
        await h.driver
          .gateway(id)
          .sendSlotReport(id, response.registrationId, slotReportWire(id, h.spec, [lostSlot, keptSlot]));
        await settle();
        expect(h.rm.taskExecutors).to.deep.equal([id]);
        expect(h.overview().taskManagers.map((tm) => [tm.resourceId, tm.slots])).to.deep.equal([
          [id, { free: 1, pending: 0, allocated: 1 }],
        ]);
        expect(h.rm.slotManager.tracker.getSlot(keptSlot.allocationId)?.jobId).to.equal(h.jobId);
        expect(h.rm.slotManager.tracker.getSlot(lostSlot.allocationId)).to.equal(undefined);
        expect(
          h.driver
            .executor(id)
            .calls.filter((c) => c[0] === 'freeSlot')
            .map((c) => c[1]),
        ).to.deep.equal([lostSlot.allocationId]);
        // Heartbeats keep it and keep the revoked slot out until the executor has freed it.
        await h.advance(5_000);
        expect(h.rm.taskExecutors).to.deep.equal([id]);
        expect(h.driver.releaseResourceCalls).to.deep.equal([]);
        expect(h.overview().slots.allocated).to.equal(1);
        expect(h.driver.executor(id).calls.filter((c) => c[0] === 'freeSlot')).to.have.length(1);
      },
    );

    it(
      "refuses a worker declared lost as 'stale' once " + 'it stayed away for heartbeat.timeout, and stops it',
      async () => {
        const h = await harness();
        const id = await h.worker();
        h.driver.executor(id).heartbeat = 'silent';
        await h.advance(3_000);
        expect(h.driver.releaseResourceCalls).to.deep.equal([]);
        await h.advance(2_950);
        expect(h.driver.releaseResourceCalls).to.deep.equal([]);
        await h.advance(50);
        expect(h.driver.releaseResourceCalls.map((c) => c.resourceId)).to.deep.equal([id]);
        expect(refusal(await h.registerOnly(id))).to.match(
          /^stale: .*no heartbeat for 3000 ms.*did not register again within heartbeat.timeout/,
        );
      },
    );

    it("refuses a worker whose worker ended as 'stale', with the reason", async () => {
      const h = await harness();
      const id = await h.worker();
      h.driver.terminate(id, 'exit code 1');
      await settle();
      expect(refusal(await h.call(() => h.rm.registerTaskExecutor(registrationWire(id, h.spec))))).to.match(
        /^stale: .*exit code 1/,
      );
    });

    it('remembers the last STALE_KEPT stale workers, forgets older ones (a bounded list)', async () => {
      const h = await harness();
      const ids = Array.from({ length: STALE_KEPT + 1 }, () => h.driver.startWorker());
      for (const id of ids) h.driver.terminate(id, 'exit code 1');
      await settle();
      expect(refusal(await h.registerOnly(ids.at(-1)!))).to.match(/^stale: .*exit code 1/);
      expect(refusal(await h.registerOnly(ids[1]!))).to.match(/^stale: .*exit code 1/);
      expect(refusal(await h.registerOnly(ids[0]!))).to.not.match(/^stale/);
    });

    it('rejects a slot report under a wrong registrationId and changes nothing', async () => {
      const h = await harness();
      const id = h.driver.startWorker();
      await h.registerOnly(id);
      const error = await rejection(
        h.driver.gateway(id).sendSlotReport(id, 'registration-999', slotReportWire(id, h.spec)),
      );
      expect(error).to.be.instanceOf(IllegalArgumentError);
      expect(h.overview().taskManagers).to.have.length(0);
    });

    it('releases a worker the SlotManager rejects over slotmanager.number-of-slots.max', async () => {
      const h = await harness({ configuration: { 'slotmanager.number-of-slots.max': 2 } });
      const a = await h.worker();
      const b = h.driver.startWorker();
      await h.register(b);
      expect(h.overview().taskManagers.map((tm) => tm.resourceId)).to.deep.equal([a]);
      expect(h.driver.releaseResourceCalls).to.have.length(1);
      expect(h.driver.releaseResourceCalls[0])
        .to.include({ resourceId: b })
        .and.to.have.property('reason')
        .that.matches(/slotmanager.number-of-slots.max = 2/);
      expect(h.rm.taskExecutors).to.deep.equal([a]);
      expect(refusal(await h.registerOnly(b))).to.match(/^stale: /);
    });
  });

  describe('heartbeats', () => {
    it('asks every registered executor once per heartbeat.interval, and keeps those that answer', async () => {
      const h = await harness();
      const [a, b] = [await h.worker(), await h.worker()];
      await h.advance(1_000);
      expect([h.driver.executor(a).heartbeats, h.driver.executor(b).heartbeats]).to.deep.equal([1, 1]);
      await h.advance(9_000);
      expect([h.driver.executor(a).heartbeats, h.driver.executor(b).heartbeats]).to.deep.equal([10, 10]);
      expect(h.rm.taskExecutors).to.have.members([a, b]);
      expect(h.driver.releaseResourceCalls).to.deep.equal([]);
    });

    it("hands each heartbeat's slot report to the SlotManager: an allocation it reports is adopted", async () => {
      const h = await harness();
      const id = await h.worker();
      expect(h.overview().slots.allocated).to.equal(0);
      const slot = h.slot(1);
      h.driver.executor(id).reports([slot]);
      await h.advance(1_000);
      expect(h.overview().taskManagers[0]?.slots).to.include({ allocated: 1, free: 1 });
      expect(h.rm.slotManager.tracker.getSlot(slot.allocationId)?.jobId).to.equal(h.jobId);
    });

    it(
      'declares an executor silent for heartbeat.timeout lost: ' +
        'slots freed, its JobMaster told, it is asked to register again',
      async () => {
        const h = await harness();
        await h.connectJob();
        const slot = h.slot();
        const id = await h.worker([slot]);
        await h.advance(1_000); // answered at t=1000
        h.driver.executor(id).heartbeat = 'silent';
        await h.advance(2_900);
        expect(h.rm.taskExecutors).to.deep.equal([id]);
        await h.advance(100); // t=4000: 3000 ms since the last answer
        expect(h.rm.taskExecutors).to.deep.equal([]);
        expect(h.overview()).to.deep.include({ taskManagers: [] });
        expect(h.overview().slots.allocated).to.equal(0);
        expect(h.jobMaster.freed).to.have.length(1);
        expect(h.jobMaster.freed[0])
          .to.include({ resourceId: id, allocationId: slot.allocationId })
          .and.to.have.property('cause')
          .that.matches(/no heartbeat for 3000 ms/);
        expect(h.listener.of('slotsLost').map((c) => [c.jobId, c.allocationIds, c.resourceId])).to.deep.equal([
          [h.jobId, [slot.allocationId], id],
        ]);
        expect(
          h.driver
            .executor(id)
            .calls.filter((c) => c[0] === 'disconnectResourceManager')
            .map((c) => c[1]),
        ).to.deep.equal(['declared lost: no heartbeat for 3000 ms (heartbeat.timeout 3000 ms)']);
        expect(h.driver.releaseResourceCalls).to.deep.equal([]);
      },
    );

    it('counts a rejected heartbeat as silence', async () => {
      const h = await harness();
      const id = await h.worker();
      h.driver.executor(id).heartbeat = 'reject';
      await h.advance(2_000);
      expect(h.rm.taskExecutors).to.deep.equal([id]);
      await h.advance(1_000);
      expect(h.rm.taskExecutors).to.deep.equal([]);
      expect(h.listener.of('slotsLost')).to.deep.equal([]); // it held no slot
    });

    it(
      'does not count its own stall against its executors: after ' +
        'a blocked event loop each gets a fresh heartbeat.timeout',
      async () => {
        const h = await harness();
        await h.connectJob();
        const slot = h.slot();
        const [alive, dead] = [await h.worker([slot]), await h.worker()];
        await h.advance(1_000);
        h.driver.executor(dead).heartbeat = 'silent';
        h.clock.stall(10_000); // the embedding application blocked the main thread for 10 s
        await settle();
        expect(h.rm.taskExecutors).to.have.members([alive, dead]);
        expect(h.listener.of('slotsLost')).to.deep.equal([]);
        expect(h.logs.some((m) => /heartbeat monitor woke \d+ ms late/.test(m))).to.equal(true);
        // The silent one is lost once it has been silent for heartbeat.timeout while we looked.
        await h.advance(2_950);
        expect(h.rm.taskExecutors).to.have.members([alive, dead]);
        await h.advance(50);
        expect(h.rm.taskExecutors).to.deep.equal([alive]);
        expect(h.overview().slots.allocated).to.equal(1);
        expect(h.jobMaster.freed).to.deep.equal([]);
      },
    );

    it('handles a heartbeat answer already queued behind its round before declaring the executor lost', async () => {
      const h = await harness();
      const id = await h.worker();
      const executor = h.driver.executor(id);
      executor.heartbeat = 'held';
      await h.advance(2_950);
      expect(executor.heartbeats).to.equal(2);
      // The answers arrive in the same turn as the timeout: the round is queued first.
      expect(executor.answerHeld()).to.equal(2);
      h.clock.increment(50);
      await settle();
      expect(h.rm.taskExecutors).to.deep.equal([id]);
      expect(h.driver.releaseResourceCalls).to.deep.equal([]);
    });
  });

  describe('worker terminated', () => {
    it(
      'loses the executor at once, without waiting for ' +
        'heartbeats: slots freed, slotsLost, later registration stale',
      async () => {
        const h = await harness();
        await h.connectJob();
        const slot = h.slot();
        const id = await h.worker([slot]);
        h.driver.terminate(id, 'exit code 134');
        await settle();
        expect(h.rm.taskExecutors).to.deep.equal([]);
        expect(h.overview().taskManagers).to.deep.equal([]);
        expect(h.listener.of('slotsLost')).to.have.length(1);
        expect(h.listener.of('slotsLost')[0]).to.deep.include({
          jobId: h.jobId,
          allocationIds: [slot.allocationId],
          resourceId: id,
        });
        expect(h.jobMaster.freed.map((f) => f.allocationId)).to.deep.equal([slot.allocationId]);
        expect(refusal(await h.registerOnly(id))).to.match(/^stale: .*exit code 134/);
      },
    );

    it('asks for a new worker when a pending worker ends before it registers', async () => {
      const h = await harness();
      await h.connectJob();
      await h.declare(1);
      await h.advance(50);
      const first = h.driver.requestResourceCalls[0];
      expect(first).to.not.equal(undefined);
      h.driver.terminate(first!.resourceId, 'exit code 1 before registering');
      await h.advance(1_000);
      expect(h.driver.requestResourceCalls).to.have.length(2);
    });

    it('keeps the first reason a worker was lost when its worker then ends', async () => {
      const h = await harness();
      const id = await h.worker();
      h.driver.executor(id).heartbeat = 'silent';
      await h.advance(3_000);
      h.driver.terminate(id, 'released');
      await settle();
      expect(refusal(await h.call(() => h.rm.registerTaskExecutor(registrationWire(id, h.spec))))).to.match(
        /no heartbeat for 3000 ms/,
      );
    });
  });

  describe('registration events (what the MiniCluster waits on)', () => {
    it(
      'tells each TaskExecutor entering the SlotManager with its slot report, ' +
        'not at its registration, and each worker that ends, registered or not',
      async () => {
        const h = await harness();
        const events: string[] = [];
        const unsubscribe = h.rm.onTaskExecutorRegistration((event) =>
          events.push(`${event.type} ${event.resourceId}`),
        );
        const first = h.driver.startWorker();
        const response = await h.registerOnly(first);
        expect(response.kind).to.equal('accepted');
        expect(events, 'registered at the ResourceManager, not yet in the SlotManager').to.deep.equal([]);
        await h.register(first);
        const never = h.driver.startWorker();
        h.driver.terminate(never, 'exit code 1 before registering');
        await settle();
        h.driver.terminate(first, 'exit code 134');
        await settle();
        expect(events).to.deep.equal([`registered ${first}`, `worker-ended ${never}`, `worker-ended ${first}`]);
        unsubscribe();
        await h.worker();
        expect(events).to.have.length(3);
      },
    );

    it('logs a listener that throws and still tells the others', async () => {
      const h = await harness();
      const told: string[] = [];
      h.rm.onTaskExecutorRegistration(() => {
        throw new Error('boom');
      });
      h.rm.onTaskExecutorRegistration((event) => told.push(event.type));
      await h.worker();
      expect(told).to.deep.equal(['registered']);
      expect(h.logs.some((line) => /registration listener threw: boom/.test(line))).to.equal(true);
    });
  });

  describe('lost TaskExecutors, told by cause (for the metrics)', () => {
    it(
      'tells each loss once, by cause: worker exited, heartbeat ' +
        'timeout (its stop later is not another), disconnected, rejected',
      async () => {
        const h = await harness({ configuration: { 'slotmanager.number-of-slots.max': 6 } });
        const [exited, silent, leaving] = [await h.worker(), await h.worker(), await h.worker()];
        h.driver.terminate(exited, 'exit code 1');
        await settle();
        h.driver.executor(silent).heartbeat = 'silent';
        await h.advance(6_000); // lost at 3 s, stopped at 6 s when it did not come back
        h.driver.terminate(silent, 'stopped');
        await h.driver.gateway(leaving).disconnectTaskExecutor(leaving, 'shutting down');
        // Three new workers hold the 6 slots allowed: a fourth is over slotmanager.number-of-slots.max.
        for (let i = 0; i < 3; i++) await h.worker();
        const overMax = h.driver.startWorker();
        await h.register(overMax);
        expect(h.losses).to.deep.equal([
          [exited, 'worker-exited'],
          [silent, 'heartbeat-timeout'],
          [leaving, 'disconnected'],
          [overMax, 'rejected'],
        ]);
      },
    );

    it(
      'tells no loss for a worker the SlotManager released when ' +
        'idle, nor for workers ending as the ResourceManager closes',
      async () => {
        const h = await harness({ configuration: { 'resourcemanager.taskmanager-timeout': 1_000 } });
        const idle = await h.worker();
        const kept = await h.worker();
        await h.connectJob();
        await h.call(() => h.rm.declareRequiredResources({ jobId: h.jobId, targetAddress: ADDRESS, requirements: [] }));
        await h.advance(1_100);
        expect(h.driver.releaseResourceCalls.map((c) => c.resourceId)).to.include(idle);
        h.driver.terminate(idle, 'released');
        await settle();
        await h.rm.close();
        h.driver.terminate(kept, 'closing');
        await settle();
        expect(h.losses).to.deep.equal([]);
      },
    );
  });

  describe('a fixed cluster (workersOnDemand false) keeps its size', () => {
    it(
      'replaces a TaskExecutor whose worker ended through the ' +
        'driver, with the same spec, and registers the new one',
      async () => {
        const h = await harness({ workersOnDemand: false });
        const [a, b] = [await h.worker(), await h.worker()];
        h.driver.terminate(a, 'exit code 134');
        await settle();
        expect(h.driver.requestResourceCalls).to.have.length(1);
        const { resourceId: replacement, spec, pendingWorkerId } = h.driver.requestResourceCalls[0]!;
        expect(
          spec.totalResourceProfile.equals(h.spec.totalResourceProfile) && spec.numberOfSlots === h.spec.numberOfSlots,
        ).to.equal(true);
        expect(pendingWorkerId).to.equal(null);
        expect(h.logs.some((m) => m.includes(`started ${replacement} in its place`))).to.equal(true);
        await h.register(replacement);
        expect(h.rm.taskExecutors).to.have.members([b, replacement]);
        expect(h.overview().taskManagers).to.have.length(2);
        expect(refusal(await h.call(() => h.rm.registerTaskExecutor(registrationWire(a, h.spec))))).to.match(
          new RegExp(`^stale: .*exit code 134; ${replacement} was started in its place`),
        );
      },
    );

    it(
      'replaces a TaskExecutor that stayed away for heartbeat.timeout ' +
        'after it was declared lost, and stops the old one',
      async () => {
        const h = await harness({ workersOnDemand: false });
        const id = await h.worker();
        h.driver.executor(id).heartbeat = 'silent';
        await h.advance(3_000);
        expect(h.driver.requestResourceCalls).to.deep.equal([]); // it may still come back
        await h.advance(3_000);
        expect(h.driver.releaseResourceCalls.map((c) => c.resourceId)).to.deep.equal([id]);
        expect(h.driver.requestResourceCalls).to.have.length(1);
        h.driver.terminate(id, 'released'); // its exit after the release: no second replacement
        await settle();
        expect(h.driver.requestResourceCalls).to.have.length(1);
      },
    );

    it(
      'starts another when a replacement ends before it ' + 'registers (the driver paces starts that keep failing)',
      async () => {
        const h = await harness({ workersOnDemand: false });
        const id = await h.worker();
        h.driver.terminate(id, 'exit code 1');
        await settle();
        const first = h.driver.requestResourceCalls[0]!.resourceId;
        h.driver.terminate(first, 'exit code 1 before registering');
        await settle();
        expect(h.driver.requestResourceCalls.map((c) => c.resourceId))
          .to.have.length(2)
          .and.not.include(id);
      },
    );

    it('does not replace a worker the SlotManager refused over its maxima', async () => {
      const h = await harness({ workersOnDemand: false, configuration: { 'slotmanager.number-of-slots.max': 2 } });
      await h.worker();
      const refused = h.driver.startWorker();
      await h.register(refused);
      h.driver.terminate(refused, 'released');
      await settle();
      expect(h.driver.requestResourceCalls).to.deep.equal([]);
    });

    it('leaves replacing to the SlotManager when workers are started on demand', async () => {
      const h = await harness();
      const id = await h.worker();
      h.driver.terminate(id, 'exit code 134');
      await h.advance(1_000);
      expect(h.driver.requestResourceCalls).to.deep.equal([]); // no job needs a worker
    });
  });

  describe('JobMasters and requirements', () => {
    it('refuses to register a JobMaster at an address nobody serves', async () => {
      const h = await harness();
      const error = await rejection(h.call(() => h.rm.registerJobMaster(h.jobId, 'jobmaster@nowhere')));
      expect(error).to.be.instanceOf(IllegalArgumentError);
      expect((error as IllegalArgumentError).message).to.match(/serveJobMaster/);
    });

    it(
      'asks the driver for a worker of the worker spec, then requests ' +
        'the slots on it once it registers (profiles as plain data)',
      async () => {
        const h = await harness();
        await h.connectJob();
        await h.declare(2);
        await h.advance(50);
        expect(h.driver.requestResourceCalls).to.have.length(1);
        const { spec, pendingWorkerId, resourceId } = h.driver.requestResourceCalls[0]!;
        expect(spec.totalResourceProfile.equals(h.spec.totalResourceProfile)).to.equal(true);
        expect(spec.numberOfSlots).to.equal(2);
        expect(pendingWorkerId).to.be.a('string');
        expect(h.overview().pendingWorkers).to.have.length(1);

        await h.register(resourceId, { pendingWorkerId });
        await h.advance(50);
        const requests = h.driver.executor(resourceId).slotRequests;
        expect(requests).to.have.length(2);
        for (const request of requests) {
          expect(request).to.include({
            jobId: h.jobId,
            targetAddress: ADDRESS,
            resourceManagerId: h.rm.resourceManagerId,
          });
          expect(request.resourceProfile).to.not.be.instanceOf(ResourceProfile);
          expect(structuredClone(request)).to.deep.equal(request);
          if (typeof request.resourceProfile === 'object')
            expect(Object.getPrototypeOf(request.resourceProfile)).to.equal(Object.prototype);
        }
        expect(h.overview().pendingWorkers).to.deep.equal([]);
        expect(h.overview().slots.allocated).to.equal(2);
        expect(h.driver.requestResourceCalls).to.have.length(1);
      },
    );

    it("clears the job's requirements when its JobMaster disconnects for good, and keeps them otherwise", async () => {
      const h = await harness();
      await h.connectJob();
      const id = await h.worker();
      await h.declare(1);
      await h.advance(50);
      expect(h.driver.executor(id).slotRequests).to.have.length(1);
      await h.call(() => h.rm.disconnectJobMaster(h.jobId, 'leadership lost', false));
      expect(h.overview().jobs).to.deep.equal([{ jobId: h.jobId, required: 1, acquired: 1 }]);
      await h.call(() => h.rm.disconnectJobMaster(h.jobId, 'finished', true));
      expect(h.overview().jobs.filter((j) => j.required > 0)).to.deep.equal([]);
      await settle();
      expect(h.driver.executor(id).freeInactiveSlotsCalls).to.deep.equal([h.jobId]);
    });

    it('asks for no worker with workersOnDemand false, and uses a worker started by the caller', async () => {
      const h = await harness({ workersOnDemand: false });
      await h.connectJob();
      await h.declare(1);
      await h.advance(1_000);
      expect(h.driver.requestResourceCalls).to.deep.equal([]);
      const id = await h.worker();
      await h.advance(50);
      expect(h.driver.executor(id).slotRequests).to.have.length(1);
    });

    it('tells a class-instance listener that a job cannot get its slots', async () => {
      const h = await harness({ workersOnDemand: false });
      await h.declare(1);
      await h.advance(100);
      expect(h.listener.of('notEnoughResourcesAvailable')).to.have.length(1);
    });

    it("blocks a JobMaster's slow TaskExecutor for the duration it names; a TaskExecutor may not", async () => {
      const h = await harness({ workersOnDemand: false });
      await h.connectJob();
      const slow = await h.worker();
      const other = await h.worker();
      await h.call(() =>
        h.rm.notifyNewBlockedNodes([{ resourceId: slow, cause: 'a subtask ran slowly there', durationMs: 5_000 }]),
      );
      await h.declare(1);
      await h.advance(50);
      expect(h.driver.executor(slow).slotRequests).to.deep.equal([]);
      expect(h.driver.executor(other).slotRequests).to.have.length(1);
      expect(
        h.logs.some((line) => line.includes(`${slow} takes no new slots for 5000 ms: a subtask ran slowly there`)),
      ).to.equal(true);
      const error = await rejection(
        h.driver.gateway(other).notifyNewBlockedNodes([{ resourceId: slow, cause: 'me', durationMs: 1 }]),
      );
      expect(error).to.be.instanceOf(IllegalArgumentError);
    });

    it('asks the driver for workers from inside its mailbox', async () => {
      const h = await harness();
      await h.declare(1);
      await h.advance(50);
      expect(h.driver.requestResourceCalls.map((c) => c.inMailbox)).to.deep.equal([true]);
    });
  });

  describe('notifySlotAvailable', () => {
    it('frees the slot in the SlotManager', async () => {
      const h = await harness();
      const slot = h.slot();
      const id = await h.worker([slot]);
      await h.driver.gateway(id).notifySlotAvailable(id, slot.allocationId);
      expect(h.overview().slots.allocated).to.equal(0);
      expect(h.rm.slotManager.tracker.getSlot(slot.allocationId)).to.equal(undefined);
    });

    it('ignores it from an executor that is not registered', async () => {
      const h = await harness();
      const slot = h.slot();
      await h.worker([slot]);
      const unregistered = h.driver.startWorker();
      await h.driver.gateway(unregistered).notifySlotAvailable(unregistered, slot.allocationId);
      expect(h.overview().slots.allocated).to.equal(1);
    });

    it('ignores an allocation that is held on another executor', async () => {
      const h = await harness();
      const slot = h.slot();
      await h.worker([slot]);
      const other = await h.worker();
      await h.driver.gateway(other).notifySlotAvailable(other, slot.allocationId);
      expect(h.overview().slots.allocated).to.equal(1);
    });
  });

  describe('close', () => {
    it('stops heartbeats and closes the driver', async () => {
      const h = await harness();
      const id = await h.worker();
      await h.advance(1_000);
      expect(h.driver.executor(id).heartbeats).to.equal(1);
      await h.rm.close();
      await h.advance(5_000);
      expect(h.driver.executor(id).heartbeats).to.equal(1);
      expect(h.driver.closed).to.equal(true);
      expect(h.rm.mailbox.isClosed).to.equal(true);
      expect(h.clock.pendingTimers).to.equal(0);
    });

    it('drops a heartbeat answer that arrives as it closes (its SlotManager is already suspended)', async () => {
      const h = await harness();
      const executor = h.driver.executor(await h.worker());
      executor.heartbeat = 'held';
      await h.advance(1_000);
      const closing = h.rm.close();
      expect(executor.answerHeld()).to.equal(1);
      await closing;
      expect(h.rm.slotManager.state).to.equal('suspended');
      expect(h.logs.filter((m) => /uncaught|not allowed/.test(m))).to.deep.equal([]);
    });
  });
});
