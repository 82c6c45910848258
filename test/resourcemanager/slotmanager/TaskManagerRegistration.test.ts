import { expect } from 'chai';
import fc from 'fast-check';
import { ResourceProfile } from '../../../lib/core/ResourceProfile.js';
import {
  saturatingSubtract,
  TaskManagerRegistration,
} from '../../../lib/resourcemanager/slotmanager/TaskManagerRegistration.js';
import { shortfallScore } from '../../../lib/resourcemanager/slotmanager/WaitReason.js';
import { executorInfo, profile } from './support.js';

/**
 * The registration keeps used / available as running numbers; these tests hold them to the profile
 * arithmetic they stand for: used = merge of what was taken, saturating subtract of what was given
 * back; available = total − used, saturating; utilisation = max(cpu, memory) of used / total.
 */
describe('TaskManagerRegistration capacity', () => {
  const total = profile(4, 400, 100, { gpu: 2 });
  const registration = (t: ResourceProfile = total) =>
    new TaskManagerRegistration(
      { ...executorInfo(1, { total: t, slots: 1, defaultSlot: profile(1) }), totalResourceProfile: t },
      1,
      0,
    );

  /** Small specified profiles, some with extended resources the executor has or lacks. */
  const step = fc.record({
    give: fc.boolean(),
    cpu: fc.constantFrom(0, 0.1, 0.2, 0.3, 1, 2.5),
    heapMB: fc.constantFrom(0, 1, 50, 100, 300),
    managedMB: fc.constantFrom(0, 10, 60),
    extended: fc.constantFrom<Record<string, number>>({}, { gpu: 1 }, { gpu: 0.3 }, { fpga: 1 }),
  });

  it(
    'scores a shortfall from its running numbers exactly as ' +
      'shortfallScore scores available.shortfall (or -1 when it fits)',
    () => {
      const asked = fc.record({
        cpu: fc.constantFrom(0.1, 1, 3, 4.5),
        heapMB: fc.constantFrom(0, 100, 399, 500),
        managedMB: fc.constantFrom(0, 60, 101),
        extended: fc.constantFrom<Record<string, number>>({}, { gpu: 1 }, { gpu: 2.5 }, { fpga: 1 }),
      });
      fc.assert(
        fc.property(fc.array(step, { maxLength: 30 }), asked, (steps, a) => {
          const tm = registration();
          const requirement = profile(a.cpu, a.heapMB, a.managedMB, a.extended);
          for (const s of steps) {
            const p = profile(s.cpu, s.heapMB, s.managedMB, s.extended);
            if (s.give) tm.giveBack(p);
            else tm.take(p);
            const shortfall = tm.available.shortfall(requirement);
            expect(tm.shortfallScore(requirement)).to.equal(shortfall.length === 0 ? -1 : shortfallScore(shortfall));
          }
        }),
        { seed: 0x5107d1, numRuns: 300 },
      );
    },
  );

  it(
    'matches profile arithmetic on any sequence of takes ' + 'and give-backs, including give-backs beyond what is used',
    () => {
      fc.assert(
        fc.property(fc.array(step, { maxLength: 40 }), (steps) => {
          const tm = registration();
          let used = ResourceProfile.ZERO;
          let version = 0;
          for (const s of steps) {
            const p = profile(s.cpu, s.heapMB, s.managedMB, s.extended);
            if (s.give) {
              tm.giveBack(p);
              used = saturatingSubtract(used, p);
            } else {
              tm.take(p);
              used = used.merge(p);
            }
            const available = saturatingSubtract(total, used);
            const utilization = Math.max(used.cpuCores / total.cpuCores, used.totalMemory / total.totalMemory);
            expect([tm.used.key, tm.available.key, tm.utilization, tm.version]).to.deep.equal([
              used.key,
              available.key,
              utilization,
              ++version,
            ]);
            for (const r of [
              p,
              profile(1, 100),
              profile(0.5, 0, 0, { gpu: 1 }),
              ResourceProfile.UNKNOWN,
              ResourceProfile.ANY,
            ]) {
              expect(tm.hasAvailable(r), `${tm.available} ≥ ${r}`).to.equal(tm.available.allFieldsNoLessThan(r));
            }
          }
        }),
        { numRuns: 300, seed: 20240611 },
      );
    },
  );

  it('subtracts stopping at zero on exact units: 0.3 − 0.1 cores leave 0.2, not a unit less', () => {
    const left = saturatingSubtract(profile(0.3, 100, 0, { gpu: 0.3 }), profile(0.1, 200, 0, { gpu: 0.1, fpga: 1 }));
    expect(left.equals(profile(0.2, 0, 0, { gpu: 0.2 })), left.toString()).to.equal(true);
  });

  it('keeps profile arithmetic for what the numbers do not cover: UNKNOWN taken, an ANY total, an overflow', () => {
    const unknownTaken = registration();
    unknownTaken.take(profile(1, 100));
    expect(() => unknownTaken.take(ResourceProfile.UNKNOWN)).to.throw(/not defined for ResourceProfile.UNKNOWN/);
    expect([unknownTaken.used, unknownTaken.available]).to.deep.equal([
      ResourceProfile.UNKNOWN,
      ResourceProfile.UNKNOWN,
    ]);

    const unbounded = registration(ResourceProfile.ANY);
    unbounded.take(profile(1, 100));
    expect([unbounded.used.key, unbounded.available, unbounded.hasAvailable(profile(1000))]).to.deep.equal([
      profile(1, 100).key,
      ResourceProfile.ANY,
      true,
    ]);

    const huge = ResourceProfile.newBuilder().setTaskHeapMemory(Number.MAX_SAFE_INTEGER).build();
    const full = registration(huge);
    full.take(huge);
    const before = [full.used.key, full.available.key, full.version];
    expect(() => full.take(profile(0, 1))).to.throw(/exceed the largest representable amount/);
    expect([full.used.key, full.available.key, full.version]).to.deep.equal(before);
  });
});
