import { expect } from 'chai';
import type { JobClient } from '../../lib/dispatcher/Dispatcher.js';
import type { JobEvent, JobResult } from '../../lib/jobmaster/JobMaster.js';
import { JobEventLog } from '../../lib/rest/JobEventLog.js';

/** A JobClient whose events and result the test drives. */
function fakeJob() {
  let listener: (event: JobEvent) => void = () => {};
  let settle!: (result: JobResult) => void;
  const result = new Promise<JobResult>((resolve) => (settle = resolve));
  const job = {
    onEvent: (l: (event: JobEvent) => void) => ((listener = l), () => (listener = () => {})),
    result,
  } as unknown as JobClient;
  const status = (s: string): JobEvent => ({ type: 'status', status: s as never, cause: null, timestamp: 1 });
  const task = (subtaskIndex: number, state = 'running', resourceId: string | null = 'taskexecutor-a'): JobEvent =>
    ({
      type: 'task',
      vertexId: 'v',
      subtaskIndex,
      attemptNumber: 0,
      executionAttemptId: 'x' as never,
      state,
      resourceId,
      allocationId: null,
      error: null,
      timestamp: 1,
    }) as JobEvent;
  return {
    job,
    emit: (e: JobEvent) => listener(e),
    status,
    task,
    finish: () => settle({ status: 'finished' } as JobResult),
  };
}

describe('JobEventLog', () => {
  it('numbers events from 0 and pages through them', () => {
    const f = fakeJob();
    const log = new JobEventLog(f.job);
    f.emit(f.status('created'));
    for (let i = 0; i < 5; i++) f.emit(f.task(i));
    expect(log.page(0, 100).events.map((e) => e.seq)).to.deep.equal([0, 1, 2, 3, 4, 5]);
    const page = log.page(2, 2);
    expect(page.events.map((e) => e.seq)).to.deep.equal([2, 3]);
    expect(page).to.include({ next: 4, first: 0, complete: false });
    expect(log.page(6, 10)).to.deep.include({ events: [], next: 6 });
  });

  it('is complete once the job settled and the reader has every event', async () => {
    const f = fakeJob();
    const log = new JobEventLog(f.job);
    f.emit(f.status('finished'));
    f.finish();
    await Promise.resolve();
    expect(log.page(0, 100).complete).to.equal(true);
    expect(log.page(0, 0).complete).to.equal(false);
  });

  it('past its capacity drops the oldest task events, keeps every status event, and says where it starts', () => {
    const f = fakeJob();
    const log = new JobEventLog(f.job, 4);
    f.emit(f.status('created'));
    for (let i = 0; i < 4; i++) f.emit(f.task(i));
    const page = log.page(0, 100);
    expect(page.events.map((e) => e.seq)).to.deep.equal([0, 3, 4]);
    expect(page.first).to.equal(0);
    expect(log.statusEvents()).to.have.length(1);
    expect(log.page(1, 100).events.map((e) => e.seq)).to.deep.equal([3, 4]);
  });
});
