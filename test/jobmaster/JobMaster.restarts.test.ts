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
});
