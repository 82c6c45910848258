import { expect } from 'chai';
import { IllegalStateError } from '../../lib/core/errors.js';
import { JobID } from '../../lib/core/ids.js';
import { ExecutionVertexID } from '../../lib/jobmaster/ExecutionGraph.js';
import { type LogicalSlot, type LogicalSlotListener, SharedSlot } from '../../lib/jobmaster/slotsharing/SharedSlot.js';
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
  it('tells its physical request observers once, after its waiting subtasks heard; none once it settled', async () => {
    const { slot, provider } = sharedSlot();
    const heard: string[] = [];
    const observer = { physicalRequestSettled: (s: SharedSlot) => heard.push(`settled ${s.state.kind}`) };
    slot.observePhysicalRequest(observer);
    slot.observePhysicalRequest(observer);
    slot.requestLogicalSlot(id('source#0'), { slotReady: () => heard.push('ready'), slotFailed: () => {} }, null);
    provider.fulfil('r1');
    await settle();
    expect(heard).to.deep.equal(['ready', 'settled allocated', 'settled allocated']);
    slot.observePhysicalRequest(observer);
    slot.release(new Error('gone'));
    expect(heard).to.have.length(3);

    const failing = sharedSlot();
    failing.slot.observePhysicalRequest(observer);
    failing.provider.fail('r1', new Error('no slot'));
    await settle();
    expect(heard.slice(3)).to.deep.equal(['settled released']);
  });

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

  it("tells a logical slot's release to who waited for it before, and the first cause to who asks after", async () => {
    const { slot, provider } = sharedSlot();
    const held = slot.allocateLogicalSlot(id('source#0'));
    provider.fulfil('r1');
    const logical = await held;
    expect(logical.isAlive()).to.equal(true);
    const waited = logical.released;
    expect(await isSettled(waited)).to.equal(false);
    expect(logical.released, 'the same promise while it waits').to.equal(waited);
    const finished = new Error('finished');
    slot.returnLogicalSlot(id('source#0'), finished);
    slot.release(new Error('lost later'));
    expect(logical.isAlive()).to.equal(false);
    expect(await waited).to.equal(finished);
    expect(await logical.released).to.equal(finished);
    expect(Object.isFrozen(logical)).to.equal(true);
  });

  it('ignores its own cancel coming back as a failed request: canceled once, not failed twice', async () => {
    const { slot, provider, releasedCalls } = sharedSlot();
    const logical = slot.allocateLogicalSlot(id('source#0'));
    const cause = new Error('not needed');
    expect(slot.cancelLogicalSlotRequest(id('source#0'), cause)).to.equal(true);
    await settle();
    expect(await rejection(logical)).to.equal(cause);
    expect(slot.state).to.deep.equal({ kind: 'released', cause, requestFailed: false });
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
      requestPhysicalSlot: () => {
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

  describe('requests told to a listener (no promise per subtask)', () => {
    /** A listener recording what each token heard, in order. */
    function recorder() {
      const heard: Array<[string, string, LogicalSlot | Error]> = [];
      const listener: LogicalSlotListener<string> = {
        slotReady: (token, slot) => void heard.push([token, 'ready', slot]),
        slotFailed: (token, cause) => void heard.push([token, 'failed', cause]),
      };
      return { heard, listener };
    }

    it('tells each waiting subtask its slot with its token when the physical slot comes, at once after', async () => {
      const { slot, provider } = sharedSlot();
      const { heard, listener } = recorder();
      slot.requestLogicalSlot(id('source#0'), listener, 'a');
      expect(heard).to.deep.equal([]);
      const physical = provider.fulfil('r1');
      await settle();
      expect(heard.map(([token, what]) => `${token}:${what}`)).to.deep.equal(['a:ready']);
      expect((heard[0]![2] as LogicalSlot).physicalSlot).to.equal(physical);
      expect((heard[0]![2] as LogicalSlot).executionVertexId).to.deep.equal(id('source#0'));
      // Allocated: a new subtask hears during the call; one that holds its slot already hears the same slot.
      slot.requestLogicalSlot(id('sink#0'), listener, 'b');
      slot.requestLogicalSlot(id('source#0'), listener, 'c');
      expect(heard.map(([token, what]) => `${token}:${what}`)).to.deep.equal(['a:ready', 'b:ready', 'c:ready']);
      expect(heard[2]![2]).to.equal(heard[0]![2]);
      expect(slot.logicalSlotCount).to.equal(2);
    });

    it('tells a second request for a waiting subtask with the first, and a promise asked for it too', async () => {
      const { slot, provider } = sharedSlot();
      const { heard, listener } = recorder();
      slot.requestLogicalSlot(id('sink#0'), listener, 'first');
      slot.requestLogicalSlot(id('sink#0'), listener, 'second');
      const promised = slot.allocateLogicalSlot(id('sink#0'));
      expect(slot.logicalSlotCount).to.equal(1);
      provider.fulfil('r1');
      await settle();
      expect(heard.map(([token]) => token)).to.deep.equal(['first', 'second']);
      expect(await promised).to.equal(heard[0]![2]);
      expect(slot.allocateLogicalSlot(id('sink#0'))).to.equal(promised);
    });

    it('tells the failure with the token: a failed request, a cancel, a release', async () => {
      const failed = sharedSlot();
      const one = recorder();
      failed.slot.requestLogicalSlot(id('source#0'), one.listener, 'x');
      const noSlot = new Error('no slot');
      failed.provider.fail('r1', noSlot);
      await settle();
      expect(one.heard).to.deep.equal([['x', 'failed', noSlot]]);

      const canceled = sharedSlot();
      const two = recorder();
      canceled.slot.requestLogicalSlot(id('source#0'), two.listener, 'y');
      canceled.slot.requestLogicalSlot(id('sink#0'), two.listener, 'z');
      const cause = new Error('not needed');
      expect(canceled.slot.cancelLogicalSlotRequest(id('source#0'), cause)).to.equal(true);
      expect(two.heard).to.deep.equal([['y', 'failed', cause]]);
      const lost = new Error('lost');
      canceled.slot.release(lost);
      expect(two.heard).to.deep.equal([
        ['y', 'failed', cause],
        ['z', 'failed', lost],
      ]);
      expect(() => canceled.slot.requestLogicalSlot(id('sink#0'), two.listener, 'late')).to.throw(
        IllegalStateError,
        /is released/,
      );
    });
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
