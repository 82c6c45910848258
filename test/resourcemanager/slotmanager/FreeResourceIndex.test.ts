import { expect } from 'chai';
import fc from 'fast-check';
import { ResourceProfile } from '../../../lib/core/ResourceProfile.js';
import { FreeResourceIndex } from '../../../lib/resourcemanager/slotmanager/FreeResourceIndex.js';
import {
  candidateOrder,
  SLOT_MATCHING_POLICIES,
  type SlotMatchingPolicy,
} from '../../../lib/resourcemanager/slotmanager/SlotMatchingStrategy.js';
import { TaskManagerRegistration } from '../../../lib/resourcemanager/slotmanager/TaskManagerRegistration.js';
import type { SlotReservation } from '../../../lib/resourcemanager/slotmanager/SlotReservation.js';
import type { TaskManagerTracker } from '../../../lib/resourcemanager/slotmanager/TaskManagerTracker.js';
import { allocationId, executorInfo, job, occupy, profile, shape, trackerWith, type ExecutorShape } from './support.js';

const SHAPES: readonly ExecutorShape[] = [
  shape(4, 400, 4),
  shape(8, 800, 4),
  shape(2, 200, 2),
  { total: profile(4, 400, 0, { gpu: 2 }), slots: 2 },
  shape(16, 1600, 8),
];
const HOSTS = ['h1', 'h2', 'h3'] as const;
/** UNKNOWN, the default of shape 0, small, big, with gpu, and the default of shapes 1–3. */
const REQUIREMENTS: readonly ResourceProfile[] = [
  ResourceProfile.UNKNOWN,
  profile(1, 100),
  profile(0.5, 50),
  profile(6, 600),
  profile(1, 50, 0, { gpu: 1 }),
  profile(2, 200),
];

/** The answer the index must give, computed the slow way: every executor that fits, sorted by the policy. */
function bruteForce(
  tracker: TaskManagerTracker,
  requirement: ResourceProfile,
  host?: string,
): TaskManagerRegistration | undefined {
  const order = candidateOrder(tracker.policy);
  return [...tracker.taskManagers]
    .filter((tm) => tm.canFit(requirement) && (host === undefined || tm.host === host))
    .sort(order)[0];
}

