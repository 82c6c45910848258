import { expect } from 'chai';
import { AllocationID, ResourceID } from '../../lib/core/ids.js';
import { ArchivedExecutions } from '../../lib/jobmaster/ArchivedJob.js';
import type { ExecutionSummary } from '../../lib/jobmaster/ExecutionAttempts.js';

const te1 = ResourceID.parse('taskexecutor-1');
const te2 = ResourceID.parse('taskexecutor-2');
const slotA = AllocationID.generate();
const slotB = AllocationID.generate();

function summary(vertexId: string, subtaskIndex: number, fields: Partial<ExecutionSummary> = {}): ExecutionSummary {
  return {
    key: `${vertexId}#${subtaskIndex}`,
    vertexId,
    subtaskIndex,
    attemptNumber: 0,
    state: 'finished',
    resourceId: te1,
    allocationId: slotA,
    startTime: 1_765_000_000_123,
    endTime: 1_765_000_000_456,
    priorAttempts: [],
    concurrentAttempts: [],
    ...fields,
  };
}

describe('ArchivedExecutions (an ended job kept in columns)', () => {
  it('gives back the summaries it was made from: vertices, states, places, times, ended and speculative runs', () => {
    const prior = {
      attemptNumber: 0,
      state: 'failed',
      resourceId: te2,
      allocationId: slotB,
      startTime: 1_765_000_000_001,
      endTime: 1_765_000_000_002,
    };
    const speculative = { ...prior, attemptNumber: 2, state: 'canceled', speculative: true as const };
    const executions = [
      summary('source', 0),
      summary('source', 1, { resourceId: te2, allocationId: slotB, attemptNumber: 1, priorAttempts: [prior] }),
      summary('sink', 0, { state: 'canceled', resourceId: null, allocationId: null, startTime: -1, endTime: -1 }),
      summary('sink', 1, { concurrentAttempts: [speculative] }),
      summary('sink', 70_000, { state: 'failed', attemptNumber: 4, endTime: 1_765_000_009_999.5 }),
    ];
    const archived = new ArchivedExecutions(executions);
    expect(archived.size).to.equal(5);
    expect(archived.summaries()).to.deep.equal(executions);
  });

  it('makes them anew at each call: a caller changing what it got changes nothing kept', () => {
    const archived = new ArchivedExecutions([summary('v', 0, { priorAttempts: [{ ...summary('v', 0) }] })]);
    const first = archived.summaries();
    (first[0] as { state: string }).state = 'changed';
    (first[0]!.priorAttempts as unknown[]).length = 0;
    first.length = 0;
    const again = archived.summaries();
    expect(again).to.have.length(1);
    expect(again[0]!.state).to.equal('finished');
    expect(again[0]!.priorAttempts).to.have.length(1);
  });

  it('keeps an empty job', () => {
    expect(new ArchivedExecutions([]).summaries()).to.deep.equal([]);
  });
});
