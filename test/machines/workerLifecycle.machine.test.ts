/**
 * The ResourceManager's view of one worker (machines/workerLifecycle.machine.ts) on a simulated clock: a
 * worker it started is `starting` until it registers; a registered one declared lost has heartbeat.timeout
 * to register again, else it is stopped (notBackInTime) and its ResourceID goes stale with the reason the
 * ResourceManager gives; a goodbye, a refusal or its end makes it stale at once, with the first reason kept.
 */
import { expect } from 'chai';
import { createActor } from 'xstate';
import { SimulatedClock } from '../../lib/core/clock.js';
import { workerLifecycleMachine } from '../../machines/workerLifecycle.machine.js';

function worker(started: boolean) {
  // A worker it did not start registers as it is first heard of.
  const clock = new SimulatedClock();
  const effects: string[] = [];
  const actor = createActor(
    workerLifecycleMachine.provide({
      actions: {
        startFailed: () => void effects.push('startFailed'),
        notBackInTime: ({ context }) => void effects.push(`notBackInTime: ${context.lostCause}`),
      },
    }),
    { clock, input: { heartbeatTimeoutMs: 30_000 } },
  );
  actor.start();
  if (!started) actor.send({ type: 'REGISTERED' });
  return { actor, clock, effects, state: () => actor.getSnapshot().value, context: () => actor.getSnapshot().context };
}

describe('workerLifecycle machine', () => {
  it('is starting until a worker registers', () => {
    const started = worker(true);
    expect(started.state()).to.equal('starting');
    started.actor.send({ type: 'REGISTERED' });
    expect(started.state()).to.equal('registered');
    expect(worker(false).state()).to.equal('registered');
  });

  it('tells a start that ended before it registered, and goes stale', () => {
    const w = worker(true);
    w.actor.send({ type: 'ENDED', reason: 'exit code 1' });
    expect(w.effects).to.deep.equal(['startFailed']);
    expect(w.actor.getSnapshot().status).to.equal('done');
    expect(w.context().staleReason).to.equal('exit code 1');
  });

  it('gives a lost worker heartbeat.timeout to register again', () => {
    const w = worker(false);
    w.actor.send({ type: 'HEARTBEAT_TIMED_OUT', cause: 'no heartbeat for 30000 ms' });
    expect(w.state()).to.equal('lost');
    expect(w.context().lostCause).to.equal('no heartbeat for 30000 ms');
    w.clock.increment(29_999);
    w.actor.send({ type: 'REGISTERED' });
    expect(w.state()).to.equal('registered');
    expect(w.context().lostCause).to.equal(null);
    w.clock.increment(60_000);
    expect(w.state()).to.equal('registered');
    expect(w.effects).to.deep.equal([]);
  });

  it('stops a lost worker that is not back in time; its ResourceID goes stale with the reason given', () => {
    const w = worker(false);
    w.actor.send({ type: 'HEARTBEAT_TIMED_OUT', cause: 'no heartbeat' });
    w.clock.increment(30_000);
    expect(w.state()).to.equal('stopping');
    expect(w.effects).to.deep.equal(['notBackInTime: no heartbeat']);
    // Too late now: it is being stopped.
    w.actor.send({ type: 'REGISTERED' });
    expect(w.state()).to.equal('stopping');
    w.actor.send({ type: 'STOPPED', reason: 'no heartbeat, and it did not register again; its worker was stopped' });
    expect(w.actor.getSnapshot().status).to.equal('done');
    expect(w.context().staleReason).to.equal('no heartbeat, and it did not register again; its worker was stopped');
  });

  it('goes stale at once on a goodbye, a refusal or its end, keeping the first reason', () => {
    for (const type of ['DISCONNECTED', 'REJECTED', 'ENDED'] as const) {
      const w = worker(false);
      w.actor.send({ type, reason: `${type} first` });
      w.actor.send({ type: 'ENDED', reason: 'later' });
      expect(w.actor.getSnapshot().status, type).to.equal('done');
      expect(w.context().staleReason, type).to.equal(`${type} first`);
    }
  });

  it('a worker released as idle ends without going through lost', () => {
    const w = worker(false);
    w.actor.send({ type: 'RELEASED' });
    expect(w.state()).to.equal('released');
    w.actor.send({ type: 'HEARTBEAT_TIMED_OUT', cause: 'silence' });
    expect(w.state()).to.equal('released');
    w.actor.send({ type: 'ENDED', reason: 'released by the ResourceManager' });
    expect(w.context().staleReason).to.equal('released by the ResourceManager');
  });
});
