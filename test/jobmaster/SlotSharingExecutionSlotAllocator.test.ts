import { expect } from 'chai';
import { SimulatedClock } from '../../lib/core/clock.js';
import { IllegalArgumentError, SlotRequestError } from '../../lib/core/errors.js';
import { JobID } from '../../lib/core/ids.js';
import { ResourceProfile } from '../../lib/core/ResourceProfile.js';
import { ExecutionVertexID } from '../../lib/jobmaster/ExecutionGraph.js';
import { PhysicalSlotRequestBulkChecker } from '../../lib/jobmaster/slotsharing/PhysicalSlotRequestBulkChecker.js';
import type { LogicalSlotListener } from '../../lib/jobmaster/slotsharing/SharedSlot.js';
// biome-ignore format: the module's path leaves no room on one line for the name it imports
import {
  SlotSharingExecutionSlotAllocator,
} from '../../lib/jobmaster/slotsharing/SlotSharingExecutionSlotAllocator.js';
import { edge, isSettled, jobOf, outcome, rejection, settle, TestingPhysicalSlotProvider, vertex } from './support.js';

const id = (key: string) => ExecutionVertexID.parse(key);
const ids = (...keys: string[]) => keys.map(id);
const FIVE_MIN = 5 * 60_000;

/**
 * source (2) -> sink (2), pointwise, 1 core each: groups default[0] = {source#0, sink#0}, default[1] = {source#1,
 * sink#1}.
 */
function setup(options: { reason?: string; timeoutMs?: number; held?: ResourceProfile[] } = {}) {
  const { graph, strategy } = jobOf(
    [vertex('source', 2, { resources: { cpuCores: 1 } }), vertex('sink', 2, { resources: { cpuCores: 1 } })],
    [edge('source', 'sink')],
  );
  const provider = new TestingPhysicalSlotProvider();
  const clock = new SimulatedClock();
  const jobId = JobID.generate();
  const asked: string[][] = [];
  const bulkChecker = new PhysicalSlotRequestBulkChecker({
    clock,
    jobId,
    ...(options.reason === undefined
      ? {}
      : { reasonFor: (requestIds: readonly string[]) => (asked.push([...requestIds]), options.reason!) }),
    ...(options.held === undefined ? {} : { heldSlotProfiles: () => options.held! }),
  });
  const allocator = new SlotSharingExecutionSlotAllocator({
    jobId,
    strategy,
    provider,
    bulkChecker,
    allocationTimeoutMs: options.timeoutMs ?? FIVE_MIN,
  });
  return {
    graph,
    strategy,
    provider,
    clock,
    jobId,
    bulkChecker,
    allocator,
    asked,
    all: ids('source#0', 'source#1', 'sink#0', 'sink#1'),
  };
}

