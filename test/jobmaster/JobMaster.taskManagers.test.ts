/**
 * The TaskExecutors registered with a JobMaster (Flink's registeredTaskManagers): it takes slots only
 * from those, registers one only while it can reach it, and forgets one that lets go of the job or
 * that it can no longer reach — with every slot it held there.
 */
import { expect } from 'chai';
import { IllegalArgumentError } from '../../lib/core/errors.js';
import { AllocationID, JobID, ResourceID } from '../../lib/core/ids.js';
import type { JobEvent } from '../../lib/jobmaster/JobMaster.js';
import type { SlotOfferWire } from '../../lib/rpc/protocol.js';
import { Harness } from './jobMasterHarness.js';
import { edge, vertex } from './support.js';

type TaskEvent = Extract<JobEvent, { type: 'task' }>;

describe('JobMaster: the TaskExecutors registered with it', () => {
  // DeclarativeSlotPoolServiceTest.testSlotOfferingOfUnknownTaskManagerIsIgnored and
  // testUnknownTaskManagerRegistration: an unknown TaskManager's offer is accepted nowhere.
  it(
    'rejects every slot a TaskExecutor the ResourceManager already dropped offers: ' +
      'its registration is refused, nothing is deployed or failed, and the job waits for a slot it can use',
    async () => {
      const h = new Harness({ vertices: [vertex('only', 1)] }, { 'restart-strategy.fixed-delay.attempts': 1 });
      await h.start();
      // Dropped: the JobMaster has no connection to it (h.executors does not hold it).
      const gone = ResourceID.parse('taskexecutor-gone');
      expect(await h.register(gone)).to.deep.equal({
        kind: 'refused',
        reason: `the JobMaster cannot reach TaskExecutor ${gone}: it is not connected`,
      });
      expect(await h.offer(gone, 1)).to.deep.equal([]);
      expect(h.submitted).to.deep.equal([]);
      expect(h.events.filter((e) => e.type === 'task' && e.state === 'failed')).to.deep.equal([]);
      expect(h.master.status).to.equal('running');
      expect(h.lastDeclaration()).to.deep.equal({ UNKNOWN: 1 });
      // A TaskExecutor that registered gets its slot taken, and the job runs there.
      const te = h.addExecutor('taskexecutor-a');
      expect(await h.offer(te, 1)).to.have.length(1);
      await h.finish(h.submittedFor('only')[0]!, 'done');
      expect(await h.master.result).to.deep.include({ status: 'finished', restarts: 0 });
    },
  );

  // DeclarativeSlotPoolServiceTest.testSlotOfferingOfUnknownTaskManagerIsIgnored: one that never registered.
  it('rejects the offers of a TaskExecutor that never registered with it, though it could reach it', async () => {
    const h = new Harness({ vertices: [vertex('only', 1)] });
    await h.start();
    const te = h.addExecutor('taskexecutor-a');
    const offers: SlotOfferWire[] = [{ allocationId: AllocationID.generate(), index: 0, resourceProfile: 'UNKNOWN' }];
    expect(await h.master.mailbox.callAsync(() => h.master.offerSlots(te, offers))).to.deep.equal([]);
    // DeclarativeSlotPoolServiceTest.testKnownTaskManagerRegistration / testSlotOfferingOfKnownTaskManager.
    expect(await h.register(te)).to.deep.equal({ kind: 'accepted' });
    expect(await h.master.mailbox.callAsync(() => h.master.offerSlots(te, offers))).to.deep.equal([
      offers[0]!.allocationId,
    ]);
  });

  // DeclarativeSlotPoolServiceTest.testReleaseTaskManager: a released TaskManager is unknown again.
  it(
    'forgets a TaskExecutor that lets go of the job (disconnectTaskManager): ' +
      'its offers are rejected until it registers again, and a slot still counted there is lost',
    async () => {
      const h = new Harness(
        { vertices: [vertex('a', 1), vertex('b', 1, { slotSharingGroup: 'other' })], edges: [edge('a', 'b')] },
        { 'restart-strategy.fixed-delay.delay': 0 },
      );
      await h.start();
      const te = h.addExecutor('taskexecutor-a');
      await h.offer(te, 1);
      const a = h.submittedFor('a')[0]!;
      await h.report(a, 'running');
      await h.master.mailbox.callAsync(() => h.master.disconnectTaskManager(te, 'it holds no slot of the job'));
      await h.settle();
      const failed = h.events.filter((e): e is TaskEvent => e.type === 'task' && e.state === 'failed');
      expect(failed.map((e) => [e.vertexId, e.attemptNumber])).to.deep.equal([['a', 0]]);
      expect(failed[0]!.error?.message).to.contain(`TaskExecutor ${te} let go of the job`);
      await h.advance(0);
      expect(await h.master.mailbox.callAsync(() => h.master.offerSlots(te, offersOf(1)))).to.deep.equal([]);
      expect(await h.register(te)).to.deep.equal({ kind: 'accepted' });
      // One taken: a's restart is scheduled, b is not before a has finished (region scheduling).
      expect(await h.offer(te, 2)).to.have.length(1);
      expect(h.submittedFor('a').map((d) => d.attemptNumber)).to.deep.equal([0, 1]);
    },
  );

  it(
    'releases a TaskExecutor it finds unreachable at deploy, with every slot it held there: ' +
      'the restart asks for a new slot instead of spending itself on the dead one',
    async () => {
      const h = new Harness(
        { vertices: [vertex('src', 1), vertex('sink', 1)], edges: [edge('src', 'sink')] },
        { 'restart-strategy.fixed-delay.delay': 0, 'restart-strategy.fixed-delay.attempts': 1 },
      );
      await h.start();
      const te = h.addExecutor('taskexecutor-a');
      const [dead] = await h.offer(te, 1);
      const src = h.submittedFor('src')[0]!;
      await h.report(src, 'running');
      h.executors.delete(te); // its link closed; the ResourceManager has not said so yet
      await h.report(src, 'finished', { output: 1 });
      await h.advance(0);
      // The sink's next attempt waits for a slot: the dead one left the pool, and nothing was freed on it.
      expect(h.master.status).to.equal('running');
      expect(h.submittedFor('sink')).to.deep.equal([]);
      expect(h.lastDeclaration()).to.deep.equal({ UNKNOWN: 1 });
      expect(h.freed).to.deep.equal([]);
      // A late offer of the gone TaskExecutor is not taken either: it is not registered any more.
      expect(await h.master.mailbox.callAsync(() => h.master.offerSlots(te, offersOf(1)))).to.deep.equal([]);
      const other = h.addExecutor('taskexecutor-b');
      await h.offer(other, 1);
      const sink = h.submittedFor('sink')[0]!;
      expect(sink).to.deep.include({ attemptNumber: 1, inputs: { src: [1] } });
      expect(sink.allocationId).not.to.equal(dead);
      await h.finish(sink, 'ok');
      expect(await h.master.result).to.deep.include({ status: 'finished', restarts: 1 });
    },
  );

  it(
    'refuses a registration for another job or once the job ended, and malformed calls with ' +
      'IllegalArgumentError, registering nothing',
    async () => {
      const h = new Harness({ vertices: [vertex('only', 1)] });
      await h.start();
      const te = h.addExecutor('taskexecutor-a');
      const other = JobID.generate();
      const refused = await h.master.mailbox.callAsync(() => h.master.registerTaskManager(other, te));
      expect(refused).to.deep.equal({
        kind: 'refused',
        reason: `this JobMaster runs job ${h.master.jobId}, not ${other}`,
      });
      const call = (fn: () => Promise<unknown>) => h.master.mailbox.callAsync(fn).catch((e: unknown) => e);
      const badJob = await call(() => h.master.registerTaskManager('nope' as JobID, te));
      expect(badJob).to.be.instanceOf(IllegalArgumentError).with.nested.property('details.argument', 'jobId');
      const badId = await call(() => h.master.registerTaskManager(h.master.jobId, 'not a resource' as ResourceID));
      expect(badId).to.be.instanceOf(IllegalArgumentError).with.nested.property('details.argument', 'resourceId');
      const badOffers = await call(() => h.master.offerSlots(te, 'slots' as never));
      expect(badOffers).to.be.instanceOf(IllegalArgumentError).with.nested.property('details.argument', 'offers');
      const badProfile = await call(() =>
        h.master.offerSlots(te, [
          { allocationId: AllocationID.generate(), index: 0, resourceProfile: 'UNKNOWN' },
          { allocationId: AllocationID.generate(), index: 1, resourceProfile: { cpuCores: -1 } as never },
        ]),
      );
      expect(badProfile)
        .to.be.instanceOf(IllegalArgumentError)
        .with.nested.property('details.argument', 'offers[1].resourceProfile');
      const badCause = await call(() => h.master.disconnectTaskManager(te, 42 as never));
      expect(badCause).to.be.instanceOf(IllegalArgumentError).with.nested.property('details.argument', 'cause');
      // None of it registered the TaskExecutor, nor took a slot (a refused batch takes none of its offers).
      expect(await h.master.mailbox.callAsync(() => h.master.offerSlots(te, offersOf(1)))).to.deep.equal([]);
      expect(await h.offer(te, 1)).to.have.length(1);
      await h.finish(h.submittedFor('only')[0]!, 'done');
      await h.master.result;
      expect(await h.register(te)).to.deep.equal({ kind: 'refused', reason: 'job job is finished' });
    },
  );
});

function offersOf(count: number): SlotOfferWire[] {
  return Array.from({ length: count }, (_, index) => ({
    allocationId: AllocationID.generate(),
    index,
    resourceProfile: 'UNKNOWN',
  }));
}
