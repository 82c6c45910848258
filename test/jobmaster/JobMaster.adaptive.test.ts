/**
 * The JobMaster under the adaptive scheduler (Flink's AdaptiveBatchScheduler): a vertex that leaves its parallelism
 * unset gets its subtasks once every producer it reads has finished, as many as the bytes they produced call for
 * (one per `avg-data-volume-per-task`, within the bounds), with a `parallelism` job event saying why; a source gets
 * the default source parallelism as the job starts; a decision holds for the job's life.
 */
import { expect } from 'chai';
import type { ResourceID } from '../../lib/core/ids.js';
import type { JobEvent } from '../../lib/jobmaster/JobMaster.js';
import type { JobVertexSpec } from '../../lib/jobmaster/JobGraph.js';
import type { TaskDeploymentDescriptor } from '../../lib/rpc/protocol.js';
import { Harness } from './jobMasterHarness.js';
import { edge, vertex } from './support.js';

type ParallelismEvent = Extract<JobEvent, { type: 'parallelism' }>;

const MB = 2 ** 20;
const OK = new URL('../fixtures/tasks/ok.ts', import.meta.url);
const adaptiveVertex = (id: string, extra: Partial<JobVertexSpec> = {}): JobVertexSpec => ({
  id,
  taskModule: OK,
  ...extra,
});
const OPTIONS = {
  'execution.batch.adaptive.auto-parallelism.avg-data-volume-per-task': '1 mb',
  'execution.batch.adaptive.auto-parallelism.max-parallelism': 32,
} as const;

const decisions = (h: Harness) => h.events.filter((e): e is ParallelismEvent => e.type === 'parallelism');

/** Starts the job with one TaskExecutor of `slots` slots offered; finishes every source subtask with `bytes` each. */
async function runSources(h: Harness, source: string, count: number, bytes: number, slots = 8): Promise<ResourceID> {
  await h.start();
  const te = h.addExecutor('taskexecutor-a');
  await h.offer(te, slots);
  for (let i = 0; i < count; i++) await h.finishKept(h.submittedFor(source, i)[0]!, te, [bytes]);
  return te;
}

const deployed = (h: Harness, vertexId: string): TaskDeploymentDescriptor[] =>
  h.submitted.filter((d) => d.vertexId === vertexId);

/** How many subtasks of the vertex have been scheduled (their slot asked for). */
const scheduledSubtasks = (h: Harness, vertexId: string): number =>
  new Set(
    h.events.flatMap((e) =>
      e.type === 'task' && e.vertexId === vertexId && e.state === 'scheduled' ? [e.subtaskIndex] : [],
    ),
  ).size;

