/**
 * The JobMaster and result partitions (Flink's JobMasterPartitionTracker, region failover for blocking partitions):
 * a producer's output that stayed on its TaskExecutor reaches the JobMaster only as where it is and how big; its
 * consumers are deployed with where to read it; a lost TaskExecutor re-runs exactly the producers whose partitions a
 * consumer still needs; every TaskExecutor that kept partitions is told to let go of them at the job's end.
 */
import { expect } from 'chai';
import type { ResourceID, AllocationID } from '../../lib/core/ids.js';
import type { TaskDeploymentDescriptor } from '../../lib/rpc/protocol.js';
import { Harness } from './jobMasterHarness.js';
import { edge, vertex } from './support.js';

/** Two TaskExecutors of one slot each; which allocation is whose. */
async function twoExecutors(h: Harness) {
  const a = h.addExecutor('taskexecutor-a');
  const b = h.addExecutor('taskexecutor-b');
  const [slotA] = await h.offer(a, 1);
  const [slotB] = await h.offer(b, 1);
  const owner = new Map<AllocationID, ResourceID>([
    [slotA!, a],
    [slotB!, b],
  ]);
  return { a, b, ownerOf: (d: TaskDeploymentDescriptor) => owner.get(d.allocationId)! };
}

describe('JobMaster: result partitions', () => {
  it('deploys each consumer with where its producers’ parts are, never the parts; releases them', async () => {
    const h = new Harness({
      vertices: [vertex('src', 2), vertex('sink', 2)],
      edges: [{ from: 'src', to: 'sink', pattern: 'hash' }],
    });
    await h.start();
    const { ownerOf } = await twoExecutors(h);
    const sources = [h.submittedFor('src', 0)[0]!, h.submittedFor('src', 1)[0]!];
    // A hash edge's producer is told to return one part per consumer subtask.
    expect(sources.map((d) => d.producesPartition)).to.deep.equal([{ subpartitions: 2 }, { subpartitions: 2 }]);
    for (const [i, d] of sources.entries()) await h.finishKept(d, ownerOf(d), [100 + i, 200 + i]);
    for (const subtask of [0, 1]) {
      const [sink] = h.submittedFor('sink', subtask);
      expect(sink, `sink ${subtask} deployed`).to.not.equal(undefined);
      expect(sink!.producesPartition).to.equal(undefined);
      expect(sink!.inputs).to.deep.equal({ src: [undefined, undefined] });
      expect(sink!.partitionInputs).to.deep.equal({
        src: sources.map((d, i) => ({
          partitionId: d.executionAttemptId,
          resourceId: ownerOf(d),
          subpartition: subtask,
          bytes: (subtask === 0 ? 100 : 200) + i,
        })),
      });
      await h.finish(sink!, `sum ${subtask}`);
    }
    const result = await h.master.result;
    expect(result).to.deep.include({ status: 'finished', restarts: 0 });
    expect(result.outputs).to.deep.equal({ sink: ['sum 0', 'sum 1'] });
    expect([...h.partitionsReleased].sort()).to.deep.equal(['taskexecutor-a', 'taskexecutor-b']);
  });

  it('keeps a producer whose consumers all finished when its TaskExecutor is lost: nothing runs again', async () => {
    const h = new Harness({
      vertices: [vertex('src', 2), vertex('sink', 2)],
      edges: [{ from: 'src', to: 'sink', pattern: 'pointwise' }],
    });
    await h.start();
    const { ownerOf } = await twoExecutors(h);
    for (const i of [0, 1]) {
      const d = h.submittedFor('src', i)[0]!;
      await h.finishKept(d, ownerOf(d), [8]);
    }
    const sink0 = h.submittedFor('sink', 0)[0]!;
    expect(h.partitionsConsumed).to.deep.equal([]);
    await h.finish(sink0, 'done 0');
    // Its only consumer has read it: the partition goes now, not at the job's end.
    const src0 = h.submittedFor('src', 0)[0]!;
    expect(h.partitionsConsumed).to.deep.equal([[ownerOf(src0), [src0.executionAttemptId]]]);
    const lost = ownerOf(sink0);
    h.executors.delete(lost);
    await h.master.mailbox.callAsync(() => h.master.disconnectTaskManager(lost, 'its process exited'));
    await h.settle();
    expect(h.master.status).to.equal('running');
    await h.finish(h.submittedFor('sink', 1)[0]!, 'done 1');
    expect(await h.master.result).to.deep.include({ status: 'finished', restarts: 0 });
    expect(h.submittedFor('src', 0)).to.have.length(1);
  });

  it('re-runs exactly the producers whose partitions a lost TaskExecutor took while consumers need them', async () => {
    const h = new Harness({
      vertices: [vertex('src', 2), vertex('sink', 2)],
      edges: [{ from: 'src', to: 'sink', pattern: 'pointwise' }],
    });
    await h.start();
    const { a, b, ownerOf } = await twoExecutors(h);
    for (const i of [0, 1]) {
      const d = h.submittedFor('src', i)[0]!;
      await h.finishKept(d, ownerOf(d), [8]);
    }
    const sink0 = h.submittedFor('sink', 0)[0]!;
    await h.finish(sink0, 'done 0');
    // The other TaskExecutor goes while its consumer runs: that consumer fails, and its producer's partition is lost.
    const sink1 = h.submittedFor('sink', 1)[0]!;
    await h.report(sink1, 'running');
    const lost = ownerOf(sink1);
    const kept = lost === a ? b : a;
    h.executors.delete(lost);
    await h.master.mailbox.callAsync(() => h.master.disconnectTaskManager(lost, 'its process exited'));
    await h.settle();
    const failed = h.events.filter((e) => e.type === 'task' && e.state === 'failed');
    expect(failed.map((e) => e.type === 'task' && [e.vertexId, e.subtaskIndex, e.error?.name]).sort()).to.deep.equal([
      ['sink', 1, 'SlotLost'],
      ['src', 1, 'PartitionLost'],
    ]);
    // Run again on the TaskExecutor left: the producer first, then its consumer reads the new partition.
    await h.advance(1_000);
    await h.offer(kept, 1);
    const src1 = h.submittedFor('src', 1);
    expect(src1.map((d) => d.attemptNumber)).to.deep.equal([0, 1]);
    await h.finishKept(src1[1]!, kept, [8]);
    const sink1Again = h.submittedFor('sink', 1);
    expect(sink1Again.map((d) => d.attemptNumber)).to.deep.equal([0, 1]);
    expect(sink1Again[1]!.partitionInputs).to.deep.equal({
      src: [{ partitionId: src1[1]!.executionAttemptId, resourceId: kept, subpartition: 0, bytes: 8 }],
    });
    await h.finish(sink1Again[1]!, 'done 1');
    expect(await h.master.result).to.deep.include({ status: 'finished', restarts: 1 });
    // Neither the other producer nor the finished consumer ran again.
    expect(h.submittedFor('src', 0)).to.have.length(1);
    expect(h.submittedFor('sink', 0)).to.have.length(1);
  });
  it('re-runs a producer whose partition was released once read when its reader runs again', async () => {
    // a -> b -> c, each in its own slot sharing group: a on one TaskExecutor, b on another; b has read a's partition
    // (released at once), c, deployed on b's slot, is reading b's.
    const h = new Harness(
      {
        vertices: [
          vertex('a', 1),
          vertex('b', 1, { slotSharingGroup: 'b' }),
          vertex('c', 1, { slotSharingGroup: 'c' }),
        ],
        edges: [edge('a', 'b'), edge('b', 'c')],
      },
      { 'slot.idle.timeout': 0 },
    );
    await h.start();
    const x = h.addExecutor('taskexecutor-x');
    const y = h.addExecutor('taskexecutor-y');
    await h.offer(x, 1);
    const a = h.submittedFor('a')[0]!;
    await h.finishKept(a, x, [8]);
    await h.offer(y, 1);
    await h.finishKept(h.submittedFor('b')[0]!, y, [8]);
    expect(h.partitionsConsumed).to.deep.equal([[x, [a.executionAttemptId]]]);
    // y goes with b's partition: b runs again, and so does a, whose partition b would read again; c, which was
    // reading it there, fails and waits for b.
    h.executors.delete(y);
    await h.master.mailbox.callAsync(() => h.master.disconnectTaskManager(y, 'its process exited'));
    await h.settle();
    const cause = `TaskExecutor ${y} let go of the job: its process exited`;
    const failed = h.events.filter((e) => e.type === 'task' && e.state === 'failed');
    expect(failed.map((e) => e.type === 'task' && [e.vertexId, e.error?.message])).to.deep.equal([
      ['b', `its result partition on ${y} is lost (${cause})`],
      ['a', 'its result partition was released once read: a reader runs again'],
      ['c', `an input partition on ${y} is lost (${cause})`],
    ]);
    await h.advance(1_000);
    await h.offer(x, 1);
    const a1 = h.submittedFor('a')[1]!;
    expect(a1.attemptNumber).to.equal(1);
    await h.finishKept(a1, x, [8]);
    await h.offer(x, 1);
    const b1 = h.submittedFor('b')[1]!;
    expect(b1.partitionInputs).to.deep.equal({
      a: [{ partitionId: a1.executionAttemptId, resourceId: x, subpartition: 0, bytes: 8 }],
    });
    await h.finishKept(b1, x, [8]);
    await h.offer(x, 1);
    const c1 = h.submittedFor('c')[1]!;
    expect(c1.partitionInputs?.['b']?.[0]?.partitionId).to.equal(b1.executionAttemptId);
    await h.finish(c1, 'done');
    expect(await h.master.result).to.deep.include({ status: 'finished', restarts: 1 });
  });
});
