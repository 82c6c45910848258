import { expect } from 'chai';
import { ResourceBudgetError, ResourceProfileError } from '../../lib/core/errors.js';
import { MiB } from '../../lib/core/MemorySize.js';
import { ResourceBudgetManager } from '../../lib/core/ResourceBudgetManager.js';
import { ResourceProfile } from '../../lib/core/ResourceProfile.js';

const { ANY, UNKNOWN, ZERO } = ResourceProfile;
const total = ResourceProfile.fromSpec({
  cpuCores: 2,
  taskHeapMemory: '512m',
  managedMemory: '256m',
  extendedResources: { gpu: 1 },
});
const half = ResourceProfile.fromSpec({ cpuCores: 1, taskHeapMemory: '256m', managedMemory: '128m' });

function thrown(fn: () => unknown): unknown {
  try {
    fn();
  } catch (error) {
    return error;
  }
  throw new Error('expected an error, nothing was thrown');
}

describe('ResourceBudgetManager', () => {
  it('starts with everything available and nothing reserved', () => {
    const budget = new ResourceBudgetManager(total);
    expect(budget.total).to.equal(total);
    expect(budget.available).to.equal(total);
    expect(budget.reserved.equals(ZERO)).to.equal(true);
    expect(Object.isFrozen(budget)).to.equal(true);
  });

  it('refuses an UNKNOWN total with a typed error', () => {
    const error = thrown(() => new ResourceBudgetManager(UNKNOWN)) as ResourceProfileError;
    expect(error).to.be.instanceOf(ResourceProfileError);
    expect(error.reason).to.equal('unknown-profile');
    expect(error.details.field).to.equal('total');
  });

  it('reserves until full, each step returning a new manager', () => {
    const empty = new ResourceBudgetManager(total);
    const once = empty.reserve(half);
    const twice = once.reserve(half);
    expect(once).to.not.equal(empty);
    expect(once.available.equals(half.merge(ResourceProfile.fromSpec({ extendedResources: { gpu: 1 } })))).to.equal(
      true,
    );
    expect(once.reserved.equals(half)).to.equal(true);
    expect(twice.available.equals(ResourceProfile.fromSpec({ extendedResources: { gpu: 1 } }))).to.equal(true);
    expect(twice.reserved.equals(half.multiply(2))).to.equal(true);
    expect(twice.canReserve(half)).to.equal(false);
    expect(twice.canReserve(ZERO)).to.equal(true);
    expect(empty.available.equals(total)).to.equal(true);
  });

  it('refuses what does not fit, naming the short fields, and the old manager keeps its available', () => {
    const budget = new ResourceBudgetManager(total).reserve(half);
    const request = ResourceProfile.fromSpec({ cpuCores: 1.5, taskHeapMemory: '128m', extendedResources: { gpu: 2 } });
    expect(budget.canReserve(request)).to.equal(false);
    const error = thrown(() => budget.reserve(request)) as ResourceBudgetError;
    expect(error).to.be.instanceOf(ResourceBudgetError);
    expect(error.reason).to.equal('insufficient-budget');
    expect(error.message).to.contain('cpuCores available 1, required 1.5; gpu available 1, required 2');
    expect(error.details.requested).to.deep.equal(request.toJSON());
    expect(error.details.available).to.deep.equal(budget.available.toJSON());
    expect(error.details.shortfall).to.deep.equal([
      { field: 'cpuCores', available: 1, required: 1.5 },
      { field: 'gpu', available: 1, required: 2 },
    ]);
    expect(budget.reserved.equals(half)).to.equal(true);
    expect(budget.available.cpuCores).to.equal(1);
    expect(() => structuredClone(error.details)).to.not.throw();
  });

  it('refuses an extended resource the total does not have', () => {
    const budget = new ResourceBudgetManager(half);
    const error = thrown(() =>
      budget.reserve(ResourceProfile.fromSpec({ extendedResources: { fpga: 1 } })),
    ) as ResourceBudgetError;
    expect(error.reason).to.equal('insufficient-budget');
    expect(error.message).to.contain('fpga available 0, required 1');
  });

  it('never reserves an UNKNOWN profile', () => {
    const budget = new ResourceBudgetManager(total);
    expect(budget.canReserve(UNKNOWN)).to.equal(false);
    expect((thrown(() => budget.reserve(UNKNOWN)) as ResourceProfileError).reason).to.equal('unknown-profile');
    expect((thrown(() => budget.release(UNKNOWN)) as ResourceProfileError).reason).to.equal('unknown-profile');
  });

  it('releases what was reserved, back to the full total', () => {
    const full = new ResourceBudgetManager(total).reserve(half).reserve(half);
    const one = full.release(half);
    expect(one.available.cpuCores).to.equal(1);
    expect(one.reserved.equals(half)).to.equal(true);
    const none = one.release(half);
    expect(none.available.equals(total)).to.equal(true);
    expect(none.reserved.equals(ZERO)).to.equal(true);
    expect(full.available.cpuCores).to.equal(0);
  });

  it('keeps fractional reservations exact', () => {
    const tenth = ResourceProfile.fromSpec({ cpuCores: 0.1 });
    let budget = new ResourceBudgetManager(ResourceProfile.fromSpec({ cpuCores: 1 }));
    for (let i = 0; i < 10; i++) budget = budget.reserve(tenth);
    expect(budget.available.equals(ZERO)).to.equal(true);
    expect(budget.canReserve(tenth)).to.equal(false);
    for (let i = 0; i < 10; i++) budget = budget.release(tenth);
    expect(budget.available.cpuCores).to.equal(1);
  });

  it('refuses a release that would make available exceed total, and changes nothing', () => {
    const budget = new ResourceBudgetManager(total).reserve(half);
    const error = thrown(() => budget.release(half.multiply(2))) as ResourceBudgetError;
    expect(error).to.be.instanceOf(ResourceBudgetError);
    expect(error.reason).to.equal('over-release');
    expect(error.message)
      .to.contain('cpuCores reserved 1, released 2')
      .and.contain('managedMemory reserved 128 mb, released 256 mb');
    expect(
      (
        thrown(() =>
          new ResourceBudgetManager(total).release(ResourceProfile.fromSpec({ extendedResources: { gpu: 1 } })),
        ) as ResourceBudgetError
      ).reason,
    ).to.equal('over-release');
    expect(budget.reserved.equals(half)).to.equal(true);
    expect(budget.available.managedMemory).to.equal(128 * MiB);
  });

  it('treats an ANY total as unbounded, still tracking what is reserved', () => {
    const unbounded = new ResourceBudgetManager(ANY);
    const big = ResourceProfile.fromSpec({ cpuCores: 1e6, managedMemory: '1t', extendedResources: { gpu: 64 } });
    expect(unbounded.canReserve(big)).to.equal(true);
    const used = unbounded.reserve(big).reserve(half);
    expect(used.available).to.equal(ANY);
    expect(used.reserved.equals(big.merge(half))).to.equal(true);
    expect(used.release(big).reserved.equals(half)).to.equal(true);
    expect((thrown(() => used.release(big.multiply(2))) as ResourceBudgetError).reason).to.equal('over-release');
  });

  it('turns into plain data with toJSON', () => {
    const budget = new ResourceBudgetManager(total).reserve(half);
    expect(budget.toJSON()).to.deep.equal({ total: total.toJSON(), available: total.subtract(half).toJSON() });
    expect(new ResourceBudgetManager(ANY).toJSON()).to.deep.equal({ total: 'ANY', available: 'ANY' });
    expect(structuredClone(budget.toJSON())).to.deep.equal(budget.toJSON());
  });
});
