/**
 * FineGrainedSlotManager, its lifecycle and its limits: started / suspended, workers asked for and
 * released (maxima, redundancy, idle timeout), requests that wait (why, for how long, and who is
 * told), jobs that end, requirements that can never be met, and callbacks that call back in.
 * In-process doubles and a SimulatedClock; `execute: (f) => f()`.
 */
import { expect } from 'chai';
import type { InspectionEvent } from 'xstate';
import {
  IllegalArgumentError,
  IllegalStateError,
  SlotRequestError,
  UnknownTaskExecutorError,
} from '../../../lib/core/errors.js';
import { AllocationID, JobID, ResourceID } from '../../../lib/core/ids.js';
import { ResourceProfile } from '../../../lib/core/ResourceProfile.js';
import { profile } from '../../support/fixtures.js';
import { createSlotManager, WorkerResourceSpec, type Harness } from './doubles.js';

const UNKNOWN = ResourceProfile.UNKNOWN;
const IDLE_TIMEOUT = 30_000;
const REQUEST_TIMEOUT = 300_000;

/** Gives `te` a slot of a throw-away job and takes it back, so that it becomes idle now. */
async function useAndFree(h: Harness, te: ReturnType<Harness['register']>): Promise<void> {
  const job = JobID.generate();
  const allocationId = AllocationID.generate();
  h.sm.requestSlot(job, allocationId, UNKNOWN, { resourceId: te.resourceId });
  await h.check();
  h.sm.freeSlot(allocationId);
}

