import { expect } from 'chai';
import { IllegalArgumentError } from '../../lib/core/errors.js';
import { ResourceCounter } from '../../lib/core/ResourceCounter.js';
import { ResourceProfile } from '../../lib/core/ResourceProfile.js';
import { profile } from '../support/fixtures.js';

const A = profile(1, 100);
const B = profile(2, 200);
const UNKNOWN = ResourceProfile.UNKNOWN;
/** The counter as [profile key, count] pairs, in its iteration order. */
const pairs = (c: ResourceCounter) => c.entries().map(([p, n]) => [p.key, n]);

describe('ResourceCounter', () => {
  describe('construction', () => {
    it('starts empty, and a count of 0 gives the empty counter', () => {
      expect(ResourceCounter.empty().isEmpty()).to.equal(true);
      expect(ResourceCounter.withResource(A, 0).isEmpty()).to.equal(true);
      expect(ResourceCounter.withResource(A, 3).getResourceCount(A)).to.equal(3);
    });

    it('sums a profile listed twice in fromEntries, keeping the first-seen order', () => {
      const c = ResourceCounter.fromEntries([
        [B, 1],
        [A, 2],
        [profile(2, 200), 4],
        [UNKNOWN, 0],
      ]);
      expect(pairs(c)).to.deep.equal([
        [B.key, 5],
        [A.key, 2],
      ]);
    });

    it('keeps the first profile object for a key', () => {
      const same = profile(1, 100);
      const c = ResourceCounter.withResource(A, 1).add(same, 1);
      expect(c.getResources()[0]).to.equal(A);
    });

    it('refuses negative, fractional and non-numeric counts and non-profiles, naming the argument', () => {
      expect(() => ResourceCounter.withResource(A, -1)).to.throw(
        IllegalArgumentError,
        /count must be a non-negative safe integer/,
      );
      expect(() => ResourceCounter.withResource(A, 1.5)).to.throw(IllegalArgumentError, /count/);
      expect(() => ResourceCounter.withResource(A, NaN)).to.throw(IllegalArgumentError, /count/);
      expect(() => ResourceCounter.withResource(A, '2' as unknown as number)).to.throw(IllegalArgumentError, /count/);
      expect(() => ResourceCounter.empty().add({} as ResourceProfile, 1)).to.throw(
        IllegalArgumentError,
        /profile must be a ResourceProfile/,
      );
      expect(() => ResourceCounter.fromEntries([A] as never)).to.throw(IllegalArgumentError, /pair/);
      expect(() => ResourceCounter.fromEntries(null as never)).to.throw(IllegalArgumentError, /entries/);
      const error = (() => {
        try {
          ResourceCounter.withResource(A, -1);
        } catch (e) {
          return e as IllegalArgumentError;
        }
      })();
      expect(error?.details).to.include({ argument: 'count' });
    });

    it('refuses a sum beyond the largest safe integer', () => {
      const big = ResourceCounter.withResource(A, Number.MAX_SAFE_INTEGER);
      expect(() => big.add(A, 1)).to.throw(IllegalArgumentError, /exceed/);
    });
  });

  describe('add and subtract', () => {
    it('never changes the receiver', () => {
      const c = ResourceCounter.withResource(A, 2);
      c.add(A, 1);
      c.subtract(A, 2);
      c.add(ResourceCounter.withResource(B, 1));
      expect(pairs(c)).to.deep.equal([[A.key, 2]]);
      expect(Object.isFrozen(c)).to.equal(true);
    });

    it('adds a counter entry by entry and keeps a changed profile in its place', () => {
      const c = ResourceCounter.fromEntries([
        [A, 1],
        [B, 1],
      ]).add(
        ResourceCounter.fromEntries([
          [UNKNOWN, 2],
          [A, 3],
        ]),
      );
      expect(pairs(c)).to.deep.equal([
        [A.key, 4],
        [B.key, 1],
        [UNKNOWN.key, 2],
      ]);
    });

    it('drops a profile whose count reaches zero or below, and appends it when it comes back', () => {
      const c = ResourceCounter.fromEntries([
        [A, 2],
        [B, 1],
      ]).subtract(A, 5);
      expect(c.containsResource(A)).to.equal(false);
      expect(c.getResourceCount(A)).to.equal(0);
      expect(pairs(c.add(A, 1))).to.deep.equal([
        [B.key, 1],
        [A.key, 1],
      ]);
    });

    it('subtracts a counter, ignoring profiles it does not hold', () => {
      const c = ResourceCounter.fromEntries([
        [A, 3],
        [B, 1],
      ]).subtract(
        ResourceCounter.fromEntries([
          [A, 1],
          [B, 1],
          [UNKNOWN, 4],
        ]),
      );
      expect(pairs(c)).to.deep.equal([[A.key, 2]]);
    });

    it('treats a count of 0 as a no-op', () => {
      const c = ResourceCounter.withResource(A, 1);
      expect(c.add(B, 0).equals(c)).to.equal(true);
      expect(c.subtract(A, 0).equals(c)).to.equal(true);
    });
  });

  describe('totals', () => {
    it('counts every resource', () => {
      expect(
        ResourceCounter.fromEntries([
          [A, 2],
          [B, 3],
        ]).getTotalResourceCount(),
      ).to.equal(5);
      expect(ResourceCounter.empty().getTotalResourceCount()).to.equal(0);
    });

    it('merges profile × count, ZERO when empty', () => {
      expect(
        ResourceCounter.fromEntries([
          [A, 2],
          [B, 1],
        ])
          .getTotalResource()
          .equals(profile(4, 400)),
      ).to.equal(true);
      expect(ResourceCounter.empty().getTotalResource().equals(ResourceProfile.ZERO)).to.equal(true);
    });

    it('gives UNKNOWN when any entry is UNKNOWN, and ANY when any entry is ANY (merge semantics)', () => {
      expect(
        ResourceCounter.fromEntries([
          [A, 1],
          [UNKNOWN, 2],
        ])
          .getTotalResource()
          .isUnknown(),
      ).to.equal(true);
      expect(
        ResourceCounter.fromEntries([
          [UNKNOWN, 1],
          [ResourceProfile.ANY, 1],
        ])
          .getTotalResource()
          .isAny(),
      ).to.equal(true);
    });
  });

  describe('comparison and output', () => {
    it('compares as a multiset, ignoring order', () => {
      const ab = ResourceCounter.fromEntries([
        [A, 1],
        [B, 2],
      ]);
      expect(
        ab.equals(
          ResourceCounter.fromEntries([
            [B, 2],
            [A, 1],
          ]),
        ),
      ).to.equal(true);
      expect(
        ab.equals(
          ResourceCounter.fromEntries([
            [A, 1],
            [B, 1],
          ]),
        ),
      ).to.equal(false);
      expect(ab.equals(ResourceCounter.withResource(A, 1))).to.equal(false);
      expect(ab.equals(null)).to.equal(false);
    });

    it('prints entries in insertion order', () => {
      const c = ResourceCounter.fromEntries([
        [UNKNOWN, 3],
        [A, 2],
      ]);
      expect(c.toString()).to.equal(`{ResourceProfile{UNKNOWN}=3, ${A}=2}`);
      expect(ResourceCounter.empty().toString()).to.equal('{}');
    });

    it('serialises to plain data and back', () => {
      const c = ResourceCounter.fromEntries([
        [UNKNOWN, 3],
        [A, 2],
      ]);
      const json = JSON.parse(JSON.stringify(c));
      expect(json).to.deep.equal([
        { profile: 'UNKNOWN', count: 3 },
        { profile: A.toJSON(), count: 2 },
      ]);
      const back = ResourceCounter.fromJSON(json);
      expect(back.equals(c)).to.equal(true);
      expect(pairs(back)).to.deep.equal(pairs(c));
      expect(() => ResourceCounter.fromJSON({})).to.throw(IllegalArgumentError, /array/);
    });

    it('lists profiles and entries as fresh arrays', () => {
      const c = ResourceCounter.fromEntries([
        [A, 1],
        [B, 2],
      ]);
      c.getResources().pop();
      c.entries().pop();
      expect(() => ((c.entries()[0] as unknown as number[])[1] = 99)).to.throw(TypeError);
      expect(c.size).to.equal(2);
      expect(c.getResourceCount(A)).to.equal(1);
      expect(c.getResources().map((p) => p.key)).to.deep.equal([A.key, B.key]);
    });
  });
});
