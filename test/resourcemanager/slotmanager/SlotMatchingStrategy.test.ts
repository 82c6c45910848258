import { expect } from 'chai';
import { SimulatedClock } from '../../../lib/core/clock.js';
import { IllegalArgumentError } from '../../../lib/core/errors.js';
import { ResourceID } from '../../../lib/core/ids.js';
import { ResourceProfile } from '../../../lib/core/ResourceProfile.js';
import {
  candidateOrder,
  policyForLoadBalanceMode,
  SLOT_MATCHING_POLICIES,
  type SlotMatchingPolicy,
} from '../../../lib/resourcemanager/slotmanager/SlotMatchingStrategy.js';
import { TaskManagerTracker } from '../../../lib/resourcemanager/slotmanager/TaskManagerTracker.js';
import { job, occupy, profile, shape, trackerWith, type ExecutorShape } from './support.js';

const UNKNOWN = ResourceProfile.UNKNOWN;
const GPU = profile(1, 50, 0, { gpu: 1 });

/**
 * A mixed, partly used cluster (utilisation in brackets):
 *   te-1  4 cores / 400 mb, 4 slots of 1 core, 3 cores used      [0.75]
 *   te-2  8 cores / 800 mb, 4 slots of 2 cores, 2 cores used     [0.25]
 *   te-3  2 cores / 200 mb, 2 slots of 1 core, empty             [0]
 *   te-4  4 cores / 400 mb / 2 gpu, 2 slots of 2 cores, 1 core   [0.25]
 */
function mixedCluster(policy: SlotMatchingPolicy) {
  const gpuShape: ExecutorShape = { total: profile(4, 400, 0, { gpu: 2 }), slots: 2 };
  const built = trackerWith([shape(4, 400, 4), shape(8, 800, 4), shape(2, 200, 2), gpuShape], { policy });
  const [t1, t2, , t4] = built.tms;
  occupy(built.tracker, t1!, profile(3, 100));
  occupy(built.tracker, t2!, UNKNOWN);
  occupy(built.tracker, t4!, profile(1, 10));
  return built;
}

const pick = (
  tracker: TaskManagerTracker,
  requirement: ResourceProfile,
  preference?: Parameters<TaskManagerTracker['findTaskManager']>[1],
) => tracker.findTaskManager(requirement, preference)?.resourceId ?? 'none';

