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

/** Few distinct short IDs (many share a bucket) and real ones (spread over the buckets). */
function someIds(): string[] {
  return [
    ...Array.from({ length: 40 }, (_, i) => `t${i}`),
    ...Array.from({ length: 200 }, () => ExecutionAttemptID.generate()),
  ];
}

interface ModelStep {
  readonly set: TaskSet<Payload>;
  readonly model: ReadonlyMap<string, Payload>;
}

/**
 * `steps` random changes (`change`, drawing from the PRNG `random(seed)`) to a set and to a Map beside it: the same
 * tasks after every step, and every `keepEvery`-th set still the same at the end (a set never changes once built).
 */
function againstModel(
  seed: number,
  steps: number,
  keepEvery: number,
  change: (at: ModelStep & { ids: readonly string[]; next: () => number; step: number }) => ModelStep,
): void {
  const next = random(seed);
  const ids = someIds();
  let now: ModelStep = { set: TaskSet.empty<Payload>(), model: new Map() };
  const history: ModelStep[] = [];
  for (let step = 0; step < steps; step++) {
    now = change({ ...now, ids, next, step });
    if (step % keepEvery === 0) history.push(now);
    expect(now.set.size, `size at step ${step}`).to.equal(now.model.size);
  }
  expectSame(now.set, now.model, 'at the end');
  history.forEach((old, i) => expectSame(old.set, old.model, `of snapshot ${i}, after later changes`));
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
    againstModel(42, 3_000, 97, ({ set, model, ids, next, step }) => {
      const id = ids[Math.floor(next() * ids.length)]!;
      if (next() < 0.55) {
        const task = payload(id, step);
        return { set: set.with(task), model: new Map(model).set(id, task) };
      }
      const without = new Map(model);
      without.delete(id);
      return { set: set.without(id as ExecutionAttemptID), model: without };
    });
  });

  it('adds and removes many at once as one by one would, and never changes a set once built', () => {
    againstModel(7, 1_500, 53, ({ set, model, ids, next, step }) => {
      // 0 to 6 at a time, drawn with repeats: the same ID twice in one call, and IDs the set does not hold.
      const batch = Array.from({ length: Math.floor(next() * 7) }, () => ids[Math.floor(next() * ids.length)]!);
      const changed = new Map(model);
      if (next() < 0.55) {
        const tasks = batch.map((id, i) => payload(id, step * 10 + i));
        for (const task of tasks) changed.set(task.executionAttemptId, task);
        const added = set.withAll(tasks);
        if (tasks.length === 0) expect(added, 'adding nothing').to.equal(set);
        return { set: added, model: changed };
      }
      for (const id of batch) changed.delete(id);
      const removed = set.withoutAll(batch as ExecutionAttemptID[]);
      if (!batch.some((id) => set.has(id as ExecutionAttemptID)))
        expect(removed, 'removing only IDs it does not hold').to.equal(set);
      return { set: removed, model: changed };
    });
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
