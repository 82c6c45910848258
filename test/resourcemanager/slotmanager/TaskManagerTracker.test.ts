import { expect } from 'chai';
import { IllegalArgumentError, IllegalStateError, type SlotwiseError } from '../../../lib/core/errors.js';
import { ResourceID } from '../../../lib/core/ids.js';
import { ResourceCounter } from '../../../lib/core/ResourceCounter.js';
import { ResourceProfile } from '../../../lib/core/ResourceProfile.js';
import type { PendingTaskManagerID } from '../../../lib/resourcemanager/slotmanager/PendingTaskManager.js';
import type { TaskManagerTracker } from '../../../lib/resourcemanager/slotmanager/TaskManagerTracker.js';
import {
  allocationId,
  executorInfo,
  job,
  occupy,
  profile,
  shape,
  snapshot,
  trackerWith,
  workerSpec,
} from './support.js';

const UNKNOWN = ResourceProfile.UNKNOWN;
const DEFAULT = profile(1, 100); // the default slot of shape(4, 400, 4)

/** The cluster-wide numbers plus every executor's snapshot: to prove a refused call changed nothing. */
const state = (tracker: TaskManagerTracker) =>
  JSON.stringify([
    tracker.registeredResource.key,
    tracker.freeRegisteredResource.key,
    tracker.numberOfOccupiedSlots,
    [...tracker.taskManagers].map(snapshot),
  ]);

function expectRefusal(
  tracker: TaskManagerTracker,
  call: () => unknown,
  type: new (...args: never[]) => SlotwiseError,
  message?: RegExp,
): void {
  const before = state(tracker);
  expect(call).to.throw(type, message);
  expect(state(tracker)).to.equal(before);
}

/** What the executors that may take slots have available: a blocked executor counts as having nothing. */
const sumOfAvailables = (tracker: TaskManagerTracker) =>
  [...tracker.taskManagers]
    .filter((tm) => !tm.blocked)
    .reduce((sum, tm) => sum.merge(tm.available), ResourceProfile.ZERO);

