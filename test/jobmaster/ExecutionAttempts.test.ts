import { expect } from 'chai';
import { ExecutionAttemptID } from '../../lib/core/ids.js';
import { ExecutionAttempts } from '../../lib/jobmaster/ExecutionAttempts.js';
import { ExecutionGraph } from '../../lib/jobmaster/ExecutionGraph.js';
import { JobGraph } from '../../lib/jobmaster/JobGraph.js';
import type { LogicalSlot } from '../../lib/jobmaster/slotsharing/SharedSlot.js';
import { edge, vertex } from './support.js';

function attemptsOf(historySize = 16): ExecutionAttempts {
  return new ExecutionAttempts(
    new ExecutionGraph(
      JobGraph.create({
        name: 'job',
        vertices: [vertex('src', 2), vertex('sink', 1)],
        edges: [edge('src', 'sink', 'all-to-all')],
      }),
    ),
    historySize,
  );
}

/** A slot as the record holds it (only where it is matters here). */
function slotOn(resourceId: string, allocationId: string): LogicalSlot {
  return { resourceId, allocationId, physicalSlot: { resourceId, allocationId } } as unknown as LogicalSlot;
}

describe('ExecutionAttempts', () => {
  it('starts every subtask at attempt 0, created, found by subtask and by its ExecutionAttemptID', () => {
    const attempts = attemptsOf();
    expect(attempts.summaries().map((s) => [s.key, s.attemptNumber, s.state])).to.deep.equal([
      ['src#0', 0, 'created'],
      ['src#1', 0, 'created'],
      ['sink#0', 0, 'created'],
    ]);
    for (const record of attempts.values()) expect(attempts.current(record.executionAttemptId)).to.equal(record);
  });

  it('finds by ExecutionAttemptID only a current attempt of its own: no look-alike, no ID without a label', () => {
    const attempts = attemptsOf();
    const [src0] = [...attempts.values()];
    const id = src0!.executionAttemptId;
    const other = `${'0'.repeat(32)}${id.slice(32)}` as ExecutionAttemptID;
    for (const wrong of [other, id.slice(0, 32), `${id.slice(0, 33)}_0_0`, `${id}_0`, `${id.slice(0, 33)}src_x_0`])
      expect(attempts.current(wrong as ExecutionAttemptID), wrong).to.equal(undefined);
    expect(attempts.current(ExecutionAttemptID.generate({ vertex: 'src', subtask: 0, attempt: 0 }))).to.equal(
      undefined,
    );
  });

  it(
    'restartFailed gives only the failed and canceled subtasks ' +
      'their next attempt, created (for the scheduling strategy); the old attempt is no longer current',
    () => {
      const attempts = attemptsOf();
      const [src0, src1, sink] = [...attempts.values()];
      src0!.state = 'failed';
      src1!.state = 'finished';
      sink!.state = 'canceled';
      const [oldSrc0, oldSink] = [src0!.executionAttemptId, sink!.executionAttemptId];
      const { restarted, reslot } = attempts.restartFailed();
      expect(restarted).to.deep.equal([src0, sink]);
      expect(reslot).to.deep.equal([]);
      expect(attempts.summaries().map((s) => [s.key, s.attemptNumber, s.state])).to.deep.equal([
        ['src#0', 1, 'created'],
        ['src#1', 0, 'finished'],
        ['sink#0', 1, 'created'],
      ]);
      expect(attempts.current(oldSrc0)).to.equal(undefined);
      expect(attempts.current(oldSink)).to.equal(undefined);
      expect(attempts.current(src0!.executionAttemptId)).to.equal(src0);
    },
  );

  it('restartFailed asks a slot again for a subtask scheduled, not deployed, that has none and waits for none', () => {
    const attempts = attemptsOf();
    const [src0, src1, sink] = [...attempts.values()];
    src0!.state = 'failed';
    src1!.state = 'scheduled';
    src1!.slotRequest = { record: src1!, attempt: src1!.executionAttemptId, requestedAfter: 0 }; // still out
    sink!.state = 'scheduled';
    const { restarted, reslot } = attempts.restartFailed();
    expect(restarted).to.deep.equal([src0]);
    expect(reslot).to.deep.equal([sink]);
    expect(src0!.slotRequest).to.equal(null);
  });

  it('restartFailed leaves a subtask still created (waiting to be scheduled) as it is', () => {
    const attempts = attemptsOf();
    const [src0, , sink] = [...attempts.values()];
    src0!.state = 'failed';
    const { restarted, reslot, slotted } = attempts.restartFailed();
    expect(restarted).to.deep.equal([src0]);
    expect([...reslot, ...slotted]).to.deep.equal([]);
    expect(sink!.state).to.equal('created');
  });

  it('keeps where an attempt ran and when, after its slot went back', () => {
    const attempts = attemptsOf();
    const [src0] = [...attempts.values()];
    src0!.state = 'scheduled';
    src0!.slot = slotOn('taskmanager-a1b2c3', 'alloc-1');
    attempts.observe(src0!, 1_000);
    src0!.state = 'deploying';
    attempts.observe(src0!, 1_010);
    src0!.state = 'finished';
    attempts.observe(src0!, 1_500);
    src0!.slot = null;
    expect(attempts.summaries()[0]).to.deep.include({
      state: 'finished',
      resourceId: 'taskmanager-a1b2c3',
      allocationId: 'alloc-1',
      startTime: 1_010,
      endTime: 1_500,
    });
  });

  it('keeps the ended attempts of a restarted subtask, oldest first, at most the history size', () => {
    const attempts = attemptsOf(2);
    const [src0] = [...attempts.values()];
    for (let attempt = 0; attempt < 3; attempt++) {
      src0!.slot = slotOn(`taskmanager-${attempt}`, `alloc-${attempt}`);
      src0!.state = 'deploying';
      attempts.observe(src0!, 100 * attempt);
      src0!.state = 'failed';
      attempts.observe(src0!, 100 * attempt + 50);
      src0!.slot = null;
      attempts.restartFailed();
    }
    const [summary] = attempts.summaries();
    expect(summary).to.deep.include({ attemptNumber: 3, state: 'created', resourceId: null, startTime: -1 });
    expect(summary!.priorAttempts).to.deep.equal([
      {
        attemptNumber: 1,
        state: 'failed',
        resourceId: 'taskmanager-1',
        allocationId: 'alloc-1',
        startTime: 100,
        endTime: 150,
      },
      {
        attemptNumber: 2,
        state: 'failed',
        resourceId: 'taskmanager-2',
        allocationId: 'alloc-2',
        startTime: 200,
        endTime: 250,
      },
    ]);
  });

  it('keeps no ended attempt with a history size of 0', () => {
    const attempts = attemptsOf(0);
    const [src0] = [...attempts.values()];
    src0!.state = 'failed';
    attempts.restartFailed();
    expect(attempts.summaries()[0]!.priorAttempts).to.deep.equal([]);
  });
});
