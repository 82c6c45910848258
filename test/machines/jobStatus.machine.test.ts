/**
 * The job status machine decides restarts: whether (canRestart, from the strategy in its input),
 * after which delay (restartDelay, on the actor's clock — simulated here), and then runs the
 * JobMaster's restartTasks. The JobMaster only reports failures.
 */
import { expect } from 'chai';
import { createActor, transition } from 'xstate';
import { SimulatedClock } from '../../lib/core/clock.js';
import { jobStatusMachine, type RestartBackoffTimeStrategy } from '../../machines/jobStatus.machine.js';
import { INITIAL_BACKOFF_STATE } from '../../machines/restartBackoff.js';

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
  const fail = (cause: string, random?: number) => {
    actor.send({ type: 'TASK_FAILED', cause });
    actor.send({ type: 'HANDLE_FAILURE', at: clock.now(), ...(random === undefined ? {} : { random }) });
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

  it(
    'fixed-delay counts a failure while restarting as an attempt (Flink notifies the strategy of every ' +
      'failure): the restart waits for its delay too, and covers both',
    () => {
      const { actor, clock, restarts, fail, value, context } = startJob();
      fail('first');
      clock.increment(500);
      fail('second');
      expect(value()).to.equal('restarting');
      expect(context()).to.include({ restarts: 2, failureCause: 'second', restartAt: 1_500 });
      clock.increment(500);
      expect(value()).to.equal('restarting');
      clock.increment(500);
      expect(value()).to.equal('running');
      expect(restarts).to.deep.equal([2]);
      expect(clock.pendingTimers).to.equal(0);
      expect(actor.getSnapshot().can({ type: 'HANDLE_FAILURE', at: clock.now() })).to.equal(false);
    },
  );

  it('fixed-delay with one attempt fails the job when a second failure comes during the restart delay', () => {
    const { clock, restarts, fail, value, context } = startJob({ type: 'fixed-delay', attempts: 1, delayMs: 1_000 });
    fail('a#0 failed');
    clock.increment(300);
    fail('b#0 failed');
    expect(value()).to.equal('failed');
    expect(context().failureCause).to.equal('b#0 failed; no restart left (1 of 1 made)');
    expect(clock.pendingTimers).to.equal(0);
    clock.increment(1_000);
    expect(restarts).to.deep.equal([]);
  });

  it('counts a failure of one attempt only (LOCAL_FAILURE) without a restart, and fails once none is left', () => {
    const { actor, clock, restarts, fail, value, context } = startJob({
      type: 'fixed-delay',
      attempts: 2,
      delayMs: 100,
    });
    const local = (cause: string) => actor.send({ type: 'LOCAL_FAILURE', cause, at: clock.now() });
    local('map#3 (speculative attempt 1) failed: slow disk');
    expect(value()).to.equal('running');
    expect(context()).to.deep.include({ restarts: 0, restartAt: null, failureCause: null });
    expect(clock.pendingTimers).to.equal(0);
    fail('map#1 failed');
    clock.increment(100);
    expect(restarts).to.deep.equal([1]);
    // Two failures counted of two allowed: the next, of one attempt only, fails the job.
    local('map#3 (attempt 2) failed: slow disk');
    expect(value()).to.equal('failed');
    expect(context().failureCause).to.equal(
      'map#3 (attempt 2) failed: slow disk; no restart left (1 of 2 made; 1 failure of one attempt only counted too)',
    );
    expect(restarts).to.deep.equal([1]);
  });

  it("with strategy 'none' a failure of one attempt only fails the job, as Flink's", () => {
    const { actor, clock, value, context } = startJob({ type: 'none' });
    actor.send({ type: 'LOCAL_FAILURE', cause: 'a#0 (speculative attempt 1) failed', at: clock.now() });
    expect(value()).to.equal('failed');
    expect(context().failureCause).to.equal('a#0 (speculative attempt 1) failed');
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
      const failing = (attempts: number) =>
        machine.resolveState({
          value: 'failing',
          context: {
            restartStrategy: FIXED,
            backoff: { ...INITIAL_BACKOFF_STATE, attempts },
            restarts: attempts,
            restartAt: null,
            restartDelayMs: 0,
            failureCause: 'x',
          },
        });
      let [snapshot] = transition(machine, failing(1), { type: 'HANDLE_FAILURE', at: 0 });
      expect(snapshot.value).to.equal('restarting');
      expect(snapshot.context).to.include({ restarts: 2, restartAt: 1_000, restartDelayMs: 1_000 });
      [snapshot] = transition(machine, failing(2), { type: 'HANDLE_FAILURE', at: 0 });
      expect(snapshot.value).to.equal('failed');
    },
  );

  describe('exponential-delay', () => {
    const EXPONENTIAL: RestartBackoffTimeStrategy = {
      type: 'exponential-delay',
      initialBackoffMs: 1_000,
      maxBackoffMs: 60_000,
      backoffMultiplier: 2,
      resetBackoffThresholdMs: 3_600_000,
      jitterFactor: 0,
      attemptsBeforeResetBackoff: 2,
    };

    it('merges the failures that arrive within its backoff into the pending restart: same time, one restart', () => {
      const { clock, restarts, fail, value, context } = startJob(EXPONENTIAL);
      fail('first');
      expect(context()).to.include({ restarts: 1, restartAt: 1_000 });
      clock.increment(999);
      fail('second');
      expect(value()).to.equal('restarting');
      expect(context()).to.include({ restarts: 1, restartAt: 1_000, failureCause: 'second' });
      clock.increment(1);
      expect(value()).to.equal('running');
      expect(restarts).to.deep.equal([1]);
    });

    it('doubles the backoff after each restart, and fails once attempts-before-reset-backoff are spent', () => {
      const { clock, restarts, fail, value, context } = startJob(EXPONENTIAL);
      fail('one');
      clock.increment(1_000);
      clock.increment(10);
      fail('two');
      expect(context()).to.include({ restarts: 2, restartDelayMs: 2_000 });
      clock.increment(2_000);
      expect(restarts).to.deep.equal([1, 2]);
      clock.increment(10);
      fail('three');
      expect(value()).to.equal('failed');
      expect(context().failureCause).to.equal('three; no restart left (2 of 2 made since the backoff was last reset)');
    });

    it('starts again from the initial backoff after running reset-backoff-threshold past the last restart', () => {
      const { clock, fail, context } = startJob({ ...EXPONENTIAL, resetBackoffThresholdMs: 60_000 });
      fail('one');
      clock.increment(1_000 + 10);
      fail('two');
      expect(context().restartDelayMs).to.equal(2_000);
      clock.increment(2_000 + 60_000);
      fail('three');
      expect(context()).to.include({ restarts: 3, restartDelayMs: 1_000 });
      expect(context().backoff.attempts).to.equal(1);
    });

    it('jitters by the random draw the failure comes with: the same draws give the same delays', () => {
      const jittery = { ...EXPONENTIAL, jitterFactor: 0.5, attemptsBeforeResetBackoff: 10 };
      const delays = (draws: number[]) => {
        const { clock, fail, context } = startJob(jittery);
        return draws.map((random) => {
          fail('boom', random);
          const delay = context().restartDelayMs;
          clock.increment(delay + 10);
          return delay;
        });
      };
      // Backoffs 1 s, 2 s, 4 s, each ± half of itself: the lowest draw takes half off, the highest adds half.
      expect(delays([0, 0.5, 1 - 1e-9])).to.deep.equal([1_000, 2_000, 6_000]);
      expect(delays([0.25, 0.75, 0])).to.deep.equal(delays([0.25, 0.75, 0]));
      expect(delays([1 - 1e-9, 0, 0.5])).to.deep.equal([1_500, 1_000, 4_000]);
    });
  });

  describe('failure-rate', () => {
    const RATE: RestartBackoffTimeStrategy = {
      type: 'failure-rate',
      maxFailuresPerInterval: 2,
      failureRateIntervalMs: 10_000,
      delayMs: 100,
    };

    it('restarts while no more than max-failures-per-interval fall within the interval, then fails', () => {
      const { clock, restarts, fail, value, context } = startJob(RATE);
      fail('one');
      clock.increment(100);
      fail('two');
      clock.increment(100);
      expect(restarts).to.deep.equal([1, 2]);
      fail('three');
      expect(value()).to.equal('failed');
      expect(context().failureCause).to.equal(
        'three; failure rate exceeded (3 failures within 10 s, at most 2 per interval)',
      );
    });

    it('forgets the failures older than the interval', () => {
      const { clock, restarts, fail, value } = startJob(RATE);
      for (let i = 0; i < 5; i++) {
        fail(`boom ${i}`);
        clock.increment(5_001);
      }
      expect(value()).to.equal('running');
      expect(restarts).to.deep.equal([1, 2, 3, 4, 5]);
    });

    it('counts a failure while restarting, and restarts its delay after it', () => {
      const { clock, fail, value, context } = startJob(RATE);
      fail('one');
      clock.increment(50);
      fail('two');
      expect(context()).to.include({ restarts: 2, restartAt: 150 });
      clock.increment(50);
      fail('three');
      expect(value()).to.equal('failed');
    });
  });
});
