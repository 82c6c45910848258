/**
 * A JobMaster's status actor starts from a copy of one `created` snapshot with its own restart strategy instead of
 * XState working out the initial snapshot per job: the same as starting from the input, as long as `created` does
 * nothing on entry. These tests fail when that stops holding.
 */
import { expect } from 'chai';
import { createActor } from 'xstate';
import { SimulatedClock } from '../../lib/core/clock.js';
import { JobStatusActor } from '../../lib/jobmaster/JobStatusActor.js';
import { jobStatusMachine, type RestartBackoffTimeStrategy } from '../../machines/jobStatus.machine.js';

const strategies: RestartBackoffTimeStrategy[] = [
  { type: 'none' },
  { type: 'fixed-delay', attempts: 3, delayMs: 1_000 },
];

function statusActor(restartStrategy: RestartBackoffTimeStrategy): JobStatusActor {
  return new JobStatusActor({
    clock: new SimulatedClock(),
    restartStrategy,
    random: () => 0.5,
    onStatus: () => {},
    restart: () => {},
  });
}

describe('JobStatusActor', () => {
  it('has nothing to run on entering created: no entry action, no timer, no eventless transition', () => {
    const created = jobStatusMachine.root.states['created']!;
    expect(created.entry, 'entry actions').to.deep.equal([]);
    expect(created.after, 'delayed transitions').to.deep.equal([]);
    expect(created.always ?? [], 'eventless transitions').to.deep.equal([]);
    expect(jobStatusMachine.root.entry, "the machine's own entry actions").to.deep.equal([]);
  });

  it('starts each job where the machine would from its input, with that job’s restart strategy', () => {
    for (const restartStrategy of strategies) {
      const fromInput = createActor(jobStatusMachine, { input: { restartStrategy } }).start().getPersistedSnapshot();
      const actor = statusActor(restartStrategy);
      expect(actor.actor.getPersistedSnapshot()).to.deep.equal(fromInput);
      expect(actor.actor.getSnapshot().context.restartStrategy).to.equal(restartStrategy);
    }
  });

  it('gives each job a status of its own: one job running does not move another', () => {
    const first = statusActor(strategies[0]!);
    const second = statusActor(strategies[1]!);
    first.send({ type: 'START' });
    expect([first.status, second.status]).to.deep.equal(['running', 'created']);
  });
});