describe('TaskManagerTracker', () => {
  describe('registration', () => {
    it('registers executors with their totals and static slots, and sums them', () => {
      const {
        tracker,
        tms: [a, b],
      } = trackerWith([shape(4, 400, 4), shape(2, 300, 1)]);
      expect(a!.defaultSlotResourceProfile.equals(DEFAULT)).to.equal(true);
      expect([
        a!.freeStaticSlots,
        a!.utilization,
        a!.idleSince,
        a!.available.equals(a!.totalResourceProfile),
      ]).to.deep.equal([4, 0, 1_000, true]);
      expect(tracker.registeredResource.equals(profile(6, 700))).to.equal(true);
      expect(tracker.freeRegisteredResource.equals(profile(6, 700))).to.equal(true);
      expect([tracker.numberOfTaskManagers, tracker.numberOfRegisteredSlots, b!.seq > a!.seq]).to.deep.equal([
        2,
        5,
        true,
      ]);
      expect([...tracker.taskManagers]).to.deep.equal([a, b]);
    });

    it('refuses a second registration of the same ResourceID and changes nothing', () => {
      const { tracker } = trackerWith([shape(4, 400, 4)]);
      expectRefusal(
        tracker,
        () => tracker.addTaskManager(executorInfo(1, shape(8, 800, 8))),
        IllegalStateError,
        /already registered/,
      );
      expect(tracker.numberOfRegisteredSlots).to.equal(4);
    });

    it('removes an executor with its slot records, totals and used resources', () => {
      const {
        tracker,
        tms: [a, b],
      } = trackerWith([shape(4, 400, 4), shape(2, 200, 2)]);
      const slot = occupy(tracker, a!, UNKNOWN);
      occupy(tracker, a!, profile(2, 50));
      tracker.reserve(b!, UNKNOWN, job(2));
      tracker.removeTaskManager(a!.resourceId);
      expect([
        tracker.getTaskManager(a!.resourceId),
        tracker.getSlot(slot.allocationId!),
        tracker.numberOfOccupiedSlots,
      ]).to.deep.equal([undefined, undefined, 0]);
      expect([tracker.numberOfTaskManagers, tracker.numberOfRegisteredSlots]).to.deep.equal([1, 2]);
      expect(tracker.registeredResource.equals(profile(2, 200))).to.equal(true);
      expect(tracker.freeRegisteredResource.equals(profile(1, 100))).to.equal(true);
      expect(tracker.findTaskManager(profile(0.5))).to.equal(b);
    });

    it('refuses to remove an unknown executor with IllegalArgumentError', () => {
      const { tracker } = trackerWith([shape(4, 400, 4)]);
      expectRefusal(
        tracker,
        () => tracker.removeTaskManager(ResourceID.parse('te-9')),
        IllegalArgumentError,
        /te-9 is not registered/,
      );
    });
  });

  describe('static slots', () => {
    it(
      'reserves a run of slots as reserve calls one by one would (static slots lowest ' +
        'first, then dynamic), and refuses a run that does not fit, changing nothing',
      () => {
        const one = trackerWith([shape(4, 400, 4)]);
        const run = trackerWith([shape(4, 400, 4)]);
        one.tracker.reserve(one.tms[0]!, UNKNOWN, job(1));
        run.tracker.reserve(run.tms[0]!, UNKNOWN, job(1));
        const singles = [0, 1].map(() => one.tracker.reserve(one.tms[0]!, UNKNOWN, job(1)));
        const together = run.tracker.reserveRun(run.tms[0]!, UNKNOWN, job(1), 2);
        expect(together.map((r) => r.staticSlot?.index)).to.deep.equal(singles.map((r) => r.staticSlot?.index));
        expect(together.map((r) => r.staticSlot?.index)).to.deep.equal([1, 2]);
        expect(state(run.tracker)).to.equal(state(one.tracker));
        expectRefusal(
          run.tracker,
          () => run.tracker.reserveRun(run.tms[0]!, profile(0.5, 50), job(1), 3),
          IllegalStateError,
          /cannot fit 3 × /,
        );
        expect(run.tracker.reserveRun(run.tms[0]!, profile(0.5, 50), job(1), 2).map((r) => r.staticSlot)).to.deep.equal(
          [null, null],
        );
      },
    );

    it('reserves a free static slot for UNKNOWN or the default profile, and sets its capacity aside', () => {
      const {
        tracker,
        tms: [a],
      } = trackerWith([shape(4, 400, 4)]);
      const first = tracker.reserve(a!, UNKNOWN, job(1));
      const second = tracker.reserve(a!, DEFAULT, job(1));
      expect([first.staticSlot?.index, second.staticSlot?.index, first.profile.equals(DEFAULT)]).to.deep.equal([
        0,
        1,
        true,
      ]);
      expect([
        a!.staticSlots[0]!.reserved,
        a!.staticSlots[0]!.state,
        a!.freeStaticSlots,
        a!.reservations,
      ]).to.deep.equal([true, 'free', 2, 2]);
      expect([a!.available.equals(profile(2, 200)), a!.utilization, a!.idleSince]).to.deep.equal([true, 0.5, null]);
    });

    it(
      'walks a static slot free → pending → allocated → free, ' +
        'giving back its capacity and making the executor idle again',
      () => {
        const {
          tracker,
          clock,
          tms: [a],
        } = trackerWith([shape(4, 400, 4)]);
        const id = allocationId();
        const slot = tracker.assignPending(tracker.reserve(a!, UNKNOWN, job(1)), id, true);
        expect([
          slot.index,
          slot.state,
          slot.allocationId,
          slot.jobId,
          slot.tracked,
          a!.reservations,
          a!.occupiedSlots,
        ]).to.deep.equal([0, 'pending', id, job(1), true, 0, 1]);
        expect(tracker.completeAllocation(id).state).to.equal('allocated');
        expect([a!.utilization, a!.freeStaticSlots, tracker.getSlot(id)]).to.deep.equal([0.25, 3, slot]);
        clock.increment(5_000);
        const freed = tracker.free(id);
        expect([freed.allocationId, freed.jobId, freed.index]).to.deep.equal([id, job(1), 0]);
        expect([
          slot.state,
          slot.allocationId,
          a!.freeStaticSlots,
          a!.occupiedSlots,
          a!.utilization,
          a!.idleSince,
        ]).to.deep.equal(['free', null, 4, 0, 0, 6_000]);
        expect([
          a!.available.equals(a!.totalResourceProfile),
          tracker.getSlot(id),
          tracker.numberOfOccupiedSlots,
        ]).to.deep.equal([true, undefined, 0]);
      },
    );
  });

  describe('dynamic slots', () => {
    it('carves a dynamic slot for a non-default profile and drops its record when it is freed', () => {
      const {
        tracker,
        tms: [a],
      } = trackerWith([shape(4, 400, 4)]);
      const slot = occupy(tracker, a!, profile(2, 50));
      expect([slot.index, a!.dynamicSlots.get(slot.allocationId!), a!.freeStaticSlots]).to.deep.equal([-1, slot, 4]);
      expect([a!.available.equals(profile(2, 350)), a!.utilization]).to.deep.equal([true, 0.5]);
      tracker.free(slot.allocationId!, 'FAIL_ALLOCATION');
      expect([a!.dynamicSlots.size, a!.utilization, a!.available.equals(a!.totalResourceProfile)]).to.deep.equal([
        0,
        0,
        true,
      ]);
    });

    it('gives a default-sized requirement a dynamic slot once every static slot is taken', () => {
      const {
        tracker,
        tms: [a],
      } = trackerWith([{ total: profile(4, 400), slots: 2, defaultSlot: DEFAULT }]);
      const slots = [occupy(tracker, a!, UNKNOWN), occupy(tracker, a!, UNKNOWN), occupy(tracker, a!, DEFAULT)];
      expect(slots.map((s) => s.index)).to.deep.equal([0, 1, -1]);
      expect([a!.freeStaticSlots, a!.occupiedSlots, a!.utilization]).to.deep.equal([0, 3, 0.75]);
    });

    it('scores utilisation as the larger of the CPU and the memory share', () => {
      const {
        tracker,
        tms: [a],
      } = trackerWith([shape(4, 400, 4)]);
      occupy(tracker, a!, profile(1, 300));
      expect(a!.utilization).to.equal(0.75);
      occupy(tracker, a!, profile(2.5, 0));
      expect(a!.utilization).to.equal(0.875);
    });
  });

  describe('cancelReservation', () => {
    it('restores capacity, the static slot and idleness', () => {
      const {
        tracker,
        clock,
        tms: [a],
      } = trackerWith([shape(4, 400, 4)]);
      const before = snapshot(a!);
      const reservations = [tracker.reserve(a!, UNKNOWN, job(1)), tracker.reserve(a!, profile(2, 10), job(1))];
      clock.increment(250);
      for (const r of reservations) tracker.cancelReservation(r);
      expect(snapshot(a!)).to.equal(before.replace('"idleSince":1000', '"idleSince":1250'));
      expect(tracker.freeRegisteredResource.equals(a!.totalResourceProfile)).to.equal(true);
    });

    it(
      'refuses to use a reservation twice (assignPending ' +
        'again, or cancel after assignPending) and changes nothing',
      () => {
        const {
          tracker,
          tms: [a],
        } = trackerWith([shape(4, 400, 4)]);
        const r1 = tracker.reserve(a!, profile(2, 10), job(1));
        tracker.reserve(a!, profile(1, 10), job(1));
        tracker.assignPending(r1, allocationId(), true);
        expectRefusal(tracker, () => tracker.assignPending(r1, allocationId(), true), IllegalStateError);
        const s1 = tracker.reserve(a!, UNKNOWN, job(1));
        tracker.assignPending(s1, allocationId(), true);
        expectRefusal(tracker, () => tracker.cancelReservation(s1), IllegalStateError);
      },
    );
  });

  describe('adopt (a slot report shows an allocation nobody knew of)', () => {
    it('takes the reported static slot when it is free and default-sized', () => {
      const {
        tracker,
        tms: [a],
      } = trackerWith([shape(4, 400, 4)]);
      const id = allocationId();
      const slot = tracker.adopt(a!, { index: 2, allocationId: id, jobId: job(3), profile: DEFAULT });
      expect([
        slot,
        slot.state,
        slot.jobId,
        slot.tracked,
        a!.freeStaticSlots,
        a!.utilization,
        a!.idleSince,
      ]).to.deep.equal([a!.staticSlots[2], 'allocated', job(3), true, 3, 0.25, null]);
      expect(tracker.getSlot(id)).to.equal(slot);
    });

    it('uses a dynamic record when the static slot is taken or reserved, or the profile is not the default', () => {
      const {
        tracker,
        tms: [a],
      } = trackerWith([shape(8, 800, 4)]);
      occupy(tracker, a!, UNKNOWN); // static 0 pending
      tracker.reserve(a!, UNKNOWN, job(1)); // static 1 reserved
      const adopted = [
        tracker.adopt(a!, { index: 0, allocationId: allocationId(), jobId: job(2), profile: profile(2, 200) }),
        tracker.adopt(a!, { index: 1, allocationId: allocationId(), jobId: job(2), profile: profile(2, 200) }),
        tracker.adopt(a!, { index: 2, allocationId: allocationId(), jobId: job(2), profile: profile(1, 10) }),
        tracker.adopt(a!, { index: 7, allocationId: allocationId(), jobId: job(2), profile: profile(2, 200) }),
      ];
      expect(adopted.map((s) => s.index)).to.deep.equal([-1, -1, -1, -1]);
      expect([a!.dynamicSlots.size, a!.freeStaticSlots, a!.staticSlots[2]!.state]).to.deep.equal([4, 2, 'free']);
    });

    it('lets the report win over the plan: used may pass the total, available stops at zero', () => {
      const {
        tracker,
        tms: [a],
      } = trackerWith([shape(4, 400, 4)]);
      occupy(tracker, a!, profile(3, 100));
      const id = allocationId();
      tracker.adopt(a!, { index: -1, allocationId: id, jobId: job(2), profile: profile(2, 100) });
      expect([a!.used.equals(profile(5, 200)), a!.available.equals(profile(0, 200)), a!.utilization]).to.deep.equal([
        true,
        true,
        1.25,
      ]);
      expect([a!.canFit(profile(0.5)), tracker.findTaskManager(profile(0.5))]).to.deep.equal([false, undefined]);
      tracker.free(id);
      expect(a!.available.equals(profile(1, 300))).to.equal(true);
    });

    it('refuses to adopt an UNKNOWN profile with IllegalArgumentError and changes nothing', () => {
      const {
        tracker,
        tms: [a],
      } = trackerWith([shape(4, 400, 4)]);
      expectRefusal(
        tracker,
        () => tracker.adopt(a!, { index: 0, allocationId: allocationId(), jobId: job(1), profile: UNKNOWN }),
        IllegalArgumentError,
      );
    });
  });

  describe('illegal steps', () => {
    it(
      'refuses completeAllocation of an allocated slot and ' + 'FAIL_ALLOCATION of an allocated slot, changing nothing',
      () => {
        const {
          tracker,
          tms: [a],
        } = trackerWith([shape(4, 400, 4)]);
        const id = occupy(tracker, a!, UNKNOWN).allocationId!;
        tracker.completeAllocation(id);
        expectRefusal(
          tracker,
          () => tracker.completeAllocation(id),
          IllegalStateError,
          /te-1\/0: COMPLETE_ALLOCATION is not allowed in state allocated \(allowed in: pending\)/,
        );
        expectRefusal(
          tracker,
          () => tracker.free(id, 'FAIL_ALLOCATION'),
          IllegalStateError,
          /FAIL_ALLOCATION is not allowed in state allocated/,
        );
      },
    );

    it('refuses free and completeAllocation of an unknown AllocationID with IllegalArgumentError', () => {
      const {
        tracker,
        tms: [a],
      } = trackerWith([shape(4, 400, 4)]);
      const id = occupy(tracker, a!, UNKNOWN).allocationId!;
      tracker.free(id);
      expectRefusal(tracker, () => tracker.free(id), IllegalArgumentError, /no slot with allocation/);
      expectRefusal(tracker, () => tracker.completeAllocation(allocationId()), IllegalArgumentError);
    });

    it('refuses a duplicate AllocationID in assignPending and adopt, leaving the reservation open', () => {
      const {
        tracker,
        tms: [a, b],
      } = trackerWith([shape(4, 400, 4), shape(4, 400, 4)]);
      const id = occupy(tracker, a!, UNKNOWN).allocationId!;
      const reservation = tracker.reserve(b!, profile(2, 10), job(2));
      expectRefusal(tracker, () => tracker.assignPending(reservation, id, true), IllegalStateError, /already held/);
      expectRefusal(
        tracker,
        () => tracker.adopt(b!, { index: 1, allocationId: id, jobId: job(2), profile: DEFAULT }),
        IllegalStateError,
        /already held/,
      );
      expect(tracker.assignPending(reservation, allocationId(), true).state).to.equal('pending');
    });

    it('refuses to reserve more than an executor has, or on a blocked executor', () => {
      const {
        tracker,
        tms: [a],
      } = trackerWith([shape(4, 400, 4)]);
      expectRefusal(tracker, () => tracker.reserve(a!, profile(5), job(1)), IllegalStateError, /cannot fit/);
      tracker.setBlocked(a!, true);
      expectRefusal(tracker, () => tracker.reserve(a!, UNKNOWN, job(1)), IllegalStateError, /cannot fit/);
    });
  });

  it('never finds a blocked executor, under any preference, and finds it again once unblocked', () => {
    const {
      tracker,
      tms: [a, b],
    } = trackerWith([shape(4, 400, 4, 'h1'), shape(2, 200, 2, 'h2')]);
    tracker.setBlocked(a!, true);
    expect([
      tracker.findTaskManager(UNKNOWN),
      tracker.findTaskManager(profile(3)),
      tracker.findTaskManager(UNKNOWN, { resourceId: a!.resourceId, host: 'h1' }),
    ]).to.deep.equal([b, undefined, b]);
    expect([...tracker.candidatesFor(UNKNOWN)]).to.deep.equal([b]);
    tracker.setBlocked(a!, false);
    expect(tracker.findTaskManager(UNKNOWN)).to.equal(a);
  });

  it('tells onIdleChanged when an executor arrives idle and on every idle/busy edge after, never in between', () => {
    const seen: Array<[string, number | null]> = [];
    const {
      tracker,
      clock,
      tms: [a],
    } = trackerWith([shape(4, 400, 4)], { onIdleChanged: (tm) => seen.push([tm.resourceId, tm.idleSince]) });
    const r1 = tracker.reserve(a!, UNKNOWN, job(1)); // busy
    const r2 = tracker.reserve(a!, UNKNOWN, job(1));
    const id = tracker.assignPending(r1, allocationId(), true).allocationId!;
    tracker.completeAllocation(id);
    tracker.setBlocked(a!, true);
    clock.increment(100);
    tracker.cancelReservation(r2);
    tracker.free(id); // idle
    const reported = { index: 0, allocationId: allocationId(), jobId: job(1), profile: DEFAULT };
    const adopted = tracker.adopt(a!, reported); // busy
    clock.increment(100);
    tracker.free(adopted.allocationId!); // idle
    expect(seen).to.deep.equal([
      ['te-1', 1_000],
      ['te-1', null],
      ['te-1', 1_100],
      ['te-1', null],
      ['te-1', 1_200],
    ]);
  });

  describe('pending workers', () => {
    it('adds and removes pending workers, summing their resources and slots, in request order', () => {
      const { tracker, clock } = trackerWith([]);
      const p1 = tracker.addPendingTaskManager(workerSpec(4, 400, 4));
      clock.increment(10);
      const p2 = tracker.addPendingTaskManager(workerSpec(2, 100, 1));
      expect([
        p1.requestedAt,
        p2.requestedAt,
        tracker.numberOfPendingTaskManagers,
        tracker.numberOfPendingSlots,
      ]).to.deep.equal([1_000, 1_010, 2, 5]);
      expect([[...tracker.pendingTaskManagers], tracker.pendingResource.equals(profile(6, 500))]).to.deep.equal([
        [p1, p2],
        true,
      ]);
      expect(tracker.removePendingTaskManager(p1.id)).to.equal(p1);
      expect([
        tracker.getPendingTaskManager(p1.id),
        tracker.numberOfPendingSlots,
        tracker.pendingResource.equals(profile(2, 100)),
      ]).to.deep.equal([undefined, 1, true]);
      expect(() => tracker.removePendingTaskManager(p1.id)).to.throw(IllegalArgumentError, /no pending worker/);
    });

    it(
      'matches a registering executor to the named pending worker, ' +
        'else one with planned slots, else the oldest of its shape',
      () => {
        const { tracker } = trackerWith([]);
        const spec = workerSpec(4, 400, 4);
        const [oldest, planned, named] = [
          tracker.addPendingTaskManager(spec),
          tracker.addPendingTaskManager(spec),
          tracker.addPendingTaskManager(spec),
        ];
        const other = tracker.addPendingTaskManager(workerSpec(8, 400, 4));
        const find = (preferred?: PendingTaskManagerID) =>
          tracker.findMatchingPendingTaskManager(spec.totalResourceProfile, spec.defaultSlotResourceProfile, preferred);
        expect(find()).to.equal(oldest);
        planned.replaceAllPendingAllocations(new Map([[job(1), ResourceCounter.withResource(DEFAULT, 2)]]));
        expect([find(), find(named.id), find(other.id), find('pending-none' as PendingTaskManagerID)]).to.deep.equal([
          planned,
          named,
          planned,
          planned,
        ]);
      },
    );

    it('finds no pending worker for another shape (same total, other default slot; or other total)', () => {
      const { tracker } = trackerWith([]);
      const pending = tracker.addPendingTaskManager(workerSpec(4, 400, 4));
      expect(tracker.findMatchingPendingTaskManager(profile(4, 400), profile(2, 200), pending.id)).to.equal(undefined);
      expect(tracker.findMatchingPendingTaskManager(profile(4, 800), DEFAULT)).to.equal(undefined);
    });
  });

  describe('freeRegisteredResource', () => {
    it(
      'equals the sum of the unblocked executors’ available resources ' +
        'through reserve, assign, adopt, free, block and remove',
      () => {
        const {
          tracker,
          tms: [a, b, c],
        } = trackerWith([shape(4, 400, 4), shape(2, 300, 1), shape(8, 100, 2)]);
        const check = () => expect(tracker.freeRegisteredResource.key).to.equal(sumOfAvailables(tracker).key);
        const s1 = occupy(tracker, a!, profile(1.5, 30));
        check();
        tracker.reserve(b!, UNKNOWN, job(2));
        check();
        tracker.adopt(c!, { index: 0, allocationId: allocationId(), jobId: job(3), profile: profile(4, 50) });
        check();
        tracker.free(s1.allocationId!);
        check();
        tracker.setBlocked(a!, true);
        check();
        occupy(tracker, c!, profile(1, 10));
        check();
        tracker.removeTaskManager(b!.resourceId);
        check();
        tracker.setBlocked(a!, false);
        check();
      },
    );

    it('equals the sum of availables when a report put one executor over its total', () => {
      const {
        tracker,
        tms: [a],
      } = trackerWith([shape(4, 400, 4), shape(4, 400, 4)]);
      tracker.adopt(a!, { index: -1, allocationId: allocationId(), jobId: job(1), profile: profile(6, 100) });
      expect(tracker.freeRegisteredResource.key).to.equal(sumOfAvailables(tracker).key);
    });
  });
});
