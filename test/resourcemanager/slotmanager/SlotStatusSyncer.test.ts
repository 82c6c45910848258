/**
 * SlotStatusSyncer: the one component that asks TaskExecutors for slots and reconciles their slot
 * reports with the SlotManager's records (Flink's DefaultSlotStatusSyncer). Driven over a real
 * TaskManagerTracker and ResourceTracker, with TestingTaskExecutorGateways and a SimulatedClock.
 */
import { expect } from 'chai';
import { SimulatedClock } from '../../../lib/core/clock.js';
import { RpcTimeoutError, SlotAllocationError } from '../../../lib/core/errors.js';
import { AllocationID, JobID, ResourceID } from '../../../lib/core/ids.js';
import { ResourceProfile } from '../../../lib/core/ResourceProfile.js';
import { DefaultResourceTracker } from '../../../lib/resourcemanager/slotmanager/ResourceTracker.js';
import { SlotStatusSyncer, type AllocationOutcome } from '../../../lib/resourcemanager/slotmanager/SlotStatusSyncer.js';
import type { TaskManagerRegistration } from '../../../lib/resourcemanager/slotmanager/TaskManagerRegistration.js';
import { TaskManagerTracker } from '../../../lib/resourcemanager/slotmanager/TaskManagerTracker.js';
import { WorkerResourceSpec } from '../../../lib/resourcemanager/slotmanager/WorkerResourceSpec.js';
import { profile } from '../../support/fixtures.js';
import { settle, slotReport, TestingTaskExecutorGateway, type ReportedAllocation } from './doubles.js';

const RPC_TIMEOUT = 10_000;
/** Executors of 2 static slots of 1 core, 100 mb heap, 64 mb managed each. */
const SPEC = WorkerResourceSpec.create(profile(2, 200, 128), 2);

function setup() {
  const clock = new SimulatedClock();
  const tracker = new TaskManagerTracker({ policy: 'first-fit', clock });
  const resourceTracker = new DefaultResourceTracker();
  const settled: AllocationOutcome[] = [];
  const logs: string[] = [];
  const syncer = new SlotStatusSyncer({
    tracker,
    resourceTracker,
    clock,
    rpcTimeout: RPC_TIMEOUT,
    execute: (f) => f(),
    onAllocationSettled: (o) => settled.push(o),
    log: (m) => logs.push(m),
  });
  const addExecutor = () => {
    const gateway = new TestingTaskExecutorGateway();
    const tm = tracker.addTaskManager({
      resourceId: ResourceID.generate('te'),
      host: 'localhost',
      totalResourceProfile: SPEC.totalResourceProfile,
      defaultSlotResourceProfile: SPEC.defaultSlotResourceProfile,
      numberOfStaticSlots: SPEC.numberOfSlots,
      gateway,
    });
    return { tm, gateway };
  };
  /** Reserves a slot of `jobId` on `tm` as a plan would, and hands it to the syncer. */
  const allocate = (
    tm: TaskManagerRegistration,
    jobId: JobID,
    options: { profile?: ResourceProfile; tracked?: boolean; allocationId?: AllocationID } = {},
  ) =>
    syncer.allocateSlot(tracker.reserve(tm, options.profile ?? ResourceProfile.UNKNOWN, jobId), {
      targetAddress: 'jobmaster@test',
      tracked: options.tracked ?? true,
      ...(options.allocationId === undefined ? {} : { allocationId: options.allocationId }),
    });
  const acquired = (jobId: JobID) =>
    resourceTracker.getAcquiredResources(jobId).reduce((n, r) => n + r.numberOfRequiredSlots, 0);
  const report = (tm: TaskManagerRegistration, allocated: readonly ReportedAllocation[] = []) =>
    syncer.reportSlotStatus(tm, slotReport(tm.resourceId, SPEC, allocated));
  return {
    clock,
    tracker,
    resourceTracker,
    syncer,
    settled,
    logs,
    addExecutor,
    allocate,
    acquired,
    report,
    jobId: JobID.generate(),
  };
}

