/**
 * The JobMaster's slot pool alone (pure: a simulated clock, no threads): slots offered to pending
 * requests, slots the job's subtasks gave back reused for its next requests, kept idle for
 * slot.idle.timeout and only then given back, and what the job declares all along.
 */
import { expect } from 'chai';
import { SimulatedClock } from '../../lib/core/clock.js';
import { IllegalStateError } from '../../lib/core/errors.js';
import { AllocationID, ResourceID } from '../../lib/core/ids.js';
import { ResourceProfile, type ResourceSpec } from '../../lib/core/ResourceProfile.js';
import { JobSlotPool, type SlotOffer } from '../../lib/jobmaster/JobSlotPool.js';
import type { PhysicalSlot, PhysicalSlotListener } from '../../lib/jobmaster/slotsharing/SharedSlot.js';
import { isSettled, outcome, physicalSlotOf, settle } from './support.js';

const IDLE_MS = 50_000;
const DEFAULT: ResourceSpec = { cpuCores: 1, taskHeapMemory: '128m' };
const BIG: ResourceSpec = { cpuCores: 2, taskHeapMemory: '512m' };
const executor = ResourceID.parse('taskexecutor-a');

function setup(idleSlotTimeoutMs = IDLE_MS) {
  const clock = new SimulatedClock(0);
  const freed: Array<{ slot: PhysicalSlot; cause: Error }> = [];
  let changes = 0;
  /** Whether each change was urgent (declared at once) or may wait (DECREASE_WINDOW_MS). */
  const urgency: boolean[] = [];
  const pool = new JobSlotPool({
    clock,
    idleSlotTimeoutMs,
    onRequirementsChanged: (urgent) => (changes++, urgency.push(urgent)),
    freeSlot: (slot, cause) => freed.push({ slot, cause }),
  });
  let next = 0;
  const request = (spec?: ResourceSpec) =>
    physicalSlotOf(pool, {
      requestId: `r${++next}`,
      resourceProfile: spec === undefined ? ResourceProfile.UNKNOWN : ResourceProfile.fromSpec(spec),
    });
  const offer = (count: number, spec: ResourceSpec = DEFAULT, restarting = false): AllocationID[] => {
    const offers: SlotOffer[] = Array.from({ length: count }, () => ({
      allocationId: AllocationID.generate(),
      resourceProfile: ResourceProfile.fromSpec(spec),
    }));
    return pool.offerSlots(executor, offers, { restarting });
  };
  /** What the job declares: profile (UNKNOWN as 'UNKNOWN') → count. */
  const declared = () =>
    Object.fromEntries(
      pool
        .requirements()
        .map((r) => [
          ResourceProfile.fromJSON(r.resourceProfile).isUnknown()
            ? 'UNKNOWN'
            : ResourceProfile.fromJSON(r.resourceProfile).toString(),
          r.numberOfRequiredSlots,
        ]),
    );
  return { clock, pool, freed, request, offer, declared, changes: () => changes, urgency };
}