describe('FreeResourceIndex', () => {
  /** An index over plain registrations, changed the way the tracker changes them. */
  function plainIndex(policy: SlotMatchingPolicy, count: number) {
    const tms = Array.from(
      { length: count },
      (_, i) =>
        new TaskManagerRegistration({ ...executorInfo(i + 1, shape(4, 400, 4)), host: HOSTS[i % 2]! }, i + 1, 0),
    );
    const index = new FreeResourceIndex(candidateOrder(policy), () => tms);
    const take = (tm: TaskManagerRegistration, p: ResourceProfile) => {
      tm.take(p);
      index.taskManagerChanged(tm);
    };
    return { tms, index, take };
  }

  it('builds a candidate set per requirement (and host) on first use, and keeps it in step afterwards', () => {
    const {
      tms: [a, b, c],
      index,
      take,
    } = plainIndex('spread', 3);
    expect(index.trackedSets).to.equal(0);
    expect(index.best(profile(3))).to.equal(a);
    expect(index.best(profile(3), 'h1')).to.equal(a);
    expect(index.trackedSets).to.equal(2);
    take(a!, profile(2));
    expect([index.best(profile(3)), [...index.candidates(profile(3))]]).to.deep.equal([b, [b, c]]);
    expect([index.best(profile(3), 'h1'), index.best(profile(3), 'h2')]).to.deep.equal([c, b]);
    take(b!, profile(1));
    expect(index.best(profile(1))).to.equal(c);
  });

  it('forgets a removed executor in every set', () => {
    const {
      tms: [a, b],
      index,
    } = plainIndex('first-fit', 2);
    expect(index.best(ResourceProfile.UNKNOWN)).to.equal(a);
    index.taskManagerRemoved(a!);
    expect([index.best(ResourceProfile.UNKNOWN), [...index.candidates(ResourceProfile.UNKNOWN)]]).to.deep.equal([
      b,
      [b],
    ]);
  });

  it(
    'keeps answering correctly after thousands of changes to ' +
      'one executor (stale heap entries are skipped and trimmed)',
    () => {
      const {
        tms: [a, b],
        index,
        take,
      } = plainIndex('pack', 2);
      take(b!, profile(1));
      expect(index.best(profile(1))).to.equal(b);
      for (let i = 0; i < 3000; i++) {
        take(a!, profile(0.5));
        a!.giveBack(profile(0.5));
        index.taskManagerChanged(a!);
      }
      expect(index.best(profile(1))).to.equal(b);
      take(a!, profile(2));
      expect(index.best(profile(1))).to.equal(a);
    },
  );

  it('forgets the least recently used of more than 256 sets, and rebuilds a forgotten one correctly', () => {
    const {
      tms: [a, b],
      index,
      take,
    } = plainIndex('first-fit', 2);
    const first = profile(3);
    expect(index.best(first)).to.equal(a);
    for (let i = 1; i <= 300; i++) index.best(profile(i / 1000));
    expect(index.trackedSets).to.equal(256);
    take(a!, profile(2)); // not seen by the forgotten set of `first`
    expect(index.best(first)).to.equal(b);
  });

  it(
    're-heaps a set asked after changes to many of its executors, ' +
      'and agrees with a brute-force scan under every policy',
    () => {
      for (const policy of SLOT_MATCHING_POLICIES) {
        const { tracker, tms } = trackerWith(
          Array.from({ length: 300 }, (_, i) => SHAPES[i % SHAPES.length]!),
          { policy },
        );
        const probes = [ResourceProfile.UNKNOWN, profile(1, 100), profile(6, 600)];
        for (const p of probes)
          expect(tracker.findTaskManager(p), `${policy} ${p} before`).to.equal(bruteForce(tracker, p));
        // Changes to most executors between two questions (more than re-checking one by one is worth).
        tms.forEach((tm, i) => {
          if (i % 3 !== 2 && tm.canFit(profile(1, 100))) occupy(tracker, tm, profile(1, 100));
        });
        for (const slot of [...tracker.slots].filter((_, i) => i % 4 === 0)) tracker.free(slot.allocationId!);
        for (const p of probes) {
          expect(tracker.findTaskManager(p)?.resourceId, `${policy} ${p} after`).to.equal(
            bruteForce(tracker, p)?.resourceId,
          );
          expect(
            [...tracker.candidatesFor(p)].map((t) => t.resourceId).sort(),
            `${policy} ${p} candidates`,
          ).to.deep.equal(
            [...tracker.taskManagers]
              .filter((t) => t.canFit(p))
              .map((t) => t.resourceId)
              .sort(),
          );
        }
      }
    },
  );

  describe('agrees with a brute-force scan after long random sequences of changes', () => {
    type Op =
      | { op: 'add'; shape: number; host: number }
      | { op: 'remove' | 'assign' | 'cancel' | 'complete' | 'free'; pick: number }
      | { op: 'reserve' | 'adopt'; pick: number; req: number }
      | { op: 'place'; req: number; host: number }
      | { op: 'block'; pick: number; blocked: boolean };
    const nat = fc.nat({ max: 1000 });
    const req = fc.nat({ max: REQUIREMENTS.length - 1 });
    const opArb: fc.Arbitrary<Op> = fc.oneof(
      {
        arbitrary: fc.record({
          op: fc.constant('add' as const),
          shape: fc.nat({ max: SHAPES.length - 1 }),
          host: fc.nat({ max: HOSTS.length - 1 }),
        }),
        weight: 3,
      },
      { arbitrary: fc.record({ op: fc.constantFrom('remove' as const), pick: nat }), weight: 1 },
      {
        arbitrary: fc.record({
          op: fc.constantFrom('assign' as const, 'cancel' as const, 'complete' as const, 'free' as const),
          pick: nat,
        }),
        weight: 6,
      },
      {
        arbitrary: fc.record({ op: fc.constantFrom('reserve' as const, 'adopt' as const), pick: nat, req }),
        weight: 5,
      },
      {
        arbitrary: fc.record({ op: fc.constant('place' as const), req, host: fc.nat({ max: HOSTS.length }) }),
        weight: 5,
      },
      { arbitrary: fc.record({ op: fc.constant('block' as const), pick: nat, blocked: fc.boolean() }), weight: 2 },
    );

    /** Applies one operation; operations that do not apply to the current state are skipped. */
    function apply(tracker: TaskManagerTracker, open: SlotReservation[], o: Op, n: number): void {
      const tms = [...tracker.taskManagers];
      const slots = [...tracker.slots];
      const tm = 'pick' in o ? tms[o.pick % Math.max(tms.length, 1)] : undefined;
      const at = <T>(list: T[]) =>
        'pick' in o && list.length > 0 ? list.splice(o.pick % list.length, 1)[0] : undefined;
      switch (o.op) {
        case 'add':
          tracker.addTaskManager({ ...executorInfo(n, SHAPES[o.shape]!), host: HOSTS[o.host]! });
          return;
        case 'remove':
          if (tm === undefined) return;
          tracker.removeTaskManager(tm.resourceId);
          open.splice(0, open.length, ...open.filter((r) => r.taskManager !== tm));
          return;
        case 'reserve':
          if (tm?.canFit(REQUIREMENTS[o.req]!)) open.push(tracker.reserve(tm, REQUIREMENTS[o.req]!, job(1)));
          return;
        case 'place': {
          const requirement = REQUIREMENTS[o.req]!;
          const found = tracker.findTaskManager(
            requirement,
            o.host < HOSTS.length ? { host: HOSTS[o.host]! } : undefined,
          );
          if (found !== undefined) open.push(tracker.reserve(found, requirement, job(2)));
          return;
        }
        case 'adopt': // sometimes more than the executor has left: the report wins
          if (tm !== undefined && !REQUIREMENTS[o.req]!.isUnknown())
            tracker.adopt(tm, {
              index: o.pick % 5,
              allocationId: allocationId(),
              jobId: job(3),
              profile: REQUIREMENTS[o.req]!,
            });
          return;
        case 'assign': {
          const r = at(open);
          if (r !== undefined) tracker.assignPending(r, allocationId(), true);
          return;
        }
        case 'cancel': {
          const r = at(open);
          if (r !== undefined) tracker.cancelReservation(r);
          return;
        }
        case 'complete': {
          const slot = at(slots.filter((s) => s.state === 'pending'));
          if (slot !== undefined) tracker.completeAllocation(slot.allocationId!);
          return;
        }
        case 'free': {
          const slot = at(slots);
          if (slot !== undefined)
            tracker.free(slot.allocationId!, slot.state === 'pending' && o.pick % 2 === 0 ? 'FAIL_ALLOCATION' : 'FREE');
          return;
        }
        case 'block':
          if (tm !== undefined) tracker.setBlocked(tm, o.blocked);
          return;
      }
    }

    /**
     * Every requirement, anywhere and on every host: the index's answer and candidates against the scan; the free sum
     * against a pass over the executors.
     */
    function check(tracker: TaskManagerTracker, step: number, readFree: boolean): void {
      if (readFree) {
        const free = [...tracker.taskManagers]
          .filter((t) => !t.blocked)
          .reduce((sum, t) => sum.merge(t.available), ResourceProfile.ZERO);
        expect(tracker.freeRegisteredResource.key, `step ${step}: freeRegisteredResource`).to.equal(free.key);
      }
      for (const requirement of REQUIREMENTS) {
        const where = `step ${step}, ${tracker.policy}, ${requirement}`;
        const best = bruteForce(tracker, requirement);
        expect(tracker.findTaskManager(requirement)?.resourceId, where).to.equal(best?.resourceId);
        expect([...tracker.candidatesFor(requirement)].map((t) => t.resourceId).sort(), where).to.deep.equal(
          [...tracker.taskManagers]
            .filter((t) => t.canFit(requirement))
            .map((t) => t.resourceId)
            .sort(),
        );
        for (const host of HOSTS) {
          const expected = (bruteForce(tracker, requirement, host) ?? best)?.resourceId;
          expect(tracker.findTaskManager(requirement, { host })?.resourceId, `${where} on ${host}`).to.equal(expected);
        }
      }
    }

    for (const policy of SLOT_MATCHING_POLICIES) {
      it(`under ${policy}, for UNKNOWN, default, small, big and gpu requirements, anywhere and per host`, () => {
        fc.assert(
          fc.property(fc.array(opArb, { minLength: 40, maxLength: 160 }), (ops) => {
            const { tracker } = trackerWith([SHAPES[0]!, SHAPES[1]!], { policy });
            const open: SlotReservation[] = [];
            // The free sum is first read half way (it is kept up only from its first read on).
            const firstRead = ops.length >> 1;
            check(tracker, 0, false);
            ops.forEach((o, i) => {
              apply(tracker, open, o, i + 3);
              check(tracker, i + 1, i >= firstRead);
            });
          }),
          { seed: 0x5107 + policy.length, numRuns: 60 },
        );
      });
    }
  });
});
