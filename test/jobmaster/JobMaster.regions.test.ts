/**
 * The JobMaster's region scheduling (Flink's PipelinedRegionSchedulingStrategy for blocking edges, where each subtask
 * is a region of its own): a consumer's slot is asked for — and declared — only once every producer it reads has
 * finished, so a job wider than the cluster runs in waves; a producer run again makes its consumers wait again,
 * without a slot. `eager` (every slot at the start) is kept as the contrast.
 */
import { expect } from 'chai';
import type { ResourceID } from '../../lib/core/ids.js';
import type { JobEvent } from '../../lib/jobmaster/JobMaster.js';
import type { TaskDeploymentDescriptor } from '../../lib/rpc/protocol.js';
import { Harness } from './jobMasterHarness.js';
import { edge, vertex } from './support.js';

type TaskEvent = Extract<JobEvent, { type: 'task' }>;

const BIG = { cpuCores: 2, taskHeapMemory: '256m' };

/** The task events of one vertex with state 'scheduled': when its subtasks' slots were asked for. */
function scheduled(h: Harness, vertexId: string): TaskEvent[] {
  return h.events.filter(
    (e): e is TaskEvent => e.type === 'task' && e.vertexId === vertexId && e.state === 'scheduled',
  );
}

/** The job's total declared slots, each declaration in order. */
function declaredTotals(h: Harness): number[] {
  return h.declared.map((d) => d.requirements.reduce((n, r) => n + r.numberOfRequiredSlots, 0));
}