describe('JobSlotPool', () => {
  it('tells a request how it ended in a microtask after the call, never during it, as a promise would', async () => {
    const { pool, offer } = setup();
    const heard: string[] = [];
    const listener: PhysicalSlotListener<string> = {
      physicalSlotReady: (token, slot) => heard.push(`${token}: ${slot.resourceId}`),
      physicalSlotFailed: (token, cause) => heard.push(`${token}: ${cause.message}`),
    };
    const ask = (requestId: string) =>
      pool.requestPhysicalSlot({ requestId, resourceProfile: ResourceProfile.UNKNOWN }, listener, requestId);
    ask('a');
    ask('b');
    offer(1);
    pool.cancelSlotRequest('b', new Error('not needed'));
    expect(heard).to.deep.equal([]);
    await Promise.resolve();
    expect(heard).to.deep.equal([`a: ${executor}`, 'b: not needed']);
    pool.close(new Error('the job ended'));
    ask('c');
    expect(heard).to.have.length(2);
    await Promise.resolve();
    expect(heard[2]).to.equal("c: the job's slot pool is closed");
  });

  it(
    'gives an offered slot to the oldest pending request ' + 'it matches, and accepts only what a request wants',
    async () => {
      const { pool, request, offer, declared } = setup();
      const unknown = request();
      const big = request(BIG);
      expect(declared()).to.deep.equal({ UNKNOWN: 1, [ResourceProfile.fromSpec(BIG).toString()]: 1 });
      // A default slot serves the UNKNOWN request only; a second one finds nothing to serve.
      expect(offer(2)).to.have.length(1);
      expect((await unknown).resourceProfile.equals(ResourceProfile.fromSpec(DEFAULT))).to.equal(true);
      expect(await isSettled(big)).to.equal(false);
      expect(offer(1, BIG)).to.have.length(1);
      expect((await big).resourceProfile.equals(ResourceProfile.fromSpec(BIG))).to.equal(true);
      // Held slots stay declared under the profile they were asked with.
      expect(declared()).to.deep.equal({ UNKNOWN: 1, [ResourceProfile.fromSpec(BIG).toString()]: 1 });
      expect(pool.pendingRequests).to.equal(0);
    },
  );

  it(
    'hands a slot its subtasks gave back to the job’s ' + 'next pending request, without a new slot or a free',
    async () => {
      const { pool, request, offer, freed, declared } = setup();
      const first = request();
      const second = request();
      const third = request();
      expect(declared()).to.deep.equal({ UNKNOWN: 3 });
      offer(1);
      const slot = await first;
      pool.releaseSlot(slot, new Error('its subtask finished'));
      // The same slot serves the next request, in request order; the declaration drops by the request it served.
      expect((await second).allocationId).to.equal(slot.allocationId);
      expect(await isSettled(third)).to.equal(false);
      expect(declared()).to.deep.equal({ UNKNOWN: 2 });
      pool.releaseSlot(slot, new Error('its subtask finished'));
      expect((await third).allocationId).to.equal(slot.allocationId);
      expect(declared()).to.deep.equal({ UNKNOWN: 1 });
      expect(pool.reusedSlots).to.equal(2);
      expect(freed).to.deep.equal([]);
    },
  );

  it('a new request takes an idle slot at once; a slot does not serve a profile it does not match', async () => {
    const { pool, request, offer, freed, declared } = setup();
    const first = request();
    offer(1);
    const slot = await first;
    pool.releaseSlot(slot, new Error('done'));
    expect(pool.idleSlots).to.equal(1);
    // Still held, still declared: the ResourceManager does not see it as spare.
    expect(declared()).to.deep.equal({ UNKNOWN: 1 });
    const big = request(BIG);
    expect(await isSettled(big)).to.equal(false);
    expect(pool.idleSlots).to.equal(1);
    const again = request();
    expect((await again).allocationId).to.equal(slot.allocationId);
    expect(pool.idleSlots).to.equal(0);
    expect(declared()).to.deep.equal({ UNKNOWN: 1, [ResourceProfile.fromSpec(BIG).toString()]: 1 });
    expect(freed).to.deep.equal([]);
  });

  it(
    'an idle slot counts as what it serves next: a default slot ' +
      'reused for an exact request is declared under that profile',
    async () => {
      const { pool, request, offer, declared } = setup();
      const first = request();
      offer(1);
      const slot = await first;
      pool.releaseSlot(slot, new Error('done'));
      const exact = request(DEFAULT);
      expect((await exact).allocationId).to.equal(slot.allocationId);
      expect(declared()).to.deep.equal({ [ResourceProfile.fromSpec(DEFAULT).toString()]: 1 });
    },
  );

  it('gives an idle slot back after slot.idle.timeout, and only then declares one fewer', async () => {
    const { clock, pool, request, offer, freed, declared } = setup();
    const [a, b] = [request(), request()];
    offer(2);
    const [slotA, slotB] = await Promise.all([a, b]);
    pool.releaseSlot(slotA, new Error('done'));
    clock.increment(20_000);
    pool.releaseSlot(slotB, new Error('done'));
    clock.increment(IDLE_MS - 20_000 - 1);
    expect(freed).to.deep.equal([]);
    expect(declared()).to.deep.equal({ UNKNOWN: 2 });
    clock.increment(1);
    expect(freed.map((f) => f.slot.allocationId)).to.deep.equal([slotA.allocationId]);
    expect(freed[0]!.cause.message).to.match(/slot\.idle\.timeout \(50000 ms\)/);
    expect(declared()).to.deep.equal({ UNKNOWN: 1 });
    // Used again before its timeout: B is not given back.
    const c = request();
    expect((await c).allocationId).to.equal(slotB.allocationId);
    clock.increment(IDLE_MS);
    expect(freed).to.have.length(1);
    expect(clock.pendingTimers).to.equal(0);
  });

  it('with slot.idle.timeout 0, gives a slot back as soon as nothing waits for it', async () => {
    const { pool, request, offer, freed, declared } = setup(0);
    const a = request();
    offer(1);
    const slot = await a;
    pool.releaseSlot(slot, new Error('done'));
    expect(freed.map((f) => f.slot.allocationId)).to.deep.equal([slot.allocationId]);
    expect(declared()).to.deep.equal({});
  });

  it('forgets a lost slot, idle or busy, without freeing it', async () => {
    const { pool, request, offer, freed, declared, clock } = setup();
    const [a, b] = [request(), request()];
    offer(2);
    const [slotA, slotB] = await Promise.all([a, b]);
    pool.releaseSlot(slotA, new Error('done'));
    expect(pool.slotLost(slotA.allocationId)?.allocationId).to.equal(slotA.allocationId);
    expect(pool.slotLost(slotB.allocationId)?.allocationId).to.equal(slotB.allocationId);
    expect(pool.slotLost(slotB.allocationId)).to.equal(undefined);
    expect(pool.idleSlots).to.equal(0);
    expect(declared()).to.deep.equal({});
    clock.increment(IDLE_MS);
    expect(freed).to.deep.equal([]);
  });

  it('close fails what waits and gives back every held slot, busy and idle; later requests are refused', async () => {
    const { pool, request, offer, freed } = setup();
    const [a, b] = [request(), request()];
    const waiting = request(BIG);
    offer(2);
    const [slotA] = await Promise.all([a, b]);
    pool.releaseSlot(slotA, new Error('done'));
    const cause = new Error('job finished');
    pool.close(cause);
    expect(await outcome(waiting)).to.deep.equal({ ok: false, error: cause });
    expect(freed.map((f) => f.cause)).to.deep.equal([cause, cause]);
    expect((await outcome(request())).ok).to.equal(false);
    const refused = await outcome(request());
    expect(!refused.ok && refused.error).to.be.instanceOf(IllegalStateError);
  });

  it(
    'a canceled request leaves the declaration; canceling ' + 'it twice or after it was served changes nothing',
    async () => {
      const { pool, request, offer, declared } = setup();
      const a = request();
      const b = request();
      pool.cancelSlotRequest('r2', new Error('not needed'));
      expect((await outcome(b)).ok).to.equal(false);
      expect(declared()).to.deep.equal({ UNKNOWN: 1 });
      offer(1);
      await a;
      pool.cancelSlotRequest('r1', new Error('late'));
      pool.cancelSlotRequest('r2', new Error('again'));
      await settle();
      expect(declared()).to.deep.equal({ UNKNOWN: 1 });
    },
  );

  it(
    'says a change is urgent when the job needs more, lets a slot go or waits for none any more; ' +
      'not when a request goes while others wait',
    async () => {
      const { pool, request, offer, urgency } = setup();
      const [first, second, third] = [request(), request(), request()];
      expect(urgency.splice(0)).to.deep.equal([true, true, true]); // more
      offer(1);
      const slot = await first;
      expect(urgency.splice(0)).to.deep.equal([]); // pending → held: the same declaration
      pool.releaseSlot(slot, new Error('done'));
      expect(await second).to.equal(slot);
      expect(urgency.splice(0)).to.deep.equal([false]); // served by a slot it holds; one still waits
      pool.cancelSlotRequest('r3', new Error('not needed'));
      await third.catch(() => {});
      expect(urgency.splice(0)).to.deep.equal([true]); // the last one gone: the job waits for no slot
      void request();
      urgency.length = 0;
      pool.slotLost(slot.allocationId);
      expect(urgency.splice(0)).to.deep.equal([true]); // a slot it held is gone
    },
  );

  it('serves thousands of requests through one slot in request order', async () => {
    const { pool, request, offer, declared } = setup();
    const requests = Array.from({ length: 5_000 }, () => request());
    offer(1);
    let slot = await requests[0]!;
    for (let i = 1; i < requests.length; i++) {
      pool.releaseSlot(slot, new Error('done'));
      const next = await requests[i]!;
      expect(next.allocationId).to.equal(slot.allocationId);
      slot = next;
    }
    expect(declared()).to.deep.equal({ UNKNOWN: 1 });
  });

  describe('while the job restarts (Flink: DeclarativeSlotPoolBridge.setIsJobRestarting)', () => {
    // DeclarativeSlotPoolBridgeTest.testIfJobIsRestartingAllOfferedSlotsWillBeRegistered and
    // DefaultDeclarativeSlotPoolTest.testRegisterSlotsAcceptsAllSlots: every offer is taken.
    it('registers every offered slot, though no request wants it; otherwise refuses it', () => {
      const { pool, offer, freed } = setup();
      expect(offer(2)).to.deep.equal([]);
      const registered = offer(10, DEFAULT, true);
      expect(registered).to.have.length(10);
      expect(pool.heldSlots.map((slot) => slot.allocationId)).to.deep.equal(registered);
      expect(pool.heldSlots.every((slot) => slot.resourceProfile.equals(ResourceProfile.fromSpec(DEFAULT)))).to.equal(
        true,
      );
      expect(pool.idleSlots).to.equal(10);
      expect(freed).to.deep.equal([]);
    });

    // DefaultDeclarativeSlotPoolTest.testRegisterSlotsDoesNotAffectRequirements.
    it('declares no registered slot; one a request takes counts for that request, and only while held', async () => {
      const { pool, request, offer, declared, freed, clock } = setup();
      const [registered] = offer(1, DEFAULT, true);
      expect(declared()).to.deep.equal({});
      const slot = await request();
      expect(slot.allocationId).to.equal(registered);
      expect(pool.reusedSlots).to.equal(1);
      expect(declared()).to.deep.equal({ UNKNOWN: 1 });
      pool.releaseSlot(slot, new Error('its subtask finished'));
      expect(declared()).to.deep.equal({ UNKNOWN: 1 });
      clock.increment(IDLE_MS);
      expect(freed.map((f) => f.slot.allocationId)).to.deep.equal([registered]);
      expect(declared()).to.deep.equal({});
    });

    it('still gives an offer to the oldest pending request it matches first', async () => {
      const { request, offer, declared } = setup();
      const waiting = request();
      const [first, second] = offer(2, DEFAULT, true);
      expect((await waiting).allocationId).to.equal(first);
      expect(declared()).to.deep.equal({ UNKNOWN: 1 });
      expect(second).to.not.equal(undefined);
    });

    // DefaultDeclarativeSlotPoolTest.testReturnIdleSlotsAfterTimeout, for a registered slot.
    it('gives a registered slot no request took back after slot.idle.timeout', () => {
      const { pool, offer, freed, clock } = setup();
      const [registered] = offer(1, BIG, true);
      clock.increment(IDLE_MS - 1);
      expect(freed).to.deep.equal([]);
      clock.increment(1);
      expect(freed.map((f) => f.slot.allocationId)).to.deep.equal([registered]);
      expect(freed[0]!.cause.message).to.contain('slot.idle.timeout');
      expect(pool.heldSlots).to.deep.equal([]);
    });
  });
});
