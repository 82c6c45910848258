/**
 * A job's exception history (Flink's ExceptionHistoryEntry): what one failure keeps, the bound, and
 * failures during a pending restart joining that restart's entry. Then the JobMaster keeping it:
 * every failed attempt with its task, TaskExecutor and slot; a job the ResourceManager refused; the
 * history readable after the job ended; and what it logs at which level.
 */
import { expect } from 'chai';
import { SlotRequestError } from '../../lib/core/errors.js';
import { ExceptionHistory, exceptionEntryOf } from '../../lib/jobmaster/ExceptionHistory.js';
import { Harness } from './jobMasterHarness.js';
import { vertex } from './support.js';

const attempt = (subtaskIndex: number, attemptNumber = 0) => ({
  vertexId: 'map',
  subtaskIndex,
  parallelism: 4,
  attemptNumber,
  resourceId: 'taskexecutor-a',
  allocationId: 'a'.repeat(32),
});

describe('ExceptionHistory', () => {
  it("keeps an attempt's error with Flink's task name, its TaskExecutor and slot", () => {
    const entry = exceptionEntryOf(
      { name: 'RangeError', message: 'boom', stack: 'RangeError: boom\n    at task (file:///job/map.mjs:2:9)' },
      1_000,
      attempt(2, 1),
    );
    expect(entry).to.deep.equal({
      exceptionName: 'RangeError',
      message: 'boom',
      stacktrace: 'RangeError: boom\n    at task (file:///job/map.mjs:2:9)',
      timestamp: 1_000,
      taskName: 'map (3/4)#1',
      vertexId: 'map',
      subtaskIndex: 2,
      attemptNumber: 1,
      resourceId: 'taskexecutor-a',
      allocationId: 'a'.repeat(32),
    });
  });

  it('names a slotwise error by its _tag, and gives an error without a stack its name and message', () => {
    const entry = exceptionEntryOf({ _tag: 'SlotRequestError', name: 'Error', message: 'no slot' }, 5, null);
    expect(entry).to.include({ exceptionName: 'SlotRequestError', stacktrace: 'Error: no slot', taskName: null });
  });

  it('keeps the newest web.exception-history-size entries, newest first, and says it dropped some', () => {
    const history = new ExceptionHistory(2);
    for (let i = 0; i < 3; i++)
      history.add(exceptionEntryOf({ name: 'Error', message: `e${i}` }, i, attempt(i)), false);
    const snapshot = history.snapshot();
    expect(snapshot.entries.map((e) => e.message)).to.deep.equal(['e2', 'e1']);
    expect(snapshot.rootCause?.message).to.equal('e2');
    expect(snapshot.truncated).to.equal(true);
  });

  it("puts a failure that arrives during a pending restart under that restart's entry", () => {
    const history = new ExceptionHistory(16);
    history.add(exceptionEntryOf({ name: 'Error', message: 'first' }, 1, attempt(0)), false);
    history.add(exceptionEntryOf({ name: 'Error', message: 'during the delay' }, 2, attempt(1)), true);
    const [root] = history.snapshot().entries;
    expect(root?.message).to.equal('first');
    expect(root?.concurrent.map((e) => e.message)).to.deep.equal(['during the delay']);
    expect(history.snapshot().truncated).to.equal(false);
  });

  it("shows a task's own stack under its TaskExecutionError, as Java's Caused by", () => {
    const entry = exceptionEntryOf(
      {
        _tag: 'TaskExecutionError',
        name: 'TaskExecutionError',
        message: 'map (1/1) attempt 0 threw: Error: no luck',
        stack:
          'TaskExecutionError: map (1/1) attempt 0 threw: Error: no luck\n' +
          '    at taskError (lib/taskexecutor/taskFailure.ts:1:1)',
        details: { stack: 'Error: no luck\n    at throws (file:///job/throws.mjs:2:9)' },
      },
      1,
      attempt(0),
    );
    expect(entry.stacktrace).to.equal(
      'TaskExecutionError: map (1/1) attempt 0 threw: Error: no luck\n' +
        'Caused by: Error: no luck\n    at throws (file:///job/throws.mjs:2:9)',
    );
  });

  it('is empty for a job that never failed', () => {
    expect(new ExceptionHistory(16).snapshot()).to.deep.equal({ rootCause: null, entries: [], truncated: false });
  });
});

