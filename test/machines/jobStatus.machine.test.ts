/**
 * The job status machine decides restarts: whether (canRestart, from the strategy in its input),
 * after which delay (restartDelay, on the actor's clock — simulated here), and then runs the
 * JobMaster's restartTasks. The JobMaster only reports failures.
 */
import { expect } from 'chai';
import { createActor, transition } from 'xstate';
import { SimulatedClock } from '../../lib/core/clock.js';
import { jobStatusMachine, type RestartBackoffTimeStrategy } from '../../machines/jobStatus.machine.js';

const FIXED: RestartBackoffTimeStrategy = { type: 'fixed-delay', attempts: 2, delayMs: 1_000 };

function startJob(restartStrategy: RestartBackoffTimeStrategy = FIXED) {
  const clock = new SimulatedClock();
  const restarts: number[] = [];
  const actor = createActor(
    jobStatusMachine.provide({ actions: { restartTasks: ({ context }) => void restarts.push(context.restarts) } }),
    { clock, input: { restartStrategy } },
  );
  actor.start();
  actor.send({ type: 'START' });
  const fail = (cause: string) => {
    actor.send({ type: 'TASK_FAILED', cause });
    actor.send({ type: 'HANDLE_FAILURE' });
  };
  return {
    actor,
    clock,
    restarts,
    fail,
    value: () => actor.getSnapshot().value,
    context: () => actor.getSnapshot().context,
  };
}

describe('jobStatus machine', () => {
  it('is failing once a task failure is reported, until the failure is handled', () => {
    const { actor, value, context } = startJob();
    actor.send({ type: 'TASK_FAILED', cause: 'map#0 (attempt 0) failed: flaky' });
    expect(value()).to.equal('failing');
    expect(context().failureCause).to.equal('map#0 (attempt 0) failed: flaky');
    expect(context().restarts).to.equal(0);
  });

  it('restarts after the fixed delay, not before, and runs restartTasks once per restart', () => {
    const { clock, restarts, fail, value, context } = startJob();
    fail('boom');
    expect(value()).to.equal('restarting');
    expect(context().restarts).to.equal(1);
    clock.increment(999);
    expect(value()).to.equal('restarting');
    expect(restarts).to.deep.equal([]);
    clock.increment(1);
    expect(value()).to.equal('running');
    expect(restarts).to.deep.equal([1]);
    expect(clock.pendingTimers).to.equal(0);
  });

  it('fails once the attempts are spent, saying how many restarts were made', () => {
    const { actor, clock, restarts, fail, value, context } = startJob();
    for (const attempt of [0, 1]) {
      fail(`boom ${attempt}`);
      clock.increment(1_000);
    }
    expect(restarts).to.deep.equal([1, 2]);
    fail('boom 2');
    expect(value()).to.equal('failed');
    expect(actor.getSnapshot().status).to.equal('done');
    expect(context().failureCause).to.equal('boom 2; no restart left (2 of 2 made)');
    expect(context().restarts).to.equal(2);
  });

  it("with strategy 'none' fails at the first failure, with its cause as it was", () => {
    const { fail, value, context, clock } = startJob({ type: 'none' });
    fail('once');
    expect(value()).to.equal('failed');
    expect(context().failureCause).to.equal('once');
    expect(clock.pendingTimers).to.equal(0);
  });

  it('a failure while restarting joins that restart: same delay, one restart, its cause recorded', () => {
    const { actor, clock, restarts, fail, value, context } = startJob();
    fail('first');
    clock.increment(500);
    fail('second');
    expect(value()).to.equal('restarting');
    expect(context()).to.include({ restarts: 1, failureCause: 'second' });
    clock.increment(500);
    expect(value()).to.equal('running');
    expect(restarts).to.deep.equal([1]);
    expect(actor.getSnapshot().can({ type: 'HANDLE_FAILURE' })).to.equal(false);
  });

  it('CANCEL while restarting drops the pending restart', () => {
    const { actor, clock, restarts, fail, value } = startJob();
    fail('boom');
    actor.send({ type: 'CANCEL' });
    expect(value()).to.equal('canceling');
    expect(clock.pendingTimers).to.equal(0);
    clock.increment(10_000);
    expect(restarts).to.deep.equal([]);
    actor.send({ type: 'ALL_CANCELED' });
    expect(value()).to.equal('canceled');
  });

  it('FAIL (a failure no restart mends) ends a failing or restarting job, and no restart follows', () => {
    const failing = startJob();
    failing.actor.send({ type: 'TASK_FAILED', cause: 'its slots did not come in time: …' });
    failing.actor.send({ type: 'FAIL', cause: 'its slots did not come in time: …' });
    expect(failing.value()).to.equal('failed');
    expect(failing.context().restarts).to.equal(0);

    const restarting = startJob();
    restarting.fail('boom');
    restarting.actor.send({ type: 'FAIL', cause: 'the ResourceManager refused its requirements: …' });
    expect(restarting.value()).to.equal('failed');
    expect(restarting.context().failureCause).to.equal('the ResourceManager refused its requirements: …');
    restarting.clock.increment(1_000);
    expect(restarting.restarts).to.deep.equal([]);
  });

  it(
    'decides purely: transition() from a failing snapshot ' + 'gives restarting while attempts are left, failed after',
    () => {
      const machine = jobStatusMachine;
      let [snapshot] = transition(
        machine,
        machine.resolveState({ value: 'failing', context: { restartStrategy: FIXED, restarts: 1, failureCause: 'x' } }),
        { type: 'HANDLE_FAILURE' },
      );
      expect(snapshot.value).to.equal('restarting');
      [snapshot] = transition(
        machine,
        machine.resolveState({ value: 'failing', context: { restartStrategy: FIXED, restarts: 2, failureCause: 'x' } }),
        { type: 'HANDLE_FAILURE' },
      );
      expect(snapshot.value).to.equal('failed');
    },
  );
});