describe('SlotSharingExecutionSlotAllocator', () => {
  it('requests one physical slot per group, with the profile the group sums to', () => {
    const { allocator, provider, all } = setup();
    const slots = allocator.allocateSlotsFor(all);
    expect([...slots.keys()]).to.deep.equal(['source#0', 'source#1', 'sink#0', 'sink#1']);
    expect(provider.requests).to.have.length(2);
    expect(provider.requests.map((r) => r.requestId)).to.deep.equal(['default[0]/p1', 'default[1]/p2']);
    for (const request of provider.requests)
      expect(request.resourceProfile.equals(ResourceProfile.fromSpec({ cpuCores: 2 }))).to.equal(true);
  });

  it(
    'does not request again for another member of a group ' + 'that has a SharedSlot, nor for the same subtask twice',
    () => {
      const { allocator, provider } = setup();
      const first = allocator.allocateSlotsFor(ids('source#0'));
      const second = allocator.allocateSlotsFor(ids('sink#0', 'source#0'));
      expect(provider.requests).to.have.length(1);
      expect(second.get('source#0')).to.equal(first.get('source#0'));
      expect(allocator.sharedSlots.get('default[0]')!.logicalSlotCount).to.equal(2);
    },
  );

  it("gives every member its own logical slot on the group's physical slot once it arrives", async () => {
    const { allocator, provider, all } = setup();
    const slots = allocator.allocateSlotsFor(all);
    expect(await isSettled(slots.get('source#0')!)).to.equal(false);
    const physical0 = provider.fulfil('default[0]/p1');
    const physical1 = provider.fulfil('default[1]/p2');
    const [s0, s1, k0, k1] = await Promise.all(['source#0', 'source#1', 'sink#0', 'sink#1'].map((k) => slots.get(k)!));
    expect(s0!.allocationId).to.equal(physical0.allocationId);
    expect(k0!.allocationId).to.equal(physical0.allocationId);
    expect(s1!.allocationId).to.equal(physical1.allocationId);
    expect(k1!.physicalSlot).to.equal(physical1);
    expect(ExecutionVertexID.key(k0!.executionVertexId)).to.equal('sink#0');
    expect(k0!.groupId).to.equal('default[0]');
    expect(new Set([s0, s1, k0, k1].map((s) => s!.slotRequestId)).size).to.equal(4);
    expect([s0, k0].every((s) => s!.isAlive())).to.equal(true);
    // a later member of an allocated group gets its slot at once, without a request
    allocator.releaseLogicalSlot(id('sink#0'));
    expect((await allocator.allocateSlotsFor(ids('sink#0')).get('sink#0')!).allocationId).to.equal(
      physical0.allocationId,
    );
    expect(provider.requests).to.have.length(2);
  });

  it(
    'fails every logical slot of a group whose physical ' + 'request fails, and asks anew on the next allocate',
    async () => {
      const { allocator, provider, all } = setup();
      const slots = allocator.allocateSlotsFor(all);
      const cause = new SlotRequestError('never-satisfiable', 'no TaskExecutor can ever hold 2 cores', { jobId: 'x' });
      provider.fail('default[0]/p1', cause);
      expect(await outcome(slots.get('source#0')!)).to.deep.equal({ ok: false, error: cause });
      expect(await outcome(slots.get('sink#0')!)).to.deep.equal({ ok: false, error: cause });
      expect(allocator.sharedSlots.has('default[0]')).to.equal(false);
      expect(provider.released).to.deep.equal([]);

      allocator.allocateSlotsFor(ids('source#0'));
      expect(provider.requests.map((r) => r.requestId)).to.deep.equal([
        'default[0]/p1',
        'default[1]/p2',
        'default[0]/p3',
      ]);
    },
  );

  describe('a physical request of a bulk that fails (Flink clears the bulk)', () => {
    it(
      "fails the bulk's other waiting subtasks at once with " +
        'its cause, cancels their requests, and arms no timeout',
      async () => {
        const { allocator, provider, clock, bulkChecker, all } = setup({ reason: 'unused' });
        const slots = allocator.allocateSlotsFor(all);
        const cause = new SlotRequestError('never-satisfiable', 'no TaskExecutor can ever hold 2 cores', {
          jobId: 'x',
        });
        provider.fail('default[0]/p1', cause);
        await settle();
        for (const key of ['source#1', 'sink#1'])
          expect(await outcome(slots.get(key)!), key).to.deep.equal({ ok: false, error: cause });
        expect(provider.canceled).to.deep.equal([{ requestId: 'default[1]/p2', cause }]);
        expect(allocator.sharedSlots.size).to.equal(0);
        expect(bulkChecker.pendingBulks).to.equal(0);
        expect(clock.pendingTimers, 'no slot.request.timeout follows').to.equal(0);
      },
    );

    it('leaves the subtasks of the bulk whose slot came already: they keep it', async () => {
      const { allocator, provider, all } = setup();
      const slots = allocator.allocateSlotsFor(all);
      const physical = provider.fulfil('default[0]/p1');
      await settle();
      const cause = new Error('the slot pool gave up');
      provider.fail('default[1]/p2', cause);
      await settle();
      expect((await outcome(slots.get('source#0')!)).ok, 'its slot had come').to.equal(true);
      expect((await outcome(slots.get('sink#0')!)).ok).to.equal(true);
      expect(await outcome(slots.get('source#1')!)).to.deep.equal({ ok: false, error: cause });
      expect(provider.released).to.deep.equal([]);
      expect(provider.canceled).to.deep.equal([]);
      expect(allocator.sharedSlots.get('default[0]')!.state).to.deep.equal({ kind: 'allocated', slot: physical });
    });

    it('fails only the failing bulk: another bulk sharing a SharedSlot with it keeps waiting on it', async () => {
      const { allocator, provider } = setup();
      const first = allocator.allocateSlotsFor(ids('source#0', 'source#1'));
      const second = allocator.allocateSlotsFor(ids('sink#1'));
      const cause = new Error('no slot for default[0]');
      provider.fail('default[0]/p1', cause);
      await settle();
      expect(await outcome(first.get('source#1')!), 'the failing bulk fails at once').to.deep.equal({
        ok: false,
        error: cause,
      });
      expect(await isSettled(second.get('sink#1')!), 'sink#1 of the other bulk still waits on default[1]').to.equal(
        false,
      );
      const physical = provider.fulfil('default[1]/p2');
      expect((await second.get('sink#1')!).physicalSlot).to.equal(physical);
    });

    it('does not fail the others when the job gives a request up itself (a subtask canceled)', async () => {
      const { allocator, provider, clock, bulkChecker } = setup();
      const slots = allocator.allocateSlotsFor(ids('source#0', 'source#1'));
      expect(allocator.cancel(id('source#0'))).to.equal(true);
      await settle();
      expect(provider.canceled.map((c) => c.requestId)).to.deep.equal(['default[0]/p1']);
      expect(await isSettled(slots.get('source#1')!)).to.equal(false);
      expect(bulkChecker.pendingBulks, 'source#1 still times out if it never comes').to.equal(1);
      clock.increment(FIVE_MIN);
      expect((await rejection(slots.get('source#1')!)).message).to.match(
        /1 of 2 slot requests .* not fulfilled within slot.request.timeout/,
      );
    });
  });

  it('releases the physical slot exactly once, when the last logical slot of the group is released', async () => {
    const { allocator, provider } = setup();
    const slots = allocator.allocateSlotsFor(ids('source#0', 'sink#0'));
    const physical = provider.fulfil('default[0]/p1');
    const source = await slots.get('source#0')!;
    expect(allocator.releaseLogicalSlot(id('source#0'))).to.equal(true);
    expect(source.isAlive()).to.equal(false);
    expect(provider.released).to.deep.equal([]);
    expect(allocator.releaseLogicalSlot(id('source#0')), 'second release').to.equal(false);
    expect(allocator.releaseLogicalSlot(id('sink#0'))).to.equal(true);
    expect(provider.released.map((r) => r.slot)).to.deep.equal([physical]);
    expect(allocator.releaseLogicalSlot(id('sink#0'))).to.equal(false);
    expect(provider.released).to.have.length(1);
    expect(provider.canceled).to.deep.equal([]);
    expect(allocator.sharedSlots.size).to.equal(0);
  });

  it('releases once when the slot is lost and the last logical slot is returned in the same turn', async () => {
    const { allocator, provider } = setup();
    const slots = allocator.allocateSlotsFor(ids('source#0', 'sink#0'));
    const physical = provider.fulfil('default[0]/p1');
    const [source, sink] = await Promise.all([slots.get('source#0')!, slots.get('sink#0')!]);
    allocator.releaseLogicalSlot(id('source#0'));
    const lost = new Error('TaskExecutor taskexecutor-1 is gone');
    expect(allocator.releasePhysicalSlot(physical.allocationId, lost)).to.equal(true);
    expect(allocator.releaseLogicalSlot(id('sink#0'))).to.equal(false);
    expect(allocator.releasePhysicalSlot(physical.allocationId, lost)).to.equal(false);
    expect(provider.released).to.have.length(1);
    expect(provider.released[0]!.cause).to.equal(lost);
    expect(await sink.released).to.equal(lost);
    expect(sink.isAlive()).to.equal(false);
    expect(await source.released).to.be.instanceOf(SlotRequestError);
  });

  it('cancels a waiting logical slot; the physical request is canceled only when no member still waits', async () => {
    const { allocator, provider, jobId } = setup();
    const slots = allocator.allocateSlotsFor(ids('source#0', 'sink#0'));
    expect(allocator.cancel(id('source#0'))).to.equal(true);
    const canceled = (await rejection(slots.get('source#0')!)) as SlotRequestError;
    expect(canceled).to.be.instanceOf(SlotRequestError).and.include({ reason: 'canceled' });
    expect(canceled.details).to.include({ jobId, executionVertexId: 'source#0' });
    expect(provider.canceled).to.deep.equal([]);

    expect(allocator.cancel(id('sink#0'))).to.equal(true);
    expect(provider.canceled.map((c) => c.requestId)).to.deep.equal(['default[0]/p1']);
    expect(allocator.cancel(id('sink#0')), 'cancel twice').to.equal(false);
    expect(provider.canceled).to.have.length(1);
    expect(allocator.sharedSlots.size).to.equal(0);
  });

  it('gives back a physical slot the provider delivers after its request was canceled', async () => {
    const { allocator, provider } = setup();
    provider.rejectOnCancel = false;
    allocator.allocateSlotsFor(ids('source#0'));
    allocator.cancel(id('source#0'));
    const late = provider.fulfil('default[0]/p1');
    await settle();
    expect(provider.released.map((r) => r.slot)).to.deep.equal([late]);
  });

  it(
    'leaves a logical slot already handed out alone on ' + 'cancel (Flink): it is returned with releaseLogicalSlot',
    async () => {
      const { allocator, provider } = setup();
      const slots = allocator.allocateSlotsFor(ids('source#0'));
      provider.fulfil('default[0]/p1');
      const slot = await slots.get('source#0')!;
      expect(allocator.cancel(id('source#0'))).to.equal(false);
      expect(slot.isAlive()).to.equal(true);
      expect(provider.released).to.deep.equal([]);
    },
  );

  it('requests again for a group whose SharedSlot was released (a restarted subtask)', async () => {
    const { allocator, provider } = setup();
    allocator.allocateSlotsFor(ids('source#0'));
    provider.fulfil('default[0]/p1');
    await settle();
    allocator.releaseLogicalSlot(id('source#0'));
    allocator.allocateSlotsFor(ids('source#0'));
    expect(provider.requests.map((r) => r.requestId)).to.deep.equal(['default[0]/p1', 'default[0]/p2']);
  });

  it('refuses a subtask the job does not have and requests nothing', () => {
    const { allocator, provider } = setup();
    expect(() => allocator.allocateSlotsFor(ids('source#0', 'map#0'))).to.throw(
      IllegalArgumentError,
      /subtask map#0 is in no ExecutionSlotSharingGroup/,
    );
    expect(provider.requests).to.deep.equal([]);
  });

  it('requestSlotsFor: one physical request per group and one bulk, each slot told with its token', async () => {
    const { allocator, provider, bulkChecker, all } = setup();
    const heard: string[] = [];
    const listener: LogicalSlotListener<string> = {
      slotReady: (token, slot) => void heard.push(`${token} ${slot.allocationId}`),
      slotFailed: (token, cause) => void heard.push(`${token} failed: ${cause.message}`),
    };
    allocator.requestSlotsFor(
      all.map((subtask) => ({ id: subtask, token: ExecutionVertexID.key(subtask) })),
      listener,
    );
    expect(provider.requests.map((r) => r.requestId)).to.deep.equal(['default[0]/p1', 'default[1]/p2']);
    expect(bulkChecker.pendingBulks).to.equal(1);
    const physical = provider.fulfil('default[0]/p1');
    await settle();
    expect(heard).to.deep.equal([`source#0 ${physical.allocationId}`, `sink#0 ${physical.allocationId}`]);
    provider.fail('default[1]/p2', new Error('no room'));
    await settle();
    expect(heard.slice(2)).to.deep.equal(['source#1 failed: no room', 'sink#1 failed: no room']);
    // An unknown subtask is refused before anything is asked for.
    expect(() => allocator.requestSlotsFor([{ id: id('map#0'), token: 'map' }], listener)).to.throw(
      IllegalArgumentError,
      /subtask map#0 is in no ExecutionSlotSharingGroup/,
    );
    expect(provider.requests).to.have.length(2);
  });

  it('asks once for a subtask named twice in one call, with its last token, where it was first named', async () => {
    const { allocator, provider } = setup();
    const heard: string[] = [];
    const listener: LogicalSlotListener<string> = {
      slotReady: (token) => void heard.push(token),
      slotFailed: (token) => void heard.push(`${token} failed`),
    };
    allocator.requestSlotsFor(
      [
        { id: id('source#0'), token: 'source#0 first' },
        { id: id('sink#0'), token: 'sink#0' },
        { id: id('source#0'), token: 'source#0 last' },
      ],
      listener,
    );
    expect(allocator.sharedSlots.get('default[0]')!.logicalSlotCount).to.equal(2);
    provider.fulfil('default[0]/p1');
    await settle();
    expect(heard).to.deep.equal(['source#0 last', 'sink#0']);
  });

  it('releaseAll fails waiting slots, releases held ones, and cancels each physical request once', async () => {
    const { allocator, provider, all } = setup();
    const slots = allocator.allocateSlotsFor(all);
    const physical = provider.fulfil('default[0]/p1');
    const held = await slots.get('source#0')!;
    const done = new Error('job finished');
    allocator.releaseAll(done);
    expect(await held.released).to.equal(done);
    expect(await outcome(slots.get('sink#1')!)).to.deep.equal({ ok: false, error: done });
    expect(provider.released.map((r) => r.slot)).to.deep.equal([physical]);
    expect(provider.canceled.map((c) => c.requestId)).to.deep.equal(['default[1]/p2']);
  });

  describe('bulk timeout (slot.request.timeout on a simulated clock)', () => {
    it(
      'fails a bulk still unfulfilled at the deadline with ' +
        "SlotRequestError 'timed-out' carrying the SlotManager's reason",
      async () => {
        const reason = 'no TaskExecutor has room: closest taskexecutor-1 (cpuCores available 1, required 2)';
        const { allocator, provider, clock, asked, jobId, all } = setup({ reason });
        const slots = allocator.allocateSlotsFor(all);
        provider.fulfil('default[0]/p1');
        await settle();
        clock.increment(FIVE_MIN - 1);
        expect(await isSettled(slots.get('source#1')!)).to.equal(false);
        clock.increment(1);
        const error = (await rejection(slots.get('source#1')!)) as SlotRequestError;
        expect(error).to.be.instanceOf(SlotRequestError);
        expect(error.reason).to.equal('timed-out');
        expect(error.message).to.equal(
          `1 of 2 slot requests of job ${jobId} not fulfilled within slot.request.timeout (5 min): ${reason}`,
        );
        expect(error.details).to.deep.include({
          jobId,
          why: reason,
          timeoutMs: FIVE_MIN,
          requestIds: ['default[1]/p2'],
        });
        expect(asked).to.deep.equal([['default[1]/p2']]);
        expect((await outcome(slots.get('sink#1')!)).ok).to.equal(false);
        // the fulfilled group keeps its slots; the timed-out group's request is canceled
        expect((await outcome(slots.get('sink#0')!)).ok).to.equal(true);
        expect(provider.canceled.map((c) => c.requestId)).to.deep.equal(['default[1]/p2']);
      },
    );

    it('does not fail a bulk whose requests all got slots, and leaves no timer behind', async () => {
      const { allocator, provider, clock, bulkChecker, all } = setup({ reason: 'unused' });
      const slots = allocator.allocateSlotsFor(all);
      expect(bulkChecker.pendingBulks).to.equal(1);
      provider.fulfil('default[0]/p1');
      provider.fulfil('default[1]/p2');
      await settle();
      expect(bulkChecker.pendingBulks).to.equal(0);
      expect(clock.pendingTimers).to.equal(0);
      clock.increment(FIVE_MIN * 2);
      for (const promise of slots.values()) expect((await outcome(promise)).ok).to.equal(true);
      expect(provider.canceled).to.deep.equal([]);
    });

    it('arms no timer for a bulk served entirely by SharedSlots that hold their slot already', async () => {
      const { allocator, provider, clock, bulkChecker } = setup();
      allocator.allocateSlotsFor(ids('source#0'));
      provider.fulfil('default[0]/p1');
      await settle();
      allocator.allocateSlotsFor(ids('sink#0'));
      expect(bulkChecker.pendingBulks).to.equal(0);
      expect(clock.pendingTimers).to.equal(0);
    });

    it(
      'keeps a bulk that a slot the job holds can serve ' + '(it waits for its turn), checking again each timeout',
      async () => {
        const held: ResourceProfile[] = [];
        const { allocator, provider, clock, bulkChecker, all } = setup({ reason: 'no room', held });
        const slots = allocator.allocateSlotsFor(all);
        held.push(provider.fulfil('default[0]/p1').resourceProfile);
        await settle();
        clock.increment(FIVE_MIN * 3);
        expect(await isSettled(slots.get('source#1')!)).to.equal(false);
        expect(bulkChecker.pendingBulks).to.equal(1);
        expect(clock.pendingTimers).to.equal(1);
        // The job's slot is gone and nothing can serve the bulk any more: it fails one whole timeout later.
        held.length = 0;
        clock.increment(FIVE_MIN);
        expect(await isSettled(slots.get('source#1')!)).to.equal(false);
        clock.increment(FIVE_MIN);
        const error = (await rejection(slots.get('source#1')!)) as SlotRequestError;
        expect(error.reason).to.equal('timed-out');
        expect(error.details).to.deep.include({ why: 'no room', requestIds: ['default[1]/p2'] });
      },
    );

    it('fails a bulk that no held slot matches at its deadline, though the job holds slots', async () => {
      const held = [ResourceProfile.fromSpec({ cpuCores: 1 })];
      const { allocator, clock, all } = setup({ reason: 'no room', held });
      const slots = allocator.allocateSlotsFor(all);
      clock.increment(FIVE_MIN);
      expect(((await rejection(slots.get('source#0')!)) as SlotRequestError).reason).to.equal('timed-out');
    });

    it('uses a default reason when none is given, and close() clears every timer', async () => {
      const { allocator, clock, bulkChecker } = setup();
      const slots = allocator.allocateSlotsFor(ids('source#0'));
      clock.increment(FIVE_MIN);
      expect((await rejection(slots.get('source#0')!)).message).to.match(/: no slot was offered for it$/);
      allocator.allocateSlotsFor(ids('source#1'));
      expect(clock.pendingTimers).to.equal(1);
      bulkChecker.close();
      expect(clock.pendingTimers).to.equal(0);
    });
  });
});
