/**
 * A recovered job's JobMaster (Flink 1.20's batch job recovery; the session cluster's job store keeps the
 * progress): the subtasks that finished under the last leader start finished with their output or partition, only
 * the others are deployed, their consumers read the restored partitions where they are, and a job all of whose
 * subtasks had finished completes without deploying anything. Each subtask that finishes is told, with what it
 * produced, to `onSubtaskFinished` (what the job store records).
 */
import { expect } from 'chai';
import { ExecutionAttemptID, ResourceID } from '../../lib/core/ids.js';
import type { FinishedSubtask } from '../../lib/jobmaster/JobMasterOptions.js';
import { Harness } from './jobMasterHarness.js';
import { edge, vertex } from './support.js';

const te = ResourceID.parse('taskexecutor-a');
const partition = (id: string) => ({ partitionId: ExecutionAttemptID.parse(id), resourceId: te, bytes: [8, 8] });

describe('JobMaster: a recovered job', () => {
  it('deploys only the subtasks that had not finished; the restored ones keep their outputs', async () => {
    const restored: FinishedSubtask[] = [
      { vertexId: 'v', subtaskIndex: 0, output: 'zero', partition: null },
      { vertexId: 'v', subtaskIndex: 2, output: 'two', partition: null },
    ];
    const h = new Harness({ vertices: [vertex('v', 3)] }, {}, undefined, { restored });
    await h.start();
    expect(h.lastDeclaration()).to.deep.equal({ UNKNOWN: 1 });
    const executor = h.addExecutor('taskexecutor-a');
    await h.offer(executor, 1);
    expect(h.submitted.map((d) => `${d.vertexId}#${d.subtaskIndex}`)).to.deep.equal(['v#1']);
    await h.finish(h.submittedFor('v', 1)[0]!, 'one');
    const result = await h.master.result;
    expect(result).to.deep.include({ status: 'finished', restarts: 0 });
    expect(result.outputs).to.deep.equal({ v: ['zero', 'one', 'two'] });
  });

  it('deploys the consumers of restored producers at once, reading the restored partitions there', async () => {
    const sourceIds = [0, 1].map((i) => `${'a'.repeat(32)}_src_${i}_0`);
    const restored: FinishedSubtask[] = [0, 1].map((i) => ({
      vertexId: 'src',
      subtaskIndex: i,
      output: undefined,
      partition: partition(sourceIds[i]!),
    }));
    const h = new Harness(
      { vertices: [vertex('src', 2), vertex('sink', 2)], edges: [edge('src', 'sink', 'hash')] },
      {},
      undefined,
      {
        restored,
      },
    );
    await h.start();
    const executor = h.addExecutor('taskexecutor-a');
    await h.offer(executor, 2);
    expect(h.submitted.map((d) => d.vertexId)).to.deep.equal(['sink', 'sink']);
    const inputs = h.submittedFor('sink', 1)[0]!.partitionInputs!['src']!;
    expect(inputs.map((input) => [input?.partitionId, input?.subpartition])).to.deep.equal([
      [sourceIds[0], 1],
      [sourceIds[1], 1],
    ]);
    for (const i of [0, 1]) await h.finish(h.submittedFor('sink', i)[0]!, `sum ${i}`);
    expect((await h.master.result).outputs).to.deep.equal({ sink: ['sum 0', 'sum 1'] });
  });

  it('completes at once when every subtask had finished, deploying nothing and asking no slot', async () => {
    const restored: FinishedSubtask[] = [0, 1].map((i) => ({
      vertexId: 'v',
      subtaskIndex: i,
      output: i,
      partition: null,
    }));
    const h = new Harness({ vertices: [vertex('v', 2)] }, {}, undefined, { restored });
    await h.start();
    const result = await h.master.result;
    expect(result).to.deep.include({ status: 'finished' });
    expect(result.outputs).to.deep.equal({ v: [0, 1] });
    expect(h.submitted).to.deep.equal([]);
    expect(h.declared.flatMap((d) => d.requirements).filter((r) => r.numberOfRequiredSlots > 0)).to.deep.equal([]);
  });

  it('tells each subtask that finishes, with its output or partition', async () => {
    const finished: FinishedSubtask[] = [];
    const h = new Harness({ vertices: [vertex('v', 2)] }, {}, undefined, {
      onSubtaskFinished: (f) => finished.push(f),
    });
    await h.start();
    await h.offer(h.addExecutor('taskexecutor-a'), 2);
    await h.finish(h.submittedFor('v', 1)[0]!, 'one');
    await h.finish(h.submittedFor('v', 0)[0]!, 'zero');
    expect(finished).to.deep.equal([
      { vertexId: 'v', subtaskIndex: 1, output: 'one', partition: null },
      { vertexId: 'v', subtaskIndex: 0, output: 'zero', partition: null },
    ]);
  });
});