describe('SlotMatchingStrategy', () => {
  describe('candidate orders over plain scores', () => {
    const scores = [
      { name: 'a', utilization: 0.5, seq: 1 },
      { name: 'b', utilization: 0.25, seq: 2 },
      { name: 'c', utilization: 0.5, seq: 3 },
      { name: 'd', utilization: 0.25, seq: 4 },
      { name: 'e', utilization: 0.75, seq: 5 },
    ];
    const sorted = (policy: SlotMatchingPolicy) => [...scores].sort(candidateOrder(policy)).map((s) => s.name);

    it('first-fit orders by registration only', () => {
      expect(sorted('first-fit')).to.deep.equal(['a', 'b', 'c', 'd', 'e']);
    });

    it('spread puts the least utilised first, ties by registration', () => {
      expect(sorted('spread')).to.deep.equal(['b', 'd', 'a', 'c', 'e']);
    });

    it('pack puts the most utilised first, ties by registration', () => {
      expect(sorted('pack')).to.deep.equal(['e', 'a', 'c', 'b', 'd']);
    });
  });

  describe('findTaskManager on a mixed, partly used cluster', () => {
    const table: Array<[string, ResourceProfile, Record<SlotMatchingPolicy, string>]> = [
      ['UNKNOWN (each executor’s own default slot)', UNKNOWN, { 'first-fit': 'te-1', spread: 'te-3', pack: 'te-1' }],
      [
        '2 cores / 100 mb (too big for te-1’s last core)',
        profile(2, 100),
        { 'first-fit': 'te-2', spread: 'te-3', pack: 'te-2' },
      ],
      ['3 cores (only te-2 and te-4, tied at 0.25)', profile(3), { 'first-fit': 'te-2', spread: 'te-2', pack: 'te-2' }],
      ['1 gpu (only te-4 has gpus)', GPU, { 'first-fit': 'te-4', spread: 'te-4', pack: 'te-4' }],
      ['10 cores (nobody)', profile(10), { 'first-fit': 'none', spread: 'none', pack: 'none' }],
    ];
    for (const [label, requirement, expected] of table) {
      it(`${label}: ${Object.entries(expected)
        .map(([p, e]) => `${p} → ${e}`)
        .join(', ')}`, () => {
        for (const policy of SLOT_MATCHING_POLICIES)
          expect(pick(mixedCluster(policy).tracker, requirement), policy).to.equal(expected[policy]);
      });
    }
  });

  it('spreads slots round-robin over equal executors, packs them onto one, or fills them in order', () => {
    const sequence = (policy: SlotMatchingPolicy) => {
      const { tracker } = trackerWith([shape(2, 200, 2), shape(2, 200, 2), shape(2, 200, 2)], { policy });
      return Array.from(
        { length: 6 },
        () => occupy(tracker, tracker.findTaskManager(UNKNOWN)!, UNKNOWN).taskManager.resourceId,
      );
    };
    expect(sequence('spread')).to.deep.equal(['te-1', 'te-2', 'te-3', 'te-1', 'te-2', 'te-3']);
    expect(sequence('pack')).to.deep.equal(['te-1', 'te-1', 'te-2', 'te-2', 'te-3', 'te-3']);
    expect(sequence('first-fit')).to.deep.equal(['te-1', 'te-1', 'te-2', 'te-2', 'te-3', 'te-3']);
  });

  it('pack prefers a partly used executor over an empty one as long as it fits', () => {
    const {
      tracker,
      tms: [a, b],
    } = trackerWith([shape(4, 400, 4), shape(4, 400, 4)], { policy: 'pack' });
    occupy(tracker, b!, profile(3, 300));
    expect([pick(tracker, profile(1, 100)), pick(tracker, profile(1.5))]).to.deep.equal(['te-2', 'te-1']);
    expect(a!.utilization).to.equal(0);
  });

  describe('preferences', () => {
    /** h1: te-1 (empty), te-2 (half used); h2: te-3 (empty, the last registered). */
    function hosts(policy: SlotMatchingPolicy) {
      const built = trackerWith([shape(4, 400, 4, 'h1'), shape(4, 400, 4, 'h1'), shape(4, 400, 4, 'h2')], { policy });
      occupy(built.tracker, built.tms[1]!, profile(2, 200));
      return built.tracker;
    }

    it('takes the best executor on the preferred host first, under each policy', () => {
      expect(pick(hosts('first-fit'), UNKNOWN, { host: 'h2' })).to.equal('te-3');
      expect(pick(hosts('spread'), UNKNOWN, { host: 'h2' })).to.equal('te-3');
      expect(pick(hosts('pack'), UNKNOWN, { host: 'h1' })).to.equal('te-2');
      expect(pick(hosts('spread'), UNKNOWN, { host: 'h1' })).to.equal('te-1');
    });

    it('falls back to the best anywhere when nothing fits on the host, or the host is unknown', () => {
      const tracker = hosts('pack');
      occupy(tracker, tracker.getTaskManager(ResourceID.parse('te-3'))!, profile(3));
      expect(pick(tracker, profile(2), { host: 'h2' })).to.equal('te-2');
      expect(pick(tracker, UNKNOWN, { host: 'nowhere' })).to.equal('te-3');
    });

    it('takes the preferred executor when it fits, before its host and the policy', () => {
      const tracker = hosts('spread');
      expect(pick(tracker, UNKNOWN, { resourceId: ResourceID.parse('te-2'), host: 'h2' })).to.equal('te-2');
      expect(pick(tracker, profile(3), { resourceId: ResourceID.parse('te-2'), host: 'h2' })).to.equal('te-3');
      expect(pick(tracker, profile(3), { resourceId: ResourceID.parse('te-2') })).to.equal('te-1');
      expect(pick(tracker, UNKNOWN, { resourceId: ResourceID.parse('te-9') })).to.equal('te-1');
    });
  });

  it('makes the same choices on the same cluster built twice', () => {
    const requirements = [UNKNOWN, profile(2, 100), profile(0.5, 10), GPU, profile(1, 100), profile(3)];
    const run = (policy: SlotMatchingPolicy) => {
      const { tracker } = mixedCluster(policy);
      const choices: string[] = [];
      for (let i = 0; i < 24; i++) {
        const requirement = requirements[i % requirements.length]!;
        const tm = tracker.findTaskManager(requirement);
        choices.push(tm?.resourceId ?? 'none');
        if (tm !== undefined) occupy(tracker, tm, requirement, job(1 + (i % 3)));
      }
      return choices;
    };
    for (const policy of SLOT_MATCHING_POLICIES) expect(run(policy), policy).to.deep.equal(run(policy));
  });

  it('refuses an unknown policy name with IllegalArgumentError listing the policies', () => {
    const bad = 'best-fit' as SlotMatchingPolicy;
    expect(() => candidateOrder(bad)).to.throw(IllegalArgumentError, /'first-fit', 'spread', 'pack', got "best-fit"/);
    expect(() => new TaskManagerTracker({ policy: bad, clock: new SimulatedClock() })).to.throw(
      IllegalArgumentError,
      /policy/,
    );
  });

  it('maps Flink’s taskmanager.load-balance.mode: slots spreads, none takes the first fit', () => {
    expect([policyForLoadBalanceMode('slots'), policyForLoadBalanceMode('none')]).to.deep.equal([
      'spread',
      'first-fit',
    ]);
  });
});
