/**
 * How the JobMaster reports and handles failed attempts: every failed attempt's `failed` task event,
 * whatever failed (its task, its deployment, its slot).
 */
import { expect } from 'chai';
import type { JobEvent } from '../../lib/jobmaster/JobMaster.js';
import { Harness } from './jobMasterHarness.js';
import { edge, vertex } from './support.js';

type TaskEvent = Extract<JobEvent, { type: 'task' }>;

const failedEvents = (h: Harness): TaskEvent[] =>
  h.events.filter((e): e is TaskEvent => e.type === 'task' && e.state === 'failed');

describe('JobMaster: failed attempts', () => {
  it('emits the failed event of an attempt whose deployment failed because its TaskExecutor is gone', async () => {
    const h = new Harness(
      { vertices: [vertex('src', 1), vertex('sink', 1)], edges: [edge('src', 'sink')] },
      { 'restart-strategy.fixed-delay.delay': 0 },
    );
    await h.start();
    const te = h.addExecutor('taskexecutor-a');
    const [allocation] = await h.offer(te, 1);
    const src = h.submittedFor('src')[0]!;
    await h.report(src, 'running');
    // The TaskExecutor is gone (its link closed) before the sink, sharing src's slot, is deployed.
    h.executors.delete(te);
    await h.report(src, 'finished', { output: 1 });
    expect(h.submittedFor('sink')).to.have.length(0);
    const failed = failedEvents(h);
    expect(failed).to.have.length(1);
    expect(failed[0]).to.deep.include({ vertexId: 'sink', attemptNumber: 0, resourceId: te, allocationId: allocation });
    expect(failed[0]!.error?.message).to.contain(`TaskExecutor ${te} is gone`);
  });

  it('emits the failed event of an attempt whose submission the TaskExecutor refused', async () => {
    const h = new Harness({ vertices: [vertex('only', 1)] });
    await h.start();
    const te = h.addExecutor('taskexecutor-a');
    h.submitFails = new Error('no such slot');
    await h.offer(te, 1);
    expect(failedEvents(h).map((e) => [e.vertexId, e.attemptNumber, e.error?.message])).to.deep.equal([
      ['only', 0, 'no such slot'],
    ]);
  });

  it('emits the failed event of a task that reported failed without an error, with a default one', async () => {
    const h = new Harness({ vertices: [vertex('only', 1)] });
    await h.start();
    await h.offer(h.addExecutor('taskexecutor-a'), 1);
    await h.report(h.submittedFor('only')[0]!, 'failed');
    expect(failedEvents(h).map((e) => e.error)).to.deep.equal([{ name: 'Error', message: 'the task failed' }]);
  });
});
