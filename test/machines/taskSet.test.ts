import { expect } from 'chai';
import { createActor } from 'xstate';
import { SimulatedClock } from '../../lib/core/clock.js';
import { AllocationID, ExecutionAttemptID, JobID } from '../../lib/core/ids.js';
import { toPlainInspectionEvent } from '../../lib/workerInspector.js';
import { MemoryManager } from '../../lib/taskexecutor/MemoryManager.js';
import { TaskSet } from '../../machines/taskSet.js';
import { taskSlotMachine } from '../../machines/taskSlot.machine.js';
import { fakeTask, profile } from '../support/fixtures.js';

type Payload = { executionAttemptId: ExecutionAttemptID; n: number };

const payload = (id: string, n = 0): Payload => ({ executionAttemptId: id as ExecutionAttemptID, n });

/** A deterministic PRNG (mulberry32), so a failing sequence repeats. */
function random(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

function expectSame(set: TaskSet<Payload>, model: ReadonlyMap<string, Payload>, where: string): void {
  expect(set.size, `size ${where}`).to.equal(model.size);
  expect([...set.ids()].sort(), `ids ${where}`).to.deep.equal([...model.keys()].sort());
  expect(set.values().length, `values ${where}`).to.equal(model.size);
  expect([...set].length, `iteration ${where}`).to.equal(model.size);
  for (const [id, task] of model) {
    expect(set.get(id as ExecutionAttemptID), `get ${id} ${where}`).to.equal(task);
    expect(set.has(id as ExecutionAttemptID), `has ${id} ${where}`).to.equal(true);
  }
  expect(set.toJSON(), `toJSON ${where}`).to.deep.equal(Object.fromEntries(model));
}

describe("TaskSet (a TaskSlot's tasks)", () => {
  it('starts empty: size 0, no ids, {} as JSON', () => {
    const set = TaskSet.empty<Payload>();
    expect(set.size).to.equal(0);
    expect(set.ids()).to.deep.equal([]);
    expect(set.toJSON()).to.deep.equal({});
    expect(set.has('a' as ExecutionAttemptID)).to.equal(false);
    expect(set.get('a' as ExecutionAttemptID)).to.equal(undefined);
  });

  it('adds, replaces and removes by ExecutionAttemptID', () => {
    const a = payload('a', 1);
    const a2 = payload('a', 2);
    const one = TaskSet.empty<Payload>().with(a);
    expect(one.get(a.executionAttemptId)).to.equal(a);
    const replaced = one.with(a2);
    expect(replaced.size).to.equal(1);
    expect(replaced.get(a.executionAttemptId)).to.equal(a2);
    expect(replaced.without(a.executionAttemptId).size).to.equal(0);
  });

  it('returns the same set when removing an ID it does not hold', () => {
    const set = TaskSet.of([payload('a'), payload('b')]);
    expect(set.without('c' as ExecutionAttemptID)).to.equal(set);
  });

  it('matches a Map over random adds and removes, and never changes a set once built', () => {
    const next = random(42);
    // Few distinct short IDs (many share a bucket) and real ones (spread over the buckets).
    const ids = [
      ...Array.from({ length: 40 }, (_, i) => `t${i}`),
      ...Array.from({ length: 200 }, () => ExecutionAttemptID.generate()),
    ];
    let set = TaskSet.empty<Payload>();
    let model = new Map<string, Payload>();
    const history: Array<[TaskSet<Payload>, Map<string, Payload>]> = [];
    for (let step = 0; step < 3_000; step++) {
      const id = ids[Math.floor(next() * ids.length)]!;
      if (next() < 0.55) {
        const task = payload(id, step);
        set = set.with(task);
        model = new Map(model).set(id, task);
      } else {
        set = set.without(id as ExecutionAttemptID);
        model = new Map(model);
        model.delete(id);
      }
      if (step % 97 === 0) history.push([set, model]);
      expect(set.size, `size at step ${step}`).to.equal(model.size);
    }
    expectSame(set, model, 'at the end');
    history.forEach(([old, oldModel], i) => expectSame(old, oldModel, `of snapshot ${i}, after later changes`));
  });

  it("keeps a TaskSlot snapshot's tasks visible in inspection JSON, keyed by ExecutionAttemptID", () => {
    const jobId = JobID.generate();
    const allocationId = AllocationID.generate();
    const actor = createActor(taskSlotMachine, {
      clock: new SimulatedClock(),
      input: {
        index: 0,
        resourceProfile: profile(1, 100, 1),
        jobId,
        allocationId,
        memoryManager: MemoryManager.create(64 * 1024, 64 * 1024),
        slotTimeout: 10_000,
        releaseTimeout: 180_000,
      },
    }).start();
    actor.send({ type: 'MARK_ACTIVE' });
    const tasks = [fakeTask(jobId, allocationId), fakeTask(jobId, allocationId)];
    for (const task of tasks) actor.send({ type: 'ADD_TASK', task });
    const before = actor.getSnapshot();
    actor.send({ type: 'REMOVE_TASK', executionAttemptId: tasks[0]!.executionAttemptId });

    const plain = toPlainInspectionEvent({ type: '@xstate.snapshot', snapshot: before } as never) as unknown as {
      snapshot: { context: { tasks: Record<string, { executionAttemptId: string; jobId: string }> } };
    };
    expect(Object.keys(plain.snapshot.context.tasks).sort()).to.deep.equal(
      tasks.map((t) => t.executionAttemptId).sort(),
    );
    expect(plain.snapshot.context.tasks[tasks[0]!.executionAttemptId]).to.include({
      executionAttemptId: tasks[0]!.executionAttemptId,
      jobId,
    });
    // The earlier snapshot still holds both tasks; the current one only the second.
    expect(before.context.tasks.size).to.equal(2);
    expect(actor.getSnapshot().context.tasks.ids()).to.deep.equal([tasks[1]!.executionAttemptId]);
    actor.stop();
  });
});
