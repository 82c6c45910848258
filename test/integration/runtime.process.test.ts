/**
 * The runtime with each TaskExecutor in its own child process: the isolation mode. A task that
 * blows its heap (a growing Map aborts the whole process, nodejs/node#47224) takes down only its
 * TaskExecutor, which the ResourceManager sees exit at once; the cluster's process lives on.
 */
import { expect } from 'chai';
import { startTestCluster, type TestCluster } from './support/cluster.js';

describe('runtime in child processes', function () {
  this.timeout(60_000);
  let cluster: TestCluster;

  afterEach(async () => {
    await cluster?.close();
  });

  it('register → heartbeat → slot request → offer → submit → finish → free', async () => {
    cluster = await startTestCluster('process', { 'heartbeat.interval': '200 ms', 'heartbeat.timeout': '5 s' });
    await cluster.declare(1);
    const [slot] = await cluster.offers(1);
    expect(slot!.resourceId).to.match(/^taskexecutor-process-/);
    const tdd = await cluster.submit(slot!, 'ok');
    const finished = await cluster.jobMaster.until(
      () => cluster.jobMaster.terminalState(tdd.executionAttemptId),
      'the task to finish',
    );
    expect(finished.state).to.equal('finished');
    expect(finished.output).to.deep.include({ sum: 6, hasMemoryManager: true });
    await cluster.driver.taskExecutorGateway(slot!.resourceId)!.freeSlot(slot!.offer.allocationId, 'done');
    await cluster.jobMaster.until(
      () => cluster.rm.slotManager.overview().taskManagers[0]?.slots.allocated === 0,
      'the slot to be free at the ResourceManager',
    );
  });

  it(
    'a task that aborts its process (as Node does on some over-limit ' +
      'allocations) kills only its TaskExecutor; its slots are freed at once',
    async () => {
      cluster = await startTestCluster('process', { 'heartbeat.interval': '10 s', 'heartbeat.timeout': '60 s' });
      await cluster.declare(1);
      const [slot] = await cluster.offers(1);
      const started = Date.now();
      await cluster.submit(slot!, 'aborts');
      const lost = await cluster.jobMaster.until(
        () => cluster.events.find((e) => e[0] === 'slotsLost'),
        "the ResourceManager to free the dead executor's slots",
      );
      expect(Date.now() - started).to.be.below(10_000); // seen through the process exit, not the 60 s heartbeat timeout
      expect(lost[1]).to.equal(slot!.resourceId);
      expect(String(lost[3])).to.match(/worker ended/);
      expect(cluster.rm.taskExecutors).to.not.include(slot!.resourceId);
      // The cluster's process lives on, and the requirement is met again on a new worker.
      const offers = await cluster.offers(2);
      expect(offers[1]!.resourceId).to.not.equal(slot!.resourceId);
    },
  );

  it(
    'a task growing a Map without bound is contained: its ' +
      'attempt fails, or at worst its TaskExecutor process dies',
    async () => {
      cluster = await startTestCluster('process', {
        'taskmanager.memory.task.heap.size': '64m',
        'heartbeat.interval': '10 s',
        'heartbeat.timeout': '60 s',
      });
      await cluster.declare(1);
      const [slot] = await cluster.offers(1);
      const hog = await cluster.submit(slot!, 'mapHog');
      const outcome = await cluster.jobMaster.until(
        () =>
          cluster.events.some((e) => e[0] === 'slotsLost')
            ? 'executor-died'
            : cluster.jobMaster.terminalState(hog.executionAttemptId)?.error?.reason,
        'the Map hog to be stopped',
        45_000,
      );
      // Which one depends on where V8 gives up (the thread's near-heap-limit callback, or MapGrow aborting the
      // process).
      expect(outcome).to.be.oneOf(['out-of-memory', 'executor-died']);
    },
  );
});
