import { expect } from 'chai';
import { ExecutionAttempts } from '../../lib/jobmaster/ExecutionAttempts.js';
import { ExecutionGraph } from '../../lib/jobmaster/ExecutionGraph.js';
import { JobGraph } from '../../lib/jobmaster/JobGraph.js';
import { edge, vertex } from './support.js';

function attemptsOf(): ExecutionAttempts {
  return new ExecutionAttempts(
    new ExecutionGraph(
      JobGraph.create({
        name: 'job',
        vertices: [vertex('src', 2), vertex('sink', 1)],
        edges: [edge('src', 'sink', 'all-to-all')],
      }),
    ),
  );
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
    src1!.slotRequest = new Promise(() => {}); // its slot request is still out
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
});
