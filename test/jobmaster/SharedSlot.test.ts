import { expect } from 'chai';
import { IllegalStateError } from '../../lib/core/errors.js';
import { JobID } from '../../lib/core/ids.js';
import { ExecutionVertexID } from '../../lib/jobmaster/ExecutionGraph.js';
import { SharedSlot } from '../../lib/jobmaster/slotsharing/SharedSlot.js';
// biome-ignore format: the module's path leaves no room on one line for the name it imports
import {
  SlotSharingExecutionSlotAllocator,
} from '../../lib/jobmaster/slotsharing/SlotSharingExecutionSlotAllocator.js';
import { edge, isSettled, jobOf, rejection, settle, TestingPhysicalSlotProvider, vertex } from './support.js';

const id = (key: string) => ExecutionVertexID.parse(key);

/** A SharedSlot for group default[0] = {source#0, sink#0}, counting its onReleased calls. */
function sharedSlot() {
  const { strategy } = jobOf([vertex('source', 1), vertex('sink', 1)], [edge('source', 'sink')]);
  const provider = new TestingPhysicalSlotProvider();
  const releasedCalls: SharedSlot[] = [];
  let n = 0;
  const slot = new SharedSlot({
    requestId: 'r1',
    group: strategy.getExecutionSlotSharingGroups()[0]!,
    provider,
    onReleased: (s) => releasedCalls.push(s),
    nextLogicalId: () => `l${++n}`,
  });
  return { slot, provider, releasedCalls };
}

describe('SharedSlot', () => {
  it(
    'requests its physical slot at once with the group ' + 'profile, and moves requested -> allocated -> released',
    async () => {
      const { slot, provider, releasedCalls } = sharedSlot();
      expect(provider.requests.map((r) => r.requestId)).to.deep.equal(['r1']);
      expect(slot.state.kind).to.equal('requested');
      const logical = slot.allocateLogicalSlot(id('source#0'));
      const physical = provider.fulfil('r1');
      expect((await logical).physicalSlot).to.equal(physical);
      expect(slot.state).to.deep.equal({ kind: 'allocated', slot: physical });
      expect(await slot.allocated).to.equal(physical);
      slot.returnLogicalSlot(id('source#0'), new Error('done'));
      expect(slot.state.kind).to.equal('released');
      expect(releasedCalls).to.deep.equal([slot]);
    },
  );

  it('hands the same promise to a subtask that asks twice', () => {
    const { slot } = sharedSlot();
    expect(slot.allocateLogicalSlot(id('sink#0'))).to.equal(slot.allocateLogicalSlot(id('sink#0')));
    expect(slot.logicalSlotCount).to.equal(1);
  });

  it('releases exactly once, whichever path comes first: return, loss, return again', async () => {
    const { slot, provider, releasedCalls } = sharedSlot();
    const [a, b] = [slot.allocateLogicalSlot(id('source#0')), slot.allocateLogicalSlot(id('sink#0'))];
    provider.fulfil('r1');
    const [sourceSlot, sinkSlot] = await Promise.all([a, b]);
    const lost = new Error('lost');
    slot.returnLogicalSlot(id('source#0'), new Error('finished'));
    slot.release(lost);
    slot.release(lost);
    expect(slot.returnLogicalSlot(id('sink#0'), new Error('finished'))).to.equal(false);
    expect(provider.released).to.have.length(1);
    expect(releasedCalls).to.have.length(1);
    expect(await sinkSlot.released).to.equal(lost);
    expect((await sourceSlot.released).message).to.equal('finished');
  });

  it('ignores its own cancel coming back as a failed request: canceled once, not failed twice', async () => {
    const { slot, provider, releasedCalls } = sharedSlot();
    const logical = slot.allocateLogicalSlot(id('source#0'));
    const cause = new Error('not needed');
    expect(slot.cancelLogicalSlotRequest(id('source#0'), cause)).to.equal(true);
    await settle();
    expect(await rejection(logical)).to.equal(cause);
    expect(await rejection(slot.allocated)).to.equal(cause);
    expect(provider.canceled.map((c) => c.requestId)).to.deep.equal(['r1']);
    expect(provider.released).to.deep.equal([]);
    expect(releasedCalls).to.have.length(1);
  });

  it('release() while the request waits cancels the request and fails the waiting subtasks', async () => {
    const { slot, provider } = sharedSlot();
    const logical = slot.allocateLogicalSlot(id('sink#0'));
    const cause = new Error('job canceled');
    slot.release(cause);
    expect(await rejection(logical)).to.equal(cause);
    expect(provider.canceled).to.have.length(1);
    expect(provider.released).to.have.length(0);
  });

  it('treats a provider that throws like one that rejects: the waiting subtasks fail with its error', async () => {
    const { strategy } = jobOf([vertex('source', 1)]);
    const boom = new Error('pool closed');
    const provider = Object.assign(new TestingPhysicalSlotProvider(), {
      allocatePhysicalSlot: () => {
        throw boom;
      },
    });
    const slot = new SharedSlot({
      requestId: 'r1',
      group: strategy.getExecutionSlotSharingGroups()[0]!,
      provider,
      onReleased: () => {},
      nextLogicalId: () => 'l1',
    });
    expect(await rejection(slot.allocateLogicalSlot(id('source#0')))).to.equal(boom);
    expect(slot.state).to.deep.equal({ kind: 'released', cause: boom, requestFailed: true });
  });

  it('refuses a logical slot once released', () => {
    const { slot } = sharedSlot();
    slot.release(new Error('gone'));
    expect(() => slot.allocateLogicalSlot(id('source#0'))).to.throw(
      IllegalStateError,
      /SharedSlot r1 of group default\[0\] is released/,
    );
  });

  it('never leaves an unhandled rejection behind when nobody awaits a failed logical slot', async () => {
    const { slot, provider } = sharedSlot();
    slot.allocateLogicalSlot(id('source#0'));
    let unhandled = 0;
    const onUnhandled = () => unhandled++;
    process.on('unhandledRejection', onUnhandled);
    try {
      provider.fail('r1', new Error('no slot'));
      await new Promise((resolve) => setImmediate(resolve));
      expect(unhandled).to.equal(0);
    } finally {
      process.off('unhandledRejection', onUnhandled);
    }
  });

  it('lets a provider that re-enters the allocator from releaseSlot find a fresh SharedSlot', async () => {
    const { strategy } = jobOf([vertex('source', 1), vertex('sink', 1)], [edge('source', 'sink')]);
    const provider = new TestingPhysicalSlotProvider();
    const allocator = new SlotSharingExecutionSlotAllocator({ jobId: JobID.generate(), strategy, provider });
    const first = allocator.allocateSlotsFor([id('source#0')]).get('source#0')!;
    provider.fulfil('default[0]/p1');
    await first;
    let again: Promise<unknown> | undefined;
    provider.onRelease = () => (again = allocator.allocateSlotsFor([id('sink#0')]).get('sink#0'));
    allocator.releaseLogicalSlot(id('source#0'));
    expect(again).to.not.equal(undefined);
    expect(provider.requests.map((r) => r.requestId)).to.deep.equal(['default[0]/p1', 'default[0]/p2']);
    expect(await isSettled(again!)).to.equal(false);
  });
});
