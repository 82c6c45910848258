/**
 * Region scheduling on a real MiniCluster (thread mode): a hash job of parallelism 8 × 8 on one TaskExecutor of two
 * slots finishes with every consumer's parts — the consumers are scheduled only once their producers have finished,
 * so the job runs in waves on the two slots instead of waiting for slots that consumers hold (see docs/runtime.md,
 * "Result partitions").
 */
import { expect } from 'chai';
import type { JobEvent } from '../../lib/jobmaster/JobMaster.js';
import { MiniCluster } from '../../lib/MiniCluster.js';

const produce = new URL('../fixtures/partitions/produce.mjs', import.meta.url);
const collect = new URL('../fixtures/partitions/collect.mjs', import.meta.url);

type TaskEvent = Extract<JobEvent, { type: 'task' }>;

describe('region scheduling (thread mode)', function () {
  this.timeout(60_000);
  let cluster: MiniCluster;

  before(async () => {
    cluster = await MiniCluster.start({ taskExecutors: 1, slotsPerTaskExecutor: 2, mode: 'thread' });
  });
  after(async () => {
    await cluster?.close();
  });

  it('runs an 8 × 8 hash job on one TaskExecutor of two slots, each sink with its part of every source', async () => {
    const p = 8;
    const job = await cluster.submitJob({
      name: 'wide-shuffle',
      vertices: [
        { id: 'src', taskModule: produce, parallelism: p, config: { parts: p } },
        { id: 'sink', taskModule: collect, parallelism: p },
      ],
      edges: [{ from: 'src', to: 'sink', pattern: 'hash' }],
    });
    const events: TaskEvent[] = [];
    job.onEvent((event) => {
      if (event.type === 'task') events.push(event);
    });
    const result = await job.result;
    expect(result.status, result.error?.message).to.equal('finished');
    const sinks = result.outputs['sink'] as Array<{ seen: Array<{ from: number; to: number; keys: number[] }> }>;
    expect(sinks).to.have.length(p);
    sinks.forEach((sink, to) => {
      expect(sink.seen.map((x) => [x.from, x.to, x.keys[0]])).to.deep.equal(
        Array.from({ length: p }, (_, from) => [from, to, from * 100 + to]),
      );
    });
    // Never more than the two slots' worth of subtasks on the TaskExecutor at once, on no more than two slots.
    let live = 0;
    let most = 0;
    for (const e of events) {
      if (e.state === 'deploying') most = Math.max(most, ++live);
      if (e.state === 'finished' || e.state === 'failed' || e.state === 'canceled') live--;
    }
    expect(most).to.be.within(1, 2);
    expect(new Set(events.map((e) => e.allocationId).filter((a) => a !== null)).size).to.be.at.most(2);
    // No sink was scheduled before the last source finished.
    const lastSource = events.findLastIndex((e) => e.vertexId === 'src' && e.state === 'finished');
    const firstSink = events.findIndex((e) => e.vertexId === 'sink');
    expect(firstSink).to.be.greaterThan(lastSource);
    expect(await cluster.taskExecutorMetrics()).to.have.length(1);
  });
});