describe('JobMaster: region scheduling', () => {
  it('asks no slot for a consumer, and declares none, before every producer it reads has finished', async () => {
    const spec = {
      vertices: [vertex('src', 4), vertex('sink', 4, { slotSharingGroup: 'sinks' })],
      edges: [edge('src', 'sink', 'hash')],
    };
    // Eager, for contrast: the sinks' slots are asked for with the sources'.
    const eager = new Harness(spec, { 'jobmanager.scheduler.scheduling-strategy': 'eager' });
    await eager.start();
    expect(eager.lastDeclaration()).to.deep.equal({ UNKNOWN: 8 });
    expect(scheduled(eager, 'sink')).to.have.length(4);

    const h = new Harness(spec, { 'slot.idle.timeout': 0 });
    await h.start();
    expect(h.lastDeclaration()).to.deep.equal({ UNKNOWN: 4 });
    const te = h.addExecutor('taskexecutor-a');
    expect(await h.offer(te, 6)).to.have.length(4);
    for (const i of [0, 1, 2]) {
      await h.finishKept(h.submittedFor('src', i)[0]!, te, Array(4).fill(8));
      // Its slot goes back (slot.idle.timeout 0) and no sink asks for one: the requirement shrinks.
      expect(h.lastDeclaration()).to.deep.equal({ UNKNOWN: 3 - i });
      expect(scheduled(h, 'sink')).to.deep.equal([]);
    }
    await h.finishKept(h.submittedFor('src', 3)[0]!, te, Array(4).fill(8));
    // The last input is there: the four sinks are scheduled together (the last source's slot serves one of them).
    expect(scheduled(h, 'sink').map((e) => e.subtaskIndex)).to.deep.equal([0, 1, 2, 3]);
    expect(h.lastDeclaration()).to.deep.equal({ UNKNOWN: 4 });
    expect(declaredTotals(h)).to.deep.equal([4, 3, 2, 1, 4]);
    await h.offer(te, 3);
    for (const i of [0, 1, 2, 3]) await h.finish(h.submittedFor('sink', i)[0]!, `sum ${i}`);
    expect(await h.master.result).to.deep.include({ status: 'finished', restarts: 0 });
  });

  it('finishes an 8 × 8 hash job on two slots, in waves, where eager scheduling deadlocks', async () => {
    const spec = { vertices: [vertex('src', 8), vertex('sink', 8)], edges: [edge('src', 'sink', 'hash')] };
    /** Finishes every subtask deployed and not finished yet, until nothing more is deployed; returns how many ran. */
    const runAll = async (h: Harness, te: ResourceID) => {
      const done = new Set<string>();
      for (let wave = 0; wave < 100; wave++) {
        const next = h.submitted.filter((d) => !done.has(d.executionAttemptId));
        if (next.length === 0) break;
        // Never more subtasks deployed at once than the two slots hold (one per slot: no sharing between waves).
        expect(next.length, `wave ${wave}`).to.be.at.most(2);
        for (const d of next) {
          done.add(d.executionAttemptId);
          if (d.vertexId === 'src') await h.finishKept(d, te, Array(8).fill(8));
          else await h.finish(d, `sum ${d.subtaskIndex}`);
        }
      }
      return done.size;
    };

    const h = new Harness(spec);
    await h.start();
    // The sources' eight groups are declared, not the sinks'.
    expect(h.lastDeclaration()).to.deep.equal({ UNKNOWN: 8 });
    const te = h.addExecutor('taskexecutor-a');
    expect(await h.offer(te, 2)).to.have.length(2);
    expect(await runAll(h, te)).to.equal(16);
    const result = await h.master.result;
    expect(result).to.deep.include({ status: 'finished', restarts: 0 });
    expect(result.outputs).to.deep.equal({ sink: Array.from({ length: 8 }, (_, i) => `sum ${i}`) });
    // Each sink was scheduled only after the last source finished.
    const lastSource = Math.max(
      ...h.events.filter((e) => e.type === 'task' && e.vertexId === 'src').map((e) => e.timestamp),
    );
    for (const e of scheduled(h, 'sink')) expect(e.timestamp).to.be.at.least(lastSource);
    expect(h.events.findIndex((e) => e.type === 'task' && e.vertexId === 'sink')).to.be.greaterThan(
      h.events.findLastIndex((e) => e.type === 'task' && e.vertexId === 'src' && e.state === 'finished'),
    );

    // Eager: two sources run, then the sinks sharing their groups hold both slots waiting for the other six.
    const stuck = new Harness(spec, { 'jobmanager.scheduler.scheduling-strategy': 'eager' });
    await stuck.start();
    const other = stuck.addExecutor('taskexecutor-a');
    await stuck.offer(other, 2);
    expect(await runAll(stuck, other)).to.equal(2);
    expect(stuck.master.status).to.equal('running');
    await stuck.master.cancel();
  });

  it('runs a pointwise chain of parallelism 1 on one slot, each consumer taking on its producer’s slot', async () => {
    const h = new Harness({
      vertices: [vertex('src', 1), vertex('map', 1), vertex('sink', 1)],
      edges: [edge('src', 'map'), edge('map', 'sink')],
    });
    await h.start();
    const te = h.addExecutor('taskexecutor-a');
    const [slot] = await h.offer(te, 1);
    await h.finishKept(h.submittedFor('src')[0]!, te);
    await h.finishKept(h.submittedFor('map')[0]!, te);
    await h.finish(h.submittedFor('sink')[0]!, 'out');
    expect(await h.master.result).to.deep.include({ status: 'finished' });
    expect(h.submitted.map((d) => d.allocationId)).to.deep.equal([slot, slot, slot]);
    // The shared slot was never given back between them: one slot declared throughout, never another.
    expect(declaredTotals(h).every((n) => n === 1)).to.equal(true);
  });

  it('sends consumers scheduled back to wait, slotless, when an input is lost; they read the re-run', async () => {
    const h = new Harness(
      {
        // The sinks want bigger slots than the sources', so no source's slot serves them.
        vertices: [vertex('src', 2), vertex('sink', 2, { slotSharingGroup: 'sinks', resources: BIG })],
        edges: [edge('src', 'sink', 'hash')],
      },
      { 'slot.idle.timeout': 0 },
    );
    await h.start();
    const a = h.addExecutor('taskexecutor-a');
    const b = h.addExecutor('taskexecutor-b');
    await h.offer(a, 1);
    await h.offer(b, 1);
    const [src0, src1] = [h.submittedFor('src', 0)[0]!, h.submittedFor('src', 1)[0]!];
    const ownerOf = (d: TaskDeploymentDescriptor) => (h.submitted.indexOf(d) === 0 ? a : b);
    await h.finishKept(src0, ownerOf(src0), Array(2).fill(8));
    await h.finishKept(src1, ownerOf(src1), Array(2).fill(8));
    // Both sinks are scheduled and wait for slots (none offered yet).
    expect(scheduled(h, 'sink')).to.have.length(2);
    expect(declaredTotals(h).at(-1)).to.equal(2);
    // The TaskExecutor that holds src1's partition goes: src1 runs again, and the sinks wait for it without a slot.
    const lost = ownerOf(src1);
    h.executors.delete(lost);
    await h.master.mailbox.callAsync(() => h.master.disconnectTaskManager(lost, 'its process exited'));
    await h.settle();
    expect(h.master.status).to.equal('restarting');
    const back = h.events.filter((e): e is TaskEvent => e.type === 'task' && e.state === 'created');
    expect(back.map((e) => [e.vertexId, e.subtaskIndex, e.waitingFor, e.allocationId])).to.deep.equal([
      ['sink', 0, 'inputs', null],
      ['sink', 1, 'inputs', null],
    ]);
    expect(h.master.executions().map((e) => [e.key, e.state])).to.deep.equal([
      ['src#0', 'finished'],
      ['src#1', 'failed'],
      ['sink#0', 'created'],
      ['sink#1', 'created'],
    ]);
    expect(declaredTotals(h).at(-1)).to.equal(0);
    // The restart asks a slot for src1 only.
    await h.advance(1_000);
    expect(h.lastDeclaration()).to.deep.equal({ UNKNOWN: 1 });
    expect(scheduled(h, 'sink')).to.have.length(2);
    const kept = lost === a ? b : a;
    await h.offer(kept, 1);
    const src1Again = h.submittedFor('src', 1)[1]!;
    expect(src1Again.attemptNumber).to.equal(1);
    await h.finishKept(src1Again, kept, Array(2).fill(8));
    // Now the sinks are scheduled again, and read the new partition.
    expect(scheduled(h, 'sink')).to.have.length(4);
    expect(declaredTotals(h).at(-1)).to.equal(2);
    await h.offer(kept, 2, BIG);
    for (const i of [0, 1]) {
      const sink = h.submittedFor('sink', i)[0]!;
      expect(sink.attemptNumber).to.equal(0);
      expect(sink.partitionInputs?.src?.[1]).to.deep.include({
        partitionId: src1Again.executionAttemptId,
        resourceId: kept,
      });
      await h.finish(sink, `sum ${i}`);
    }
    expect(await h.master.result).to.deep.include({ status: 'finished', restarts: 1 });
    expect(h.submittedFor('src', 0)).to.have.length(1);
  });

  it('schedules a restarted consumer at once when its inputs are still there', async () => {
    const h = new Harness(
      { vertices: [vertex('src', 1), vertex('sink', 1)], edges: [edge('src', 'sink')] },
      { 'restart-strategy.fixed-delay.delay': 0 },
    );
    await h.start();
    const te = h.addExecutor('taskexecutor-a');
    await h.offer(te, 1);
    await h.finishKept(h.submittedFor('src')[0]!, te);
    const sink = h.submittedFor('sink')[0]!;
    await h.report(sink, 'failed', { error: { name: 'Error', message: 'flaky' } });
    await h.advance(0);
    const again = h.submittedFor('sink');
    expect(again.map((d) => d.attemptNumber)).to.deep.equal([0, 1]);
    await h.finish(again[1]!, 'ok');
    expect(await h.master.result).to.deep.include({ status: 'finished', restarts: 1 });
    expect(h.submittedFor('src')).to.have.length(1);
  });

  it('cancels subtasks still waiting to be scheduled', async () => {
    const h = new Harness({
      vertices: [vertex('src', 1), vertex('sink', 2)],
      edges: [edge('src', 'sink', 'all-to-all')],
    });
    await h.start();
    await h.master.cancel();
    expect(await h.master.result).to.deep.include({ status: 'canceled' });
    expect(h.master.executions().map((e) => e.state)).to.deep.equal(['canceled', 'canceled', 'canceled']);
  });
});
