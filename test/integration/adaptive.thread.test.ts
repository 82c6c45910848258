/**
 * The adaptive scheduler on a real MiniCluster (thread mode): a consumer that leaves its parallelism unset runs with as
 * many subtasks as the bytes its producers wrote call for, and says so — in a job event, in what `GET /jobs/:id`
 * answers, and on the dashboard's job page.
 */
import { expect } from 'chai';
import { describeJobs } from '../../lib/dashboard/jobDetails.js';
import type { JobEvent } from '../../lib/jobmaster/JobMaster.js';
import { MiniCluster } from '../../lib/MiniCluster.js';
import { miniClusterTarget } from '../../lib/rest/miniClusterTarget.js';
import { jobDetailsView } from '../../lib/rest/restViews.js';

const volume = new URL('../fixtures/tasks/volume.ts', import.meta.url);
const keyed = new URL('../fixtures/tasks/keyed.ts', import.meta.url);

describe('the adaptive scheduler (thread mode)', function () {
  this.timeout(60_000);
  let cluster: MiniCluster;

  before(async () => {
    cluster = await MiniCluster.start({
      taskExecutors: 2,
      slotsPerTaskExecutor: 2,
      mode: 'thread',
      configuration: {
        'jobmanager.scheduler': 'adaptive',
        'execution.batch.adaptive.auto-parallelism.avg-data-volume-per-task': '256 kb',
        'execution.batch.adaptive.auto-parallelism.max-parallelism': 16,
      },
    });
  });
  after(async () => {
    await cluster?.close();
  });

  it('runs the consumer of 8 × 250 KB with 8 subtasks at 256 kb per subtask, and shows the decision', async () => {
    const job = await cluster.submitJob({
      name: 'adaptive',
      vertices: [
        { id: 'src', taskModule: volume, parallelism: 8, config: { bytes: 250_000 } },
        { id: 'sink', taskModule: volume },
      ],
      edges: [{ from: 'src', to: 'sink', pattern: 'pointwise' }],
    });
    const decisions: Array<Extract<JobEvent, { type: 'parallelism' }>> = [];
    job.onEvent((event) => {
      if (event.type === 'parallelism') decisions.push(event);
    });
    const result = await job.result;
    expect(result.status, result.error?.message).to.equal('finished');
    const sinks = result.outputs['sink'] as Array<{ subtask: number; parallelism: number; bytes: number }>;
    expect(sinks.map((s) => [s.subtask, s.parallelism, s.bytes])).to.deep.equal(
      Array.from({ length: 8 }, (_, i) => [i, 8, 250_000]),
    );
    expect(decisions.map((d) => [d.vertexId, d.parallelism])).to.deep.equal([['sink', 8]]);
    expect(decisions[0]!.bytes).to.be.within(8 * 250_000, 8 * 250_100);
    expect(decisions[0]!.reason).to.match(
      /^its inputs produced 1\.91 mb; at 256 kb per subtask that is 8, within \[1, 16\]: 8$/,
    );

    const details = await miniClusterTarget(cluster).jobDetails(job.jobId);
    const sinkView = jobDetailsView(details!, Date.now()).vertices.find((v) => v.id === 'sink')!;
    expect(sinkView).to.deep.include({ parallelism: 8 });
    expect(sinkView.parallelismDecision).to.deep.equal({ bytes: decisions[0]!.bytes, reason: decisions[0]!.reason });
    const page = describeJobs(cluster.dispatcher).find((j) => j.jobId === job.jobId)!;
    expect(page.vertices.map((v) => [v.id, v.parallelism, v.parallelismReason])).to.deep.equal([
      ['src', 8, null],
      ['sink', 8, decisions[0]!.reason],
    ]);
  });

  it('shuffles through a hash edge to a consumer it decides: each reads a contiguous range of them', async () => {
    // 4 producers × 64 keys of ~8 KB, in 16 subpartitions (the max parallelism): ~126 KB a subpartition over them, so
    // ranges of 2 at 256 kb a subtask — 8 consumers, each with 8 keys of every producer.
    const job = await cluster.submitJob({
      name: 'adaptive-hash',
      vertices: [
        { id: 'map', taskModule: keyed, parallelism: 4, config: { keys: 64, bytesPerRecord: 8_000 } },
        { id: 'reduce', taskModule: keyed },
      ],
      edges: [{ from: 'map', to: 'reduce', pattern: 'hash' }],
    });
    const decisions: Array<Extract<JobEvent, { type: 'parallelism' }>> = [];
    job.onEvent((event) => {
      if (event.type === 'parallelism') decisions.push(event);
    });
    const result = await job.result;
    expect(result.status, result.error?.message).to.equal('finished');
    const reducers = result.outputs['reduce'] as Array<{
      subtask: number;
      parallelism: number;
      parts: number;
      keys: number[];
      records: number;
    }>;
    expect(decisions.map((d) => [d.vertexId, d.parallelism])).to.deep.equal([['reduce', 8]]);
    expect(decisions[0]!.reason).to.contain(
      "its producers' 16 subpartitions in contiguous ranges of about 256 kb make 8",
    );
    // Reducer i reads subpartitions 2i and 2i + 1 of each of the 4 producers: the keys k with k % 16 in them.
    reducers.forEach((r, i) => {
      expect(r).to.deep.include({ subtask: i, parallelism: 8, parts: 8, records: 32 });
      expect(r.keys).to.deep.equal(
        Array.from({ length: 64 }, (_, k) => k).filter((k) => k % 16 === 2 * i || k % 16 === 2 * i + 1),
      );
    });
    // Every key of every producer once, and no key at two reducers.
    expect(reducers.reduce((sum, r) => sum + r.records, 0)).to.equal(4 * 64);
    expect(new Set(reducers.flatMap((r) => r.keys)).size).to.equal(64);
  });
});
