import { expect } from 'chai';
import fc from 'fast-check';
import { ResourceProfile } from '../../../lib/core/ResourceProfile.js';
import type { SlotReservation } from '../../../lib/resourcemanager/slotmanager/SlotReservation.js';
import type { TaskManagerTracker } from '../../../lib/resourcemanager/slotmanager/TaskManagerTracker.js';
import { explainShortage } from '../../../lib/resourcemanager/slotmanager/WaitReason.js';
import { allocationId, executorInfo, job, occupy, profile, shape, trackerWith, type ExecutorShape } from './support.js';

const SHAPES: readonly ExecutorShape[] = [
  shape(4, 400, 4),
  shape(8, 800, 4),
  shape(2, 200, 2),
  { total: profile(4, 400, 0, { gpu: 2 }), slots: 2 },
  shape(16, 1600, 8),
  shape(4, 120, 2),
];
/**
 * UNKNOWN, the default of shape 0, small, big, with gpu, one only shape 4 can hold, one only an empty shape 1 or 4 can
 * hold, one no executor can hold.
 */
const PROBES: readonly ResourceProfile[] = [
  ResourceProfile.UNKNOWN,
  profile(1, 100),
  profile(0.5, 50),
  profile(6, 600),
  profile(1, 50, 0, { gpu: 1 }),
  profile(12, 100),
  profile(8, 800),
  profile(64, 100),
];

/** The tracker's incremental answer against the one-pass reference, for every probe. */
function agree(tracker: TaskManagerTracker, where: string): void {
  for (const probe of PROBES)
    expect(tracker.explainShortage(probe), `${where}: ${probe}`).to.deep.equal(
      explainShortage(probe, tracker.taskManagers),
    );
}

