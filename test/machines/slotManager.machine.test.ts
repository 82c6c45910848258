/**
 * The SlotManager statechart alone: its lifecycle (suspended ⇄ started) and the coalescing of
 * requirement checks over `requirementCheckDelay` (and, with a delay of 0, while crowded), on a
 * SimulatedClock, with the coordinator's effects replaced by actions that record.
 */
import { expect } from 'chai';
import { createActor, type InspectionEvent } from 'xstate';
import { SimulatedClock } from '../../lib/core/clock.js';
import { machines } from '../../machines/index.js';
import { slotManagerMachine, type RequirementCheckSummary } from '../../machines/slotManager.machine.js';

const SUMMARY: RequirementCheckSummary = {
  demands: 1,
  placed: 2,
  onWorkers: 1,
  unfulfilled: 0,
  workersRequested: 1,
  waiting: { 'abcd1234 default': 'waiting for 1 worker to start and register' },
};

/** The machine on a simulated clock; `effects` lists the provided actions in the order they ran. */
function startMachine(requirementCheckDelay = 50, crowdedAbove = 64) {
  const clock = new SimulatedClock();
  const effects: string[] = [];
  const trace: string[] = [];
  const actor = createActor(
    slotManagerMachine.provide({
      actions: {
        checkResourceRequirements: () => effects.push(`check@${clock.now()}`),
        clearState: () => effects.push(`clear@${clock.now()}`),
      },
    }),
    {
      clock,
      input: { requirementCheckDelay, crowdedAbove },
      // A simplified trace: the events the machine received, by type (it has no child actors).
      inspect: (e: InspectionEvent) => {
        if (e.type === '@xstate.event') trace.push(e.event.type);
      },
    },
  ).start();
  return {
    actor,
    clock,
    effects,
    trace,
    value: () => actor.getSnapshot().value,
    context: () => actor.getSnapshot().context,
  };
}

