import { expect } from 'chai';
import { IllegalArgumentError, IllegalStateError } from '../../../lib/core/errors.js';
import { ResourceProfile } from '../../../lib/core/ResourceProfile.js';
import { ResourceToRequirementMapping } from '../../../lib/resourcemanager/slotmanager/ResourceToRequirementMapping.js';
import { profile } from '../../support/fixtures.js';

const A = profile(1, 100);
const B = profile(2, 200);
const UNKNOWN = ResourceProfile.UNKNOWN;
const keys = (ps: ResourceProfile[]) => ps.map((p) => p.key);

/** Both directions as plain data, to check that a refused call changed nothing. */
function snapshot(m: ResourceToRequirementMapping) {
  return {
    requirements: m.getAllRequirementProfiles().map((r) => [r.key, m.getResourcesFulfilling(r).toString()]),
    resources: m.getAllResourceProfiles().map((r) => [r.key, m.getRequirementsFulfilledBy(r).toString()]),
  };
}

describe('ResourceToRequirementMapping', () => {
  it('starts empty and answers 0 / empty for unknown profiles', () => {
    const m = new ResourceToRequirementMapping();
    expect(m.isEmpty()).to.equal(true);
    expect(m.getNumFulfillingResources(A)).to.equal(0);
    expect(m.getNumFulfilledRequirements(A)).to.equal(0);
    expect(m.getResourcesFulfilling(UNKNOWN).isEmpty()).to.equal(true);
    expect(m.getRequirementsFulfilledBy(A).isEmpty()).to.equal(true);
  });

  it('records an increment in both directions', () => {
    const m = new ResourceToRequirementMapping();
    m.incrementCount(UNKNOWN, A, 2);
    m.incrementCount(UNKNOWN, B, 1);
    m.incrementCount(A, A, 1);
    expect(m.getResourcesFulfilling(UNKNOWN).getResourceCount(A)).to.equal(2);
    expect(m.getRequirementsFulfilledBy(A).getResourceCount(UNKNOWN)).to.equal(2);
    expect(m.getNumFulfillingResources(UNKNOWN)).to.equal(3);
    expect(m.getNumFulfilledRequirements(A)).to.equal(3);
    expect(m.getNumFulfilledRequirements(B)).to.equal(1);
    expect(keys(m.getAllRequirementProfiles())).to.deep.equal([UNKNOWN.key, A.key]);
    expect(keys(m.getAllResourceProfiles())).to.deep.equal([A.key, B.key]);
  });

  it('removes a pair, and then a profile, when its count reaches zero', () => {
    const m = new ResourceToRequirementMapping();
    m.incrementCount(UNKNOWN, A, 2);
    m.incrementCount(A, A, 1);
    m.decrementCount(UNKNOWN, A, 2);
    expect(keys(m.getAllRequirementProfiles())).to.deep.equal([A.key]);
    expect(m.getRequirementsFulfilledBy(A).containsResource(UNKNOWN)).to.equal(false);
    m.decrementCount(A, A, 1);
    expect(m.isEmpty()).to.equal(true);
    expect(m.getAllResourceProfiles()).to.deep.equal([]);
  });

  it('refuses to decrement an unknown requirement with IllegalStateError and changes nothing', () => {
    const m = new ResourceToRequirementMapping();
    m.incrementCount(A, A, 1);
    const before = snapshot(m);
    expect(() => m.decrementCount(B, B, 1)).to.throw(IllegalStateError, /only 0 recorded/);
    expect(snapshot(m)).to.deep.equal(before);
  });

  it(
    'refuses to decrement a resource that does not fulfil the ' +
      'requirement, or more than recorded (stricter than Flink)',
    () => {
      const m = new ResourceToRequirementMapping();
      m.incrementCount(UNKNOWN, A, 1);
      const before = snapshot(m);
      expect(() => m.decrementCount(UNKNOWN, B, 1)).to.throw(IllegalStateError);
      expect(() => m.decrementCount(UNKNOWN, A, 2)).to.throw(IllegalStateError, /only 1 recorded/);
      expect(snapshot(m)).to.deep.equal(before);
    },
  );

  it('refuses a count that is not a positive safe integer, and a non-profile, with IllegalArgumentError', () => {
    const m = new ResourceToRequirementMapping();
    expect(() => m.incrementCount(A, A, 0)).to.throw(IllegalArgumentError, /n must be a positive safe integer/);
    expect(() => m.incrementCount(A, A, -1)).to.throw(IllegalArgumentError);
    expect(() => m.decrementCount(A, A, 1.5)).to.throw(IllegalArgumentError);
    expect(() => m.incrementCount('A' as unknown as ResourceProfile, A, 1)).to.throw(
      IllegalArgumentError,
      /requirement must be a ResourceProfile/,
    );
    expect(() => m.incrementCount(A, undefined as unknown as ResourceProfile, 1)).to.throw(
      IllegalArgumentError,
      /resource must be a ResourceProfile/,
    );
    expect(m.isEmpty()).to.equal(true);
  });

  it('keeps both directions in agreement over a mixed sequence', () => {
    const m = new ResourceToRequirementMapping();
    const ops: Array<[ResourceProfile, ResourceProfile, number]> = [
      [UNKNOWN, A, 3],
      [A, A, 2],
      [UNKNOWN, B, 1],
      [UNKNOWN, A, -2],
      [A, A, -2],
      [B, B, 4],
      [UNKNOWN, B, -1],
    ];
    for (const [req, res, n] of ops) n > 0 ? m.incrementCount(req, res, n) : m.decrementCount(req, res, -n);
    for (const req of m.getAllRequirementProfiles()) {
      for (const [res, n] of m.getResourcesFulfilling(req).entries())
        expect(m.getRequirementsFulfilledBy(res).getResourceCount(req)).to.equal(n);
    }
    expect(snapshot(m)).to.deep.equal({
      requirements: [
        [UNKNOWN.key, `{${A}=1}`],
        [B.key, `{${B}=4}`],
      ],
      resources: [
        [A.key, '{ResourceProfile{UNKNOWN}=1}'],
        [B.key, `{${B}=4}`],
      ],
    });
  });
});