describe('SlotStatusSyncer', () => {
  describe('allocateSlot', () => {
    it(
      'marks the slot pending, counts it as acquired for the job ' +
        'at once, and asks the executor under a fresh AllocationID',
      () => {
        const { addExecutor, allocate, acquired, syncer, tracker, jobId } = setup();
        const { tm, gateway } = addExecutor();
        gateway.willAnswer('never');
        const slot = allocate(tm, jobId);
        expect(slot).to.include({ state: 'pending', index: 0, jobId, taskManager: tm });
        expect(AllocationID.is(slot.allocationId)).to.equal(true);
        expect(tracker.getSlot(slot.allocationId!)).to.equal(slot);
        expect(acquired(jobId), 'counted while the request is in flight').to.equal(1);
        expect(syncer.inFlight).to.equal(1);
        expect(gateway.requestSlotCalls).to.have.length(1);
        const call = gateway.requestSlotCalls[0]!;
        expect(call).to.include({ index: 0, jobId, allocationId: slot.allocationId, targetAddress: 'jobmaster@test' });
        expect(
          call.resourceProfile.equals(SPEC.defaultSlotResourceProfile),
          'UNKNOWN is sent as the default slot profile',
        ).to.equal(true);
      },
    );

    it("uses a new AllocationID for every attempt, and the caller's when one is given (an imperative request)", () => {
      const { addExecutor, allocate, acquired, jobId } = setup();
      const { tm } = addExecutor();
      const given = AllocationID.generate();
      const first = allocate(tm, jobId);
      const second = allocate(tm, jobId, { allocationId: given, tracked: false });
      expect(first.allocationId).to.not.equal(second.allocationId);
      expect(second.allocationId).to.equal(given);
      expect(acquired(jobId), 'an untracked (imperative) slot is not counted in the ResourceTracker').to.equal(1);
    });

    it('marks the slot allocated when the executor acknowledges, and reports { ok: true }', async () => {
      const { addExecutor, allocate, settled, syncer, acquired, jobId } = setup();
      const { tm } = addExecutor();
      const slot = allocate(tm, jobId);
      await settle();
      expect(slot.state).to.equal('allocated');
      expect(settled).to.have.length(1);
      expect(settled[0]).to.deep.include({ ok: true, slot });
      expect(syncer.inFlight).to.equal(0);
      expect(acquired(jobId)).to.equal(1);
    });

    it('frees the slot when the executor refuses: lost for the job, { ok: false } with the error', async () => {
      const { addExecutor, allocate, settled, tracker, acquired, jobId } = setup();
      const { tm, gateway } = addExecutor();
      gateway.willAnswer('refuse');
      const slot = allocate(tm, jobId);
      const allocationId = slot.allocationId!;
      await settle();
      expect(tracker.getSlot(allocationId)).to.equal(undefined);
      expect(tm.staticSlots[0]!.state).to.equal('free');
      expect(tm.freeStaticSlots).to.equal(2);
      expect(acquired(jobId)).to.equal(0);
      expect(settled).to.have.length(1);
      const outcome = settled[0]!;
      expect(outcome).to.deep.include({ ok: false, allocationId, jobId, resourceId: tm.resourceId, tracked: true });
      expect(outcome.ok === false && outcome.error).to.be.instanceOf(SlotAllocationError);
    });

    it(
      'fails with an RpcTimeoutError after rpc.ask.timeout when ' +
        'the executor never answers, and frees the slot the same way',
      async () => {
        const { addExecutor, allocate, settled, tracker, acquired, clock, jobId } = setup();
        const { tm, gateway } = addExecutor();
        gateway.willAnswer('never');
        const slot = allocate(tm, jobId);
        const allocationId = slot.allocationId!;
        clock.increment(RPC_TIMEOUT - 1);
        await settle();
        expect(slot.state).to.equal('pending');
        expect(settled).to.have.length(0);
        clock.increment(1);
        await settle();
        expect(tracker.getSlot(allocationId)).to.equal(undefined);
        expect(acquired(jobId)).to.equal(0);
        expect(settled).to.have.length(1);
        const outcome = settled[0]!;
        expect(outcome).to.deep.include({ ok: false, allocationId, resourceId: tm.resourceId });
        const error = outcome.ok === false ? outcome.error : undefined;
        expect(error).to.be.instanceOf(RpcTimeoutError);
        expect((error as RpcTimeoutError).details).to.include({
          gateway: 'TaskExecutorGateway',
          method: 'requestSlot',
          timeoutMs: RPC_TIMEOUT,
        });
      },
    );

    it(
      'waits on for an executor that answers other requests meanwhile ' +
        '(busy, not silent), until it is silent for rpc.ask.timeout',
      async () => {
        const { addExecutor, allocate, settled, clock, jobId } = setup();
        const { tm, gateway } = addExecutor();
        gateway.answers.push('defer', 'never');
        allocate(tm, jobId);
        const stuck = allocate(tm, jobId);
        clock.increment(0.8 * RPC_TIMEOUT);
        gateway.deferred[0]!.ack(); // heard from at 0.8 × timeout
        await settle();
        clock.increment(0.2 * RPC_TIMEOUT); // the stuck request's first deadline: the executor spoke since it was asked
        await settle();
        expect([settled.length, stuck.state]).to.deep.equal([1, 'pending']);
        clock.increment(0.8 * RPC_TIMEOUT - 1);
        await settle();
        expect(settled).to.have.length(1);
        clock.increment(1); // silent for a whole timeout since it last answered
        await settle();
        const outcome = settled[1]!;
        const error = outcome.ok === false ? outcome.error : undefined;
        expect(error).to.be.instanceOf(RpcTimeoutError);
        expect((error as RpcTimeoutError).details).to.include({
          method: 'requestSlot',
          timeoutMs: RPC_TIMEOUT,
          waitedMs: 1.8 * RPC_TIMEOUT,
          expired: 'silent',
        });
      },
    );

    it('gives up after 3 × rpc.ask.timeout even on an executor that keeps answering other requests', async () => {
      const { addExecutor, allocate, settled, clock, report, jobId } = setup();
      const { tm, gateway } = addExecutor();
      gateway.willAnswer('never');
      allocate(tm, jobId);
      for (let t = 0; t < 3 * RPC_TIMEOUT - 1000; t += 1000) {
        clock.increment(1000);
        report(tm, []); // a slot report: heard from, though the request stays unanswered
        await settle();
      }
      expect(settled).to.have.length(0);
      clock.increment(1000);
      await settle();
      const error = settled[0]?.ok === false ? settled[0].error : undefined;
      expect((error as RpcTimeoutError).details).to.include({ expired: 'max-wait', waitedMs: 3 * RPC_TIMEOUT });
    });

    it(
      'adds no deadline of its own to a gateway whose transport keeps ' +
        'one (deadline: transport): its RpcTimeoutError is the answer',
      async () => {
        const { addExecutor, allocate, settled, clock, tracker, jobId } = setup();
        const { tm, gateway } = addExecutor();
        (gateway as { deadline?: 'transport' }).deadline = 'transport';
        let fail: (error: unknown) => void = () => {};
        gateway.answerSlotRequest = () => new Promise<void>((_resolve, reject) => (fail = reject));
        const slot = allocate(tm, jobId);
        const allocationId = slot.allocationId!;
        clock.increment(10 * RPC_TIMEOUT);
        await settle();
        expect([settled.length, slot.state, clock.pendingTimers]).to.deep.equal([0, 'pending', 0]);
        const fromTransport = new RpcTimeoutError(
          'TaskExecutorGateway.requestSlot to te got no answer within 10000 ms',
          {
            gateway: 'TaskExecutorGateway',
            method: 'requestSlot',
            timeoutMs: RPC_TIMEOUT,
          },
        );
        fail(fromTransport);
        await settle();
        expect(settled[0]).to.deep.include({ ok: false, error: fromTransport });
        expect(tracker.getSlot(allocationId)).to.equal(undefined);
      },
    );

    it('treats a requestSlot that throws synchronously as a refusal', async () => {
      const { addExecutor, allocate, settled, acquired, jobId } = setup();
      const { tm, gateway } = addExecutor();
      gateway.answerSlotRequest = () => {
        throw new Error('connection reset');
      };
      allocate(tm, jobId);
      await settle();
      expect(settled.map((o) => o.ok)).to.deep.equal([false]);
      expect(acquired(jobId)).to.equal(0);
    });
  });

  describe('late answers', () => {
    it(
      'ignores an acknowledgement that arrives after the ' + 'slot was freed, even when the index was allocated again',
      async () => {
        const { addExecutor, allocate, syncer, settled, acquired, tracker, jobId } = setup();
        const { tm, gateway } = addExecutor();
        gateway.willAnswer('defer', 'never');
        const first = allocate(tm, jobId).allocationId!;
        syncer.freeSlot(first);
        expect(acquired(jobId)).to.equal(0);
        const second = allocate(tm, jobId);
        expect(second.index, 'the same static slot is used again').to.equal(0);
        gateway.deferred[0]!.ack();
        await settle();
        expect(settled).to.deep.equal([]);
        expect(tracker.getSlot(first)).to.equal(undefined);
        expect(second.state, 'the newer allocation is not completed by the older answer').to.equal('pending');
        expect(acquired(jobId)).to.equal(1);
      },
    );

    it('ignores an answer (acknowledgement or refusal) that arrives after the request timed out', async () => {
      const { addExecutor, allocate, settled, acquired, tracker, clock, jobId } = setup();
      const { tm, gateway } = addExecutor();
      gateway.willAnswer('defer', 'defer');
      const a = allocate(tm, jobId).allocationId!;
      const b = allocate(tm, jobId).allocationId!;
      clock.increment(RPC_TIMEOUT);
      await settle();
      expect(settled.map((o) => o.ok)).to.deep.equal([false, false]);
      gateway.deferred[0]!.ack();
      gateway.deferred[1]!.refuse();
      await settle();
      expect(settled).to.have.length(2);
      expect(tracker.getSlot(a)).to.equal(undefined);
      expect(tracker.getSlot(b)).to.equal(undefined);
      expect(acquired(jobId)).to.equal(0);
    });

    it('ignores every answer still in flight after close()', async () => {
      const { addExecutor, allocate, syncer, settled, jobId } = setup();
      const { tm, gateway } = addExecutor();
      gateway.willAnswer('defer');
      const slot = allocate(tm, jobId);
      syncer.close();
      expect(syncer.inFlight).to.equal(0);
      gateway.deferred[0]!.ack();
      await settle();
      expect(settled).to.deep.equal([]);
      expect(slot.state).to.equal('pending');
    });
  });

  describe('freeSlot', () => {
    it(
      'frees a pending or allocated slot and counts it lost ' + 'for its job; an unknown AllocationID is undefined',
      async () => {
        const { addExecutor, allocate, syncer, acquired, tracker, jobId } = setup();
        const { tm, gateway } = addExecutor();
        gateway.willAnswer('ack', 'never');
        const allocated = allocate(tm, jobId).allocationId!;
        const pending = allocate(tm, jobId).allocationId!;
        await settle();
        expect(syncer.freeSlot(allocated)?.allocationId).to.equal(allocated);
        expect(syncer.freeSlot(pending)?.allocationId).to.equal(pending);
        expect(tracker.numberOfOccupiedSlots).to.equal(0);
        expect(acquired(jobId)).to.equal(0);
        expect(syncer.inFlight).to.equal(0);
        expect(syncer.freeSlot(AllocationID.generate())).to.equal(undefined);
        expect(gateway.freeInactiveSlotsCalls, 'no call is made to the executor').to.deep.equal([]);
      },
    );
  });

  describe('reportSlotStatus (reconciliation)', () => {
    it('adopts an allocation it did not know of and counts it for the job', () => {
      const { addExecutor, report, tracker, acquired, jobId } = setup();
      const { tm } = addExecutor();
      const allocationId = AllocationID.generate();
      const result = report(tm, [{ index: 1, jobId, allocationId }]);
      expect(result.adopted.map((s) => s.allocationId)).to.deep.equal([allocationId]);
      expect(tracker.getSlot(allocationId)).to.include({
        state: 'allocated',
        index: 1,
        jobId,
        taskManager: tm,
        tracked: true,
      });
      expect(tm.freeStaticSlots).to.equal(1);
      expect(acquired(jobId)).to.equal(1);
    });

    it('adopts an unknown allocation of another profile as a dynamic slot', () => {
      const { addExecutor, report, tracker, acquired, jobId } = setup();
      const { tm } = addExecutor();
      const allocationId = AllocationID.generate();
      const small = profile(0.5, 20);
      report(tm, [{ index: 2, jobId, allocationId, profile: small }]);
      const slot = tracker.getSlot(allocationId)!;
      expect(slot).to.include({ state: 'allocated', index: -1 });
      expect(slot.profile.equals(small)).to.equal(true);
      expect(tm.freeStaticSlots).to.equal(2);
      expect(acquired(jobId)).to.equal(1);
    });

    it('frees an allocated slot the report no longer shows, and counts it lost', async () => {
      const { addExecutor, allocate, report, tracker, acquired, jobId } = setup();
      const { tm } = addExecutor();
      const allocationId = allocate(tm, jobId).allocationId!;
      await settle();
      const result = report(tm, []);
      expect(result.freed.map((s) => s.allocationId)).to.deep.equal([allocationId]);
      expect(tracker.getSlot(allocationId)).to.equal(undefined);
      expect(acquired(jobId)).to.equal(0);
    });

    it(
      'keeps a pending slot the report does not show (the request ' +
        'may not have arrived yet); its answer still completes it',
      async () => {
        const { addExecutor, allocate, report, settled, acquired, jobId } = setup();
        const { tm, gateway } = addExecutor();
        gateway.willAnswer('defer');
        const slot = allocate(tm, jobId);
        const result = report(tm, []);
        expect(result).to.deep.equal({ completed: [], adopted: [], freed: [], conflicts: [] });
        expect(slot.state).to.equal('pending');
        expect(acquired(jobId)).to.equal(1);
        gateway.deferred[0]!.ack();
        await settle();
        expect(slot.state).to.equal('allocated');
        expect(settled.map((o) => o.ok)).to.deep.equal([true]);
      },
    );

    it('completes a pending slot the report shows; the acknowledgement that follows is ignored', async () => {
      const { addExecutor, allocate, report, settled, syncer, acquired, jobId } = setup();
      const { tm, gateway } = addExecutor();
      gateway.willAnswer('defer');
      const slot = allocate(tm, jobId);
      const result = report(tm, [{ index: 0, jobId, allocationId: slot.allocationId! }]);
      expect(result.completed).to.deep.equal([slot]);
      expect(slot.state).to.equal('allocated');
      expect(syncer.inFlight).to.equal(0);
      gateway.deferred[0]!.ack();
      await settle();
      expect(settled, 'no second completion').to.deep.equal([]);
      expect(acquired(jobId), 'counted once').to.equal(1);
    });

    it('changes nothing for an allocated slot the report shows', async () => {
      const { addExecutor, allocate, report, acquired, jobId } = setup();
      const { tm } = addExecutor();
      const slot = allocate(tm, jobId);
      await settle();
      expect(report(tm, [{ index: 0, jobId, allocationId: slot.allocationId! }])).to.deep.equal({
        completed: [],
        adopted: [],
        freed: [],
        conflicts: [],
      });
      expect(slot.state).to.equal('allocated');
      expect(acquired(jobId)).to.equal(1);
    });

    it('ignores, and reports as a conflict, an allocation held on another executor', async () => {
      const { addExecutor, allocate, report, tracker, acquired, logs, jobId } = setup();
      const te1 = addExecutor();
      const te2 = addExecutor();
      const slot = allocate(te1.tm, jobId);
      await settle();
      const allocationId = slot.allocationId!;
      const result = report(te2.tm, [{ index: 1, jobId, allocationId }]);
      expect(result.conflicts).to.deep.equal([allocationId]);
      expect(result.adopted).to.deep.equal([]);
      expect(tracker.getSlot(allocationId)).to.equal(slot);
      expect(slot.taskManager).to.equal(te1.tm);
      expect(te2.tm.freeStaticSlots).to.equal(2);
      expect(acquired(jobId)).to.equal(1);
      expect(logs.join('\n')).to.include(allocationId);
    });
  });

  describe('freeInactiveSlots', () => {
    it('calls each executor holding slots of the job once, and no other; local records stay as they are', async () => {
      const { addExecutor, allocate, syncer, tracker, jobId } = setup();
      const other = JobID.generate();
      const [te1, te2, te3] = [addExecutor(), addExecutor(), addExecutor()];
      allocate(te1.tm, jobId);
      allocate(te1.tm, jobId);
      allocate(te2.tm, jobId);
      allocate(te3.tm, other);
      await settle();
      syncer.freeInactiveSlots(jobId);
      expect(te1.gateway.freeInactiveSlotsCalls).to.deep.equal([jobId]);
      expect(te2.gateway.freeInactiveSlotsCalls).to.deep.equal([jobId]);
      expect(te3.gateway.freeInactiveSlotsCalls).to.deep.equal([]);
      expect(tracker.numberOfOccupiedSlots).to.equal(4);
    });

    it('logs a failed or unanswered call instead of throwing', async () => {
      const { addExecutor, allocate, syncer, clock, logs, jobId } = setup();
      const te1 = addExecutor();
      const te2 = addExecutor();
      allocate(te1.tm, jobId);
      allocate(te2.tm, jobId);
      await settle();
      te1.gateway.freeInactiveSlotsFunction = () => Promise.reject(new Error('gone'));
      te2.gateway.freeInactiveSlotsFunction = () => new Promise(() => {});
      syncer.freeInactiveSlots(jobId);
      await settle();
      clock.increment(RPC_TIMEOUT);
      await settle();
      const failures = logs.filter((l) => l.startsWith('freeInactiveSlots'));
      expect(failures).to.have.length(2);
      expect(failures.join('\n'))
        .to.match(/failed: gone/)
        .and.to.match(/RpcTimeoutError/);
    });
  });
});
