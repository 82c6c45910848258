/**
 * RegisteredResourcePlan sets capacity aside in a copy of the executors it touches, never in the
 * tracker: its answers must be those of reserving in the tracker slot by slot (what the strategy
 * did before), under every policy, with preferences, on random clusters.
 */
import { expect } from 'chai';
import { ResourceProfile } from '../../../lib/core/ResourceProfile.js';
import type { ResourceID } from '../../../lib/core/ids.js';
import { RegisteredResourcePlan } from '../../../lib/resourcemanager/slotmanager/RegisteredResourcePlan.js';
import { SLOT_MATCHING_POLICIES } from '../../../lib/resourcemanager/slotmanager/SlotMatchingStrategy.js';
import type { PlacementPreference } from '../../../lib/resourcemanager/slotmanager/TaskManagerTracker.js';
import { job, occupy, profile, shape, trackerWith, type ExecutorShape } from './support.js';

const REQUIREMENTS = [
  ResourceProfile.UNKNOWN,
  profile(1, 100),
  profile(0.5, 30),
  profile(2, 150),
  profile(1, 50, 0, { gpu: 1 }),
  profile(6, 100),
];
const SHAPES: ExecutorShape[] = [
  shape(4, 400, 4, 'h1'),
  shape(8, 800, 4, 'h2'),
  shape(2, 200, 2, 'h1'),
  { total: profile(4, 400, 0, { gpu: 2 }), slots: 2, host: 'h2' },
];

function random(seed: number): () => number {
  let x = seed;
  return () => (x = (x * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
}

describe('RegisteredResourcePlan', () => {
  it(
    'finds, slot after slot, what reserving in the tracker finds, and ' +
      'explains a shortage the same way (every policy, random clusters)',
    () => {
      for (const policy of SLOT_MATCHING_POLICIES) {
        for (let seed = 1; seed <= 25; seed++) {
          const rnd = random(seed * 7919);
          const cluster = Array.from(
            { length: 3 + Math.floor(rnd() * 8) },
            () => SHAPES[Math.floor(rnd() * SHAPES.length)]!,
          );
          const build = () => {
            const built = trackerWith(cluster, { policy });
            const r = random(seed);
            for (const tm of built.tms)
              if (r() < 0.4 && tm.canFit(profile(1, 50))) occupy(built.tracker, tm, profile(1, 50), job(9));
            if (built.tms.length > 3) built.tracker.setBlocked(built.tms[2]!, true);
            return built;
          };
          const steps = Array.from({ length: 40 }, () => {
            const requirement = REQUIREMENTS[Math.floor(rnd() * REQUIREMENTS.length)]!;
            const p = rnd();
            const preference: PlacementPreference | undefined =
              p < 0.2
                ? { host: 'h2' }
                : p < 0.3
                  ? { resourceId: `te-${1 + Math.floor(rnd() * cluster.length)}` as ResourceID }
                  : undefined;
            return { requirement, preference };
          });
          // Reference: reserve in the tracker as each slot is found.
          const reference = build();
          const expected = steps.map(({ requirement, preference }) => {
            const tm = reference.tracker.findTaskManager(requirement, preference);
            if (tm === undefined) return ['none', reference.tracker.explainShortage(requirement)];
            reference.tracker.reserve(tm, requirement, job(1));
            return [tm.resourceId];
          });
          const planned = build();
          const before = planned.tms.map((tm) => tm.available.key);
          const plan = new RegisteredResourcePlan(planned.tracker);
          const actual = steps.map(({ requirement, preference }) => {
            const tm = plan.find(requirement, preference);
            if (tm === undefined) return ['none', plan.explainShortage(requirement)];
            plan.claim(tm, requirement);
            return [tm.resourceId];
          });
          expect(actual, `${policy} seed ${seed}`).to.deep.equal(expected);
          expect(
            planned.tms.map((tm) => tm.available.key),
            'the tracker is untouched',
          ).to.deep.equal(before);
        }
      }
    },
  );
});
