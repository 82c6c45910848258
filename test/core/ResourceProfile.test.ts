import { expect } from 'chai';
import { ResourceProfileError } from '../../lib/core/errors.js';
import { GiB, KiB, MiB } from '../../lib/core/MemorySize.js';
import { formatShortfall, ResourceProfile, type ResourceSpec } from '../../lib/core/ResourceProfile.js';

const { ANY, UNKNOWN, ZERO } = ResourceProfile;

function profile(spec: ResourceSpec): ResourceProfile {
  return ResourceProfile.fromSpec(spec);
}

/** Runs `fn`, expects a ResourceProfileError, and returns it for further checks. */
function refusal(fn: () => unknown): ResourceProfileError {
  try {
    fn();
  } catch (error) {
    expect(error).to.be.instanceOf(ResourceProfileError);
    return error as ResourceProfileError;
  }
  throw new Error('expected a ResourceProfileError, nothing was thrown');
}

const slot = profile({
  cpuCores: 1,
  taskHeapMemory: '256m',
  managedMemory: '128m',
  networkMemory: '64m',
  extendedResources: { gpu: 1 },
});

describe('ResourceProfile', () => {
  describe('building', () => {
    it('sets every standard field through the builder, memory as sizes or as MB', () => {
      const p = ResourceProfile.newBuilder()
        .setCpuCores(2.5)
        .setTaskHeapMemory('1g')
        .setTaskOffHeapMemory(1024)
        .setManagedMemory('512 mb')
        .setNetworkMemory('64m')
        .build();
      expect([p.cpuCores, p.taskHeapMemory, p.taskOffHeapMemory, p.managedMemory, p.networkMemory]).to.deep.equal([
        2.5,
        GiB,
        KiB,
        512 * MiB,
        64 * MiB,
      ]);
      const q = ResourceProfile.newBuilder()
        .setTaskHeapMemoryMB(1024)
        .setTaskOffHeapMemoryMB(0)
        .setManagedMemoryMB(512)
        .setNetworkMemoryMB(64)
        .build();
      expect([q.taskHeapMemory, q.taskOffHeapMemory, q.managedMemory, q.networkMemory]).to.deep.equal([
        GiB,
        0,
        512 * MiB,
        64 * MiB,
      ]);
      expect(q.cpuCores).to.equal(0);
    });

    it('sets extended resources one at a time or from a record, merging them', () => {
      const p = ResourceProfile.newBuilder()
        .setExtendedResource('gpu', 2)
        .setExtendedResources({ fpga: 0.5, 'tpu.v4': 1 })
        .build();
      expect(p.extendedResources).to.deep.equal({ fpga: 0.5, gpu: 2, 'tpu.v4': 1 });
      expect(Object.keys(p.extendedResources)).to.deep.equal(['fpga', 'gpu', 'tpu.v4']);
      expect(Object.isFrozen(p.extendedResources)).to.equal(true);
    });

    it('refuses a negative cpu amount with a typed error naming the field', () => {
      const error = refusal(() => ResourceProfile.newBuilder().setCpuCores(-1));
      expect(error.reason).to.equal('negative-amount');
      expect(error.details.field).to.equal('cpuCores');
      expect(error.message).to.equal('cpuCores must be a finite non-negative number, got -1');
    });

    it('refuses NaN, Infinity and non-numbers as not-finite', () => {
      for (const bad of [NaN, Infinity, -Infinity, '1' as unknown as number]) {
        const error = refusal(() => ResourceProfile.newBuilder().setCpuCores(bad));
        expect(error.reason).to.equal('not-finite');
        expect(error.details.field).to.equal('cpuCores');
      }
      expect(refusal(() => ResourceProfile.newBuilder().setExtendedResource('gpu', NaN)).details.field).to.equal('gpu');
    });

    it(
      'refuses each memory setter a negative, fractional, ' +
        'non-finite or malformed value, naming the field and the rule',
      () => {
        const b = ResourceProfile.newBuilder();
        const setters = [
          ['taskHeapMemory', (v: unknown) => b.setTaskHeapMemory(v as number)],
          ['taskOffHeapMemory', (v: unknown) => b.setTaskOffHeapMemory(v as number)],
          ['managedMemory', (v: unknown) => b.setManagedMemory(v as number)],
          ['networkMemory', (v: unknown) => b.setNetworkMemory(v as number)],
        ] as const;
        for (const [field, set] of setters) {
          const cases: Array<[unknown, string]> = [
            [-1, 'negative-amount'],
            [1.5, 'not-integer'],
            [NaN, 'not-finite'],
            [Infinity, 'not-finite'],
            [null, 'not-finite'],
            ['lots', 'invalid-size'],
            ['-5m', 'invalid-size'],
            ['5 zb', 'invalid-size'],
            ['8192 tb', 'invalid-size'],
            [Number.MAX_SAFE_INTEGER + 1, 'invalid-size'],
          ];
          for (const [value, reason] of cases) {
            const error = refusal(() => set(value));
            expect(error.reason, `${field} = ${String(value)}`).to.equal(reason);
            expect(error.details.field).to.equal(field);
            expect(error.message).to.match(new RegExp(`^${field} `));
          }
        }
      },
    );

    it('refuses each MB setter a negative, fractional or non-finite number of mebibytes', () => {
      const b = ResourceProfile.newBuilder();
      const setters = [
        ['taskHeapMemory', (n: number) => b.setTaskHeapMemoryMB(n)],
        ['taskOffHeapMemory', (n: number) => b.setTaskOffHeapMemoryMB(n)],
        ['managedMemory', (n: number) => b.setManagedMemoryMB(n)],
        ['networkMemory', (n: number) => b.setNetworkMemoryMB(n)],
      ] as const;
      for (const [field, set] of setters) {
        expect(refusal(() => set(-1)).reason).to.equal('negative-amount');
        const fraction = refusal(() => set(1.5));
        expect(fraction.reason).to.equal('not-integer');
        expect(fraction.message).to.contain("'1.5m'");
        expect(refusal(() => set(NaN)).reason).to.equal('not-finite');
        expect(refusal(() => set(2 ** 40)).reason).to.equal('invalid-size');
        expect(refusal(() => set(-1)).details.field).to.equal(field);
      }
    });

    it('refuses an extended resource with a bad name or a standard field name', () => {
      for (const name of ['', '1gpu', 'my gpu', 'gpu|x', 'a=b', 'cpuCores', 'managedMemory']) {
        const error = refusal(() => ResourceProfile.newBuilder().setExtendedResource(name, 1));
        expect(error.reason, name).to.equal('invalid-name');
        expect(error.details.field).to.equal('extendedResources');
      }
      expect(refusal(() => ResourceProfile.newBuilder().setExtendedResource('gpu', -0.5)).reason).to.equal(
        'negative-amount',
      );
      expect(refusal(() => ResourceProfile.newBuilder().setExtendedResources(null as never)).reason).to.equal(
        'not-finite',
      );
    });

    it('accepts memory sizes as strings in a spec, missing fields being 0', () => {
      const p = profile({ taskHeapMemory: '1.5g', managedMemory: 4096 });
      expect(p.taskHeapMemory).to.equal(1.5 * GiB);
      expect(p.managedMemory).to.equal(4096);
      expect(p.cpuCores).to.equal(0);
      expect(p.networkMemory).to.equal(0);
      expect(profile({}).equals(ZERO)).to.equal(true);
    });

    it('refuses an unknown key in a spec, naming it and listing the allowed ones', () => {
      const error = refusal(() => ResourceProfile.fromSpec({ cpu: 1 } as ResourceSpec));
      expect(error.reason).to.equal('unknown-field');
      expect(error.details.field).to.equal('cpu');
      expect(error.message)
        .to.contain('"cpu"')
        .and.contain('cpuCores, taskHeapMemory, taskOffHeapMemory, managedMemory, networkMemory, extendedResources');
      expect(refusal(() => ResourceProfile.fromSpec('SOME' as never)).reason).to.equal('unknown-field');
    });

    it('returns a profile given to fromSpec as is, and reads the strings UNKNOWN and ANY', () => {
      expect(ResourceProfile.fromSpec(slot)).to.equal(slot);
      expect(ResourceProfile.fromSpec('UNKNOWN')).to.equal(UNKNOWN);
      expect(ResourceProfile.fromSpec('ANY')).to.equal(ANY);
    });

    it('makes instances frozen', () => {
      expect(Object.isFrozen(slot)).to.equal(true);
      expect(() => {
        (slot as unknown as { key: string }).key = 'x';
      }).to.throw(TypeError);
    });
  });

  describe('precision', () => {
    it('adds 0.1 and 0.2 cores to exactly 0.3 cores', () => {
      const sum = profile({ cpuCores: 0.1 }).merge(profile({ cpuCores: 0.2 }));
      expect(sum.cpuCores).to.equal(0.3);
      expect(sum.equals(profile({ cpuCores: 0.3 }))).to.equal(true);
      expect(sum.key).to.equal(profile({ cpuCores: 0.3 }).key);
    });

    it('keeps CPU and extended amounts to 8 decimal places, rounded down', () => {
      expect(profile({ cpuCores: 1 / 3 }).cpuCores).to.equal(0.33333333);
      expect(profile({ cpuCores: 2 / 3 }).cpuCores).to.equal(0.66666666);
      expect(profile({ extendedResources: { gpu: 1 / 3 } }).extendedResources).to.deep.equal({ gpu: 0.33333333 });
      expect(profile({ extendedResources: { gpu: 2 / 3 } }).extendedResources).to.deep.equal({ gpu: 0.66666666 });
    });

    it('never keeps more than was asked: 0.123456789 cores are 0.12345678, not 0.12345679', () => {
      expect(ResourceProfile.newBuilder().setCpuCores(0.123456789).build().cpuCores).to.equal(0.12345678);
      expect(
        ResourceProfile.newBuilder().setExtendedResource('gpu', 0.123456789).build().extendedResources,
      ).to.deep.equal({ gpu: 0.12345678 });
      expect(profile({ cpuCores: 0.000000019 }).cpuCores).to.equal(0.00000001);
      expect(profile({ cpuCores: 0.000000009 }).equals(ZERO)).to.equal(true);
      for (const cores of [0.1, 0.29, 0.3, 0.57, 1.1, 2.675, 1234.56789012, 0.12345678]) {
        const kept = profile({ cpuCores: cores }).cpuCores;
        expect(kept, String(cores)).to.equal(cores); // binary noise in cores * 1e8 does not cost a unit
      }
    });

    it('reads back exactly what it wrote: toJSON -> fromJSON keeps every unit', () => {
      for (const p of [
        profile({ cpuCores: 2 / 3 }),
        profile({ cpuCores: 0.12345678, extendedResources: { gpu: 0.66666666 } }),
        profile({ cpuCores: 123456.78901234 }),
      ]) {
        expect(ResourceProfile.fromJSON(p.toJSON()).equals(p), p.toString()).to.equal(true);
      }
    });

    it('subtracts back to exactly what was there', () => {
      const a = profile({ cpuCores: 0.7, extendedResources: { gpu: 0.3 } });
      const b = profile({ cpuCores: 0.1, extendedResources: { gpu: 0.1 } });
      expect(a.merge(b).subtract(b).equals(a)).to.equal(true);
      expect(a.subtract(b).cpuCores).to.equal(0.6);
    });
  });

  describe('equality', () => {
    it('drops zero-valued extended resources, so gpu: 0 equals no gpu', () => {
      const withZero = profile({ cpuCores: 1, extendedResources: { gpu: 0 } });
      expect(withZero.extendedResources).to.deep.equal({});
      expect(withZero.equals(profile({ cpuCores: 1 }))).to.equal(true);
      expect(withZero.key).to.equal(profile({ cpuCores: 1 }).key);
      expect(
        ResourceProfile.newBuilder().setExtendedResource('gpu', 1).setExtendedResource('gpu', 0).build().equals(ZERO),
      ).to.equal(true);
    });

    it('agrees with key: equal profiles share a key regardless of insertion order', () => {
      const a = ResourceProfile.newBuilder()
        .setExtendedResource('gpu', 1)
        .setExtendedResource('fpga', 2)
        .setCpuCores(1)
        .build();
      const b = ResourceProfile.newBuilder().setCpuCores(1).setExtendedResources({ fpga: 2, gpu: 1 }).build();
      expect(a.equals(b)).to.equal(true);
      expect(a.key).to.equal(b.key);
      const c = profile({ cpuCores: 1, extendedResources: { gpu: 1, fpga: 3 } });
      expect(a.equals(c)).to.equal(false);
      expect(a.key).to.not.equal(c.key);
    });

    it('keys distinct profiles apart, including special values', () => {
      const profiles = [
        UNKNOWN,
        ANY,
        ZERO,
        slot,
        profile({ cpuCores: 1 }),
        profile({ taskHeapMemory: 1 }),
        profile({ taskOffHeapMemory: 1 }),
        profile({ managedMemory: 1 }),
        profile({ networkMemory: 1 }),
        profile({ extendedResources: { gpu: 1 } }),
      ];
      const keys = new Set(profiles.map((p) => p.key));
      expect(keys.size).to.equal(profiles.length);
      for (const p of profiles) for (const q of profiles) expect(p.equals(q)).to.equal(p.key === q.key);
      expect(UNKNOWN.key).to.equal('UNKNOWN');
      expect(ANY.key).to.equal('ANY');
      expect(slot.key).to.equal('c100000000|h268435456|o0|m134217728|n67108864|gpu=100000000');
    });

    it('compares by value with equals and with chai deep equality', () => {
      expect(
        slot.equals(
          profile({
            cpuCores: 1,
            taskHeapMemory: 256 * MiB,
            managedMemory: '128 mb',
            networkMemory: '64m',
            extendedResources: { gpu: 1 },
          }),
        ),
      ).to.equal(true);
      expect(slot.equals(slot.toJSON())).to.equal(false);
      expect(profile({ cpuCores: 1 })).to.deep.equal(profile({ cpuCores: 1 }));
      expect(profile({ cpuCores: 1 })).to.not.deep.equal(profile({ cpuCores: 2 }));
    });
  });

  describe('special values', () => {
    it('tells UNKNOWN, ANY and specified profiles apart by kind', () => {
      expect([UNKNOWN.kind, ANY.kind, ZERO.kind]).to.deep.equal(['unknown', 'any', 'specified']);
      expect([UNKNOWN.isUnknown(), ANY.isUnknown(), ZERO.isUnknown()]).to.deep.equal([true, false, false]);
      expect([UNKNOWN.isAny(), ANY.isAny(), ZERO.isAny()]).to.deep.equal([false, true, false]);
    });

    it('throws unknown-profile from every getter of UNKNOWN', () => {
      for (const getter of [
        'cpuCores',
        'taskHeapMemory',
        'taskOffHeapMemory',
        'managedMemory',
        'networkMemory',
        'extendedResources',
        'totalMemory',
        'operatorsMemory',
      ] as const) {
        const error = refusal(() => UNKNOWN[getter]);
        expect(error.reason).to.equal('unknown-profile');
        expect(error.details.field).to.equal(getter);
      }
    });

    it('reports Infinity for every standard field of ANY and no extended resources', () => {
      expect([
        ANY.cpuCores,
        ANY.taskHeapMemory,
        ANY.taskOffHeapMemory,
        ANY.managedMemory,
        ANY.networkMemory,
        ANY.totalMemory,
      ]).to.deep.equal(Array(6).fill(Infinity));
      expect(ANY.extendedResources).to.deep.equal({});
    });

    it('sums memory into totalMemory and operatorsMemory', () => {
      const p = profile({ taskHeapMemory: 1, taskOffHeapMemory: 2, managedMemory: 4, networkMemory: 8 });
      expect(p.operatorsMemory).to.equal(7);
      expect(p.totalMemory).to.equal(15);
    });
  });

  describe('isMatching', () => {
    const bigger = profile({
      cpuCores: 2,
      taskHeapMemory: '512m',
      managedMemory: '128m',
      networkMemory: '64m',
      extendedResources: { gpu: 1 },
    });

    it('matches when the receiver is ANY, the two are equal, or the requirement is UNKNOWN', () => {
      expect(ANY.isMatching(slot)).to.equal(true);
      expect(ANY.isMatching(ANY)).to.equal(true);
      expect(ANY.isMatching(UNKNOWN)).to.equal(true);
      expect(slot.isMatching(profile(slot.toJSON() as ResourceSpec))).to.equal(true);
      expect(slot.isMatching(UNKNOWN)).to.equal(true);
      expect(ZERO.isMatching(ZERO)).to.equal(true);
    });

    it('does not match a larger slot to a smaller requirement: it is not a ≥ test', () => {
      expect(bigger.allFieldsNoLessThan(slot)).to.equal(true);
      expect(bigger.isMatching(slot)).to.equal(false);
      expect(slot.isMatching(bigger)).to.equal(false);
      expect(slot.isMatching(ZERO)).to.equal(false);
      expect(slot.isMatching(ANY)).to.equal(false);
    });

    it('throws unknown-profile when the receiver is UNKNOWN', () => {
      expect(refusal(() => UNKNOWN.isMatching(slot)).reason).to.equal('unknown-profile');
      expect(refusal(() => UNKNOWN.isMatching(UNKNOWN)).reason).to.equal('unknown-profile');
    });
  });

  describe('allFieldsNoLessThan', () => {
    it('holds for ANY receivers, equal profiles, and UNKNOWN others; fails for UNKNOWN receivers', () => {
      expect(ANY.allFieldsNoLessThan(ANY)).to.equal(true);
      expect(ANY.allFieldsNoLessThan(slot)).to.equal(true);
      expect(slot.allFieldsNoLessThan(slot)).to.equal(true);
      expect(UNKNOWN.allFieldsNoLessThan(UNKNOWN)).to.equal(true);
      expect(UNKNOWN.allFieldsNoLessThan(ZERO)).to.equal(false);
      expect(slot.allFieldsNoLessThan(UNKNOWN)).to.equal(true);
      expect(slot.allFieldsNoLessThan(ANY)).to.equal(false);
    });

    it('compares every standard field', () => {
      expect(slot.allFieldsNoLessThan(ZERO)).to.equal(true);
      expect(ZERO.allFieldsNoLessThan(slot)).to.equal(false);
      for (const field of [
        'cpuCores',
        'taskHeapMemory',
        'taskOffHeapMemory',
        'managedMemory',
        'networkMemory',
      ] as const) {
        expect(slot.allFieldsNoLessThan(slot.merge(profile({ [field]: 1 }))), field).to.equal(false);
      }
    });

    it('requires every extended resource of the other to be present and no lower', () => {
      const noGpu = profile({ cpuCores: 4 });
      const oneGpu = profile({ cpuCores: 1, extendedResources: { gpu: 1 } });
      expect(noGpu.allFieldsNoLessThan(oneGpu)).to.equal(false);
      expect(profile({ cpuCores: 4, extendedResources: { gpu: 0.5 } }).allFieldsNoLessThan(oneGpu)).to.equal(false);
      expect(profile({ cpuCores: 4, extendedResources: { gpu: 2, fpga: 1 } }).allFieldsNoLessThan(oneGpu)).to.equal(
        true,
      );
      expect(oneGpu.allFieldsNoLessThan(profile({ cpuCores: 1 }))).to.equal(true);
    });
  });

  describe('arithmetic', () => {
    it('merges field-wise, unioning and summing extended resources', () => {
      const sum = slot.merge(
        profile({ cpuCores: 0.5, taskOffHeapMemory: '1m', extendedResources: { gpu: 1, fpga: 2 } }),
      );
      expect(sum.toJSON()).to.deep.equal({
        cpuCores: 1.5,
        taskHeapMemory: 256 * MiB,
        taskOffHeapMemory: MiB,
        managedMemory: 128 * MiB,
        networkMemory: 64 * MiB,
        extendedResources: { fpga: 2, gpu: 2 },
      });
    });

    it('merges to ANY if either is ANY, else to UNKNOWN if either is UNKNOWN', () => {
      expect(slot.merge(ANY)).to.equal(ANY);
      expect(ANY.merge(UNKNOWN)).to.equal(ANY);
      expect(UNKNOWN.merge(slot)).to.equal(UNKNOWN);
      expect(slot.merge(UNKNOWN)).to.equal(UNKNOWN);
    });

    it('refuses a merge whose memory would pass Number.MAX_SAFE_INTEGER bytes', () => {
      const huge = profile({ managedMemory: Number.MAX_SAFE_INTEGER });
      const error = refusal(() => huge.merge(profile({ managedMemory: 1 })));
      expect(error.reason).to.equal('invalid-size');
      expect(error.details.field).to.equal('managedMemory');
    });

    it('subtracts field-wise and drops extended resources that reach zero', () => {
      const rest = slot.subtract(profile({ cpuCores: 0.25, taskHeapMemory: '56m', extendedResources: { gpu: 1 } }));
      expect(rest.cpuCores).to.equal(0.75);
      expect(rest.taskHeapMemory).to.equal(200 * MiB);
      expect(rest.extendedResources).to.deep.equal({});
      expect(rest.key).to.not.contain('gpu');
      expect(slot.subtract(slot).equals(ZERO)).to.equal(true);
    });

    it('subtracts to ANY if either is ANY, else to UNKNOWN if either is UNKNOWN', () => {
      expect(ANY.subtract(slot)).to.equal(ANY);
      expect(slot.subtract(ANY)).to.equal(ANY);
      expect(UNKNOWN.subtract(slot)).to.equal(UNKNOWN);
      expect(slot.subtract(UNKNOWN)).to.equal(UNKNOWN);
    });

    it('refuses to subtract more than there is, naming the short field, and leaves the receiver unchanged', () => {
      const before = slot.toJSON();
      const error = refusal(() => slot.subtract(profile({ cpuCores: 0.5, managedMemory: '256m' })));
      expect(error.reason).to.equal('insufficient-resources');
      expect(error.details).to.deep.equal({ field: 'managedMemory', available: 128 * MiB, required: 256 * MiB });
      expect(error.message).to.contain('managedMemory available 128 mb, required 256 mb');
      expect(slot.toJSON()).to.deep.equal(before);
      const missing = refusal(() => slot.subtract(profile({ extendedResources: { fpga: 1 } })));
      expect(missing.details).to.deep.equal({ field: 'fpga', available: 0, required: 1 });
    });

    it('multiplies every field by a non-negative whole number', () => {
      const triple = slot.multiply(3);
      expect(triple.cpuCores).to.equal(3);
      expect(triple.managedMemory).to.equal(384 * MiB);
      expect(triple.extendedResources).to.deep.equal({ gpu: 3 });
      expect(
        profile({ cpuCores: 0.1 })
          .multiply(3)
          .equals(profile({ cpuCores: 0.3 })),
      ).to.equal(true);
      expect(slot.multiply(1).equals(slot)).to.equal(true);
    });

    it('multiplies by 0 to ZERO, and keeps ANY and UNKNOWN as they are', () => {
      expect(slot.multiply(0)).to.equal(ZERO);
      expect(ANY.multiply(2)).to.equal(ANY);
      expect(UNKNOWN.multiply(2)).to.equal(UNKNOWN);
    });

    it('refuses a negative, fractional or non-finite multiplier', () => {
      for (const n of [-1, 1.5, NaN, Infinity]) {
        const error = refusal(() => slot.multiply(n));
        expect(error.reason, String(n)).to.equal('invalid-multiplier');
        expect(error.details.field).to.equal('multiplier');
      }
      expect(refusal(() => ANY.multiply(-1)).reason).to.equal('invalid-multiplier');
    });

    it('divides every field by a whole number, rounding down so that the shares never exceed the whole', () => {
      const two = profile({ cpuCores: 2, taskHeapMemory: 1000, extendedResources: { gpu: 2 } });
      const third = two.divide(3);
      expect(third.cpuCores).to.equal(0.66666666);
      expect(third.taskHeapMemory).to.equal(333);
      expect(third.extendedResources).to.deep.equal({ gpu: 0.66666666 });
      expect(two.allFieldsNoLessThan(third.multiply(3))).to.equal(true);
      expect(profile({ cpuCores: 1 }).divide(6).cpuCores).to.equal(0.16666666);
      expect(profile({ cpuCores: 1 }).divide(6).multiply(6).cpuCores).to.equal(0.99999996);
      expect(slot.divide(1)).to.equal(slot);
      expect(
        profile({ extendedResources: { gpu: 0.00000002 } }).divide(3).extendedResources,
        'a share below one unit is dropped',
      ).to.deep.equal({});
      expect(ANY.divide(2)).to.equal(ANY);
      expect(UNKNOWN.divide(2)).to.equal(UNKNOWN);
    });

    it('refuses a divisor that is not a whole number >= 1', () => {
      for (const n of [0, -1, 1.5, NaN, Infinity]) {
        const error = refusal(() => slot.divide(n));
        expect(error.reason, String(n)).to.equal('invalid-divisor');
        expect(error.details.field).to.equal('divisor');
        expect(error.message).to.match(/^divisor must be a whole number >= 1, got /);
      }
    });

    it('refuses a product beyond Number.MAX_SAFE_INTEGER bytes', () => {
      expect(refusal(() => profile({ networkMemory: '1t' }).multiply(2 ** 13)).reason).to.equal('invalid-size');
    });
  });

  describe('shortfall', () => {
    it('lists every field, standard then extended by name, where the receiver has less than required', () => {
      const have = profile({ cpuCores: 1, taskHeapMemory: '1g', managedMemory: '64m', extendedResources: { gpu: 1 } });
      const need = profile({
        cpuCores: 2,
        taskHeapMemory: '512m',
        managedMemory: '128m',
        extendedResources: { gpu: 2, fpga: 1 },
      });
      const shortfall = have.shortfall(need);
      expect(shortfall).to.deep.equal([
        { field: 'cpuCores', available: 1, required: 2 },
        { field: 'managedMemory', available: 64 * MiB, required: 128 * MiB },
        { field: 'fpga', available: 0, required: 1 },
        { field: 'gpu', available: 1, required: 2 },
      ]);
      expect(formatShortfall(shortfall)).to.equal(
        'cpuCores available 1, required 2; managedMemory available 64 mb, ' +
          'required 128 mb; fpga available 0, required 1; gpu available 1, required 2',
      );
    });

    it('is empty when the receiver suffices, is ANY, or either side is UNKNOWN', () => {
      expect(slot.shortfall(ZERO)).to.deep.equal([]);
      expect(ANY.shortfall(slot)).to.deep.equal([]);
      expect(UNKNOWN.shortfall(slot)).to.deep.equal([]);
      expect(ZERO.shortfall(UNKNOWN)).to.deep.equal([]);
      expect(ZERO.shortfall(ANY)).to.have.length(5);
    });
  });

  describe('printing and wire form', () => {
    it('prints Flink-style, memory readably', () => {
      expect(slot.toString()).to.equal(
        'ResourceProfile{cpuCores=1, taskHeapMemory=256 mb, ' +
          'taskOffHeapMemory=0 b, managedMemory=128 mb, networkMemory=64 mb, gpu=1}',
      );
      expect(UNKNOWN.toString()).to.equal('ResourceProfile{UNKNOWN}');
      expect(ANY.toString()).to.equal('ResourceProfile{ANY}');
      expect(String(profile({ cpuCores: 0.5, taskHeapMemory: 1536 }))).to.contain(
        'cpuCores=0.5, taskHeapMemory=1.50 kb',
      );
    });

    it('turns into plain data and back with toJSON / fromJSON', () => {
      for (const p of [
        slot,
        ZERO,
        ANY,
        UNKNOWN,
        profile({ cpuCores: 1 / 3, extendedResources: { gpu: 0.1, fpga: 2 } }),
      ]) {
        const json = p.toJSON();
        expect(ResourceProfile.fromJSON(json).equals(p)).to.equal(true);
        expect(ResourceProfile.fromJSON(JSON.parse(JSON.stringify(json))).equals(p)).to.equal(true);
      }
      expect(slot.toJSON()).to.deep.equal({
        cpuCores: 1,
        taskHeapMemory: 256 * MiB,
        taskOffHeapMemory: 0,
        managedMemory: 128 * MiB,
        networkMemory: 64 * MiB,
        extendedResources: { gpu: 1 },
      });
      expect([UNKNOWN.toJSON(), ANY.toJSON()]).to.deep.equal(['UNKNOWN', 'ANY']);
    });

    it('survives structuredClone of its JSON, so it can cross threads', () => {
      const cloned = structuredClone(slot.toJSON());
      expect(ResourceProfile.fromJSON(cloned).equals(slot)).to.equal(true);
      expect(Object.isFrozen(slot.toJSON())).to.equal(false);
    });

    it('validates what fromJSON reads', () => {
      expect(refusal(() => ResourceProfile.fromJSON({ cpuCores: -1 })).reason).to.equal('negative-amount');
      expect(refusal(() => ResourceProfile.fromJSON('any')).reason).to.equal('unknown-field');
      expect(refusal(() => ResourceProfile.fromJSON(null)).reason).to.equal('unknown-field');
    });
  });

  describe('fromAmounts', () => {
    it(
      'builds the profile whose raw amounts and extended ' + 'units are the ones given, dropping zero extended amounts',
      () => {
        const original = ResourceProfile.fromSpec({
          cpuCores: 0.3,
          taskHeapMemory: '256m',
          managedMemory: 7,
          extendedResources: { gpu: 0.1, fpga: 2 },
        });
        const rebuilt = ResourceProfile.fromAmounts(original.amounts, new Map([...original.extended, ['tpu', 0]]));
        expect(rebuilt.equals(original)).to.equal(true);
        expect(rebuilt.key).to.equal(original.key);
        expect(ResourceProfile.fromAmounts([0, 0, 0, 0, 0]).equals(ResourceProfile.ZERO)).to.equal(true);
      },
    );

    it('refuses anything but five non-negative safe integers and valid extended names', () => {
      expect(refusal(() => ResourceProfile.fromAmounts([0, 0, 0, 0])).reason).to.equal('invalid-size');
      expect(refusal(() => ResourceProfile.fromAmounts([-1, 0, 0, 0, 0])).reason).to.equal('negative-amount');
      expect(refusal(() => ResourceProfile.fromAmounts([0.5, 0, 0, 0, 0])).reason).to.equal('not-integer');
      expect(refusal(() => ResourceProfile.fromAmounts([0, Infinity, 0, 0, 0])).reason).to.equal('not-finite');
      expect(refusal(() => ResourceProfile.fromAmounts([0, 0, 0, 0, 0], new Map([['cpuCores', 1]]))).reason).to.equal(
        'invalid-name',
      );
      expect(refusal(() => ResourceProfile.fromAmounts([0, 0, 0, 0, 0], new Map([['gpu', -1]]))).reason).to.equal(
        'negative-amount',
      );
    });
  });

  describe('running totals (fitsWithin, addTo, subtractFrom)', () => {
    it(
      'adds to and takes off plain numbers exactly as merge ' +
        'and subtract would, and tests fits as allFieldsNoLessThan',
      () => {
        const amounts = [0, 0, 0, 0, 0];
        const extended = new Map<string, number>();
        const a = profile({ cpuCores: 0.1, taskHeapMemory: '100m', extendedResources: { gpu: 1 } });
        const b = profile({ cpuCores: 0.2, managedMemory: '1m', extendedResources: { gpu: 0.5, fpga: 2 } });
        expect([a.addTo(amounts, extended), b.addTo(amounts, extended)]).to.deep.equal([true, true]);
        expect(ResourceProfile.fromAmounts(amounts, extended).key).to.equal(a.merge(b).key);
        expect([b.fitsWithin(amounts, extended), slot.fitsWithin(amounts, extended)]).to.deep.equal([true, false]);
        expect(a.subtractFrom(amounts, extended)).to.equal(true);
        expect(ResourceProfile.fromAmounts(amounts, extended).key).to.equal(b.key);
        expect(b.subtractFrom(amounts, extended)).to.equal(true);
        expect([amounts, [...extended]]).to.deep.equal([[0, 0, 0, 0, 0], []]);
      },
    );

    it(
      'changes nothing and answers false when a sum would overflow ' +
        'or an amount would go below zero; refuses UNKNOWN and ANY',
      () => {
        const amounts = [0, Number.MAX_SAFE_INTEGER, 0, 0, 0];
        const extended = new Map([['gpu', 1e8]]);
        expect(profile({ taskHeapMemory: 1 }).addTo(amounts, extended)).to.equal(false);
        expect(profile({ extendedResources: { gpu: 2 } }).subtractFrom(amounts, extended)).to.equal(false);
        expect([amounts, [...extended]]).to.deep.equal([[0, Number.MAX_SAFE_INTEGER, 0, 0, 0], [['gpu', 1e8]]]);
        expect(refusal(() => UNKNOWN.fitsWithin(amounts, extended)).reason).to.equal('unknown-profile');
        expect(refusal(() => ANY.addTo(amounts, extended)).reason).to.equal('unknown-profile');
      },
    );
  });
});
