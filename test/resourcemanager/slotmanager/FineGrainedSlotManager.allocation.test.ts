/**
 * FineGrainedSlotManager, placing slots: what happens to a requirement or a slot request between
 * the check that places it and the executor's answer (acknowledged, refused, never answered), slot
 * reports, a lost executor, pending workers taken over, and coalesced checks. In-process doubles and
 * a SimulatedClock; `execute: (f) => f()`.
 */
import { expect } from 'chai';
import { IllegalArgumentError, UnknownTaskExecutorError } from '../../../lib/core/errors.js';
import { AllocationID, JobID } from '../../../lib/core/ids.js';
import { ResourceProfile } from '../../../lib/core/ResourceProfile.js';
import { describeWaitReason } from '../../../lib/resourcemanager/slotmanager/WaitReason.js';
import { WorkerResourceSpec } from '../../../lib/resourcemanager/slotmanager/WorkerResourceSpec.js';
import { profile } from '../../support/fixtures.js';
import { createSlotManager, settle } from './doubles.js';

const UNKNOWN = ResourceProfile.UNKNOWN;
const RPC_TIMEOUT = 10_000;

describe('FineGrainedSlotManager: placing slots', () => {
  describe('allocation acknowledged', () => {
    it('asks the first executor for its first static slot and marks it allocated on the acknowledgement', async () => {
      const h = createSlotManager({ allocator: false });
      const te1 = h.register();
      const te2 = h.register();
      const job = JobID.generate();
      h.declare(job, [UNKNOWN, 1]);
      expect(te1.gateway.requestSlotCalls, 'nothing before the check delay').to.deep.equal([]);
      await h.check();
      expect(te2.gateway.requestSlotCalls).to.deep.equal([]);
      expect(te1.gateway.requestSlotCalls).to.have.length(1);
      const call = te1.gateway.requestSlotCalls[0]!;
      expect(call).to.include({ index: 0, jobId: job, targetAddress: 'jobmaster@test' });
      const slot = h.sm.tracker.getSlot(call.allocationId)!;
      expect(slot).to.include({ state: 'allocated', index: 0, jobId: job });
      expect(slot.taskManager.resourceId).to.equal(te1.resourceId);
      expect(h.acquired(job)).to.equal(1);
      expect(h.sm.overview().slots).to.deep.equal({ pending: 0, allocated: 1, inFlight: 0 });
    });

    it(
      "shows each executor's slot records in its overview: static ones in " +
        'index order, free ones too, with state, job, allocation and profile',
      async () => {
        const h = createSlotManager({ allocator: false });
        const te1 = h.register();
        const job = JobID.generate();
        h.declare(job, [UNKNOWN, 1]);
        await h.check();
        const { allocationId } = te1.gateway.requestSlotCalls[0]!;
        const [tm] = h.sm.overview().taskManagers;
        const records = tm!.records;
        expect(records.map((r) => [r.index, r.state, r.jobId, r.allocationId])).to.deep.equal([
          [0, 'allocated', job, allocationId],
          ...records.slice(1).map((_, i) => [i + 1, 'free', null, null]),
        ]);
        expect(records.length, 'every static slot').to.be.greaterThan(1);
        for (const r of records)
          expect(
            ResourceProfile.fromJSON(r.profile).equals(
              h.sm.tracker.getTaskManager(te1.resourceId)!.defaultSlotResourceProfile,
            ),
          ).to.equal(true);
      },
    );

    it('fills the first executor before the next one (first fit), one static slot per index', async () => {
      const h = createSlotManager({ allocator: false });
      const te1 = h.register();
      const te2 = h.register();
      const job = JobID.generate();
      h.declare(job, [UNKNOWN, 3]);
      await h.check();
      expect(te1.gateway.requestSlotCalls.map((c) => c.index)).to.deep.equal([0, 1]);
      expect(te2.gateway.requestSlotCalls.map((c) => c.index)).to.deep.equal([0]);
      expect(
        new Set([...te1.gateway.requestSlotCalls, ...te2.gateway.requestSlotCalls].map((c) => c.allocationId)).size,
      ).to.equal(3);
      expect(h.acquired(job)).to.equal(3);
    });
  });

  describe('the overview', () => {
    it('counts as free the default slots that still fit in what is left, not the free static records', async () => {
      const h = createSlotManager({ allocator: false });
      const te = h.register({ spec: WorkerResourceSpec.create(profile(10, 1000), 10) });
      const job = JobID.generate();
      h.declare(job, [UNKNOWN, 1], [profile(3, 200), 1]);
      await h.check();
      expect(te.gateway.requestSlotCalls.map((c) => c.index)).to.deep.equal([0, -1]);
      const [tm] = h.sm.overview().taskManagers;
      expect(tm!.available).to.deep.include({ cpuCores: 6, taskHeapMemory: 700 * 1024 * 1024 });
      expect(
        tm!.slots,
        '9 static records are free, but only 6 default slots of (1 core, 100 mb) fit in (6 cores, 700 mb)',
      ).to.deep.equal({ free: 6, pending: 0, allocated: 2 });
    });

    it('counts the tightest dimension, extended resources included, and at most the slot count', async () => {
      const h = createSlotManager({ allocator: false });
      const te = h.register({ spec: WorkerResourceSpec.create(profile(4, 400, 0, { gpu: 4 }), 4) });
      expect(h.sm.overview().taskManagers[0]!.slots.free).to.equal(4);
      const job = JobID.generate();
      h.declare(job, [profile(0.5, 10, 0, { gpu: 2.5 }), 1]);
      await h.check();
      expect(te.gateway.requestSlotCalls.map((c) => c.index)).to.deep.equal([-1]);
      expect(h.sm.overview().taskManagers[0]!.slots, 'gpu 1.5 left: one default slot of gpu 1').to.deep.equal({
        free: 1,
        pending: 0,
        allocated: 1,
      });
    });
  });

  describe('allocation refused by the TaskExecutor', () => {
    it('retries on another executor with a new AllocationID', async () => {
      const h = createSlotManager({ allocator: false });
      const te1 = h.register();
      const te2 = h.register();
      const job = JobID.generate();
      te1.gateway.willAnswer('refuse');
      h.declare(job, [UNKNOWN, 1]);
      await h.check();
      const refused = te1.gateway.requestSlotCalls[0]!.allocationId;
      expect(h.sm.tracker.getSlot(refused)).to.equal(undefined);
      expect(te2.gateway.requestSlotCalls, 'the retry waits for the next check').to.deep.equal([]);
      await h.check();
      expect(te1.gateway.requestSlotCalls).to.have.length(1);
      expect(te2.gateway.requestSlotCalls).to.have.length(1);
      const retry = te2.gateway.requestSlotCalls[0]!;
      expect(retry.allocationId).to.not.equal(refused);
      expect(h.sm.tracker.getSlot(retry.allocationId)).to.include({ state: 'allocated', jobId: job });
      expect(h.acquired(job)).to.equal(1);
    });

    it('gives the refusing executor no new slot until its next slot report', async () => {
      const h = createSlotManager({ allocator: false });
      const te1 = h.register();
      const te2 = h.register();
      const job = JobID.generate();
      te1.gateway.willAnswer('refuse');
      h.declare(job, [UNKNOWN, 1]);
      await h.check();
      await h.check();
      h.declare(job, [UNKNOWN, 3]);
      await h.check();
      expect(te1.gateway.requestSlotCalls, 'te1 has two free slots but is skipped').to.have.length(1);
      expect(te2.gateway.requestSlotCalls.map((c) => c.index)).to.deep.equal([0, 1]);
      expect(h.sm.overview().taskManagers.map((t) => t.blocked)).to.deep.equal([true, false]);
      h.sm.reportSlotStatus(te1.resourceId, te1.report());
      expect(h.sm.overview().taskManagers.map((t) => t.blocked)).to.deep.equal([false, false]);
      h.declare(job, [UNKNOWN, 4]);
      await h.check();
      expect(
        te1.gateway.requestSlotCalls.map((c) => c.index),
        'the slot still missing and the new one',
      ).to.deep.equal([0, 0, 1]);
      expect(h.acquired(job)).to.equal(4);
    });

    it('places no slot on an executor a JobMaster found slow until its block ends, whatever it reports', async () => {
      const h = createSlotManager({ allocator: false });
      const te1 = h.register();
      const te2 = h.register();
      const job = JobID.generate();
      h.sm.blockTaskManagers([{ resourceId: te1.resourceId, durationMs: 60_000 }]);
      h.declare(job, [UNKNOWN, 2]);
      await h.check();
      expect(te1.gateway.requestSlotCalls).to.deep.equal([]);
      expect(te2.gateway.requestSlotCalls).to.have.length(2);
      // A slot report does not lift it (it lifts only a block in doubt).
      h.sm.reportSlotStatus(te1.resourceId, te1.report());
      h.declare(job, [UNKNOWN, 3]);
      await h.check();
      expect(te1.gateway.requestSlotCalls).to.deep.equal([]);
      expect(h.sm.overview().taskManagers.map((t) => t.blocked)).to.deep.equal([true, false]);
      await h.advance(60_000);
      expect(te1.gateway.requestSlotCalls, 'unblocked, it takes the slot still missing').to.have.length(1);
      expect(h.sm.overview().taskManagers.map((t) => t.blocked)).to.deep.equal([false, false]);
    });

    it('refuses a block whose duration is no finite number >= 0, blocking nothing', () => {
      const h = createSlotManager({ allocator: false });
      const te1 = h.register();
      const te2 = h.register();
      expect(() =>
        h.sm.blockTaskManagers([
          { resourceId: te1.resourceId, durationMs: 1_000 },
          { resourceId: te2.resourceId, durationMs: -1 },
        ]),
      )
        .to.throw(IllegalArgumentError, /durationMs must be a finite number >= 0, got -1/)
        .with.property('reason', 'invalid-value');
      expect(h.sm.overview().taskManagers.map((t) => t.blocked)).to.deep.equal([false, false]);
    });

    // The only executor that could take the slot refused; its next slot report unblocks it and
    // must schedule a check by itself (the report changes nothing else).
    it('retries a refused requirement on the same executor once its slot report unblocks it', async () => {
      const h = createSlotManager({ allocator: false });
      const te1 = h.register();
      const job = JobID.generate();
      te1.gateway.willAnswer('refuse');
      h.declare(job, [UNKNOWN, 1]);
      await h.check();
      await h.check();
      h.sm.reportSlotStatus(te1.resourceId, te1.report());
      await h.advance(100); // the check runs and the executor answers before any deadline is crossed
      await h.advance(60_000);
      expect(te1.gateway.requestSlotCalls).to.have.length(2);
      expect(h.acquired(job)).to.equal(1);
    });

    it('unblocks the executor after heartbeat.interval when no slot report comes, and re-checks', async () => {
      const h = createSlotManager({ allocator: false });
      const te1 = h.register();
      const job = JobID.generate();
      te1.gateway.willAnswer('refuse');
      h.declare(job, [UNKNOWN, 1]);
      await h.check();
      await h.advance(h.sm.options['heartbeat.interval']);
      await h.check();
      expect(te1.gateway.requestSlotCalls).to.have.length(2);
      expect(h.acquired(job)).to.equal(1);
    });
  });

  describe('allocation never answered', () => {
    it('gives up after rpc.ask.timeout and retries on another executor with a new AllocationID', async () => {
      const h = createSlotManager({ allocator: false });
      const te1 = h.register();
      const te2 = h.register();
      const job = JobID.generate();
      te1.gateway.willAnswer('never');
      h.declare(job, [UNKNOWN, 1]);
      await h.check();
      const first = te1.gateway.requestSlotCalls[0]!.allocationId;
      await h.advance(RPC_TIMEOUT - 100);
      expect(h.sm.tracker.getSlot(first)?.state).to.equal('pending');
      expect(h.acquired(job), 'a pending slot counts as acquired').to.equal(1);
      expect(te2.gateway.requestSlotCalls).to.deep.equal([]);
      await h.advance(100);
      expect(h.sm.tracker.getSlot(first)).to.equal(undefined);
      expect(h.acquired(job)).to.equal(0);
      await h.check();
      expect(te2.gateway.requestSlotCalls).to.have.length(1);
      expect(te2.gateway.requestSlotCalls[0]!.allocationId).to.not.equal(first);
      expect(h.acquired(job)).to.equal(1);
      expect(h.logs.join('\n')).to.match(/RpcTimeoutError/);
    });
  });

  describe('reconciliation through reportSlotStatus', () => {
    it("adopts an allocation the SlotManager did not know of and counts it toward the job's requirement", async () => {
      const h = createSlotManager({ allocator: false });
      const te1 = h.register();
      const job = JobID.generate();
      const allocationId = AllocationID.generate();
      h.sm.reportSlotStatus(te1.resourceId, te1.report([{ index: 1, jobId: job, allocationId }]));
      expect(h.sm.tracker.getSlot(allocationId)).to.include({ state: 'allocated', index: 1, jobId: job });
      h.declare(job, [UNKNOWN, 1]);
      await h.check();
      expect(te1.gateway.requestSlotCalls, 'the adopted slot already fulfils it').to.deep.equal([]);
      expect(h.acquired(job)).to.equal(1);
    });

    it('frees an allocated slot the report no longer shows, and re-plans the requirement', async () => {
      const h = createSlotManager({ allocator: false });
      const te1 = h.register();
      const job = JobID.generate();
      h.declare(job, [UNKNOWN, 1]);
      await h.check();
      const first = te1.gateway.requestSlotCalls[0]!.allocationId;
      h.sm.reportSlotStatus(te1.resourceId, te1.report([]));
      expect(h.sm.tracker.getSlot(first)).to.equal(undefined);
      expect(h.acquired(job)).to.equal(0);
      await h.check();
      expect(te1.gateway.requestSlotCalls).to.have.length(2);
      expect(te1.gateway.requestSlotCalls[1]!.allocationId).to.not.equal(first);
      expect(h.acquired(job)).to.equal(1);
    });

    it('keeps a pending slot the report does not show, and completes it when a report shows it', async () => {
      const h = createSlotManager({ allocator: false });
      const te1 = h.register();
      const job = JobID.generate();
      te1.gateway.willAnswer('never');
      h.declare(job, [UNKNOWN, 1]);
      await h.check();
      const allocationId = te1.gateway.requestSlotCalls[0]!.allocationId;
      h.sm.reportSlotStatus(te1.resourceId, te1.report([]));
      expect(h.sm.tracker.getSlot(allocationId)?.state).to.equal('pending');
      h.sm.reportSlotStatus(te1.resourceId, te1.report([{ index: 0, jobId: job, allocationId }]));
      expect(h.sm.tracker.getSlot(allocationId)?.state).to.equal('allocated');
      await h.advance(RPC_TIMEOUT * 2);
      expect(h.sm.tracker.getSlot(allocationId)?.state, 'the timeout of the answered request is ignored').to.equal(
        'allocated',
      );
      expect(te1.gateway.requestSlotCalls).to.have.length(1);
    });

    it(
      'refuses a report from an unregistered executor with ' +
        'UnknownTaskExecutorError, and a malformed one with IllegalArgumentError',
      () => {
        const h = createSlotManager({ allocator: false });
        const te1 = h.register();
        const stranger = h.register();
        h.sm.unregisterTaskManager(stranger.resourceId, 'gone');
        expect(() => h.sm.reportSlotStatus(stranger.resourceId, stranger.report()))
          .to.throw(UnknownTaskExecutorError)
          .with.property('reason', 'not-registered');
        expect(() => h.sm.reportSlotStatus(te1.resourceId, stranger.report())).to.throw(IllegalArgumentError);
      },
    );
  });

  describe('executor lost mid-allocation', () => {
    it('frees its slots, tells each job which AllocationIDs it lost, and re-plans on another executor', async () => {
      const h = createSlotManager({ allocator: false });
      const te1 = h.register();
      const job = JobID.generate();
      const other = JobID.generate();
      te1.gateway.willAnswer('ack', 'never');
      h.declare(job, [UNKNOWN, 2]);
      await h.check();
      const lostIds = te1.gateway.requestSlotCalls.map((c) => c.allocationId);
      expect(lostIds.map((id) => h.sm.tracker.getSlot(id)?.state)).to.deep.equal(['allocated', 'pending']);
      const te2 = h.register();
      const te3 = h.register();
      h.declare(other, [UNKNOWN, 1]);
      await h.check();
      expect(h.sm.unregisterTaskManager(te1.resourceId, 'heartbeat timeout')).to.equal(true);
      expect(h.listener.of('slotsLost')).to.deep.equal([
        {
          type: 'slotsLost',
          jobId: job,
          allocationIds: lostIds,
          resourceId: te1.resourceId,
          cause: 'heartbeat timeout',
        },
      ]);
      expect(lostIds.map((id) => h.sm.tracker.getSlot(id))).to.deep.equal([undefined, undefined]);
      expect(h.acquired(job)).to.equal(0);
      expect(h.sm.overview().taskManagers.map((t) => t.resourceId)).to.deep.equal([te2.resourceId, te3.resourceId]);
      await h.check();
      const replanned = [...te2.gateway.requestSlotCalls, ...te3.gateway.requestSlotCalls].filter(
        (c) => c.jobId === job,
      );
      expect(replanned).to.have.length(2);
      expect(replanned.every((c) => !lostIds.includes(c.allocationId))).to.equal(true);
      expect(h.acquired(job)).to.equal(2);
      // The lost executor's unanswered request times out later: ignored.
      await h.advance(RPC_TIMEOUT);
      expect(h.acquired(job)).to.equal(2);
      expect(h.sm.overview().taskManagers.map((t) => t.blocked)).to.deep.equal([false, false]);
    });

    it('returns false for an executor it does not know', () => {
      const h = createSlotManager({ allocator: false });
      const te1 = h.register();
      h.sm.unregisterTaskManager(te1.resourceId, 'gone');
      expect(h.sm.unregisterTaskManager(te1.resourceId, 'gone again')).to.equal(false);
    });
  });

  describe('a requirement decrease', () => {
    it('frees nothing in use: acquired slots stay and no executor is called', async () => {
      const h = createSlotManager({ allocator: false });
      const te1 = h.register();
      const te2 = h.register();
      const job = JobID.generate();
      h.declare(job, [UNKNOWN, 3]);
      await h.check();
      const before = JSON.stringify(h.sm.overview().taskManagers);
      h.declare(job, [UNKNOWN, 1]);
      await h.check();
      expect(h.acquired(job)).to.equal(3);
      expect(JSON.stringify(h.sm.overview().taskManagers)).to.equal(before);
      for (const te of [te1, te2]) expect(te.gateway.freeInactiveSlotsCalls).to.deep.equal([]);
      expect(te1.gateway.requestSlotCalls.length + te2.gateway.requestSlotCalls.length).to.equal(3);
      expect(h.sm.getPendingRequests()).to.deep.equal([]);
    });
  });

  describe("requestSlot (imperative, as Flink's SlotManagerImpl.registerSlotRequest)", () => {
    it("places the request under the caller's AllocationID and tells the listener where it landed", async () => {
      const h = createSlotManager({ allocator: false });
      const te1 = h.register();
      const job = JobID.generate();
      const allocationId = AllocationID.generate();
      expect(h.sm.requestSlot(job, allocationId, UNKNOWN)).to.equal('accepted');
      await h.check();
      expect(te1.gateway.requestSlotCalls.map((c) => c.allocationId)).to.deep.equal([allocationId]);
      expect(h.listener.of('slotRequestFulfilled')).to.deep.equal([
        { type: 'slotRequestFulfilled', jobId: job, allocationId, resourceId: te1.resourceId, index: 0 },
      ]);
      expect(h.sm.getPendingRequests()).to.deep.equal([]);
    });

    for (const state of ['waiting', 'allocating', 'allocated'] as const) {
      it(`answers 'duplicate' for an AllocationID that is ${state}, and changes nothing`, async () => {
        const h = createSlotManager({ allocator: false });
        const job = JobID.generate();
        const allocationId = AllocationID.generate();
        const te1 = state === 'waiting' ? undefined : h.register();
        if (state === 'allocating') te1!.gateway.willAnswer('never');
        h.sm.requestSlot(job, allocationId, UNKNOWN);
        await h.check();
        const snapshot = () =>
          JSON.stringify([h.sm.overview(), h.sm.getPendingRequests(), h.listener.calls, te1?.gateway.requestSlotCalls]);
        const before = snapshot();
        expect(h.sm.requestSlot(job, allocationId, UNKNOWN)).to.equal('duplicate');
        expect(h.sm.requestSlot(JobID.generate(), allocationId, UNKNOWN), 'even for another job').to.equal('duplicate');
        await h.check();
        expect(snapshot()).to.equal(before);
      });
    }

    it(
      'fails a waiting request whose AllocationID a slot report shows ' +
        'held by another job (duplicate-request), at the next check',
      async () => {
        const h = createSlotManager({ allocator: false });
        const [owner, other] = [JobID.generate(), JobID.generate()];
        const [first, second] = [AllocationID.generate(), AllocationID.generate()];
        const te = h.register({
          allocated: [
            { index: 0, jobId: owner, allocationId: first },
            { index: 1, jobId: owner, allocationId: second },
          ],
        });
        const requester = JobID.generate();
        const allocationId = AllocationID.generate();
        h.sm.requestSlot(requester, allocationId, UNKNOWN);
        await h.check();
        expect(h.sm.getPendingRequests().map((r) => r.kind === 'slot-request' && r.reason?.kind)).to.deep.equal([
          'insufficient-resources',
        ]);
        // The executor freed `first` and shows the requested AllocationID in that slot, for another job.
        h.sm.reportSlotStatus(
          te.resourceId,
          te.report([
            { index: 0, jobId: other, allocationId },
            { index: 1, jobId: owner, allocationId: second },
          ]),
        );
        expect(h.listener.of('slotRequestFailed'), 'not before the check').to.deep.equal([]);
        await h.check();
        const [failed] = h.listener.of('slotRequestFailed');
        expect([failed?.allocationId, failed?.error.reason]).to.deep.equal([allocationId, 'duplicate-request']);
        expect(failed!.error.message).to.match(new RegExp(`is held by job ${JobID.short(other)} on ${te.resourceId}`));
        expect(h.sm.getPendingRequests()).to.deep.equal([]);
        expect(h.sm.tracker.getSlot(allocationId)?.jobId, 'the slot stays with the job the report names').to.equal(
          other,
        );
      },
    );

    it(
      'lands on the preferred host, then on the preferred ' + 'executor, even where first fit would choose another',
      async () => {
        const h = createSlotManager({ allocator: false });
        const teA = h.register({ host: 'host-a' });
        const teB = h.register({ host: 'host-b' });
        const teC = h.register({ host: 'host-a' });
        const job = JobID.generate();
        const [onHost, onExecutor] = [AllocationID.generate(), AllocationID.generate()];
        h.sm.requestSlot(job, onHost, UNKNOWN, 'host-b');
        h.sm.requestSlot(job, onExecutor, UNKNOWN, { resourceId: teC.resourceId });
        await h.check();
        expect(teA.gateway.requestSlotCalls).to.deep.equal([]);
        expect(teB.gateway.requestSlotCalls.map((c) => c.allocationId)).to.deep.equal([onHost]);
        expect(teC.gateway.requestSlotCalls.map((c) => c.allocationId)).to.deep.equal([onExecutor]);
      },
    );
  });

  describe('pending-worker takeover', () => {
    it(
      "lets an executor of the pending worker's shape " + 'take its place: no extra worker, the slots go to it',
      async () => {
        const h = createSlotManager();
        const job = JobID.generate();
        h.declare(job, [UNKNOWN, 2]);
        await h.check();
        expect(h.allocator.allocateWorkerCalls).to.have.length(1);
        const pendingId = h.allocator.allocateWorkerCalls[0]!.id;
        const te = h.register();
        expect(te.result).to.deep.equal({ kind: 'registered', replacedPendingWorker: pendingId });
        expect(h.sm.overview().pendingWorkers).to.deep.equal([]);
        await h.check();
        expect(h.allocator.allocateWorkerCalls).to.have.length(1);
        expect(h.allocator.cancelWorkerCalls).to.deep.equal([]);
        expect(te.gateway.requestSlotCalls.map((c) => c.index)).to.deep.equal([0, 1]);
        expect(h.acquired(job)).to.equal(2);
      },
    );

    it('with pendingWorkerId replaces exactly that pending worker', async () => {
      const h = createSlotManager();
      h.declare(JobID.generate(), [UNKNOWN, 4]);
      await h.check();
      const [p1, p2] = h.allocator.allocateWorkerCalls.map((c) => c.id);
      expect(p2).to.not.equal(undefined);
      const te = h.register({ pendingWorkerId: p2! });
      expect(te.result).to.deep.equal({ kind: 'registered', replacedPendingWorker: p2 });
      expect(h.sm.overview().pendingWorkers.map((p) => (p as { id: string }).id)).to.deep.equal([p1]);
    });

    it("does not let an executor of another shape take a pending worker's place", async () => {
      const h = createSlotManager();
      h.declare(JobID.generate(), [UNKNOWN, 1]);
      await h.check();
      const te = h.register({ spec: WorkerResourceSpec.create(h.spec.totalResourceProfile, 1) });
      expect(te.result).to.deep.equal({ kind: 'registered' });
      expect(h.sm.overview().pendingWorkers).to.have.length(1);
    });
  });

  describe('why a request waits (getPendingRequests)', () => {
    it('getPendingRequests says a requirement waits for workers, and how many', async () => {
      const h = createSlotManager();
      const job = JobID.generate();
      h.declare(job, [UNKNOWN, 3]);
      await h.check();
      expect(h.sm.getPendingRequests()).to.deep.equal([
        {
          kind: 'requirement',
          jobId: job,
          description: 'waiting for 2 workers to start and register',
          resourceProfile: UNKNOWN,
          missing: 3,
          onWorkers: 3,
          reason: { kind: 'waiting-for-workers', workers: 2 },
          since: 0, // a quiet SlotManager checks a declaration at once (on the clock's next turn)
        },
      ]);
      expect(h.listener.of('notEnoughResourcesAvailable'), 'waiting for workers is not a shortage').to.deep.equal([]);
    });

    it(
      'getPendingRequests names the short dimension and ' + 'the executors that could hold the request once freed',
      async () => {
        const h = createSlotManager({ allocator: false });
        const te = h.register();
        h.declare(JobID.generate(), [UNKNOWN, 1]);
        await h.check();
        const job = JobID.generate();
        const allocationId = AllocationID.generate();
        h.sm.requestSlot(job, allocationId, profile(0.5, 150));
        expect(h.sm.getPendingRequests()[0]).to.deep.include({
          state: 'waiting',
          reason: null,
          description: 'waiting for the next requirement check',
        });
        await h.check();
        const [request] = h.sm.getPendingRequests();
        expect(request).to.deep.include({
          kind: 'slot-request',
          jobId: job,
          allocationId,
          state: 'waiting',
          reason: {
            kind: 'insufficient-resources',
            closest: [
              {
                resourceId: te.resourceId,
                shortfall: [{ field: 'taskHeapMemory', available: 100 * 1024 * 1024, required: 150 * 1024 * 1024 }],
              },
            ],
            couldFitWhenFree: [te.resourceId],
            passedOver: [],
          },
        });
        expect(request!.description).to.include('taskHeapMemory available 100 mb, required 150 mb');
        expect(request!.description).to.equal(describeWaitReason(request!.reason!));
      },
    );
  });

  describe('requirement checks are coalesced', () => {
    it('checks a declaration after a quiet period on the next turn, without waiting for the delay', async () => {
      const h = createSlotManager({ allocator: false });
      const [te] = [h.register()];
      await h.advance(1000); // quiet: the registration's check is long past
      const job = JobID.generate();
      const before = h.checks();
      h.declare(job, [UNKNOWN, 1]);
      expect(h.checks(), 'not inside the call itself').to.equal(before);
      await h.advance(0);
      expect(h.checks()).to.equal(before + 1);
      expect(te!.gateway.requestSlotCalls.filter((c) => c.jobId === job)).to.have.length(1);
      await h.advance(1000);
      expect(h.checks()).to.equal(before + 1);
    });

    it('coalesces the changes within the delay after a check into one trailing check, the last counting', async () => {
      const h = createSlotManager({ allocator: false });
      const executors = [h.register(), h.register()];
      await h.advance(1000);
      const job = JobID.generate();
      const before = h.checks();
      h.declare(job, [UNKNOWN, 1]);
      await h.advance(0);
      expect(h.checks(), 'the leading check').to.equal(before + 1);
      h.clock.increment(20);
      h.declare(job, [UNKNOWN, 2]);
      h.sm.requestSlot(JobID.generate(), AllocationID.generate(), UNKNOWN);
      h.clock.increment(20);
      h.declare(job, [UNKNOWN, 3]);
      h.clock.increment(29);
      expect(h.checks()).to.equal(before + 1);
      h.clock.increment(1); // the delay after the first change since the check
      await settle();
      expect(h.checks()).to.equal(before + 2);
      expect(
        executors.flatMap((te) => te.gateway.requestSlotCalls).filter((c) => c.jobId === job),
        'the last declaration counts',
      ).to.have.length(3);
      await h.advance(1000);
      expect(h.checks()).to.equal(before + 2);
    });

    it('costs at most two checks for a burst of 1,000 declarations, the first after a quiet period', async () => {
      const h = createSlotManager({ allocator: false });
      h.register();
      await h.advance(1000);
      const before = h.checks();
      for (let i = 0; i < 1000; i++) {
        h.declare(JobID.generate(), [UNKNOWN, 1]);
        if (i % 100 === 99) h.clock.increment(4); // spread over 40 ms, inside one delay
      }
      await h.advance(1000);
      expect(h.checks() - before).to.be.within(1, 2);
    });
  });

  describe('slot reports that overtake answers (found by the property test)', () => {
    it(
      'fulfils a waiting slot request whose late acknowledgement ' +
        'shows up in a report, instead of planning it twice',
      async () => {
        const h = createSlotManager({ allocator: false });
        const te = h.register();
        te.gateway.willAnswer('never');
        const job = JobID.generate();
        const allocationId = AllocationID.generate();
        h.sm.requestSlot(job, allocationId, UNKNOWN);
        await h.check();
        await h.advance(RPC_TIMEOUT + 1000); // no answer: the request waits again under its AllocationID
        // the executor had taken it
        h.sm.reportSlotStatus(te.resourceId, te.report([{ index: 0, jobId: job, allocationId }]));
        await h.check();
        expect(h.listener.calls.filter((e) => e.type === 'slotRequestFulfilled')).to.have.length(1);
        expect(h.sm.getPendingRequests()).to.deep.equal([]);
        expect(h.sm.tracker.getSlot(allocationId)).to.include({ state: 'allocated', index: 0, tracked: false });
        expect(h.acquired(job)).to.equal(0); // an imperative slot is not counted among declared requirements
      },
    );

    it(
      'records an unknown allocation in the static slot the ' +
        'report names, failing the request still pending for it',
      async () => {
        const h = createSlotManager({
          allocator: false,
          configuration: { 'taskmanager.numberOfTaskSlots': 1, 'taskmanager.cpu.cores': 1 },
        });
        const te = h.register();
        te.gateway.willAnswer('never');
        const job = JobID.generate();
        h.declare(job, [UNKNOWN, 1]);
        await h.check();
        const pending = te.gateway.requestSlotCalls[0]!;
        const other = AllocationID.generate();
        h.sm.reportSlotStatus(te.resourceId, te.report([{ index: 0, jobId: job, allocationId: other }]));
        await h.check();
        expect(h.sm.tracker.getSlot(other)).to.include({ state: 'allocated', index: 0 });
        expect(h.sm.tracker.getSlot(pending.allocationId)).to.equal(undefined);
        expect(h.acquired(job)).to.equal(1); // the reported slot now serves the requirement
        expect(h.sm.tracker.getTaskManager(te.resourceId)!.blocked).to.equal(false);
      },
    );
  });
});