describe('ShortageIndex (TaskManagerTracker.explainShortage)', () => {
  it(
    'answers what explainShortage answers: the closest executors, ' +
      'those that could hold it once freed, those passed over',
    () => {
      const {
        tracker,
        tms: [a, b, c],
      } = trackerWith([shape(4, 400, 4), shape(2, 200, 2), shape(8, 120, 4)]);
      occupy(tracker, a!, profile(3, 100));
      expect(tracker.explainShortage(profile(3, 150))).to.deep.equal(
        explainShortage(profile(3, 150), tracker.taskManagers),
      );
      expect(tracker.explainShortage(profile(3, 150)).closest.map((e) => e.resourceId)).to.deep.equal([
        'te-3',
        'te-2',
        'te-1',
      ]);
      tracker.setBlocked(c!, true);
      occupy(tracker, b!, profile(1, 10));
      const reason = tracker.explainShortage(profile(1, 100));
      expect(reason).to.deep.equal(explainShortage(profile(1, 100), tracker.taskManagers));
      expect(reason.passedOver).to.deep.equal(['te-3']);
    },
  );

  it('re-scores only the executors that changed, and gives the same answer as a pass over all of them', () => {
    const { tracker, tms } = trackerWith(Array.from({ length: 40 }, (_, i) => SHAPES[i % SHAPES.length]!));
    for (const tm of tms) while (tm.canFit(profile(1, 50))) occupy(tracker, tm, profile(1, 50));
    agree(tracker, 'full');
    const slot = [...tracker.slots].find((s) => s.taskManager === tms[17])!;
    tracker.free(slot.allocationId!);
    agree(tracker, 'one slot freed');
    occupy(tracker, tms[17]!, profile(0.5, 10));
    agree(tracker, 'part of it taken again');
  });

  it('follows executors that register and leave, also after many have left', () => {
    const { tracker } = trackerWith([shape(4, 400, 4)]);
    agree(tracker, 'one executor');
    for (let i = 2; i <= 200; i++) tracker.addTaskManager(executorInfo(i, SHAPES[i % SHAPES.length]!));
    agree(tracker, '200 executors');
    for (const tm of [...tracker.taskManagers].slice(0, 150)) tracker.removeTaskManager(tm.resourceId);
    agree(tracker, '150 removed');
    tracker.addTaskManager(executorInfo(1, shape(8, 800, 4)));
    agree(tracker, 'te-1 registered again, last in registration order');
  });

  it('lets go of departed executors: a long churn keeps at most max(8, an eighth) of them referenced', () => {
    const { tracker } = trackerWith([shape(4, 400, 4)]);
    for (let i = 2; i <= 40; i++) tracker.addTaskManager(executorInfo(i, shape(4, 400, 4)));
    agree(tracker, '40 executors');
    for (const tm of [...tracker.taskManagers].slice(0, 30)) {
      tracker.removeTaskManager(tm.resourceId);
      expect(tracker.departedHeldByShortages, `after ${tm.resourceId} left`).to.be.at.most(8);
    }
    agree(tracker, '30 departed');
  });

  it('keeps at most 16 requirements, and rebuilds a forgotten one correctly', () => {
    const {
      tracker,
      tms: [a],
    } = trackerWith([shape(4, 400, 4), shape(2, 200, 2)]);
    const first = profile(3, 300);
    expect(tracker.explainShortage(first).closest).to.have.length(1);
    for (let i = 1; i <= 20; i++) tracker.explainShortage(profile(4 + i / 100));
    occupy(tracker, a!, profile(2, 100)); // not seen by the forgotten set of `first`
    expect(tracker.explainShortage(first)).to.deep.equal(explainShortage(first, tracker.taskManagers));
  });

  it(
    'agrees with explainShortage after long random sequences ' +
      'of registrations, removals, reservations, frees and blocks',
    () => {
      type Op =
        | { op: 'add'; shape: number }
        | { op: 'remove' | 'assign' | 'cancel' | 'free'; pick: number }
        | { op: 'reserve' | 'adopt'; pick: number; req: number }
        | { op: 'block'; pick: number; blocked: boolean };
      const nat = fc.nat({ max: 1000 });
      const req = fc.nat({ max: PROBES.length - 1 });
      const opArb: fc.Arbitrary<Op> = fc.oneof(
        {
          arbitrary: fc.record({ op: fc.constant('add' as const), shape: fc.nat({ max: SHAPES.length - 1 }) }),
          weight: 3,
        },
        { arbitrary: fc.record({ op: fc.constant('remove' as const), pick: nat }), weight: 1 },
        {
          arbitrary: fc.record({
            op: fc.constantFrom('assign' as const, 'cancel' as const, 'free' as const),
            pick: nat,
          }),
          weight: 6,
        },
        {
          arbitrary: fc.record({ op: fc.constantFrom('reserve' as const, 'adopt' as const), pick: nat, req }),
          weight: 7,
        },
        { arbitrary: fc.record({ op: fc.constant('block' as const), pick: nat, blocked: fc.boolean() }), weight: 2 },
      );
      fc.assert(
        fc.property(
          fc.array(opArb, { minLength: 40, maxLength: 160 }),
          fc.array(fc.nat({ max: PROBES.length - 1 }), { minLength: 1, maxLength: 3 }),
          (ops, asked) => {
            const { tracker } = trackerWith([SHAPES[0]!, SHAPES[3]!]);
            const open: SlotReservation[] = [];
            ops.forEach((o, step) => {
              const tms = [...tracker.taskManagers];
              const tm = 'pick' in o ? tms[o.pick % Math.max(tms.length, 1)] : undefined;
              const take = <T>(list: T[]) =>
                'pick' in o && list.length > 0 ? list.splice(o.pick % list.length, 1)[0] : undefined;
              if (o.op === 'add') tracker.addTaskManager(executorInfo(step + 3, SHAPES[o.shape]!));
              else if (o.op === 'remove' && tm !== undefined) {
                for (const s of tracker.slotsOf(tm)) tracker.free(s.allocationId!);
                open.splice(0, open.length, ...open.filter((r) => r.taskManager !== tm));
                tracker.removeTaskManager(tm.resourceId);
              } else if (o.op === 'reserve' && tm?.canFit(PROBES[o.req]!))
                open.push(tracker.reserve(tm, PROBES[o.req]!, job(1)));
              else if (o.op === 'adopt' && tm !== undefined && !PROBES[o.req]!.isUnknown())
                tracker.adopt(tm, {
                  index: o.pick % 5,
                  allocationId: allocationId(),
                  jobId: job(3),
                  profile: PROBES[o.req]!,
                }); // may overshoot: the report wins
              else if (o.op === 'assign') {
                const r = take(open);
                if (r !== undefined) tracker.assignPending(r, allocationId(), true);
              } else if (o.op === 'cancel') {
                const r = take(open);
                if (r !== undefined) tracker.cancelReservation(r);
              } else if (o.op === 'free') {
                const s = take([...tracker.slots]);
                if (s !== undefined) tracker.free(s.allocationId!);
              } else if (o.op === 'block' && tm !== undefined) tracker.setBlocked(tm, o.blocked);
              // Asked now and then (as checks do), so the sets see changes pile up between two answers.
              if (step % 3 === 0)
                for (const k of asked)
                  expect(tracker.explainShortage(PROBES[k]!), `step ${step}: ${PROBES[k]}`).to.deep.equal(
                    explainShortage(PROBES[k]!, tracker.taskManagers),
                  );
            });
            agree(tracker, 'at the end');
          },
        ),
        { seed: 0x5107a9, numRuns: 80 },
      );
    },
  );
});