describe('JobMaster: the adaptive scheduler', () => {
  it('gives the consumer of 8 producers of 1 MB each 8 subtasks at 1 MB a subtask, once all finished', async () => {
    const h = new Harness(
      { scheduler: 'adaptive', vertices: [vertex('src', 8), adaptiveVertex('sink')], edges: [edge('src', 'sink')] },
      OPTIONS,
    );
    await h.start();
    const te = h.addExecutor('taskexecutor-a');
    await h.offer(te, 8);
    for (let i = 0; i < 7; i++) await h.finishKept(h.submittedFor('src', i)[0]!, te, [MB]);
    // Not decided while a producer runs: the sink has no subtasks yet.
    expect(decisions(h)).to.deep.equal([]);
    expect(h.master.graph.parallelismOf('sink')).to.equal(null);
    await h.finishKept(h.submittedFor('src', 7)[0]!, te, [MB]);
    expect(
      decisions(h).map(({ vertexId, parallelism, bytes, reason }) => ({ vertexId, parallelism, bytes, reason })),
    ).to.deep.equal([
      {
        vertexId: 'sink',
        parallelism: 8,
        bytes: 8 * MB,
        reason: 'its inputs produced 8 mb; at 1 mb per subtask that is 8, within [1, 32]: 8',
      },
    ]);
    expect(h.master.parallelismDecisions().map((d) => d.parallelism)).to.deep.equal([8]);
    const sinks = deployed(h, 'sink');
    expect(sinks.map((d) => d.subtaskIndex).sort((a, b) => a - b)).to.deep.equal([0, 1, 2, 3, 4, 5, 6, 7]);
    expect(sinks.every((d) => d.parallelism === 8)).to.equal(true);
    // Pointwise 8 -> 8: each reads its own producer's partition.
    const sink3 = h.submittedFor('sink', 3)[0]!;
    expect(sink3.partitionInputs!.src!.map((p) => p!.partitionId)).to.deep.equal([
      h.submittedFor('src', 3)[0]!.executionAttemptId,
    ]);
    for (const d of sinks) await h.finish(d, `out ${d.subtaskIndex}`);
    const result = await h.master.result;
    expect(result.status).to.equal('finished');
    expect(result.outputs.sink).to.deep.equal([0, 1, 2, 3, 4, 5, 6, 7].map((i) => `out ${i}`));
  });

  it('gives the consumer the maximum when its producers produced 64 MB (max 32)', async () => {
    const h = new Harness(
      { scheduler: 'adaptive', vertices: [vertex('src', 8), adaptiveVertex('sink')], edges: [edge('src', 'sink')] },
      OPTIONS,
    );
    await runSources(h, 'src', 8, 8 * MB);
    expect(h.master.graph.parallelismOf('sink')).to.equal(32);
    expect(decisions(h)[0]!.reason).to.contain('that is 64, within [1, 32]: 32');
    // Every one of the 32 is scheduled (pointwise 8 -> 32: each producer feeds 4).
    expect(scheduledSubtasks(h, 'sink')).to.equal(32);
  });

  it("respects the vertex's own bounds over the options'", async () => {
    const low = new Harness(
      {
        scheduler: 'adaptive',
        vertices: [vertex('src', 8), adaptiveVertex('sink', { maxParallelism: 4 })],
        edges: [edge('src', 'sink')],
      },
      OPTIONS,
    );
    await runSources(low, 'src', 8, 8 * MB);
    expect(low.master.graph.parallelismOf('sink')).to.equal(4);
    const high = new Harness(
      {
        scheduler: 'adaptive',
        vertices: [vertex('src', 2), adaptiveVertex('sink', { minParallelism: 16 })],
        edges: [edge('src', 'sink', 'all-to-all')],
      },
      OPTIONS,
    );
    await runSources(high, 'src', 2, 10);
    expect(high.master.graph.parallelismOf('sink')).to.equal(16);
    expect(scheduledSubtasks(high, 'sink')).to.equal(16);
  });

  it('never decides more subtasks than the slots the cluster may hold (slotmanager.number-of-slots.max)', async () => {
    const h = new Harness(
      { scheduler: 'adaptive', vertices: [vertex('src', 2), adaptiveVertex('sink')], edges: [edge('src', 'sink')] },
      { ...OPTIONS, 'slotmanager.number-of-slots.max': 6 },
    );
    await runSources(h, 'src', 2, 32 * MB);
    // 6 is the cap; 6 keeps the pointwise edge from 2 divisible.
    expect(h.master.graph.parallelismOf('sink')).to.equal(6);
    expect(decisions(h)[0]!.reason).to.contain('max capped at 6 by the slots the cluster may hold');
  });

  it('gives a source the default source parallelism at the start, and decides a chain in turn', async () => {
    const h = new Harness(
      {
        scheduler: 'adaptive',
        vertices: [adaptiveVertex('src'), adaptiveVertex('mid'), adaptiveVertex('sink')],
        edges: [edge('src', 'mid', 'all-to-all'), edge('mid', 'sink')],
      },
      { ...OPTIONS, 'execution.batch.adaptive.auto-parallelism.default-source-parallelism': 3 },
    );
    await h.start();
    expect(decisions(h).map((d) => [d.vertexId, d.parallelism])).to.deep.equal([['src', 3]]);
    expect(decisions(h)[0]!.reason).to.contain('a source: the default source parallelism 3');
    const te = h.addExecutor('taskexecutor-a');
    await h.offer(te, 4);
    for (let i = 0; i < 3; i++) await h.finishKept(h.submittedFor('src', i)[0]!, te, [MB]);
    // Only broadcast (all-to-all) input: the minimum.
    expect(decisions(h).map((d) => [d.vertexId, d.parallelism])).to.deep.equal([
      ['src', 3],
      ['mid', 1],
    ]);
    await h.finishKept(h.submittedFor('mid', 0)[0]!, te, [3 * MB]);
    expect(decisions(h).map((d) => [d.vertexId, d.parallelism])).to.deep.equal([
      ['src', 3],
      ['mid', 1],
      ['sink', 3],
    ]);
    for (let i = 0; i < 3; i++) await h.finish(h.submittedFor('sink', i)[0]!, i);
    expect(await h.master.result).to.deep.include({ status: 'finished', outputs: { sink: [0, 1, 2] } });
  });

  it('has hash producers write max parallelism subpartitions; each consumer reads a range of ~1 MB', async () => {
    const h = new Harness(
      {
        scheduler: 'adaptive',
        vertices: [vertex('src', 4), adaptiveVertex('reduce')],
        edges: [edge('src', 'reduce', 'hash')],
      },
      OPTIONS,
    );
    await h.start();
    const te = h.addExecutor('taskexecutor-a');
    await h.offer(te, 4);
    const producers = [0, 1, 2, 3].map((i) => h.submittedFor('src', i)[0]!);
    expect(producers.map((d) => d.producesPartition)).to.deep.equal(new Array(4).fill({ subpartitions: 32 }));
    // 4 producers × 31 subpartitions of 64 KB (256 KB a subpartition over them) and a heavy one (31) of 2 MB.
    const bytes = [...new Array<number>(31).fill(MB / 16), 2 * MB];
    for (const d of producers) await h.finishKept(d, te, bytes);
    const [decision] = decisions(h);
    // Ranges of 4 subpartitions (1 MB), and the heavy one alone: 0-3, 4-7, …, 24-27, 28-30, 31.
    expect(decision!.parallelism).to.equal(9);
    expect(decision!.reason).to.contain("its producers' 32 subpartitions in contiguous ranges of about 1 mb make 9");
    // Subtasks 0-3 share the producers' slots; the other five get slots of their own.
    await h.offer(te, 5);
    const reduce7 = h.submittedFor('reduce', 7)[0]!;
    // Producer by producer, subpartitions 28, 29 and 30 of each.
    expect(reduce7.partitionInputs!.src!.map((p) => [p!.partitionId, p!.subpartition, p!.bytes])).to.deep.equal(
      producers.flatMap((d) => [28, 29, 30].map((k) => [d.executionAttemptId, k, MB / 16])),
    );
    expect(reduce7.inputs).to.deep.equal({ src: new Array(12).fill(undefined) });
    expect(h.submittedFor('reduce', 8)[0]!.partitionInputs!.src!.map((p) => p!.subpartition)).to.deep.equal([
      31, 31, 31, 31,
    ]);
    for (let i = 0; i < 9; i++) await h.finish(h.submittedFor('reduce', i)[0]!, i);
    expect(await h.master.result).to.deep.include({ status: 'finished' });
  });

  it('hands a hash consumer its range of the parts producers sent the JobMaster, producer by producer', async () => {
    const h = new Harness(
      {
        scheduler: 'adaptive',
        vertices: [vertex('src', 2), adaptiveVertex('reduce', { maxParallelism: 4 })],
        edges: [edge('src', 'reduce', 'hash')],
      },
      { ...OPTIONS, 'execution.batch.adaptive.auto-parallelism.min-parallelism': 2 },
    );
    await h.start();
    const te = h.addExecutor('taskexecutor-a');
    await h.offer(te, 4);
    expect(h.submittedFor('src', 0)[0]!.producesPartition).to.deep.equal({ subpartitions: 4 });
    for (const i of [0, 1])
      await h.finish(
        h.submittedFor('src', i)[0]!,
        ['a', 'b', 'c', 'd'].map((k) => `${k}${i}`),
      );
    expect(h.master.graph.parallelismOf('reduce')).to.equal(2);
    expect(h.submittedFor('reduce', 0)[0]!.inputs).to.deep.equal({ src: ['a0', 'b0', 'a1', 'b1'] });
    expect(h.submittedFor('reduce', 1)[0]!.inputs).to.deep.equal({ src: ['c0', 'd0', 'c1', 'd1'] });
  });

  it('keeps a partition an undecided consumer will read, though every decided consumer has read it', async () => {
    const h = new Harness(
      {
        scheduler: 'adaptive',
        vertices: [vertex('src', 2), vertex('q', 1), vertex('a', 1), adaptiveVertex('b')],
        edges: [edge('src', 'a', 'all-to-all'), edge('src', 'b', 'all-to-all'), edge('q', 'b', 'all-to-all')],
      },
      OPTIONS,
    );
    await h.start();
    const te = h.addExecutor('taskexecutor-a');
    await h.offer(te, 4);
    for (const i of [0, 1]) await h.finishKept(h.submittedFor('src', i)[0]!, te, [MB]);
    await h.finishKept(h.submittedFor('a')[0]!, te, [8]);
    // `a` read both of src's partitions; `b` (not decided: q runs) will read them too.
    expect(h.partitionsConsumed).to.deep.equal([]);
    await h.finishKept(h.submittedFor('q')[0]!, te, [8]);
    expect(h.master.graph.parallelismOf('b')).to.equal(1);
    const b = h.submittedFor('b')[0]!;
    expect(b.partitionInputs!.src!.map((p) => p!.partitionId)).to.deep.equal(
      [0, 1].map((i) => h.submittedFor('src', i)[0]!.executionAttemptId),
    );
    await h.finish(b, 'b');
    expect(await h.master.result).to.deep.include({ status: 'finished' });
  });

  it('keeps the decided parallelism through a restart: the failed subtask runs again, as it was', async () => {
    const h = new Harness(
      { scheduler: 'adaptive', vertices: [vertex('src', 4), adaptiveVertex('sink')], edges: [edge('src', 'sink')] },
      OPTIONS,
    );
    const te = await runSources(h, 'src', 4, 2 * MB);
    expect(h.master.graph.parallelismOf('sink')).to.equal(8);
    await h.offer(te, 8);
    expect(deployed(h, 'sink')).to.have.length(8);
    await h.report(h.submittedFor('sink', 5)[0]!, 'failed', { error: { name: 'Error', message: 'flaky' } });
    await h.advance(1_000);
    const again = h.submittedFor('sink', 5);
    expect(again.map((d) => [d.attemptNumber, d.parallelism])).to.deep.equal([
      [0, 8],
      [1, 8],
    ]);
    expect(decisions(h)).to.have.length(1);
    for (let i = 0; i < 8; i++) await h.finish(h.submittedFor('sink', i).at(-1)!, i);
    const result = await h.master.result;
    expect(result).to.deep.include({ status: 'finished', restarts: 1 });
    expect(result.outputs.sink).to.have.length(8);
  });

  it('changes nothing under the default scheduler: no decision, every vertex as the graph set it', async () => {
    const h = new Harness({
      vertices: [vertex('src', 2), vertex('sink', 3)],
      edges: [edge('src', 'sink', 'all-to-all')],
    });
    await runSources(h, 'src', 2, 64 * MB);
    expect(decisions(h)).to.deep.equal([]);
    expect(scheduledSubtasks(h, 'sink')).to.equal(3);
    expect(h.master.parallelismDecisions()).to.deep.equal([]);
  });

  it('runs a producer again when its partition is lost before its undecided consumer could read it', async () => {
    const h = new Harness(
      {
        scheduler: 'adaptive',
        // q in a slot sharing group of its own: it runs in a slot apart from src's.
        vertices: [vertex('src', 1), vertex('q', 1, { slotSharingGroup: 'q' }), adaptiveVertex('b')],
        edges: [edge('src', 'b', 'all-to-all'), edge('q', 'b', 'all-to-all')],
      },
      OPTIONS,
    );
    await h.start();
    const lost = h.addExecutor('taskexecutor-a');
    const kept = h.addExecutor('taskexecutor-b');
    await h.offer(lost, 1);
    await h.offer(kept, 1);
    const src = h.submittedFor('src')[0]!;
    const srcOn = h.master.executions().find((e) => e.vertexId === 'src')!.resourceId!;
    await h.finishKept(src, srcOn, [MB]);
    // q runs elsewhere; src's TaskExecutor goes with src's partition, which undecided b is still to read.
    h.executors.delete(srcOn);
    await h.master.mailbox.callAsync(() => h.master.disconnectTaskManager(srcOn, 'its process exited'));
    await h.settle();
    const failed = h.events.filter((e) => e.type === 'task' && e.state === 'failed');
    expect(failed.map((e) => e.type === 'task' && [e.vertexId, e.error?.name])).to.deep.include([
      'src',
      'PartitionLost',
    ]);
    await h.advance(1_000);
    const other = srcOn === lost ? kept : lost;
    await h.offer(other, 1);
    const again = h.submittedFor('src').at(-1)!;
    expect(again.attemptNumber).to.equal(1);
    await h.finishKept(again, other, [MB]);
    await h.finishKept(h.submittedFor('q')[0]!, other, [MB]);
    expect(h.master.graph.parallelismOf('b')).to.equal(1);
    expect(h.submittedFor('b')[0]!.partitionInputs!.src![0]!.partitionId).to.equal(again.executionAttemptId);
  });

  it('schedules the subtasks a decision adds under eager scheduling too', async () => {
    const h = new Harness(
      { scheduler: 'adaptive', vertices: [vertex('src', 2), adaptiveVertex('sink')], edges: [edge('src', 'sink')] },
      { ...OPTIONS, 'jobmanager.scheduler.scheduling-strategy': 'eager' },
    );
    await runSources(h, 'src', 2, 2 * MB);
    expect(h.master.graph.parallelismOf('sink')).to.equal(4);
    expect(scheduledSubtasks(h, 'sink')).to.equal(4);
  });
});
