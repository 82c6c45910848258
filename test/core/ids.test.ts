import { expect } from 'chai';
import { AllocationID, ExecutionAttemptID, JobID, ResourceID, SlotID } from '../../lib/core/ids.js';
import { IllegalArgumentError } from '../../lib/core/errors.js';

describe('ids', () => {
  it('generates distinct 32-hex JobIDs and AllocationIDs', () => {
    const a = AllocationID.generate();
    const b = AllocationID.generate();
    expect(a).to.match(/^[0-9a-f]{32}$/);
    expect(a).to.not.equal(b);
    expect(JobID.is(JobID.generate())).to.equal(true);
    expect(AllocationID.short(a)).to.have.length(8);
  });

  it('refuses a malformed AllocationID with a typed error naming the rule', () => {
    expect(() => AllocationID.parse('xyz')).to.throw(IllegalArgumentError, /32 lower-case hex/);
    expect(() => JobID.parse(42)).to.throw(IllegalArgumentError, /non-empty string/);
  });

  it('labels an ExecutionAttemptID with vertex, subtask and attempt', () => {
    const id = ExecutionAttemptID.generate({ vertex: 'tokenize', subtask: 3, attempt: 1 });
    expect(id).to.match(/^[0-9a-f]{32}_tokenize_3_1$/);
    expect(ExecutionAttemptID.parse(id)).to.equal(id);
    expect(ExecutionAttemptID.short(id)).to.match(/^[0-9a-f]{8}_tokenize_3_1$/);
    expect(ExecutionAttemptID.subtaskOf(id)).to.deep.equal({ vertex: 'tokenize', subtask: 3 });
    const underscored = ExecutionAttemptID.generate({ vertex: 'a_b_1', subtask: 12, attempt: 0 });
    expect(ExecutionAttemptID.subtaskOf(underscored)).to.deep.equal({ vertex: 'a_b_1', subtask: 12 });
    expect(ExecutionAttemptID.subtaskOf(ExecutionAttemptID.generate())).to.equal(undefined);
    expect(() => ExecutionAttemptID.generate({ vertex: 'x', subtask: -1, attempt: 0 })).to.throw(
      IllegalArgumentError,
      /subtask/,
    );
  });

  it('builds readable ResourceIDs and SlotIDs and parses them back', () => {
    const rid = ResourceID.generate();
    expect(rid).to.match(/^taskexecutor-[0-9a-f]{12}$/);
    const slot = SlotID.of(rid, 2);
    expect(SlotID.toString(slot)).to.equal(`${rid}/2`);
    expect(SlotID.equals(SlotID.parse(`${rid}/2`), slot)).to.equal(true);
    expect(() => SlotID.of(rid, -1)).to.throw(IllegalArgumentError, /non-negative integer/);
    expect(() => ResourceID.parse('has space')).to.throw(IllegalArgumentError);
  });
});
