/**
 * The JobMaster with speculative execution (Flink's SpeculativeScheduler), on a simulated clock: a subtask running
 * 1.5× the median of its finished siblings gets a speculative attempt in a slot of another TaskExecutor (the slow one
 * is blocked, at the ResourceManager and in the job's slot pool); the first attempt to finish is the subtask's, the
 * other is canceled and gives its slot back; outputs and partitions come from the winner alone.
 */
import { expect } from 'chai';
import type { ResourceID } from '../../lib/core/ids.js';
import type { SlotwiseOptions } from '../../lib/core/options.js';
import type { JobEvent } from '../../lib/jobmaster/JobMaster.js';
import type { JobGraphSpec } from '../../lib/jobmaster/JobGraph.js';
import { jobDetailsView } from '../../lib/rest/restViews.js';
import type { TaskDeploymentDescriptor } from '../../lib/rpc/protocol.js';
import { Harness } from './jobMasterHarness.js';
import { edge, vertex } from './support.js';

type TaskEvent = Extract<JobEvent, { type: 'task' }>;

const SPECULATIVE: SlotwiseOptions = {
  'jobmanager.scheduler': 'adaptive',
  'execution.batch.speculative.enabled': true,
  'slow-task-detector.execution-time.baseline-lower-bound': 0,
  'slot.idle.timeout': 0,
};

const speculativeEvents = (h: Harness): TaskEvent[] =>
  h.events.filter((e): e is TaskEvent => e.type === 'task' && e.speculative === true);

/**
 * `work` (4 subtasks) on taskexecutor-a; subtasks 0-2 finish after 1 s, subtask 3 runs on: at the check of 2 s it has
 * run 2 s, past 1.5 × the 1 s median. Returns the straggler's original descriptor and the two TaskExecutors.
 */
async function straggler(
  spec: Omit<JobGraphSpec, 'name'> = { vertices: [vertex('work', 4)] },
  options: SlotwiseOptions = SPECULATIVE,
): Promise<{ h: Harness; slow: TaskDeploymentDescriptor; a: ResourceID; b: ResourceID }> {
  const h = new Harness(spec, options);
  await h.start();
  const a = h.addExecutor('taskexecutor-a');
  const b = h.addExecutor('taskexecutor-b');
  await h.offer(a, 4);
  await h.advance(1_000);
  for (let i = 0; i < 3; i++) await h.finish(h.submittedFor('work', i)[0]!, `out ${i}`);
  const slow = h.submittedFor('work', 3)[0]!;
  await h.report(slow, 'running');
  return { h, slow, a, b };
}

