/**
 * The JobMaster while a job restarts: which slots it takes then, and how its restart strategy counts
 * the failures (the decision is jobStatus.machine's; these drive it through the JobMaster).
 */
import { expect } from 'chai';
import { Harness } from './jobMasterHarness.js';
import { vertex } from './support.js';

const FLAKY = { name: 'Error', message: 'flaky' };

describe('JobMaster: restarts', () => {
  it(
    'takes every slot offered while it restarts, though no request wants it ' +
      '(Flink: DeclarativeSlotPoolBridge), undeclared, and the restart runs on a slot it holds',
    async () => {
      const h = new Harness({ vertices: [vertex('boom', 1)] }, { 'restart-strategy.fixed-delay.delay': '1 s' });
      await h.start();
      const te = h.addExecutor('taskexecutor-a');
      const [first] = await h.offer(te, 1);
      await h.report(h.submittedFor('boom')[0]!, 'failed', { error: FLAKY });
      expect(h.master.status).to.equal('restarting');
      const declared = h.lastDeclaration();
      // E.g. a slot the ResourceManager allocated for an older declaration, arriving late.
      const late = await h.offer(te, 1);
      expect(late).to.have.length(1);
      expect(h.lastDeclaration()).to.deep.equal(declared);
      await h.advance(1_000);
      // The restarted attempt is deployed at once, on a slot the job holds: no slot is asked for.
      const second = h.submittedFor('boom')[1]!;
      expect(second.attemptNumber).to.equal(1);
      expect([first, late[0]]).to.include(second.allocationId);
      await h.finish(second, 'ok');
      expect(await h.master.result).to.deep.include({ status: 'finished', restarts: 1 });
      expect([...h.freed].sort()).to.deep.equal([first, late[0]].sort());
    },
  );

  it(
    'deploys, once the restart is done, a subtask whose slot came while the job restarted: ' +
      'it waited for the restart (an event says so), not for ever',
    async () => {
      const h = new Harness({ vertices: [vertex('a', 2)] }, { 'restart-strategy.fixed-delay.delay': '1 s' });
      await h.start();
      const te = h.addExecutor('taskexecutor-a');
      // One slot for two requests: one subtask runs, the other waits for its slot.
      await h.offer(te, 1);
      const [first] = h.submitted;
      const waiting = 1 - first!.subtaskIndex;
      await h.report(first!, 'failed', { error: FLAKY });
      expect(h.master.status).to.equal('restarting');
      // The waiting subtask's slot comes during the restart delay (its request was still pending).
      const [late] = await h.offer(te, 1);
      expect(h.submittedFor('a', waiting)).to.deep.equal([]);
      expect(h.events.at(-1)).to.deep.include({
        type: 'task',
        subtaskIndex: waiting,
        state: 'scheduled',
        allocationId: late,
        waitingFor: 'restart',
      });
      await h.advance(1_000);
      expect(h.master.status).to.equal('running');
      const deployed = h.submittedFor('a', waiting);
      expect(deployed.map((d) => [d.attemptNumber, d.allocationId])).to.deep.equal([[0, late]]);
      await h.finish(deployed[0]!, waiting);
      await h.finish(h.submittedFor('a', first!.subtaskIndex)[1]!, first!.subtaskIndex);
      expect(await h.master.result).to.deep.include({ status: 'finished', restarts: 1 });
    },
  );

  it('refuses an offer no request wants once it runs again', async () => {
    const h = new Harness({ vertices: [vertex('boom', 2)] }, { 'restart-strategy.fixed-delay.delay': 0 });
    await h.start();
    const te = h.addExecutor('taskexecutor-a');
    await h.offer(te, 2);
    await h.report(h.submittedFor('boom', 0)[0]!, 'failed', { error: FLAKY });
    await h.advance(0);
    expect(h.master.status).to.equal('running');
    expect(h.submittedFor('boom', 0).map((d) => d.attemptNumber)).to.deep.equal([0, 1]);
    expect(await h.offer(te, 1)).to.deep.equal([]);
  });

  it(
    'fixed-delay, attempts: 1 — a second subtask failing during the restart delay fails the job ' +
      '(Flink: FixedDelayRestartBackoffTimeStrategy counts every failure)',
    async () => {
      const h = new Harness({
        vertices: [vertex('a', 2)],
        restartStrategy: { type: 'fixed-delay', attempts: 1, delay: '1 s' },
      });
      await h.start();
      const te = h.addExecutor('taskexecutor-a');
      await h.offer(te, 2);
      await h.report(h.submittedFor('a', 0)[0]!, 'failed', { error: { name: 'Error', message: 'first' } });
      expect(h.master.status).to.equal('restarting');
      await h.advance(500);
      await h.report(h.submittedFor('a', 1)[0]!, 'failed', { error: { name: 'Error', message: 'second' } });
      const result = await h.master.result;
      expect(result).to.deep.include({ status: 'failed', restarts: 1 });
      expect(result.error).to.deep.include({ message: 'second' });
      expect(h.statuses()).to.deep.equal(['created', 'running', 'failing', 'restarting', 'failed']);
      expect(h.events.filter((e) => e.type === 'status').at(-1)).to.deep.include({
        cause: 'a#1 (attempt 0) failed: second; no restart left (1 of 1 made)',
      });
      await h.advance(1_000);
      expect(h.submitted.map((d) => d.attemptNumber)).to.deep.equal([0, 0]);
    },
  );

  it('fixed-delay with attempts left: a failure during the delay counts; the restart waits for its delay', async () => {
    const h = new Harness({
      vertices: [vertex('a', 2)],
      restartStrategy: { type: 'fixed-delay', attempts: 3, delay: '1 s' },
    });
    await h.start();
    const te = h.addExecutor('taskexecutor-a');
    await h.offer(te, 2);
    await h.report(h.submittedFor('a', 0)[0]!, 'failed', { error: FLAKY });
    await h.advance(500);
    await h.report(h.submittedFor('a', 1)[0]!, 'failed', { error: FLAKY });
    await h.advance(999);
    expect(h.master.status).to.equal('restarting');
    await h.advance(1);
    expect(h.master.status).to.equal('running');
    // Both restarted together, on the slots they gave back.
    expect(h.submitted.map((d) => `${d.subtaskIndex}:${d.attemptNumber}`).sort()).to.deep.equal([
      '0:0',
      '0:1',
      '1:0',
      '1:1',
    ]);
    for (const index of [0, 1]) await h.finish(h.submittedFor('a', index)[1]!, index);
    expect(await h.master.result).to.deep.include({ status: 'finished', restarts: 2 });
  });

  it(
    'exponential-delay merges the failures within its backoff into one restart, ' +
      'its jitter drawn from the injected random source',
    async () => {
      const draws: number[] = [];
      const h = new Harness(
        { vertices: [vertex('a', 2)] },
        {
          'restart-strategy.type': 'exponential-delay',
          'restart-strategy.exponential-delay.initial-backoff': '1 s',
          'restart-strategy.exponential-delay.jitter-factor': 0.5,
        },
        () => {
          draws.push(0.999_999);
          return 0.999_999; // the highest draw: half the backoff on
        },
      );
      await h.start();
      const te = h.addExecutor('taskexecutor-a');
      await h.offer(te, 2);
      await h.report(h.submittedFor('a', 0)[0]!, 'failed', { error: FLAKY });
      await h.advance(200);
      await h.report(h.submittedFor('a', 1)[0]!, 'failed', { error: FLAKY });
      expect(draws).to.have.length(2);
      // 1 s + 50 %: due 1.5 s after the first failure, for both.
      await h.advance(1_299);
      expect(h.master.status).to.equal('restarting');
      await h.advance(1);
      expect(h.master.status).to.equal('running');
      for (const index of [0, 1]) await h.finish(h.submittedFor('a', index)[1]!, index);
      expect(await h.master.result).to.deep.include({ status: 'finished', restarts: 1 });
    },
  );

  it('failure-rate fails the job once more than max-failures-per-interval fall within the interval', async () => {
    const h = new Harness(
      { vertices: [vertex('boom', 1)] },
      {
        'restart-strategy.type': 'failure-rate',
        'restart-strategy.failure-rate.max-failures-per-interval': 2,
        'restart-strategy.failure-rate.failure-rate-interval': '1 min',
        'restart-strategy.failure-rate.delay': '1 s',
      },
    );
    await h.start();
    const te = h.addExecutor('taskexecutor-a');
    await h.offer(te, 1);
    for (const attempt of [0, 1]) {
      await h.report(h.submittedFor('boom')[attempt]!, 'failed', { error: FLAKY });
      await h.advance(1_000);
      expect(h.master.status).to.equal('running');
    }
    await h.report(h.submittedFor('boom')[2]!, 'failed', { error: FLAKY });
    const result = await h.master.result;
    expect(result).to.deep.include({ status: 'failed', restarts: 2 });
    expect(h.events.filter((e) => e.type === 'status').at(-1)).to.deep.include({
      cause:
        'boom#0 (attempt 2) failed: flaky; failure rate exceeded (3 failures within 1 min, at most 2 per interval)',
    });
  });
});