describe('JobMaster: its exception history', () => {
  it('keeps each failed attempt with its TaskExecutor and slot; the one that failed the job is the root', async () => {
    const h = new Harness({
      vertices: [vertex('only', 1)],
      restartStrategy: { type: 'fixed-delay', attempts: 1, delay: '1 s' },
    });
    await h.start();
    const te = h.addExecutor('taskexecutor-a');
    const [allocation] = await h.offer(te, 1);
    h.clock.increment(500);
    await h.report(h.submittedFor('only')[0]!, 'failed', { error: { name: 'TypeError', message: 'first' } });
    await h.advance(1_000);
    await h.report(h.submittedFor('only')[1]!, 'failed', { error: { name: 'RangeError', message: 'second' } });
    expect((await h.master.result).status).to.equal('failed');

    const history = h.master.exceptionHistory();
    expect(history.rootCause).to.include({ exceptionName: 'RangeError', message: 'second', taskName: 'only (1/1)#1' });
    expect(history.entries.map((e) => [e.exceptionName, e.attemptNumber, e.resourceId, e.allocationId])).to.deep.equal([
      ['RangeError', 1, te, allocation],
      ['TypeError', 0, te, allocation],
    ]);
    expect(history.entries[1]!.timestamp).to.equal(500);
  });

  it('shows why the ResourceManager refused the job at once, as a global failure', async () => {
    const h = new Harness({ vertices: [vertex('big', 1, { resources: { cpuCores: 64 } })] });
    h.declareFails = new SlotRequestError('never-satisfiable', 'no TaskExecutor can ever hold cpuCores=64', {
      jobId: 'x',
    });
    await h.start();
    await h.advance(1_000);
    expect((await h.master.result).status).to.equal('failed');
    const { rootCause, entries } = h.master.exceptionHistory();
    expect(rootCause).to.include({ exceptionName: 'SlotRequestError', taskName: null, resourceId: null });
    expect(rootCause?.message).to.contain('no TaskExecutor can ever hold cpuCores=64');
    expect(entries).to.have.length(1);
    expect(h.logged.filter((l) => l.level === 'error').map((l) => l.message)).to.deep.equal([
      'job job failed after 0 restart(s): SlotRequestError: no TaskExecutor can ever hold cpuCores=64',
    ]);
  });

  it('logs a failed attempt at warn with its subtask and TaskExecutor, and its restart with the delay', async () => {
    const h = new Harness({
      vertices: [vertex('only', 2)],
      restartStrategy: { type: 'fixed-delay', attempts: 2, delay: '1 s' },
    });
    await h.start();
    const te = h.addExecutor('taskexecutor-a');
    await h.offer(te, 2);
    const descriptor = h.submittedFor('only', 1)[0]!;
    await h.report(descriptor, 'failed', { error: { name: 'Error', message: 'boom' } });
    const failure = h.logged.find((l) => l.level === 'warn');
    expect(failure?.message).to.equal('attempt 0 failed: boom');
    expect(failure?.fields).to.deep.include({
      vertexId: 'only',
      subtaskIndex: 1,
      attemptNumber: 0,
      resourceId: te,
      executionAttemptId: descriptor.executionAttemptId,
    });
    const restart = h.logged.find((l) => l.message.startsWith('restarts'));
    expect(restart).to.deep.include({
      level: 'info',
      message: 'restarts as attempt 1 in 1000 ms (restart 1 of the job)',
    });
  });
});