describe('JobMaster: speculative execution', () => {
  it('gives a straggler a speculative attempt in a slot of another TaskExecutor, the slow one blocked', async () => {
    const { h, slow, a, b } = await straggler();
    expect(speculativeEvents(h)).to.deep.equal([]);
    await h.advance(1_000);
    // Blocked for block-slow-node-duration (1 min) at the ResourceManager.
    expect(h.blocked.map(({ resourceId, durationMs }) => ({ resourceId, durationMs }))).to.deep.equal([
      { resourceId: a, durationMs: 60_000 },
    ]);
    const [scheduled] = speculativeEvents(h);
    expect(scheduled).to.include({ vertexId: 'work', subtaskIndex: 3, attemptNumber: 1, state: 'scheduled' });
    // Its slot is asked for: one more than the job holds (the straggler's; the finished ones' went back at once).
    expect(Object.values(h.lastDeclaration())).to.deep.equal([2]);
    // taskexecutor-a's offer is refused (blocked); taskexecutor-b's is taken and the attempt deployed there.
    expect(await h.offer(a, 1)).to.deep.equal([]);
    const [accepted] = await h.offer(b, 1);
    const attempts = h.submittedFor('work', 3);
    expect(attempts.map((d) => d.attemptNumber)).to.deep.equal([0, 1]);
    expect(attempts[1]!.allocationId).to.equal(accepted);
    expect(attempts[1]!.executionAttemptId).to.not.equal(slow.executionAttemptId);
    expect(speculativeEvents(h).map((e) => [e.state, e.resourceId])).to.deep.equal([
      ['scheduled', null],
      ['deploying', b],
    ]);
  });

  it('takes the speculative attempt that finishes first: its output once, the original canceled', async () => {
    const { h, slow, b } = await straggler();
    await h.advance(1_000);
    await h.offer(b, 1);
    const speculative = h.submittedFor('work', 3)[1]!;
    await h.finish(speculative, 'fast');
    const result = await h.master.result;
    expect(result.status).to.equal('finished');
    expect(result.outputs.work).to.deep.equal(['out 0', 'out 1', 'out 2', 'fast']);
    expect(result.restarts).to.equal(0);
    expect(h.canceled).to.deep.equal([slow.executionAttemptId]);
    const original = h.events.filter(
      (e): e is TaskEvent => e.type === 'task' && e.executionAttemptId === slow.executionAttemptId,
    );
    expect(original.at(-1)!.state).to.equal('canceled');
    // The original finishing late changes nothing: it is no attempt of the job any more.
    await h.finish(slow, 'slow');
    expect((await h.master.result).outputs.work![3]).to.equal('fast');
    const summary = h.master.executions().find((s) => s.key === 'work#3')!;
    expect(summary).to.include({ attemptNumber: 1, state: 'finished', resourceId: b });
    expect(summary.priorAttempts.map((p) => [p.attemptNumber, p.state])).to.deep.equal([[0, 'canceled']]);
  });

  it('cancels the speculative attempt when the original finishes first, and its slot goes back at once', async () => {
    // A second vertex keeps the job running after `work` finished: the slot goes back before the job's end.
    const { h, slow, b } = await straggler({ vertices: [vertex('work', 4), vertex('other', 1)] });
    await h.advance(1_000);
    const [slot] = await h.offer(b, 1);
    const speculative = h.submittedFor('work', 3)[1]!;
    await h.report(speculative, 'running');
    expect(h.freed).to.not.include(slot);
    await h.finish(slow, 'slow but first');
    expect(h.canceled).to.deep.equal([speculative.executionAttemptId]);
    expect(speculativeEvents(h).at(-1)).to.include({ state: 'canceled', attemptNumber: 1 });
    expect(h.freed).to.include(slot);
    expect(h.master.status).to.equal('running');
    // Its cancellation reported later is no news; the job still runs.
    await h.report(speculative, 'canceled');
    expect(speculativeEvents(h).filter((e) => e.state === 'canceled')).to.have.length(1);
    await h.finish(h.submittedFor('other', 0)[0]!, 'other');
    const result = await h.master.result;
    expect(result.outputs.work).to.deep.equal(['out 0', 'out 1', 'out 2', 'slow but first']);
  });

  it("keeps only the winner's partition: the loser's, finished late, is released where it is", async () => {
    const { h, slow, a, b } = await straggler({
      vertices: [vertex('work', 4), vertex('sink', 1)],
      edges: [edge('work', 'sink', 'all-to-all')],
    });
    await h.advance(1_000);
    await h.offer(b, 1);
    const speculative = h.submittedFor('work', 3)[1]!;
    await h.finishKept(speculative, b);
    await h.finishKept(slow, a);
    expect(h.partitionsConsumed).to.deep.include([a, [slow.executionAttemptId]]);
    const sink = h.submittedFor('sink', 0)[0]!;
    expect((sink.inputs as Record<string, unknown[]>).work).to.deep.equal(['out 0', 'out 1', 'out 2', undefined]);
    expect(sink.partitionInputs!.work![3]!.partitionId).to.equal(speculative.executionAttemptId);
  });

  it('fails only the original when it fails while its speculative attempt runs: that one takes over', async () => {
    const { h, slow, b } = await straggler();
    await h.advance(1_000);
    await h.offer(b, 1);
    const speculative = h.submittedFor('work', 3)[1]!;
    await h.report(speculative, 'running');
    await h.report(slow, 'failed', { error: { name: 'Error', message: 'disk on fire' } });
    expect(h.statuses()).to.not.include('restarting');
    expect(h.master.exceptionHistory().entries.map((e) => e.message)).to.deep.equal(['disk on fire']);
    await h.report(speculative, 'finished', { output: 'rescued' });
    const result = await h.master.result;
    expect(result).to.include({ status: 'finished', restarts: 0 });
    expect(result.outputs.work![3]).to.equal('rescued');
  });

  it('fails only the speculative attempt when it fails while the original runs: its slot goes back', async () => {
    const { h, slow, b } = await straggler({ vertices: [vertex('work', 4), vertex('other', 1)] });
    await h.advance(1_000);
    const [slot] = await h.offer(b, 1);
    const speculative = h.submittedFor('work', 3)[1]!;
    await h.report(speculative, 'failed', { error: { name: 'Error', message: 'out of luck' } });
    expect(speculativeEvents(h).at(-1)).to.include({ state: 'failed', attemptNumber: 1 });
    expect(h.freed).to.include(slot);
    expect(h.statuses()).to.not.include('restarting');
    expect(h.master.exceptionHistory().entries.map((e) => [e.message, e.attemptNumber])).to.deep.equal([
      ['out of luck', 1],
    ]);
    await h.finish(slow, 'slow');
    await h.finish(h.submittedFor('other', 0)[0]!, 'other');
    const result = await h.master.result;
    expect(result).to.include({ status: 'finished', restarts: 0 });
    expect(result.outputs.work![3]).to.equal('slow');
  });

  it("counts a failed speculative attempt toward the restart strategy, as Flink's local failure", async () => {
    // fixed-delay, one attempt: the speculative attempt's failure takes it, so the original's failure fails the job.
    const { h, slow, b } = await straggler({
      vertices: [vertex('work', 4)],
      restartStrategy: { type: 'fixed-delay', attempts: 1, delay: '1 s' },
    });
    await h.advance(1_000);
    await h.offer(b, 1);
    await h.report(h.submittedFor('work', 3)[1]!, 'failed', { error: { name: 'Error', message: 'out of luck' } });
    expect(h.master.status).to.equal('running');
    await h.report(slow, 'failed', { error: { name: 'Error', message: 'disk on fire' } });
    const result = await h.master.result;
    expect(result).to.include({ status: 'failed', restarts: 0 });
    expect(h.statuses()).to.not.include('restarting');
    const failed = h.events.find((e) => e.type === 'status' && e.status === 'failed') as { cause: string };
    expect(failed.cause).to.contain('no restart left (0 of 1 made; 1 failure of one attempt only counted too)');

    // No restart strategy: a failed speculative attempt fails the job at once (Flink: no restart allowed).
    const none = await straggler({ vertices: [vertex('work', 4)], restartStrategy: { type: 'none' } });
    await none.h.advance(1_000);
    await none.h.offer(none.b, 1);
    const speculative = none.h.submittedFor('work', 3)[1]!;
    await none.h.report(speculative, 'failed', { error: { name: 'Error', message: 'out of luck' } });
    expect(await none.h.master.result).to.deep.include({ status: 'failed' });
    expect((await none.h.master.result).error?.message).to.equal('out of luck');
  });

  it("lists a running speculative attempt (executions(), Flink's other-concurrent-attempts)", async () => {
    const { h, a, b } = await straggler();
    await h.advance(1_000);
    const [slot] = await h.offer(b, 1);
    await h.report(h.submittedFor('work', 3)[1]!, 'running');
    const summary = h.master.executions().find((s) => s.key === 'work#3')!;
    expect(summary).to.include({ attemptNumber: 0, state: 'running', resourceId: a });
    expect(
      summary.concurrentAttempts.map((c) => [c.attemptNumber, c.state, c.resourceId, c.speculative]),
    ).to.deep.equal([[1, 'running', b, true]]);
    const tasks = h.master.executions().map(({ vertexId, subtaskIndex, concurrentAttempts, ...attempt }) => ({
      vertexId,
      subtaskIndex,
      ...attempt,
      ...(concurrentAttempts.length === 0 ? {} : { otherConcurrentAttempts: concurrentAttempts }),
    }));
    const view = jobDetailsView(
      {
        jobId: h.master.jobId,
        name: 'job',
        status: 'running',
        startTime: 0,
        endTime: null,
        restarts: 0,
        vertices: [{ id: 'work', parallelism: 4, slotSharingGroup: 'default' }],
        edges: [],
        tasks,
      },
      h.clock.now(),
    );
    expect(view.subtasks[3]).to.deep.include({
      'other-concurrent-attempts': [{ attempt: 1, status: 'RUNNING', 'taskmanager-id': b, 'allocation-id': slot }],
    });
    expect(view.subtasks[0]).to.not.have.property('other-concurrent-attempts');
  });

  it('launches no more than max-concurrent-executions attempts of a subtask, however long it runs', async () => {
    const { h } = await straggler();
    await h.advance(5_000);
    expect(speculativeEvents(h).filter((e) => e.state === 'scheduled')).to.have.length(1);
  });

  it('leaves a job under the default scheduler as it was, with speculation on for the cluster', async () => {
    const { h } = await straggler({ scheduler: 'default', vertices: [vertex('work', 4)] });
    await h.advance(10_000);
    expect(speculativeEvents(h)).to.deep.equal([]);
    expect(h.blocked).to.deep.equal([]);
  });

  it('finds nothing slow before the baseline lower bound (1 min by default)', async () => {
    const { h } = await straggler(undefined, {
      ...SPECULATIVE,
      'slow-task-detector.execution-time.baseline-lower-bound': '1 min',
    });
    await h.advance(50_000);
    expect(speculativeEvents(h)).to.deep.equal([]);
    await h.advance(10_000);
    expect(speculativeEvents(h).map((e) => e.state)).to.deep.equal(['scheduled']);
  });
});