describe('FineGrainedSlotManager: lifecycle and limits', () => {
  describe('state', () => {
    const job = JobID.generate();
    const CALLS: Array<[string, (h: Harness) => unknown]> = [
      ['registerTaskManager', (h) => h.register()],
      ['unregisterTaskManager', (h) => h.sm.unregisterTaskManager(ResourceID.generate(), 'gone')],
      [
        'reportSlotStatus',
        (h) => h.sm.reportSlotStatus(ResourceID.parse('te-1'), { resourceId: ResourceID.parse('te-1'), slots: [] }),
      ],
      ['declareResourceRequirements', (h) => h.declare(job, [UNKNOWN, 1])],
      ['clearResourceRequirements', (h) => h.sm.clearResourceRequirements(job)],
      ['freeSlot', (h) => h.sm.freeSlot(AllocationID.generate())],
      ['requestSlot', (h) => h.sm.requestSlot(job, AllocationID.generate(), UNKNOWN)],
      ['cancelSlotRequest', (h) => h.sm.cancelSlotRequest(AllocationID.generate())],
      ['triggerResourceRequirementsCheck', (h) => h.sm.triggerResourceRequirementsCheck()],
    ];

    it('refuses every call before start() with IllegalStateError naming the operation and the state', () => {
      const h = createSlotManager({ start: false });
      for (const [operation, call] of CALLS) {
        expect(() => call(h), operation)
          .to.throw(IllegalStateError)
          .that.deep.include({ reason: 'wrong-state' })
          .with.property('details')
          .that.deep.include({ operation, state: 'suspended', allowed: ['started'] });
      }
    });

    it('refuses every call after suspend() the same way, and a second start()', () => {
      const h = createSlotManager();
      expect(() => h.sm.start()).to.throw(IllegalStateError, /start is not allowed while the SlotManager is started/);
      h.sm.suspend();
      for (const [operation, call] of CALLS) expect(() => call(h), operation).to.throw(IllegalStateError);
    });

    it("suspend() fails the waiting slot requests with 'suspended' and forgets everything", async () => {
      const h = createSlotManager();
      const te = h.register();
      te.gateway.willAnswer('ack', 'never');
      const job = JobID.generate();
      const [fulfilled, allocating, waiting] = [
        AllocationID.generate(),
        AllocationID.generate(),
        AllocationID.generate(),
      ];
      for (const id of [fulfilled, allocating, waiting]) h.sm.requestSlot(job, id, UNKNOWN);
      h.declare(JobID.generate(), [UNKNOWN, 2]);
      await h.check();
      expect(h.sm.overview().pendingWorkers).to.have.length(2);
      h.sm.suspend();
      const failed = h.listener.of('slotRequestFailed');
      expect(failed.map((c) => c.allocationId)).to.deep.equal([allocating, waiting]);
      expect(failed.map((c) => [c.error.reason, c.jobId])).to.deep.equal([
        ['suspended', job],
        ['suspended', job],
      ]);
      expect(h.sm.overview()).to.deep.equal({
        state: 'suspended',
        taskManagers: [],
        pendingWorkers: [],
        slots: { pending: 0, allocated: 0, inFlight: 0 },
        jobs: [],
      });
      expect(h.sm.getPendingRequests()).to.deep.equal([]);
      await h.advance(REQUEST_TIMEOUT * 2);
      expect(h.listener.calls).to.have.length(3);
      h.sm.start();
      expect(h.sm.overview()).to.deep.include({ state: 'started', taskManagers: [], jobs: [] });
    });
  });

  describe('registration', () => {
    it(
      'refuses an executor whose default slot profile is ZERO ' +
        'with IllegalArgumentError saying so, and registers nothing',
      async () => {
        const h = createSlotManager({ allocator: false });
        const zero = WorkerResourceSpec.create(ResourceProfile.ZERO, 2);
        let error: unknown;
        try {
          h.register({ spec: zero });
        } catch (e) {
          error = e;
        }
        expect(error).to.be.instanceOf(IllegalArgumentError);
        expect((error as IllegalArgumentError).details).to.deep.equal({ argument: 'defaultSlotResourceProfile' });
        expect((error as Error).message).to.match(
          new RegExp(
            /^registerTaskManager: defaultSlotResourceProfile must hold some resource, /.source +
              /got ResourceProfile.ZERO \(the total ResourceProfile\{cpuCores=0, .*\} over 2 slots\)/.source,
          ),
        );
        expect(h.sm.overview().taskManagers).to.deep.equal([]);
        const job = JobID.generate();
        h.declare(job, [UNKNOWN, 5]);
        await h.check();
        expect(h.acquired(job), 'no slot of nothing is handed out').to.equal(0);
      },
    );

    it(
      'registers an executor whose total does not divide evenly: ' +
        '2 cores over 3 slots are 3 default slots of 0.66666666 cores',
      async () => {
        const h = createSlotManager({ allocator: false });
        const te = h.register({ spec: WorkerResourceSpec.create(profile(2, 300), 3) });
        expect(te.result).to.deep.equal({ kind: 'registered' });
        const [tm] = h.sm.overview().taskManagers;
        expect(tm!.slots).to.deep.equal({ free: 3, pending: 0, allocated: 0 });
        const job = JobID.generate();
        h.declare(job, [UNKNOWN, 3]);
        await h.check();
        expect(te.gateway.requestSlotCalls.map((c) => [c.index, c.resourceProfile.cpuCores])).to.deep.equal([
          [0, 0.66666666],
          [1, 0.66666666],
          [2, 0.66666666],
        ]);
      },
    );
  });

  describe('the max-slots refusal', () => {
    it(
      'does not request a worker that would pass ' +
        'slotmanager.number-of-slots.max, and says so in the waiting reason',
      async () => {
        const h = createSlotManager({ configuration: { 'slotmanager.number-of-slots.max': 2 } });
        const job = JobID.generate();
        h.declare(job, [UNKNOWN, 3]);
        await h.check();
        expect(h.allocator.allocateWorkerCalls).to.have.length(1);
        const [waiting] = h.sm.getPendingRequests();
        expect(waiting).to.deep.include({
          kind: 'requirement',
          jobId: job,
          missing: 3,
          onWorkers: 2,
          reason: { kind: 'max-slots-reached', limit: 2, wouldBe: 4 },
        });
        expect(waiting!.description).to.equal(
          'starting a worker would make 4 slots, over slotmanager.number-of-slots.max = 2',
        );
        expect(h.listener.of('notEnoughResourcesAvailable').map((c) => c.jobId)).to.deep.equal([job]);
      },
    );

    it('rejects a registering executor that would pass the maxima, and does not register it', () => {
      const h = createSlotManager({ allocator: false, configuration: { 'slotmanager.number-of-slots.max': 3 } });
      expect(h.register().result).to.deep.equal({ kind: 'registered' });
      const over = h.register();
      expect(over.result).to.deep.equal({
        kind: 'rejected',
        reason: 'it would make 4 slots, over slotmanager.number-of-slots.max = 3',
      });
      expect(h.sm.overview().taskManagers).to.have.length(1);
      expect(() => h.sm.reportSlotStatus(over.resourceId, over.report())).to.throw(UnknownTaskExecutorError);
    });

    it('rejects a registering executor that would pass slotmanager.max-total-resource.cpu', () => {
      const h = createSlotManager({ allocator: false, configuration: { 'slotmanager.max-total-resource.cpu': 3 } });
      h.register();
      expect(h.register().result)
        .to.deep.include({ kind: 'rejected' })
        .and.to.have.property('reason')
        .that.matches(/4 cores, over slotmanager.max-total-resource.cpu/);
    });
  });

  describe('redundant workers', () => {
    it(
      'requests slotmanager.redundant-taskmanager-num spare ' + 'workers on top of what the jobs need, and keeps them',
      async () => {
        const h = createSlotManager({ configuration: { 'slotmanager.redundant-taskmanager-num': 1 } });
        h.declare(JobID.generate(), [UNKNOWN, 2]);
        await h.check();
        expect(h.allocator.allocateWorkerCalls).to.have.length(2);
        h.sm.triggerResourceRequirementsCheck();
        await h.check();
        expect(h.allocator.allocateWorkerCalls).to.have.length(2);
        expect(h.allocator.cancelWorkerCalls).to.deep.equal([]);
        expect(h.sm.overview().pendingWorkers).to.have.length(2);
      },
    );

    it('does not release an idle executor the spare count needs', async () => {
      const h = createSlotManager({ configuration: { 'slotmanager.redundant-taskmanager-num': 1 } });
      const te = h.register();
      await useAndFree(h, te);
      await h.advance(IDLE_TIMEOUT * 4);
      expect(h.allocator.releaseWorkerCalls).to.deep.equal([]);
    });

    it('keeps the spare when several executors go idle together', async () => {
      const h = createSlotManager({ configuration: { 'slotmanager.redundant-taskmanager-num': 1 } });
      const executors = [h.register(), h.register(), h.register()];
      const job = JobID.generate();
      h.declare(job, [UNKNOWN, 6]);
      await h.check();
      h.sm.clearResourceRequirements(job);
      for (const te of executors) h.sm.reportSlotStatus(te.resourceId, te.report());
      await h.advance(IDLE_TIMEOUT + 10_000);
      expect(h.allocator.releaseWorkerCalls).to.have.length(2);
    });

    it('requests the spare workers at start, before any job declares anything', async () => {
      const h = createSlotManager({ configuration: { 'slotmanager.redundant-taskmanager-num': 1 } });
      await h.advance(60_000);
      expect(h.allocator.allocateWorkerCalls).to.have.length(1);
    });
  });

  describe('idle release', () => {
    it(
      'releases an executor idle for ' + 'resourcemanager.taskmanager-timeout, once, and gives it no new slot',
      async () => {
        const h = createSlotManager();
        const te = h.register();
        await useAndFree(h, te);
        const idleSince = h.clock.now();
        await h.advance(IDLE_TIMEOUT - 1);
        expect(h.allocator.releaseWorkerCalls).to.deep.equal([]);
        await h.advance(1);
        expect(h.allocator.releaseWorkerCalls).to.deep.equal([
          { resourceId: te.resourceId, reason: `idle for ${IDLE_TIMEOUT} ms` },
        ]);
        expect(h.clock.now() - idleSince).to.equal(IDLE_TIMEOUT);
        h.sm.reportSlotStatus(te.resourceId, te.report());
        h.declare(JobID.generate(), [UNKNOWN, 1]);
        await h.check();
        await h.advance(IDLE_TIMEOUT * 3);
        expect(h.allocator.releaseWorkerCalls).to.have.length(1);
        expect(te.gateway.requestSlotCalls, 'only the slot of useAndFree').to.have.length(1);
      },
    );

    it(
      'releases only an executor that was idle the whole ' + 'time: a slot held meanwhile restarts the timeout',
      async () => {
        const h = createSlotManager();
        const te = h.register();
        await useAndFree(h, te);
        await h.advance(IDLE_TIMEOUT / 2);
        await useAndFree(h, te);
        const idleAgain = h.clock.now();
        await h.advance(IDLE_TIMEOUT - 1);
        expect(h.allocator.releaseWorkerCalls).to.deep.equal([]);
        await h.advance(1);
        expect(h.allocator.releaseWorkerCalls).to.have.length(1);
        expect(h.clock.now() - idleAgain).to.equal(IDLE_TIMEOUT);
      },
    );

    it('releases nothing in a fixed cluster', async () => {
      const h = createSlotManager({ allocator: false });
      const te = h.register();
      await useAndFree(h, te);
      await h.advance(IDLE_TIMEOUT * 10);
      expect(h.allocator.releaseWorkerCalls).to.deep.equal([]);
    });

    it('releases an executor that registered and never held a slot', async () => {
      const h = createSlotManager();
      const te = h.register();
      await h.advance(IDLE_TIMEOUT * 3);
      expect(h.allocator.releaseWorkerCalls.map((c) => c.resourceId)).to.deep.equal([te.resourceId]);
    });
  });

  describe('requests that wait', () => {
    it('fails a slot request after slot.request.timeout with a SlotRequestError saying why it waited', async () => {
      const h = createSlotManager({ allocator: false });
      const te = h.register();
      h.declare(JobID.generate(), [UNKNOWN, 2]);
      await h.check();
      const job = JobID.generate();
      const allocationId = AllocationID.generate();
      const requestedAt = h.clock.now();
      h.sm.requestSlot(job, allocationId, UNKNOWN);
      await h.check();
      await h.advance(REQUEST_TIMEOUT - (h.clock.now() - requestedAt) - 1);
      expect(h.listener.of('slotRequestFailed')).to.deep.equal([]);
      await h.advance(1);
      const [failed] = h.listener.of('slotRequestFailed');
      expect(failed).to.deep.include({ jobId: job, allocationId });
      const error = failed!.error;
      expect(error).to.be.instanceOf(SlotRequestError);
      expect(error.reason).to.equal('timed-out');
      const why =
        `no TaskExecutor has room: closest ${te.resourceId} (cpuCores available 0, required 1; ` +
        `taskHeapMemory available 0 b, required 100 mb; managedMemory available 0 b, required 64 mb; ` +
        `networkMemory available 0 b, required 32 mb); it fits ${te.resourceId} once slots there are freed`;
      expect(error.details).to.deep.equal({ jobId: job, allocationId, why });
      expect(error.message).to.include('slot.request.timeout (300000 ms)').and.to.include(`it waited because ${why}`);
      expect(h.sm.getPendingRequests()).to.deep.equal([]);
    });

    it(
      'tells the listener once when declared requirements have ' +
        'waited slot.request.timeout, with the requirements and reasons',
      async () => {
        const h = createSlotManager({ allocator: false });
        const job = JobID.generate();
        h.declare(job, [UNKNOWN, 2]);
        const since = h.clock.now(); // a quiet SlotManager checks it at once (on the clock's next turn)
        await h.advance(REQUEST_TIMEOUT - 1);
        expect(h.listener.of('resourceRequirementsTimedOut')).to.deep.equal([]);
        await h.advance(1);
        h.sm.triggerResourceRequirementsCheck();
        await h.check();
        await h.advance(REQUEST_TIMEOUT * 2);
        const timedOut = h.listener.of('resourceRequirementsTimedOut');
        expect(timedOut).to.have.length(1);
        expect(timedOut[0]).to.deep.equal({
          type: 'resourceRequirementsTimedOut',
          jobId: job,
          waiting: [
            {
              resourceProfile: UNKNOWN,
              missing: 2,
              onWorkers: 0,
              reason: { kind: 'insufficient-resources', closest: [], couldFitWhenFree: [], passedOver: [] },
              since,
            },
          ],
        });
      },
    );

    it(
      'sends notEnoughResourcesAvailable when a job cannot be ' +
        'fulfilled, and not again while the reason is unchanged',
      async () => {
        const h = createSlotManager({ allocator: false });
        const job = JobID.generate();
        h.declare(job, [UNKNOWN, 1]);
        await h.check();
        const [first] = h.listener.of('notEnoughResourcesAvailable');
        expect(first).to.deep.include({ jobId: job, acquired: [] });
        expect(first!.waiting.map((w) => [w.missing, w.reason.kind])).to.deep.equal([[1, 'insufficient-resources']]);
        h.sm.triggerResourceRequirementsCheck();
        await h.check();
        await h.advance(60_000);
        expect(h.listener.of('notEnoughResourcesAvailable')).to.have.length(1);
        h.declare(job, [UNKNOWN, 3]);
        await h.check();
        expect(
          h.listener.of('notEnoughResourcesAvailable').map((c) => c.waiting[0]!.missing),
          'sent again: what is missing changed',
        ).to.deep.equal([1, 3]);
        h.register();
        await h.check();
        const last = h.listener.of('notEnoughResourcesAvailable').at(-1)!;
        expect(last.waiting[0]!.missing).to.equal(1);
        expect(last.acquired.map((r) => r.numberOfRequiredSlots)).to.deep.equal([2]);
      },
    );
  });

  describe('a worker the allocator refuses to start', () => {
    const REFUSED = (workers: number) =>
      `the ResourceAllocator refused to start the ${workers === 1 ? 'worker' : `${workers} workers`} it was planned ` +
      `on (allocateWorker answered false); a later requirement check tries again`;

    it(
      'makes the requirements planned on it unfulfillable at ' +
        'once: the job is told, and getPendingRequests says why',
      async () => {
        const h = createSlotManager();
        h.allocator.refuse = true;
        const job = JobID.generate();
        h.declare(job, [UNKNOWN, 3]);
        await h.check();
        expect(h.allocator.allocateWorkerCalls, 'two workers of 2 slots were planned').to.have.length(2);
        const [waiting, ...more] = h.sm.getPendingRequests();
        expect(more).to.deep.equal([]);
        expect(waiting).to.deep.include({
          kind: 'requirement',
          jobId: job,
          missing: 3,
          onWorkers: 0,
          reason: { kind: 'worker-start-refused', workers: 2 },
          description: REFUSED(2),
        });
        const notified = h.listener.of('notEnoughResourcesAvailable');
        expect(
          notified.map((c) => [c.jobId, c.waiting.map((w) => [w.missing, w.onWorkers, w.reason.kind])]),
        ).to.deep.equal([[job, [[3, 0, 'worker-start-refused']]]]);
        expect(h.sm.overview().pendingWorkers).to.deep.equal([]);
      },
    );

    it(
      'leaves what another worker or an executor holds as it ' +
        'is: only the slots of the refused worker are unfulfilled',
      async () => {
        const h = createSlotManager();
        h.register();
        // The first worker asked for starts, the second is refused.
        h.allocator.onAllocateWorker = () => (h.allocator.refuse = h.allocator.allocateWorkerCalls.length > 1);
        const job = JobID.generate();
        h.declare(job, [UNKNOWN, 5]);
        await h.check();
        expect(h.acquired(job), 'two slots on the registered executor').to.equal(2);
        expect(h.sm.getPendingRequests()).to.have.length(1);
        expect(h.sm.getPendingRequests()[0]).to.deep.include({
          missing: 3,
          onWorkers: 2,
          reason: { kind: 'worker-start-refused', workers: 1 },
        });
        expect(h.listener.of('notEnoughResourcesAvailable')).to.have.length(1);
        expect(h.sm.overview().pendingWorkers).to.have.length(1);
      },
    );

    it(
      'says so for an imperative slot request planned on it, ' + 'and waits for workers again once a start is accepted',
      async () => {
        const h = createSlotManager();
        h.allocator.refuse = true;
        const job = JobID.generate();
        const allocationId = AllocationID.generate();
        h.sm.requestSlot(job, allocationId, UNKNOWN);
        await h.check();
        expect(h.sm.getPendingRequests()).to.deep.equal([
          {
            kind: 'slot-request',
            jobId: job,
            allocationId,
            resourceProfile: UNKNOWN,
            since: 0,
            state: 'waiting',
            reason: { kind: 'worker-start-refused', workers: 1 },
            description: REFUSED(1),
          },
        ]);
        h.allocator.refuse = false;
        h.sm.triggerResourceRequirementsCheck();
        await h.check();
        expect(h.sm.getPendingRequests()[0]).to.deep.include({
          reason: { kind: 'waiting-for-workers', workers: 1 },
          description: 'waiting for 1 worker to start and register',
        });
      },
    );
  });

  describe('clearResourceRequirements', () => {
    it(
      "reclaims the job's inactive slots on each executor holding " +
        'them, cancels its slot requests, and drops its requirements',
      async () => {
        const h = createSlotManager({ allocator: false });
        const [te1, te2, te3] = [h.register(), h.register(), h.register()];
        const job = JobID.generate();
        const other = JobID.generate();
        h.declare(job, [UNKNOWN, 3]);
        h.declare(other, [UNKNOWN, 2]);
        await h.check();
        const request = AllocationID.generate();
        h.sm.requestSlot(job, request, profile(1.5, 10));
        await h.check();
        expect(h.sm.clearResourceRequirements(job)).to.equal(true);
        expect(te1.gateway.freeInactiveSlotsCalls).to.deep.equal([job]);
        expect(te2.gateway.freeInactiveSlotsCalls).to.deep.equal([job]);
        expect(te3.gateway.freeInactiveSlotsCalls).to.deep.equal([]);
        expect(h.listener.of('slotRequestFailed').map((c) => [c.allocationId, c.error.reason])).to.deep.equal([
          [request, 'canceled'],
        ]);
        expect(h.sm.resourceTracker.getRequiredResources(job)).to.deep.equal([]);
        expect(h.sm.getPendingRequests().filter((r) => r.jobId === job)).to.deep.equal([]);
        expect(h.acquired(job), "the slots are freed by the executors' next reports").to.equal(3);
        h.sm.reportSlotStatus(te1.resourceId, te1.report());
        h.sm.reportSlotStatus(te2.resourceId, te2.report());
        expect(h.acquired(job)).to.equal(0);
      },
    );

    it('returns false for a job it never saw, and changes nothing', () => {
      const h = createSlotManager({ allocator: false });
      const before = JSON.stringify(h.sm.overview());
      expect(h.sm.clearResourceRequirements(JobID.generate())).to.equal(false);
      expect(JSON.stringify(h.sm.overview())).to.equal(before);
    });

    it('reclaims the slots of a job that only used requestSlot', async () => {
      const h = createSlotManager({ allocator: false });
      const te = h.register();
      const job = JobID.generate();
      h.sm.requestSlot(job, AllocationID.generate(), UNKNOWN);
      await h.check();
      expect(h.sm.clearResourceRequirements(job)).to.equal(true);
      expect(te.gateway.freeInactiveSlotsCalls).to.deep.equal([job]);
    });
  });

  describe('many jobs waiting at once (requirement-check.delay 0)', () => {
    /** A delay-0 SlotManager whose mailbox is a queue; `turn` ends the event-loop turn; one TaskExecutor, 2 slots. */
    function crowded(inspect?: (event: InspectionEvent) => void) {
      const mailbox: Array<() => void> = [];
      const h = createSlotManager({
        allocator: false,
        configuration: { 'slotmanager.requirement-check.delay': 0 },
        execute: (task) => mailbox.push(task),
        ...(inspect === undefined ? {} : { inspect }),
      });
      const turn = () => {
        while (mailbox.length > 0) mailbox.shift()!();
        h.clock.increment(0);
        while (mailbox.length > 0) mailbox.shift()!();
      };
      h.register();
      turn();
      return { h, turn };
    }

    it(
      'checks each change at once while few wait; past 64 waiting demands, the changes of one event-loop turn in ' +
        "one check on the clock's next turn: the first jobs declared hold the slots, each waiting job is told why once",
      () => {
        const { h, turn } = crowded();
        const jobs = Array.from({ length: 80 }, () => JobID.generate());
        const checksAt: number[] = [];
        for (const job of jobs) {
          h.declare(job, [UNKNOWN, 1]);
          checksAt.push(h.checks());
        }
        // One check per declaration until a check weighs more than 64 demands (2 jobs hold the slots: the 67th).
        expect(checksAt.slice(0, 67)).to.deep.equal(checksAt.slice(0, 67).map((_, i) => checksAt[0]! + i));
        const queued = checksAt[66]!;
        expect(checksAt.slice(67), 'the rest wait for the queued check').to.deep.equal(new Array(13).fill(queued));
        turn();
        expect(h.checks(), 'one check for the 13 declarations of the turn').to.equal(queued + 1);
        expect(jobs.map((job) => h.acquired(job))).to.deep.equal([1, 1, ...new Array(78).fill(0)]);
        const told = h.listener.of('notEnoughResourcesAvailable');
        expect(told.map((call) => call.jobId)).to.have.members(jobs.slice(2));
        expect(new Set(told.map((call) => call.waiting[0]!.reason.kind))).to.deep.equal(
          new Set(['insufficient-resources']),
        );
      },
    );

    it(
      'does the same with an inspector watching: it sees the statechart crowded, the changes of the turn wait in ' +
        "checkSoon, and one check on the clock's next turn",
      () => {
        let checked = 0;
        const { h, turn } = crowded((event) => {
          if (event.type === '@xstate.event' && event.event.type === 'CHECKED') checked++;
        });
        const jobs = Array.from({ length: 80 }, () => JobID.generate());
        for (const job of jobs.slice(0, 67)) h.declare(job, [UNKNOWN, 1]);
        const { context } = h.sm.actor.getSnapshot();
        expect(context).to.deep.include({ crowded: true, crowdedAbove: 64 });
        expect(context.lastCheck!.demands).to.be.above(64);
        const before = checked;
        for (const job of jobs.slice(67)) h.declare(job, [UNKNOWN, 1]);
        expect(checked, 'none while the turn lasts').to.equal(before);
        expect(h.sm.actor.getSnapshot().value).to.deep.equal({ started: 'checkSoon' });
        turn();
        expect(checked).to.equal(before + 1);
        expect(h.sm.actor.getSnapshot().value).to.deep.equal({ started: 'idle' });
        expect(jobs.map((job) => h.acquired(job))).to.deep.equal([1, 1, ...new Array(78).fill(0)]);
        expect(h.sm.getPendingRequests()).to.have.length(78);
      },
    );

    it('checks at once again after a suspend: the first check of the next start runs inside start()', () => {
      const { h, turn } = crowded();
      for (let i = 0; i < 80; i++) h.declare(JobID.generate(), [UNKNOWN, 1]);
      turn();
      h.sm.suspend();
      const before = h.checks();
      h.sm.start();
      expect(h.checks()).to.equal(before + 1);
    });

    it('checks each change at once again once a check weighs 64 demands or fewer', () => {
      const { h, turn } = crowded();
      const jobs = Array.from({ length: 80 }, () => JobID.generate());
      for (const job of jobs) h.declare(job, [UNKNOWN, 1]);
      turn();
      // 20 jobs give up waiting in one turn: one check, which weighs 58 demands.
      const before = h.checks();
      for (const job of jobs.slice(60)) h.sm.clearResourceRequirements(job);
      expect(h.checks()).to.equal(before);
      turn();
      expect(h.checks()).to.equal(before + 1);
      h.declare(JobID.generate(), [UNKNOWN, 1]);
      expect(h.checks(), 'checked inside the declaration').to.equal(before + 2);
    });
  });

  describe('a requirement no TaskExecutor can ever hold', () => {
    it("is refused with SlotRequestError 'never-satisfiable' and changes nothing", async () => {
      const h = createSlotManager();
      h.register();
      await h.check();
      const job = JobID.generate();
      const huge = profile(3, 10);
      const before = JSON.stringify([h.sm.overview(), h.sm.getPendingRequests()]);
      const checks = h.checks();
      expect(() => h.declare(job, [UNKNOWN, 1], [huge, 1]))
        .to.throw(SlotRequestError)
        .with.property('reason', 'never-satisfiable');
      expect(() => h.sm.requestSlot(job, AllocationID.generate(), huge)).to.throw(
        SlotRequestError,
        new RegExp(
          'which no TaskExecutor can ever hold: the registered TaskExecutor falls short \\(\\S+: cpuCores has 2, ' +
            'asked 3\\); a worker started for it would fall short too \\(cpuCores a worker has 2, asked 3\\)$',
        ),
      );
      await h.advance(1000);
      expect(JSON.stringify([h.sm.overview(), h.sm.getPendingRequests()])).to.equal(before);
      expect(h.checks()).to.equal(checks);
      expect(h.sm.resourceTracker.jobs()).to.deep.equal([]);
      expect(h.allocator.allocateWorkerCalls).to.deep.equal([]);
    });

    it(
      'names what the registered TaskExecutors offer, and no worker shape, where workers are not ' +
        "started on demand (a standalone cluster whose options' worker is smaller than its TaskManagers)",
      async () => {
        const h = createSlotManager({
          allocator: false,
          configuration: { 'taskmanager.numberOfTaskSlots': 1, 'taskmanager.cpu.cores': 1 },
        });
        const spec = WorkerResourceSpec.create(h.spec.totalResourceProfile.merge(profile(1)), 2);
        const [a, b] = [h.register({ spec }), h.register({ spec })];
        await h.check();
        let refusal: SlotRequestError | undefined;
        try {
          h.sm.requestSlot(JobID.generate(), AllocationID.generate(), profile(64));
        } catch (error) {
          refusal = error as SlotRequestError;
        }
        expect(refusal).to.be.instanceOf(SlotRequestError).with.property('reason', 'never-satisfiable');
        expect(refusal!.message).to.contain(
          `which no TaskExecutor can ever hold: the 2 registered TaskExecutors fall short ` +
            `(${a.resourceId}: cpuCores has 2, asked 64; ${b.resourceId}: cpuCores has 2, asked 64); ` +
            'none is started on demand',
        );
        expect(refusal!.message).to.not.contain('worker');
        expect(refusal!.details['registered']).to.deep.equal([
          { resourceId: a.resourceId, shortfall: [{ field: 'cpuCores', available: 2, required: 64 }] },
          { resourceId: b.resourceId, shortfall: [{ field: 'cpuCores', available: 2, required: 64 }] },
        ]);
      },
    );
  });

  describe('callbacks that call back into the SlotManager', () => {
    // Observed: with execute: (f) => f(), listener and allocator callbacks run inside the
    // requirement check, and any SlotManager call from there throws IllegalStateError (state
    // 'checking'); the check itself completes when the callback catches it.
    it('refuses a call from a listener callback made during the check with IllegalStateError', async () => {
      const h = createSlotManager({ allocator: false });
      const errors: unknown[] = [];
      h.listener.after = (call) => {
        if (call.type !== 'notEnoughResourcesAvailable') return;
        try {
          h.sm.triggerResourceRequirementsCheck();
        } catch (error) {
          errors.push(error);
        }
      };
      const job = JobID.generate();
      h.declare(job, [UNKNOWN, 1]);
      await h.check();
      expect(errors).to.have.length(1);
      expect(errors[0]).to.be.instanceOf(IllegalStateError);
      expect((errors[0] as IllegalStateError).details).to.deep.include({
        operation: 'triggerResourceRequirementsCheck',
        state: 'checking',
      });
      expect((errors[0] as Error).message).to.match(/while a requirement check runs/);
      expect(h.checks()).to.equal(1);
      h.register();
      await h.check();
      expect(h.acquired(job), 'the SlotManager works on').to.equal(1);
    });

    it('refuses a call from the allocator during the check the same way', async () => {
      const h = createSlotManager();
      const errors: unknown[] = [];
      h.allocator.onAllocateWorker = () => {
        try {
          h.register();
        } catch (error) {
          errors.push(error);
        }
      };
      h.declare(JobID.generate(), [UNKNOWN, 1]);
      await h.check();
      expect(errors.map((e) => (e as IllegalStateError).details.operation)).to.deep.equal(['registerTaskManager']);
      expect(h.sm.overview().taskManagers).to.deep.equal([]);
    });

    it(
      'accepts a call from a callback that runs outside ' + 'a check (slotsLost during unregisterTaskManager)',
      async () => {
        const h = createSlotManager({ allocator: false });
        const te1 = h.register();
        const job = JobID.generate();
        h.declare(job, [UNKNOWN, 1]);
        await h.check();
        h.listener.after = (call) => {
          if (call.type === 'slotsLost') h.declare(call.jobId, [UNKNOWN, 2]);
        };
        h.sm.unregisterTaskManager(te1.resourceId, 'lost');
        expect(h.sm.resourceTracker.getRequiredResources(job).map((r) => r.numberOfRequiredSlots)).to.deep.equal([2]);
      },
    );

    it('keeps checking requirements after a listener callback throws', async () => {
      const h = createSlotManager({ allocator: false });
      h.sm.actor.subscribe({ error: () => {} }); // keep xstate from rethrowing globally
      h.listener.after = (call) => {
        if (call.type === 'notEnoughResourcesAvailable') h.sm.triggerResourceRequirementsCheck();
      };
      const job = JobID.generate();
      h.declare(job, [UNKNOWN, 1]);
      await h.check();
      h.listener.after = () => {};
      h.register();
      await h.check();
      expect(h.sm.actor.getSnapshot().status).to.equal('active');
      expect(h.acquired(job)).to.equal(1);
    });
  });
});
