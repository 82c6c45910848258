/**
 * A session cluster as it runs for real: a nats-server, a JobManager and two TaskManagers, each in
 * a child process of its own on loopback (test/fixtures/clusterProcess.ts, driven over its IPC
 * Link). A job's code travels through the object store and its answer is exact; a TaskManager
 * killed with SIGKILL (no goodbye, no exit event across processes) is lost by heartbeat timeout
 * and its subtasks run again on the other one. Few processes, generous timeouts, no timings.
 */
import { expect } from 'chai';
import type { JobEvent } from '../../lib/jobmaster/JobMaster.js';
import { countWords, generatedText } from '../../examples/wordcount/text.js';
import { wordCountJob, type WordCountResult } from '../../examples/wordcount/wordCountJob.js';
import { until } from '../support/eventually.js';
import { ClusterProcesses, crossable } from './support/clusterProcesses.js';
import { natsServerOrSkip } from '../support/natsServer.js';

const HEARTBEAT_TIMEOUT_MS = 3_000;
const configuration = {
  'heartbeat.interval': 500,
  'heartbeat.timeout': HEARTBEAT_TIMEOUT_MS,
  'restart-strategy.fixed-delay.delay': 200,
};
const sleep = new URL('../fixtures/tasks/sleep.ts', import.meta.url).href;

describe('a session cluster over NATS: JobManager and two TaskManagers as child processes', function () {
  this.timeout(120_000);
  const cluster = new ClusterProcesses();

  before(async function () {
    await cluster.start({
      natsServer: natsServerOrSkip(this, 'cluster as child processes'),
      clusterId: 'procs',
      configuration,
      taskManagers: 2,
      taskManager: { slots: 2, cpuCores: 2, taskHeap: '1g', managedMemory: '64m', networkMemory: '32m' },
    });
  });

  after(() => cluster.stop());

  it('registers each TaskManager under the ResourceID it reports, with its 2 slots', async () => {
    const overview = await cluster.jm.overview();
    const ids = await Promise.all(cluster.taskManagers.map(async (tm) => (await tm.control.status()).resourceId));
    expect(overview.taskExecutors.map((te) => te.resourceId).sort()).to.deep.equal(ids.sort());
    expect(overview.taskExecutors.map((te) => te.slots.length)).to.deep.equal([2, 2]);
  });

  it('runs the word count of 2,000 generated lines and the counts are exactly those of a single loop', async () => {
    const jobManagerControl = cluster.jm;
    const jobId = await jobManagerControl.submit(
      crossable(wordCountJob({ input: { lines: 2000, seed: 11 }, parallelism: 2, counters: 2 })),
    );
    const result = await jobManagerControl.result(jobId);
    expect(result.status, result.error?.message).to.equal('finished');
    expect((result.outputs['sink']![0] as WordCountResult).counts).to.deep.equal(countWords(generatedText(11, 2000)));
  });

  it(
    'loses a TaskManager killed with SIGKILL by heartbeat ' + 'timeout and runs its subtasks again on the other',
    async () => {
      const control = cluster.jm;
      const spec = {
        name: 'survives a lost host',
        vertices: [{ id: 'wait', taskModule: sleep, parallelism: 2, config: { ms: 8_000 } }],
        restartStrategy: { type: 'fixed-delay' as const, attempts: 3, delay: 200 },
      };
      const jobId = await control.submit(spec);
      const running = (events: JobEvent[]) =>
        events.filter((e): e is Extract<JobEvent, { type: 'task' }> => e.type === 'task' && e.state === 'running');
      const first = await until('a subtask running', async () => running(await control.events(jobId))[0]);
      const ids = await Promise.all(cluster.taskManagers.map(async (tm) => (await tm.control.status()).resourceId));
      const victim = ids.indexOf(first.resourceId!);
      expect(victim, `subtask ran on ${first.resourceId}, not one of ${ids.join(', ')}`).to.be.at.least(0);
      const survivor = ids[1 - victim]!;
      cluster.taskManagers[victim]!.child.kill('SIGKILL');
      await cluster.taskManagers[victim]!.exited;

      await until(
        'the killed TaskExecutor to leave the cluster',
        async () => !(await control.overview()).taskExecutors.some((te) => te.resourceId === first.resourceId),
        30_000,
      );
      const result = await control.result(jobId);
      expect(result.status, result.error?.message).to.equal('finished');
      const events = await control.events(jobId);
      const finished = events.filter(
        (e): e is Extract<JobEvent, { type: 'task' }> => e.type === 'task' && e.state === 'finished',
      );
      // Every subtask that ran on the lost host ran again, as a later attempt, on the survivor.
      const onVictim = running(events).filter((e) => e.resourceId === first.resourceId);
      for (const lost of onVictim) {
        const again = finished.find((e) => e.subtaskIndex === lost.subtaskIndex);
        expect(again?.resourceId, `subtask ${lost.subtaskIndex}`).to.equal(survivor);
        expect(again!.attemptNumber).to.be.greaterThan(lost.attemptNumber);
      }
      expect(finished.map((e) => e.subtaskIndex).sort()).to.deep.equal([0, 1]);
    },
  );
});
