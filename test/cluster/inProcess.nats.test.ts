/**
 * A session cluster over a real nats-server, its JobManager and two TaskManagers in this process
 * (each TaskManager's tasks on its own task threads): they register, a job's code travels through
 * the object store, and the result is exact. The child-process cluster is cluster.process.test.ts.
 */
import { expect } from 'chai';
import { startJobManager, type JobManager } from '../../lib/cluster/JobManager.js';
import { startTaskManager, type TaskManager } from '../../lib/cluster/TaskManager.js';
import type { WordCountResult } from '../../examples/wordcount/wordCountJob.js';
import { wordCountJob } from '../../examples/wordcount/wordCountJob.js';
import { until } from '../support/eventually.js';
import { natsServerOrSkip, startNatsServer, type NatsServer } from '../support/natsServer.js';

const configuration = { 'heartbeat.interval': 1_000, 'heartbeat.timeout': 5_000 };

describe('a session cluster over NATS (JobManager and TaskManagers in this process)', function () {
  this.timeout(60_000);
  let server: NatsServer;
  let jobManager: JobManager;
  const taskManagers: TaskManager[] = [];

  before(async function () {
    const binary = natsServerOrSkip(this, 'session cluster over NATS');
    server = await startNatsServer(binary);
    jobManager = await startJobManager({ nats: server.url, clusterId: 'inproc', configuration });
    for (let i = 0; i < 2; i++) {
      taskManagers.push(await startTaskManager({ nats: server.url, clusterId: 'inproc', slots: 2, cpuCores: 2, taskHeap: '1g', managedMemory: '64m', networkMemory: '32m', configuration }));
    }
    await until('both TaskManagers registered with their slots', () => jobManager.overview().taskExecutors.length === 2);
  });

  after(async () => {
    for (const taskManager of taskManagers) await taskManager.close();
    await jobManager?.close();
    await server?.stop();
  });

  it('registers both TaskManagers under their ResourceIDs with 2 slots each', () => {
    const overview = jobManager.overview();
    expect(overview.taskExecutors.map((te) => te.resourceId).sort()).to.deep.equal(taskManagers.map((tm) => tm.resourceId).sort());
    expect(overview.taskExecutors.every((te) => te.slots.length === 2)).to.equal(true);
  });

  it('runs the word count with its code fetched from the object store, and the answer is exact', async () => {
    const text = ['The slot and the task.', 'A task, a slot; THE END', '', 'end'];
    const job = await jobManager.submitJob(wordCountJob({ input: { text }, parallelism: 2, counters: 2 }));
    const ran = new Set<string>();
    job.onEvent((event) => {
      if (event.type === 'task' && event.state === 'running' && event.resourceId !== null) ran.add(event.resourceId);
    });
    const result = await job.result;
    expect(result.status, result.error?.message).to.equal('finished');
    const answer = result.outputs['sink']![0] as WordCountResult;
    expect(answer.counts).to.deep.equal({ the: 3, slot: 2, and: 1, task: 2, a: 2, end: 2 });
    expect(answer.totalWords).to.equal(12);
    expect([...ran].every((id) => taskManagers.some((tm) => tm.resourceId === id))).to.equal(true);
  });
});
