import { expect } from 'chai';
import fc from 'fast-check';
import { sameWaitReason, type WaitReason } from '../../../lib/resourcemanager/slotmanager/WaitReason.js';

const id = fc.constantFrom('te-1', 'te-2', 'te-3') as fc.Arbitrary<never>;
const amount = fc.oneof(fc.constantFrom(0, 1, 0.5, 2 ** 20, Infinity, -0), fc.double({ noNaN: false }));
const shortfall = fc.array(
  fc.record({ field: fc.constantFrom('cpuCores', 'taskHeapMemory', 'gpu'), available: amount, required: amount }),
  { maxLength: 3 },
);
const reason: fc.Arbitrary<WaitReason> = fc.oneof(
  fc.record({ kind: fc.constant('waiting-for-workers' as const), workers: fc.nat({ max: 3 }) }),
  fc.record({
    kind: fc.constant('insufficient-resources' as const),
    closest: fc.array(fc.record({ resourceId: id, shortfall }), { maxLength: 3 }),
    couldFitWhenFree: fc.array(id, { maxLength: 3 }),
    passedOver: fc.array(id, { maxLength: 2 }),
  }),
  fc.record({ kind: fc.constant('exceeds-worker-shape' as const), shortfall }),
  fc.record({
    kind: fc.constant('max-slots-reached' as const),
    limit: fc.nat({ max: 9 }),
    wouldBe: fc.nat({ max: 9 }),
  }),
  fc.record({
    kind: fc.constant('max-resources-reached' as const),
    dimension: fc.constantFrom('cpu' as const, 'memory' as const),
    limit: amount,
    wouldBe: amount,
  }),
);

describe('sameWaitReason', () => {
  it('says two reasons are the same exactly when their JSON is (without writing it)', () => {
    fc.assert(
      fc.property(reason, reason, (a, b) => {
        expect(sameWaitReason(a, b), `${JSON.stringify(a)} vs ${JSON.stringify(b)}`).to.equal(
          JSON.stringify(a) === JSON.stringify(b),
        );
        const copy = JSON.parse(JSON.stringify(a)) as WaitReason;
        expect(sameWaitReason(a, copy), 'a reason and its JSON copy').to.equal(
          JSON.stringify(a) === JSON.stringify(copy),
        );
      }),
      { seed: 0x5107c1, numRuns: 2000 },
    );
  });

  it('tells apart reasons that differ in one executor, one amount, or one key’s order', () => {
    const base: WaitReason = {
      kind: 'insufficient-resources',
      closest: [{ resourceId: 'te-1' as never, shortfall: [{ field: 'cpuCores', available: 1, required: 2 }] }],
      couldFitWhenFree: [],
      passedOver: [],
    };
    expect(sameWaitReason(base, structuredClone(base))).to.equal(true);
    expect(sameWaitReason(base, { ...base, couldFitWhenFree: ['te-1' as never] })).to.equal(false);
    expect(
      sameWaitReason(base, {
        ...base,
        closest: [{ resourceId: 'te-1' as never, shortfall: [{ field: 'cpuCores', available: 0, required: 2 }] }],
      }),
    ).to.equal(false);
    const reordered = {
      kind: 'insufficient-resources',
      passedOver: [],
      closest: base.closest,
      couldFitWhenFree: [],
    } as unknown as WaitReason;
    expect(sameWaitReason(base, reordered)).to.equal(JSON.stringify(base) === JSON.stringify(reordered));
  });
});
