/**
 * The JobMaster alone (no threads): a fake ResourceManager and fake TaskExecutors that record what
 * they are asked, slot offers and task states driven by the test, a simulated clock for restart
 * delays and slot request timeouts.
 */
import { expect } from 'chai';
import { IllegalArgumentError } from '../../lib/core/errors.js';
import type { JobEvent } from '../../lib/jobmaster/JobMaster.js';
import type { ExecutionState, TaskDeploymentDescriptor } from '../../lib/rpc/protocol.js';
import { Harness } from './jobMasterHarness.js';
import { edge, vertex } from './support.js';
import { DECREASE_WINDOW_MS } from '../../lib/jobmaster/ResourceRequirementsDeclarer.js';

/** The attempts submitted and not reported finished yet. */
function unfinished(h: Harness): TaskDeploymentDescriptor[] {
  return h.submitted.filter(
    (d) =>
      !h.events.some(
        (e) => e.type === 'task' && e.executionAttemptId === d.executionAttemptId && e.state === 'finished',
      ),
  );
}

describe('JobMaster', () => {
  it(
    'declares one slot per shared group, deploys a subtask once its ' +
      'slot and inputs are there, and finishes with the sink outputs',
    async () => {
      const h = new Harness({
        vertices: [vertex('src', 2), vertex('sink', 1)],
        edges: [edge('src', 'sink', 'all-to-all')],
      });
      await h.start();
      expect(h.master.status).to.equal('running');
      // src#0 and sink#0 share a slot, src#1 has its own: two default slots.
      expect(h.lastDeclaration()).to.deep.equal({ UNKNOWN: 2 });
      const te = h.addExecutor('taskexecutor-a');
      expect(await h.offer(te, 3)).to.have.length(2); // the third is not needed
      // The sources deploy; the sink waits for its inputs.
      expect(h.submitted.map((d) => `${d.vertexId}#${d.subtaskIndex}`).sort()).to.deep.equal(['src#0', 'src#1']);
      await h.finish(h.submittedFor('src', 0)[0]!, 'a');
      expect(h.submittedFor('sink')).to.have.length(0);
      await h.finish(h.submittedFor('src', 1)[0]!, 'b');
      const sink = h.submittedFor('sink')[0]!;
      expect(sink.inputs).to.deep.equal({ src: ['a', 'b'] });
      expect(sink.allocationId).to.equal(h.submittedFor('src', 0)[0]!.allocationId);
      await h.finish(sink, 'ab');
      const result = await h.master.result;
      expect(result).to.deep.include({ status: 'finished', outputs: { sink: ['ab'] }, error: null, restarts: 0 });
      expect(h.statuses()).to.deep.equal(['created', 'running', 'finished']);
      // Its slots go back, and it leaves the ResourceManager for good.
      expect(h.freed).to.have.length(2);
      expect(h.disconnected).to.deep.equal([{ cause: 'job finished', terminal: true }]);
    },
  );

  it('applies a batch of task states in order, as if each came alone, and ignores a stale one inside it', async () => {
    const h = new Harness({
      vertices: [vertex('src', 1), vertex('sink', 1, { slotSharingGroup: 'other' })],
      edges: [edge('src', 'sink')],
    });
    await h.start();
    const te = h.addExecutor('taskexecutor-a');
    await h.offer(te, 2);
    const src = h.submittedFor('src')[0]!;
    const wire = (d: TaskDeploymentDescriptor, state: ExecutionState, extra: object = {}) => ({
      jobId: d.jobId,
      executionAttemptId: d.executionAttemptId,
      state,
      resourceId: te,
      ...extra,
    });
    await h.master.mailbox.callAsync(() =>
      h.master.updateTaskExecutionStates([
        wire(src, 'deploying'),
        wire(src, 'initializing'),
        wire(src, 'running'),
        wire(src, 'finished', { output: 'a' }),
        wire(src, 'failed'),
      ]),
    );
    await h.settle();
    // In order: src finished (the later 'failed' of a finished attempt is ignored), so the sink was deployed with its
    // output.
    const states = h.events
      .filter((e): e is Extract<JobEvent, { type: 'task' }> => e.type === 'task' && e.vertexId === 'src')
      .map((e) => e.state);
    expect(states).to.deep.equal(['scheduled', 'deploying', 'initializing', 'running', 'finished']);
    const sink = h.submittedFor('sink')[0]!;
    expect(sink.inputs).to.deep.equal({ src: ['a'] });
    await h.master.mailbox.callAsync(() =>
      h.master.updateTaskExecutionStates([wire(sink, 'running'), wire(sink, 'finished', { output: 'b' })]),
    );
    expect(await h.master.result).to.deep.include({ status: 'finished', outputs: { sink: ['b'] } });
  });

  it('refuses a malformed batch of task states with IllegalArgumentError and applies none of it', async () => {
    const h = new Harness({ vertices: [vertex('only', 1)] });
    await h.start();
    const te = h.addExecutor('taskexecutor-a');
    await h.offer(te, 1);
    const d = h.submittedFor('only')[0]!;
    const good = {
      jobId: d.jobId,
      executionAttemptId: d.executionAttemptId,
      state: 'finished' as const,
      output: 1,
      resourceId: te,
    };
    const call = (updates: unknown) =>
      h.master.mailbox.callAsync(() => h.master.updateTaskExecutionStates(updates as never)).catch((e: unknown) => e);
    const notArray = await call(good);
    expect(notArray)
      .to.be.instanceOf(IllegalArgumentError)
      .and.to.have.property('message')
      .that.matches(/updates must be an array/);
    const badState = await call([good, { ...good, state: 'exploded' }]);
    expect(badState)
      .to.be.instanceOf(IllegalArgumentError)
      .and.to.have.property('message')
      .that.matches(/updates\[1\]\.state must be one of deploying, /);
    expect(await call([null])).to.be.instanceOf(IllegalArgumentError);
    await h.settle();
    // Nothing was applied: the good first update of the refused batch did not finish the job.
    expect(h.master.status).to.equal('running');
    expect(h.master.executions()[0]!.state).to.equal('deploying');
  });

  it(
    'accepts only offers that match what it asked for: ' + 'a profile asked for exactly, or any slot for UNKNOWN',
    async () => {
      const h = new Harness({ vertices: [vertex('big', 1, { resources: { cpuCores: 2, taskHeapMemory: '512m' } })] });
      await h.start();
      expect(Object.values(h.lastDeclaration())).to.deep.equal([1]);
      const te = h.addExecutor('taskexecutor-a');
      expect(await h.offer(te, 1)).to.deep.equal([]);
      expect(await h.offer(te, 1, { cpuCores: 2, taskHeapMemory: '512m' })).to.have.length(1);
      expect(h.submittedFor('big')).to.have.length(1);
    },
  );

  it(
    'restarts a failed subtask after the restart delay with ' +
      'the next attempt number, keeping the outputs it already has',
    async () => {
      const h = new Harness({
        vertices: [vertex('src', 1), vertex('map', 1, { slotSharingGroup: 'other' })],
        edges: [edge('src', 'map')],
      });
      await h.start();
      const te = h.addExecutor('taskexecutor-a');
      await h.offer(te, 2);
      await h.finish(h.submittedFor('src')[0]!, 1);
      const first = h.submittedFor('map')[0]!;
      await h.report(first, 'failed', { error: { name: 'Error', message: 'flaky' } });
      expect(h.master.status).to.equal('restarting');
      await h.advance(999);
      expect(h.submittedFor('map')).to.have.length(1);
      await h.advance(1);
      // The slot it had was released with the attempt; a new one is asked for.
      await h.offer(te, 1);
      const second = h.submittedFor('map')[1]!;
      expect(second.attemptNumber).to.equal(1);
      expect(second.executionAttemptId).not.to.equal(first.executionAttemptId);
      expect(second.inputs).to.deep.equal({ src: [1] });
      expect(h.submittedFor('src')).to.have.length(1); // the producer did not run again
      // A late state of the old attempt changes nothing.
      await h.report(first, 'finished', { output: 'stale' });
      expect(h.master.status).to.equal('running');
      await h.finish(second, 2);
      expect(await h.master.result).to.deep.include({ status: 'finished', restarts: 1, outputs: { map: [2] } });
      expect(h.statuses()).to.deep.equal(['created', 'running', 'failing', 'restarting', 'running', 'finished']);
    },
  );

  it(
    'reports a failure to the status machine once and lets ' +
      'it decide: TASK_FAILED, HANDLE_FAILURE, then its restart',
    async () => {
      const h = new Harness({
        vertices: [vertex('boom', 1)],
        restartStrategy: { type: 'fixed-delay', attempts: 1, delay: '2 s' },
      });
      await h.start();
      const sent: string[] = [];
      h.master.statusActor.system.inspect(
        (e) => void (e.type === '@xstate.event' && e.actorRef === h.master.statusActor && sent.push(e.event.type)),
      );
      const te = h.addExecutor('taskexecutor-a');
      await h.offer(te, 1);
      const first = h.submittedFor('boom')[0]!;
      await h.report(first, 'failed', { error: { name: 'Error', message: 'flaky' } });
      expect(sent).to.deep.equal(['TASK_FAILED', 'HANDLE_FAILURE']);
      expect(h.master.status).to.equal('restarting');
      await h.advance(1_999);
      expect(h.master.status).to.equal('restarting');
      await h.advance(1);
      // The machine's delay ran out: it is running again, and only then is the next attempt scheduled.
      expect(sent.at(-1)).to.match(/^xstate\.after\.restartDelay\./);
      const sinceRunning = h.events.slice(h.events.findLastIndex((e) => e.type === 'status' && e.status === 'running'));
      expect(sinceRunning.find((e) => e.type === 'task')).to.deep.include({
        vertexId: 'boom',
        attemptNumber: 1,
        state: 'scheduled',
      });
      await h.offer(te, 1);
      await h.report(h.submittedFor('boom')[1]!, 'failed', { error: { name: 'Error', message: 'flaky again' } });
      const result = await h.master.result;
      expect(result).to.deep.include({ status: 'failed', restarts: 1 });
      expect(h.events.filter((e) => e.type === 'status').at(-1)).to.deep.include({
        status: 'failed',
        cause: 'boom#0 (attempt 1) failed: flaky again; no restart left (1 of 1 made)',
      });
    },
  );

  it('fails the job with the task’s error once the restart attempts are spent', async () => {
    const h = new Harness({
      vertices: [vertex('boom', 1)],
      restartStrategy: { type: 'fixed-delay', attempts: 1, delay: 0 },
    });
    await h.start();
    const te = h.addExecutor('taskexecutor-a');
    await h.offer(te, 1);
    await h.report(h.submittedFor('boom')[0]!, 'failed', { error: { name: 'RangeError', message: 'boom 1' } });
    await h.advance(0);
    await h.offer(te, 1);
    await h.report(h.submittedFor('boom')[1]!, 'failed', { error: { name: 'RangeError', message: 'boom 2' } });
    const result = await h.master.result;
    expect(result.status).to.equal('failed');
    expect(result.error).to.deep.include({ name: 'RangeError', message: 'boom 2' });
    expect(result.restarts).to.equal(1);
    expect(h.disconnected.at(-1)).to.deep.equal({ cause: 'job failed', terminal: true });
  });

  it("with restart strategy 'none', fails at the first task failure", async () => {
    const h = new Harness({ vertices: [vertex('boom', 1)], restartStrategy: { type: 'none' } });
    await h.start();
    await h.offer(h.addExecutor('taskexecutor-a'), 1);
    await h.report(h.submittedFor('boom')[0]!, 'failed', { error: { name: 'Error', message: 'once' } });
    expect(await h.master.result).to.deep.include({ status: 'failed', restarts: 0 });
  });

  it(
    'fails the job when its slots do not come within ' + 'slot.request.timeout, with the SlotManager’s reason',
    async () => {
      const h = new Harness({ vertices: [vertex('a', 2)] }, { 'slot.request.timeout': '30 s' });
      await h.start();
      await h.advance(29_999);
      expect(h.master.status).to.equal('running');
      await h.advance(1);
      const result = await h.master.result;
      expect(result.status).to.equal('failed');
      expect(result.error?.message).to.contain('no TaskExecutor has 4 cores');
      expect(h.submitted).to.have.length(0);
    },
  );

  it(
    'a slot freed under a running subtask fails that attempt; ' +
      'a subtask still waiting for inputs only gets another slot',
    async () => {
      const h = new Harness(
        { vertices: [vertex('src', 1), vertex('sink', 1)], edges: [edge('src', 'sink')] },
        { 'restart-strategy.fixed-delay.delay': 0 },
      );
      await h.start();
      const te = h.addExecutor('taskexecutor-a');
      const [allocation] = await h.offer(te, 1);
      const src = h.submittedFor('src')[0]!;
      await h.report(src, 'running');
      await h.master.mailbox.callAsync(() => h.master.notifySlotFreed(te, allocation!, 'its worker ended'));
      await h.settle();
      const failed = h.events.find((e) => e.type === 'task' && e.state === 'failed');
      expect(failed).to.deep.include({ vertexId: 'src', attemptNumber: 0 });
      await h.advance(0);
      await h.offer(te, 1);
      expect(h.submittedFor('src').map((d) => d.attemptNumber)).to.deep.equal([0, 1]);
      await h.finish(h.submittedFor('src')[1]!, 'x');
      await h.finish(h.submittedFor('sink')[0]!, 'y');
      expect(await h.master.result).to.deep.include({ status: 'finished', restarts: 1 });
    },
  );

  it('cancel: cancels what runs, fails nothing, and ends canceled when the executors confirm', async () => {
    const h = new Harness({ vertices: [vertex('a', 1), vertex('b', 1, { slotSharingGroup: 'other' })] });
    await h.start();
    await h.offer(h.addExecutor('taskexecutor-a'), 1);
    const a = h.submittedFor('a')[0]!;
    await h.report(a, 'running');
    const canceled = h.master.cancel();
    await h.settle();
    expect(h.master.status).to.equal('canceling');
    expect(h.canceled).to.deep.equal([a.executionAttemptId]);
    await h.report(a, 'canceled');
    await canceled;
    const result = await h.master.result;
    expect(result).to.deep.include({ status: 'canceled', error: null });
    expect(h.statuses()).to.deep.equal(['created', 'running', 'canceling', 'canceled']);
    // A second cancel is a no-op.
    await h.master.cancel();
  });

  it('cancel: an attempt that finishes before its cancel lands ends the job canceled all the same', async () => {
    // Flink: from CANCELLING the job is CANCELED once every attempt is in a terminal state, FINISHED included.
    const h = new Harness({ vertices: [vertex('a', 2)] });
    await h.start();
    await h.offer(h.addExecutor('taskexecutor-a'), 2);
    const [a0, a1] = [h.submittedFor('a', 0)[0], h.submittedFor('a', 1)[0]];
    await h.report(a0!, 'running');
    await h.report(a1!, 'running');
    const canceled = h.master.cancel();
    await h.settle();
    expect(h.master.status).to.equal('canceling');
    await h.report(a0!, 'canceled');
    expect(h.master.status).to.equal('canceling');
    await h.finish(a1!, 'done anyway');
    await canceled;
    expect(h.master.status).to.equal('canceled'); // it had stayed canceling for good
    expect(await h.master.result).to.deep.include({ status: 'canceled', error: null });
    expect(h.statuses()).to.deep.equal(['created', 'running', 'canceling', 'canceled']);

    // Every attempt finishing after the cancel: canceled too, not finished behind the statechart's back.
    const all = new Harness({ vertices: [vertex('a', 2)] });
    await all.start();
    await all.offer(all.addExecutor('taskexecutor-a'), 2);
    const attempts = [0, 1].map((subtask) => all.submittedFor('a', subtask)[0]!);
    void all.master.cancel();
    await all.settle();
    for (const attempt of attempts) await all.finish(attempt, 'done anyway');
    expect(all.master.status).to.equal('canceled');
    expect(await all.master.result).to.deep.include({ status: 'canceled', error: null });
    expect(all.statuses()).to.deep.equal(['created', 'running', 'canceling', 'canceled']);
  });

  it('fails the job when it cannot register at the ResourceManager', async () => {
    const h = new Harness({ vertices: [vertex('a', 1)] });
    h.registerFails = new Error('the ResourceManager is gone');
    await h.start();
    const result = await h.master.result;
    expect(result.status).to.equal('failed');
    expect(result.error?.message).to.contain('the ResourceManager is gone');
  });

  it(
    'reuses its slots: a job of parallelism 100 on 2 slots runs on those ' +
      '2 allocations, declares less as it goes, and frees them at the end',
    async () => {
      // A requirement-check delay above 0 (the default is 0) coalesces its declarations.
      const h = new Harness({ vertices: [vertex('many', 100)] }, { 'slotmanager.requirement-check.delay': 50 });
      await h.start();
      expect(h.lastDeclaration()).to.deep.equal({ UNKNOWN: 100 });
      const te = h.addExecutor('taskexecutor-a');
      const allocations = await h.offer(te, 2);
      for (let done = 0; done < 100; done++) {
        const running = unfinished(h);
        expect(running.length, `after ${done} finished`).to.equal(Math.min(2, 100 - done));
        await h.finish(running[0]!, running[0]!.subtaskIndex);
        if (done === 49) {
          // Pending requests its own slots served leave the declaration (sent at most once per
          // slotmanager.requirement-check.delay); the two slots it holds stay in it.
          const declarations = h.declared.length;
          await h.advance(50);
          expect(h.declared.length).to.equal(declarations + 1);
          expect(h.lastDeclaration()).to.deep.equal({ UNKNOWN: 50 }); // 48 waiting + 2 held
        }
      }
      const result = await h.master.result;
      expect(result.status).to.equal('finished');
      expect(result.outputs['many']).to.deep.equal(Array.from({ length: 100 }, (_, i) => i));
      expect(new Set(h.submitted.map((d) => d.allocationId))).to.deep.equal(new Set(allocations));
      expect(h.freed.sort()).to.deep.equal([...allocations].sort());
    },
  );

  it(
    'declares what a job reusing its slots needs less at most once per DECREASE_WINDOW_MS, ' +
      'and at once when it waits for no slot any more',
    async () => {
      // The default requirement-check delay (0): every other change goes out on the mailbox's next turn.
      const h = new Harness({ vertices: [vertex('many', 10)] });
      await h.start();
      expect(h.lastDeclaration()).to.deep.equal({ UNKNOWN: 10 });
      const te = h.addExecutor('taskexecutor-a');
      await h.offer(te, 2);
      const running = () => unfinished(h);
      const declarations = h.declared.length;
      // Three finish and their slots take the next subtasks: the job needs less, and still waits for slots.
      for (let i = 0; i < 3; i++) await h.finish(running()[0]!, i);
      expect(h.declared.length).to.equal(declarations);
      await h.advance(DECREASE_WINDOW_MS - 1);
      expect(h.declared.length).to.equal(declarations);
      await h.advance(1);
      expect(h.declared.length).to.equal(declarations + 1);
      expect(h.lastDeclaration()).to.deep.equal({ UNKNOWN: 7 }); // 5 waiting + 2 held
      // Five more: the last request served, the job waits for no slot and says so at once (its two slots).
      for (let i = 3; i < 8; i++) await h.finish(running()[0]!, i);
      expect(h.declared.length).to.equal(declarations + 2);
      expect(h.lastDeclaration()).to.deep.equal({ UNKNOWN: 2 });
      for (let i = 8; i < 10; i++) await h.finish(running()[0]!, i);
      expect(await h.master.result).to.deep.include({ status: 'finished' });
    },
  );

  it('gives a slot back once it has been idle for slot.idle.timeout while the job runs on', async () => {
    const h = new Harness(
      {
        vertices: [vertex('a', 2), vertex('b', 1, { slotSharingGroup: 'other' })],
        edges: [edge('a', 'b', 'all-to-all')],
      },
      { 'slot.idle.timeout': '20 s' },
    );
    await h.start();
    const te = h.addExecutor('taskexecutor-a');
    const [first, second] = await h.offer(te, 2);
    await h.finish(h.submittedFor('a', 0)[0]!, 0);
    // a#0's slot went on to b, which waits for a#1.
    await h.finish(h.submittedFor('a', 1)[0]!, 1);
    const b = h.submittedFor('b')[0]!;
    const idle = b.allocationId === first ? second : first;
    await h.report(b, 'running');
    await h.advance(19_999);
    expect(h.freed).to.deep.equal([]);
    expect(h.lastDeclaration()).to.deep.equal({ UNKNOWN: 2 });
    await h.advance(1);
    expect(h.freed).to.deep.equal([idle]);
    await h.advance(50);
    expect(h.lastDeclaration()).to.deep.equal({ UNKNOWN: 1 });
    await h.finish(b, 'ab');
    expect(await h.master.result).to.deep.include({ status: 'finished' });
    expect(h.freed).to.deep.equal([idle, b.allocationId]);
  });

  it('ignores offers and states once the job has ended', async () => {
    const h = new Harness({ vertices: [vertex('a', 1)] });
    await h.start();
    const te = h.addExecutor('taskexecutor-a');
    await h.offer(te, 1);
    await h.finish(h.submittedFor('a')[0]!, 1);
    expect(await h.offer(te, 1)).to.deep.equal([]);
    await h.report(h.submittedFor('a')[0]!, 'failed', { error: { name: 'Error', message: 'late' } });
    expect(h.master.status).to.equal('finished');
  });
});
