/**
 * The leader election machine (machines/leaderElection.machine.ts) on a simulated clock: a contender
 * claims, retries every retry period while the lease is another's, leads once it claimed, renews every
 * retry period, and steps down — revoking its services — when the lease is taken, when a newer fencing
 * token shows up, or when it could not renew for the renew deadline (counted from when its last renewal
 * was sent), always before a lapsed lease could be claimed by another.
 */
import { expect } from 'chai';
import { createActor } from 'xstate';
import { SimulatedClock } from '../../lib/core/clock.js';
import { leaderElectionMachine } from '../../machines/leaderElection.machine.js';

const TIMES = { leaseDurationMs: 15_000, renewDeadlineMs: 10_000, retryPeriodMs: 1_000 };

function contender() {
  const clock = new SimulatedClock();
  const effects: string[] = [];
  const actor = createActor(
    leaderElectionMachine.provide({
      actions: {
        claim: () => void effects.push('claim'),
        renew: () => void effects.push('renew'),
        grant: ({ context }) => void effects.push(`grant ${context.token}`),
        revoke: ({ context }) => void effects.push(`revoke: ${context.revokedBecause}`),
        release: () => void effects.push('release'),
      },
    }),
    { clock, input: TIMES },
  );
  actor.start();
  const count = (effect: string) => effects.filter((e) => e === effect).length;
  return { actor, clock, effects, count, value: () => actor.getSnapshot().value };
}

describe('leaderElection machine', () => {
  it('claims at once, and while the lease is held elsewhere claims again every retry period', () => {
    const { actor, clock, count, value } = contender();
    expect(count('claim')).to.equal(1);
    actor.send({ type: 'REFUSED' });
    expect(value()).to.deep.equal({ contending: 'waiting' });
    clock.increment(999);
    expect(count('claim')).to.equal(1);
    clock.increment(1);
    expect(count('claim')).to.equal(2);
    actor.send({ type: 'CLAIM_FAILED', error: 'the server is out of reach' });
    clock.increment(1_000);
    expect(count('claim')).to.equal(3);
  });

  it('claims at once when the holder releases the lease, not at the next retry', () => {
    const { actor, count } = contender();
    actor.send({ type: 'REFUSED' });
    actor.send({ type: 'RELEASED' });
    expect(count('claim')).to.equal(2);
  });

  it('leads with the claim as its fencing token and renews every retry period', () => {
    const { actor, clock, effects, count, value } = contender();
    actor.send({ type: 'CLAIMED', token: 42, ageMs: 3 });
    expect(effects).to.include('grant 42');
    expect(actor.getSnapshot().matches('leading')).to.equal(true);
    expect(actor.getSnapshot().context.token).to.equal(42);
    for (let second = 1; second <= 30; second++) {
      clock.increment(1_000);
      actor.send({ type: 'RENEWED', ageMs: 2 });
    }
    expect(count('renew')).to.equal(30);
    expect(actor.getSnapshot().matches('leading'), JSON.stringify(value())).to.equal(true);
    expect(effects.some((e) => e.startsWith('revoke'))).to.equal(false);
  });

  it('steps down when it could not renew for the renew deadline, counted from when its last renewal was sent', () => {
    const { actor, clock, effects } = contender();
    actor.send({ type: 'CLAIMED', token: 7, ageMs: 0 });
    clock.increment(1_000);
    // The renewal's answer took 400 ms: the deadline runs from its sending.
    actor.send({ type: 'RENEWED', ageMs: 400 });
    for (let i = 0; i < 9; i++) {
      clock.increment(1_000);
      actor.send({ type: 'RENEW_FAILED', error: 'timeout' });
    }
    // 9,000 ms since the answer = 9,400 since the renewal was sent: still leading.
    expect(actor.getSnapshot().matches('leading')).to.equal(true);
    clock.increment(599);
    expect(actor.getSnapshot().matches('leading')).to.equal(true);
    clock.increment(1);
    expect(actor.getSnapshot().matches({ contending: 'claiming' })).to.equal(true);
    expect(actor.getSnapshot().context.token).to.equal(null);
    expect(effects).to.include('revoke: the lease could not be renewed within 10000 ms');
    // The renewal was sent at 600 ms: its lease lapses at 15,600; it stepped down at 10,600, before anyone could claim.
    expect(clock.now()).to.equal(600 + TIMES.renewDeadlineMs);
    expect(clock.now()).to.be.below(600 + TIMES.leaseDurationMs);
  });

  it('steps down when the lease was taken, or a newer fencing token shows up (an older one changes nothing)', () => {
    const taken = contender();
    taken.actor.send({ type: 'CLAIMED', token: 5, ageMs: 0 });
    taken.actor.send({ type: 'TAKEN', by: 'on host-b, pid 2' });
    expect(taken.effects).to.include('revoke: another JobManager (on host-b, pid 2) holds the lease');
    expect(taken.actor.getSnapshot().matches('contending')).to.equal(true);

    const fenced = contender();
    fenced.actor.send({ type: 'CLAIMED', token: 5, ageMs: 0 });
    fenced.actor.send({ type: 'FENCED', token: 4 });
    fenced.actor.send({ type: 'FENCED', token: 5 });
    expect(fenced.actor.getSnapshot().matches('leading')).to.equal(true);
    fenced.actor.send({ type: 'FENCED', token: 9 });
    expect(fenced.effects).to.include('revoke: a message carried fencing token 9, newer than ours (5)');
    expect(fenced.actor.getSnapshot().matches('contending')).to.equal(true);
  });

  it('revokes, then releases the lease when closed while leading; a standby closes without either', () => {
    const leader = contender();
    leader.actor.send({ type: 'CLAIMED', token: 3, ageMs: 0 });
    leader.actor.send({ type: 'CLOSE' });
    expect(leader.effects.slice(-2)).to.deep.equal(['revoke: the JobManager is closing', 'release']);
    expect(leader.actor.getSnapshot().status).to.equal('done');

    const standby = contender();
    standby.actor.send({ type: 'REFUSED' });
    standby.actor.send({ type: 'CLOSE' });
    expect(standby.effects).to.deep.equal(['claim']);
    expect(standby.actor.getSnapshot().status).to.equal('done');
    standby.clock.increment(60_000);
    expect(standby.effects).to.deep.equal(['claim']);
  });
});