describe('slotManager machine', () => {
  it('is registered in machines/index as slotManager', () => {
    expect((machines as Record<string, unknown>).slotManager).to.equal(slotManagerMachine);
  });

  it('starts suspended with no checks and no summary, and goes to started.idle on START', () => {
    const { actor, value, context, effects } = startMachine();
    expect(value()).to.equal('suspended');
    expect(context()).to.deep.equal({
      requirementCheckDelay: 50,
      crowdedAbove: 64,
      checks: 0,
      lastCheck: null,
      crowded: false,
    });
    expect(actor.getSnapshot().can({ type: 'START' })).to.equal(true);
    expect(actor.getSnapshot().can({ type: 'REQUIREMENTS_CHANGED' })).to.equal(false);
    actor.send({ type: 'START' });
    expect(value()).to.deep.equal({ started: 'idle' });
    expect(actor.getSnapshot().can({ type: 'START' })).to.equal(false);
    expect(effects).to.deep.equal([]);
  });

  it('ignores requirement changes while suspended: nothing is scheduled', () => {
    const { actor, clock, effects, value } = startMachine();
    actor.send({ type: 'REQUIREMENTS_CHANGED' });
    expect(value()).to.equal('suspended');
    expect(clock.pendingTimers).to.equal(0);
    clock.increment(1000);
    expect(effects).to.deep.equal([]);
  });

  it('checks a change after a quiet period on the next turn (leading edge), then watches the delay', () => {
    const { actor, clock, effects, value } = startMachine(50);
    actor.send({ type: 'START' });
    actor.send({ type: 'REQUIREMENTS_CHANGED' });
    expect(value()).to.deep.equal({ started: 'checkSoon' });
    expect(effects, 'not inside the change’s own step').to.deep.equal([]);
    clock.increment(0);
    expect(effects).to.deep.equal(['check@0']);
    expect(value()).to.deep.equal({ started: 'cooling' });
    clock.increment(49);
    expect(value()).to.deep.equal({ started: 'cooling' });
    clock.increment(1);
    expect(value()).to.deep.equal({ started: 'idle' });
    clock.increment(10_000);
    expect(effects).to.deep.equal(['check@0']);
  });

  it('joins the changes of the same turn to the leading check', () => {
    const { actor, clock, effects, trace } = startMachine(50);
    actor.send({ type: 'START' });
    actor.send({ type: 'REQUIREMENTS_CHANGED' });
    actor.send({ type: 'REQUIREMENTS_CHANGED' });
    actor.send({ type: 'REQUIREMENTS_CHANGED' });
    clock.increment(500);
    expect(effects).to.deep.equal(['check@0']);
    expect(trace.filter((t) => t !== 'xstate.init')).to.deep.equal([
      'START',
      'REQUIREMENTS_CHANGED',
      'REQUIREMENTS_CHANGED',
      'REQUIREMENTS_CHANGED',
      'xstate.after.nextTurn.slotManager.started.checkSoon',
      'xstate.after.requirementCheckDelay.slotManager.started.cooling',
    ]);
  });

  it(
    'coalesces every change within the delay after a check into one trailing check, ' +
      'requirementCheckDelay after the first of them (the window is not extended)',
    () => {
      const { actor, clock, effects, trace } = startMachine(50);
      actor.send({ type: 'START' });
      actor.send({ type: 'REQUIREMENTS_CHANGED' });
      clock.increment(0);
      clock.increment(10);
      actor.send({ type: 'REQUIREMENTS_CHANGED' });
      expect(actor.getSnapshot().value).to.deep.equal({ started: 'checkScheduled' });
      clock.increment(39);
      actor.send({ type: 'REQUIREMENTS_CHANGED' });
      actor.send({ type: 'REQUIREMENTS_CHANGED' });
      clock.increment(10);
      expect(effects).to.deep.equal(['check@0']);
      clock.increment(1);
      expect(effects).to.deep.equal(['check@0', 'check@60']);
      expect(actor.getSnapshot().value, 'the delay is watched again').to.deep.equal({ started: 'cooling' });
      clock.increment(500);
      expect(effects).to.deep.equal(['check@0', 'check@60']);
      expect(trace.filter((t) => t !== 'xstate.init')).to.deep.equal([
        'START',
        'REQUIREMENTS_CHANGED',
        'xstate.after.nextTurn.slotManager.started.checkSoon',
        'REQUIREMENTS_CHANGED',
        'REQUIREMENTS_CHANGED',
        'REQUIREMENTS_CHANGED',
        'xstate.after.requirementCheckDelay.slotManager.started.checkScheduled',
        'xstate.after.requirementCheckDelay.slotManager.started.cooling',
      ]);
    },
  );

  it('costs at most two checks for a burst of 1,000 changes inside one delay', () => {
    const { actor, clock, effects } = startMachine(50);
    actor.send({ type: 'START' });
    for (let i = 0; i < 1000; i++) {
      actor.send({ type: 'REQUIREMENTS_CHANGED' });
      if (i % 25 === 24) clock.increment(1); // 40 ms of changes
    }
    clock.increment(1000);
    expect(effects).to.deep.equal(['check@0', 'check@51']);
  });

  it('checks a change that arrives once the delay after the last check has passed at once again', () => {
    const { actor, clock, effects } = startMachine(50);
    actor.send({ type: 'START' });
    actor.send({ type: 'REQUIREMENTS_CHANGED' });
    clock.increment(50);
    clock.increment(25);
    actor.send({ type: 'REQUIREMENTS_CHANGED' });
    clock.increment(50);
    expect(effects).to.deep.equal(['check@0', 'check@75']);
  });

  // Was: on the next timer turn. The SlotManager has always run a delay-0 check inside the change's
  // own call; the statechart now says so itself (isImmediate), so the check is scheduled through it.
  it('with a delay of 0 runs the check at once, inside the change’s own step, and is idle again (isImmediate)', () => {
    const { actor, clock, effects, value, trace } = startMachine(0);
    actor.send({ type: 'START' });
    actor.send({ type: 'REQUIREMENTS_CHANGED' });
    expect(effects).to.deep.equal(['check@0']);
    expect(value()).to.deep.equal({ started: 'idle' });
    clock.flush();
    expect(effects).to.deep.equal(['check@0']);
    actor.send({ type: 'REQUIREMENTS_CHANGED' });
    expect([effects, trace]).to.deep.equal([
      ['check@0', 'check@0'],
      ['xstate.init', 'START', 'REQUIREMENTS_CHANGED', 'REQUIREMENTS_CHANGED'],
    ]);
  });

  describe('crowded (a delay of 0, the last check weighed more than crowdedAbove demands)', () => {
    /** A summary of a check that weighed `demands`. */
    const weighing = (demands: number): RequirementCheckSummary => ({ ...SUMMARY, demands });

    it('says so in its context, and then checks a change on the next turn, not in its own step', () => {
      const { actor, clock, context, effects, value } = startMachine(0, 64);
      actor.send({ type: 'START' });
      actor.send({ type: 'CHECKED', summary: weighing(65) });
      expect(context()).to.deep.include({ crowded: true, crowdedAbove: 64, lastCheck: weighing(65) });
      actor.send({ type: 'REQUIREMENTS_CHANGED' });
      expect(effects, 'not inside the change’s own step').to.deep.equal([]);
      expect(value()).to.deep.equal({ started: 'checkSoon' });
      expect(clock.pendingTimers).to.equal(1);
      clock.increment(0);
      expect(effects).to.deep.equal(['check@0']);
      expect(value(), 'nothing to cool down with no delay').to.deep.equal({ started: 'idle' });
      expect(clock.pendingTimers).to.equal(0);
    });

    it('checks the changes of one turn once, and each later turn’s once again while crowded', () => {
      const { actor, clock, effects, trace } = startMachine(0, 64);
      actor.send({ type: 'START' });
      actor.send({ type: 'CHECKED', summary: weighing(1000) });
      for (let i = 0; i < 50; i++) actor.send({ type: 'REQUIREMENTS_CHANGED' });
      expect(effects).to.deep.equal([]);
      clock.increment(0);
      expect(effects).to.deep.equal(['check@0']);
      actor.send({ type: 'CHECKED', summary: weighing(999) });
      clock.flush();
      expect(effects, 'no check without a change').to.deep.equal(['check@0']);
      clock.increment(5);
      actor.send({ type: 'REQUIREMENTS_CHANGED' });
      actor.send({ type: 'REQUIREMENTS_CHANGED' });
      clock.increment(0);
      expect(effects).to.deep.equal(['check@0', 'check@5']);
      expect(trace.filter((t) => t !== 'xstate.init' && t !== 'REQUIREMENTS_CHANGED')).to.deep.equal([
        'START',
        'CHECKED',
        'xstate.after.nextTurn.slotManager.started.checkSoon',
        'CHECKED',
        'xstate.after.nextTurn.slotManager.started.checkSoon',
      ]);
    });

    it('checks each change at once again after a check that weighed crowdedAbove demands or fewer', () => {
      const { actor, clock, context, effects, value } = startMachine(0, 64);
      actor.send({ type: 'START' });
      actor.send({ type: 'CHECKED', summary: weighing(65) });
      actor.send({ type: 'REQUIREMENTS_CHANGED' });
      clock.increment(0);
      actor.send({ type: 'CHECKED', summary: weighing(64) });
      expect(context().crowded).to.equal(false);
      actor.send({ type: 'REQUIREMENTS_CHANGED' });
      expect(effects).to.deep.equal(['check@0', 'check@0']);
      expect(value()).to.deep.equal({ started: 'idle' });
      expect(clock.pendingTimers).to.equal(0);
    });

    it('is forgotten on SUSPEND, with the check it waited for: a start’s first change is checked at once', () => {
      const { actor, clock, context, effects } = startMachine(0, 64);
      actor.send({ type: 'START' });
      actor.send({ type: 'CHECKED', summary: weighing(80) });
      actor.send({ type: 'REQUIREMENTS_CHANGED' });
      actor.send({ type: 'SUSPEND' });
      expect(context()).to.deep.include({ crowded: false, checks: 1, lastCheck: weighing(80) });
      expect(clock.pendingTimers).to.equal(0);
      actor.send({ type: 'START' });
      actor.send({ type: 'REQUIREMENTS_CHANGED' });
      expect(effects).to.deep.equal(['clear@0', 'check@0']);
    });

    it('never happens with a delay above 0: its changes are coalesced anyway', () => {
      const { actor, context } = startMachine(50, 64);
      actor.send({ type: 'START' });
      actor.send({ type: 'CHECKED', summary: weighing(1000) });
      expect(context()).to.deep.include({ crowded: false, lastCheck: weighing(1000) });
    });
  });

  it('on SUSPEND from checkScheduled cancels the pending check and runs clearState', () => {
    const { actor, clock, effects, value } = startMachine(50);
    actor.send({ type: 'START' });
    actor.send({ type: 'REQUIREMENTS_CHANGED' });
    clock.increment(0);
    actor.send({ type: 'REQUIREMENTS_CHANGED' });
    clock.increment(20);
    expect(value()).to.deep.equal({ started: 'checkScheduled' });
    actor.send({ type: 'SUSPEND' });
    expect(value()).to.equal('suspended');
    expect(effects).to.deep.equal(['check@0', 'clear@20']);
    expect(clock.pendingTimers, 'the delayed check is cancelled with its state').to.equal(0);
    clock.increment(1000);
    expect(effects).to.deep.equal(['check@0', 'clear@20']);
  });

  it('runs clearState on SUSPEND from idle too, and ignores SUSPEND while suspended', () => {
    const { actor, effects, value } = startMachine();
    actor.send({ type: 'SUSPEND' });
    expect(effects).to.deep.equal([]);
    actor.send({ type: 'START' });
    actor.send({ type: 'SUSPEND' });
    expect(value()).to.equal('suspended');
    expect(effects).to.deep.equal(['clear@0']);
  });

  it('can be started again after a suspend, and schedules checks as before', () => {
    const { actor, clock, effects } = startMachine(50);
    actor.send({ type: 'START' });
    actor.send({ type: 'SUSPEND' });
    actor.send({ type: 'START' });
    actor.send({ type: 'REQUIREMENTS_CHANGED' });
    clock.increment(50);
    expect(effects).to.deep.equal(['clear@0', 'check@0']);
  });

  it('records the summary of each CHECKED and counts the checks, in idle and in checkSoon alike', () => {
    const { actor, context, value } = startMachine();
    actor.send({ type: 'START' });
    actor.send({ type: 'CHECKED', summary: SUMMARY });
    expect(context().checks).to.equal(1);
    expect(context().lastCheck).to.deep.equal(SUMMARY);
    actor.send({ type: 'REQUIREMENTS_CHANGED' });
    const second = { ...SUMMARY, placed: 0, waiting: {} };
    actor.send({ type: 'CHECKED', summary: second });
    expect(value(), 'CHECKED does not leave checkSoon').to.deep.equal({ started: 'checkSoon' });
    expect(context().checks).to.equal(2);
    expect(context().lastCheck).to.deep.equal(second);
  });

  it('counts a CHECKED that reports several checks as that many, keeping the last summary', () => {
    const { actor, context } = startMachine();
    actor.send({ type: 'START' });
    actor.send({ type: 'CHECKED', summary: SUMMARY });
    const last = { ...SUMMARY, placed: 3 };
    actor.send({ type: 'CHECKED', summary: last, checks: 5 });
    expect(context().checks).to.equal(6);
    expect(context().lastCheck).to.deep.equal(last);
  });

  it('ignores CHECKED while suspended, and keeps the count across a suspend', () => {
    const { actor, context } = startMachine();
    actor.send({ type: 'CHECKED', summary: SUMMARY });
    expect(context().checks).to.equal(0);
    actor.send({ type: 'START' });
    actor.send({ type: 'CHECKED', summary: SUMMARY });
    actor.send({ type: 'SUSPEND' });
    expect(context().checks).to.equal(1);
    expect(context().lastCheck).to.deep.equal(SUMMARY);
  });
});
