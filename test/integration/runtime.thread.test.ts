/**
 * The runtime on real worker threads: a ResourceManager, its thread driver, TaskExecutors started
 * on demand, a testing JobMaster. Few tests, reusing nothing risky; generous timeouts.
 */
import { expect } from 'chai';
import { startTestCluster, type TestCluster } from './support/cluster.js';

describe('runtime on worker threads', function () {
  this.timeout(60_000);
  let cluster: TestCluster;

  afterEach(async () => {
    await cluster?.close();
  });

  it('register → heartbeat → slot request → offer → submit → finish → free', async () => {
    cluster = await startTestCluster('thread', { 'heartbeat.interval': '200 ms', 'heartbeat.timeout': '5 s' });
    await cluster.declare(1);
    const [slot] = await cluster.offers(1);
    expect(cluster.rm.taskExecutors).to.deep.equal([slot!.resourceId]);
    const tdd = await cluster.submit(slot!, 'ok', { config: { greeting: 'hi' } });
    const finished = await cluster.jobMaster.until(
      () => cluster.jobMaster.terminalState(tdd.executionAttemptId),
      'the task to finish',
    );
    expect(finished.state).to.equal('finished');
    expect(finished.output).to.deep.include({ sum: 6, config: { greeting: 'hi' }, hasMemoryManager: true });
    expect(
      cluster.jobMaster.states.filter((s) => s.executionAttemptId === tdd.executionAttemptId).map((s) => s.state),
    ).to.deep.equal(['initializing', 'running', 'finished']);
    // Heartbeats carry the slot report: make the ResourceManager forget the slot the TaskExecutor
    // still holds (the job asking for nothing more, so that nobody requests it again); only the
    // next heartbeat's report can bring it back.
    await cluster.declare(0);
    await cluster.rm.mailbox.callAsync(() => cluster.rm.slotManager.freeSlot(slot!.offer.allocationId));
    expect(cluster.rm.slotManager.overview().taskManagers[0]!.slots).to.deep.equal({
      free: 1,
      pending: 0,
      allocated: 0,
    });
    await cluster.jobMaster.until(
      () => cluster.rm.slotManager.overview().taskManagers[0]?.slots.allocated === 1,
      'a heartbeat to report the slot as allocated again',
    );
    expect(cluster.rm.slotManager.tracker.getSlot(slot!.offer.allocationId)).to.deep.include({
      jobId: cluster.jobId,
      state: 'allocated',
    });
    // Free: the TaskExecutor frees the slot and tells the ResourceManager.
    await cluster.driver.taskExecutorGateway(slot!.resourceId)!.freeSlot(slot!.offer.allocationId, 'done');
    await cluster.jobMaster.until(
      () => cluster.rm.slotManager.overview().taskManagers[0]?.slots.allocated === 0,
      'the slot to be free at the ResourceManager',
    );
  });

  it('a task that throws fails its attempt only: the slot and the TaskExecutor live on', async () => {
    cluster = await startTestCluster('thread');
    await cluster.declare(1);
    const [slot] = await cluster.offers(1);
    const bad = await cluster.submit(slot!, 'throws');
    const failed = await cluster.jobMaster.until(
      () => cluster.jobMaster.terminalState(bad.executionAttemptId),
      'the failing task',
    );
    expect(failed.state).to.equal('failed');
    expect(failed.error).to.include({ _tag: 'TaskExecutionError', reason: 'threw' });
    const good = await cluster.submit(slot!, 'ok');
    expect(
      (await cluster.jobMaster.until(() => cluster.jobMaster.terminalState(good.executionAttemptId), 'the next task'))
        .state,
    ).to.equal('finished');
  });

  it('a task over its heap limit fails with out-of-memory; the slot lives on', async () => {
    cluster = await startTestCluster('thread', { 'taskmanager.memory.task.heap.size': '32m' });
    await cluster.declare(1);
    const [slot] = await cluster.offers(1);
    const hog = await cluster.submit(slot!, 'heapHog');
    const failed = await cluster.jobMaster.until(
      () => cluster.jobMaster.terminalState(hog.executionAttemptId),
      'the heap hog to fail',
      40_000,
    );
    expect(failed.error).to.include({ reason: 'out-of-memory' });
    const good = await cluster.submit(slot!, 'ok');
    expect(
      (await cluster.jobMaster.until(() => cluster.jobMaster.terminalState(good.executionAttemptId), 'the next task'))
        .state,
    ).to.equal('finished');
  });

  it('a hung task is canceled: a forced stop after the grace period', async () => {
    cluster = await startTestCluster('thread', { 'task.cancellation.grace-period': '300 ms' });
    await cluster.declare(1);
    const [slot] = await cluster.offers(1);
    const spin = await cluster.submit(slot!, 'spin');
    await cluster.jobMaster.until(
      () =>
        cluster.jobMaster.states.some((s) => s.executionAttemptId === spin.executionAttemptId && s.state === 'running'),
      'the spinner to run',
    );
    await cluster.driver.taskExecutorGateway(slot!.resourceId)!.cancelTask(spin.executionAttemptId);
    const canceled = await cluster.jobMaster.until(
      () => cluster.jobMaster.terminalState(spin.executionAttemptId),
      'the spinner to stop',
    );
    expect(canceled.state).to.equal('canceled');
  });

  it('a TaskExecutor thread terminated mid-task is noticed through its exit at once, and its slots freed', async () => {
    cluster = await startTestCluster('thread', { 'heartbeat.interval': '10 s', 'heartbeat.timeout': '60 s' });
    await cluster.declare(1);
    const [slot] = await cluster.offers(1);
    await cluster.submit(slot!, 'spin');
    const worker = cluster.driver.workers()[0]!;
    const started = Date.now();
    expect(cluster.driver.killWorker(worker.resourceId)).to.equal(true); // as a crash would: no goodbye
    await cluster.jobMaster.until(
      () => cluster.events.some((e) => e[0] === 'slotsLost'),
      'the ResourceManager to free the lost slots',
    );
    expect(Date.now() - started).to.be.below(5_000); // far below heartbeat.timeout (60 s)
    expect(cluster.rm.taskExecutors).to.not.include(worker.resourceId);
  });

  it(
    'a hung TaskExecutor (its event loop blocked) is ' + 'caught by the heartbeat timeout on a short interval',
    async () => {
      process.env['SLOTWISE_HANG_AFTER_MS'] = '1500';
      process.env['SLOTWISE_HANG_FOR_MS'] = '4000';
      try {
        const entry = new URL('../fixtures/hangingTaskExecutorMain.ts', import.meta.url);
        cluster = await startTestCluster(
          'thread',
          {
            'heartbeat.interval': '200 ms',
            'heartbeat.timeout': '1 s',
            'rpc.ask.timeout': '1 s',
            'task.cancellation.grace-period': '500 ms',
          },
          { entry },
        );
        await cluster.declare(1);
        const [slot] = await cluster.offers(1);
        const lost = await cluster.jobMaster.until(
          () => cluster.events.find((e) => e[0] === 'slotsLost'),
          'the hung executor to be declared lost',
          10_000,
        );
        expect(lost[1]).to.equal(slot!.resourceId);
        expect(String(lost[3])).to.match(/no heartbeat for \d+ ms/);
        await cluster.jobMaster.until(
          () => cluster.driver.workers().every((w) => w.resourceId !== slot!.resourceId),
          'the hung worker to be stopped',
          10_000,
        );
      } finally {
        delete process.env['SLOTWISE_HANG_AFTER_MS'];
        delete process.env['SLOTWISE_HANG_FOR_MS'];
      }
    },
  );
});
