/**
 * The Dispatcher on fakes and a simulated clock: what happens around a job's end.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { expect } from 'chai';
import { SimulatedClock } from '../../lib/core/clock.js';
import { resolveOptions, type SlotwiseOptions } from '../../lib/core/options.js';
import { Dispatcher, JOBMASTER_WITHDRAW_DELAY_MS } from '../../lib/dispatcher/Dispatcher.js';
import { ArchivedJob } from '../../lib/jobmaster/ArchivedJob.js';
import { JobMaster } from '../../lib/jobmaster/JobMaster.js';
import { vertex } from '../jobmaster/support.js';

function harness(options: SlotwiseOptions = {}) {
  const clock = new SimulatedClock();
  const served: string[] = [];
  const withdrawn: string[] = [];
  const dispatcher = new Dispatcher({
    options: resolveOptions(options),
    clock,
    resourceManager: {
      registerJobMaster: async () => {},
      declareRequiredResources: async () => {},
      disconnectJobMaster: async () => {},
      notifyNewBlockedNodes: async () => {},
    },
    serveJobMaster: (address) => void served.push(address),
    withdrawJobMaster: (address) => void withdrawn.push(address),
    taskExecutor: () => undefined,
    reasonFor: () => 'no TaskExecutor in this test',
    // No checker thread here: every module passes (TaskModuleChecker.test.ts checks for real).
    taskModuleChecker: {
      check: async (modules) => modules.map(() => ({ status: 'valid' as const })),
      close: async () => {},
    },
  });
  return { clock, served, withdrawn, dispatcher };
}

describe('Dispatcher', () => {
  it("keeps an ended job's JobMaster reachable for late messages, then withdraws it on the clock", async () => {
    const { clock, served, withdrawn, dispatcher } = harness();
    const client = await dispatcher.submitJob({ name: 'waits', vertices: [vertex('only', 1)] });
    expect(served).to.have.length(1);
    await client.cancel();
    expect((await client.result).status).to.equal('canceled');
    clock.increment(JOBMASTER_WITHDRAW_DELAY_MS - 1);
    expect(withdrawn).to.deep.equal([]);
    clock.increment(1);
    expect(withdrawn).to.deep.equal(served);
  });

  it('keeps what an ended job was (its archive), not its JobMaster, once it withdrew the JobMaster', async () => {
    const { clock, dispatcher } = harness();
    const client = await dispatcher.submitJob({ name: 'waits', vertices: [vertex('only', 2)] });
    const running = dispatcher.getJobView(client.jobId)!;
    expect(dispatcher.getJobMaster(client.jobId)).to.be.instanceOf(JobMaster);
    expect(running.executions().map((e) => e.key)).to.deep.equal(['only#0', 'only#1']);
    await client.cancel();
    expect((await client.result).status).to.equal('canceled');
    expect(dispatcher.getJobView(client.jobId), 'before the withdrawal').to.equal(running);
    clock.increment(JOBMASTER_WITHDRAW_DELAY_MS);

    expect(dispatcher.getJobMaster(client.jobId), 'the JobMaster, once withdrawn').to.equal(undefined);
    const archived = dispatcher.getJobView(client.jobId)!;
    expect(archived).to.be.instanceOf(ArchivedJob);
    expect(archived.executions().map((e) => [e.key, e.state])).to.deep.equal([
      ['only#0', 'canceled'],
      ['only#1', 'canceled'],
    ]);
    expect(archived.statusActorId).to.equal(running.statusActorId);
    expect(archived.parallelismOf('only')).to.equal(2);
    expect(archived.times().endTime).to.be.at.least(archived.times().startTime);
    expect(client.status).to.equal('canceled');
    await client.cancel(); // nothing to cancel any more: resolves, changes nothing
    expect(dispatcher.listJobs()).to.deep.equal([{ jobId: client.jobId, name: 'waits', status: 'canceled' }]);
  });

  it('lets the JobMaster of an ended job go: nothing the Dispatcher keeps holds it once withdrawn', async () => {
    // V8's gc for this test alone (the suite runs without --expose-gc): the JobMaster must be collectable.
    setFlagsFromString('--expose-gc');
    const gc = runInNewContext('gc') as () => void;
    const { clock, dispatcher } = harness();
    const client = await dispatcher.submitJob({ name: 'waits', vertices: [vertex('only', 1)] });
    const master = new WeakRef(dispatcher.getJobMaster(client.jobId)!);
    await client.cancel();
    await client.result;
    clock.increment(JOBMASTER_WITHDRAW_DELAY_MS);
    // A WeakRef holds its target until the current turn ends, and what the cancel set off (its last promise reactions)
    // may take a few more turns in a loaded run: a full collection after each of up to 20 turns. What the Dispatcher
    // keeps would hold it through all of them (the whole suite once failed with a single turn).
    for (let turn = 0; turn < 20 && master.deref() !== undefined; turn++) {
      await new Promise((resolve) => setImmediate(resolve));
      gc();
    }
    expect(master.deref(), 'the JobMaster after a full collection').to.equal(undefined);
    expect(dispatcher.getJobView(client.jobId)!.executions()).to.have.length(1);
  });

  it('withdraws at once, on close, what was still waiting to be withdrawn', async () => {
    const { served, withdrawn, dispatcher } = harness();
    const client = await dispatcher.submitJob({ name: 'waits', vertices: [vertex('only', 1)] });
    await client.cancel();
    await client.result;
    expect(withdrawn).to.deep.equal([]);
    await dispatcher.close(1_000);
    expect(withdrawn).to.deep.equal(served);
  });

  it(
    'lists an ended job until jobstore.expiration-time has passed ' +
      'since it ended, then drops it; a running job never expires',
    async () => {
      const { clock, dispatcher } = harness({ 'jobstore.expiration-time': '5 s' });
      const client = await dispatcher.submitJob({ name: 'brief', vertices: [vertex('only', 1)] });
      clock.increment(60_000);
      expect(dispatcher.listJobs().map((j) => [j.name, j.status])).to.deep.equal([['brief', 'running']]);
      await client.cancel();
      expect((await client.result).status).to.equal('canceled');
      clock.increment(4_999);
      expect(dispatcher.listJobs().map((j) => [j.name, j.status])).to.deep.equal([['brief', 'canceled']]);
      expect(dispatcher.getJob(client.jobId)).to.equal(client);
      clock.increment(1);
      expect(dispatcher.listJobs()).to.deep.equal([]);
      expect(dispatcher.getJob(client.jobId)).to.equal(undefined);
    },
  );
});
