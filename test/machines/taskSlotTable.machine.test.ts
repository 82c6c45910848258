import { expect } from 'chai';
import { createActor } from 'xstate';
import { SimulatedClock } from '../../lib/core/clock.js';
import { AllocationID, JobID } from '../../lib/core/ids.js';
import { ResourceBudgetManager } from '../../lib/core/ResourceBudgetManager.js';
import { ResourceProfile } from '../../lib/core/ResourceProfile.js';
import { MemoryManager } from '../../lib/taskexecutor/MemoryManager.js';
import type { TaskSlotPayload } from '../../machines/taskSlot.machine.js';
import {
  addTaskRefusalIn,
  slotOf,
  slotOfTask,
  slotState,
  taskSlotTableMachine,
  type TableAddTaskRefusal,
  type TaskSlotTableEmitted,
} from '../../machines/taskSlotTable.machine.js';
import { fakeTask, profile } from '../support/fixtures.js';

/** The machine alone, on a simulated clock, with 2 static slots of 1 core / 100 mb each. */
function startTable() {
  const clock = new SimulatedClock();
  const emitted: TaskSlotTableEmitted[] = [];
  const actor = createActor(taskSlotTableMachine, {
    clock,
    input: {
      numberSlots: 2,
      budget: new ResourceBudgetManager(profile(2, 200)),
      defaultSlotProfile: profile(1, 100),
      slotTimeout: 10_000,
      releaseTimeout: 180_000,
      createMemoryManager: (p) => MemoryManager.create(p.managedMemory, 4096),
    },
  });
  actor.on('*', (e) => emitted.push(e));
  actor.start();
  const jobId = JobID.generate();
  const allocate = (
    index: number,
    allocationId = AllocationID.generate(),
    resourceProfile = ResourceProfile.UNKNOWN,
    job = jobId,
  ) => {
    actor.send({ type: 'ALLOCATE_SLOT', index, jobId: job, allocationId, resourceProfile });
    return allocationId;
  };
  /**
   * Adds a task as the TaskSlotTable class does: the table has no task-adding event, so the
   * table-wide rules are checked here and the task goes to its TaskSlot actor. The refusal, if any.
   */
  const addTask = (task: TaskSlotPayload): TableAddTaskRefusal | undefined => {
    const refusal = addTaskRefusalIn(actor.getSnapshot().context, task);
    if (refusal === undefined) slotOf(actor.getSnapshot().context, task.allocationId)!.send({ type: 'ADD_TASK', task });
    return refusal;
  };
  return { actor, clock, emitted, jobId, allocate, addTask, ctx: () => actor.getSnapshot().context };
}

describe('taskSlotTable machine', () => {
  describe('lifecycle', () => {
    it('is created, then running on START, closing on CLOSE, closed when every slot has closed', () => {
      const { actor, allocate, addTask, jobId } = startTable();
      expect(actor.getSnapshot().value).to.equal('created');
      actor.send({ type: 'START' });
      expect(actor.getSnapshot().value).to.equal('running');
      allocate(0);
      const id = allocate(1);
      actor.send({ type: 'MARK_SLOT_ACTIVE', allocationId: id });
      const task = fakeTask(jobId, id);
      addTask(task);
      actor.send({ type: 'CLOSE' });
      // The empty slot closed at once; the other waits for its task.
      expect(actor.getSnapshot().value).to.equal('closing');
      actor.send({ type: 'REMOVE_TASK', executionAttemptId: task.executionAttemptId });
      expect(actor.getSnapshot().value).to.equal('closed');
      expect(actor.getSnapshot().status).to.equal('done');
    });

    it('closes at once when it holds no slots', () => {
      const { actor } = startTable();
      actor.send({ type: 'START' });
      actor.send({ type: 'CLOSE' });
      expect(actor.getSnapshot().value).to.equal('closed');
    });

    it('refuses every slot operation before START', () => {
      const { actor, allocate } = startTable();
      const before = actor.getSnapshot().context;
      allocate(0);
      expect(actor.getSnapshot().context).to.equal(before);
      expect(actor.getSnapshot().value).to.equal('created');
    });

    it('refuses allocations and activations while closing, but still lets tasks leave', () => {
      const { actor, allocate, addTask, ctx, jobId } = startTable();
      actor.send({ type: 'START' });
      const id = allocate(0);
      actor.send({ type: 'MARK_SLOT_ACTIVE', allocationId: id });
      const task = fakeTask(jobId, id);
      addTask(task);
      actor.send({ type: 'CLOSE', cause: 'shutting down' });
      expect(task.failed).to.deep.equal(['shutting down']);
      const before = ctx();
      allocate(1);
      actor.send({ type: 'MARK_SLOT_ACTIVE', allocationId: id });
      expect(ctx()).to.equal(before);
      actor.send({ type: 'REMOVE_TASK', executionAttemptId: task.executionAttemptId });
      expect(ctx().slots).to.deep.equal({});
      expect(actor.getSnapshot().value).to.equal('closed');
    });
  });

  describe('ledger', () => {
    it('spawns a TaskSlot actor per allocation and records it in every index', () => {
      const { actor, allocate, ctx, jobId } = startTable();
      actor.send({ type: 'START' });
      const id = allocate(1);
      const slot = ctx().slots[1]!;
      expect(slot.getSnapshot().context).to.include({ index: 1, allocationId: id, jobId });
      expect(slotState(slot)).to.equal('allocated');
      expect(ctx().allocations).to.deep.equal({ [id]: 1 });
      expect(ctx().slotsPerJob).to.deep.equal({ [jobId]: [id] });
      expect(ctx().budget.available.equals(profile(1, 100))).to.equal(true);
      expect(Object.keys(actor.getSnapshot().children)).to.deep.equal([slot.id]);
    });

    it('gives a dynamic request the next free index at or above the static slots', () => {
      const { actor, allocate, ctx } = startTable();
      actor.send({ type: 'START' });
      allocate(-1, undefined, profile(0.5, 10));
      allocate(-1, undefined, profile(0.5, 10));
      expect(Object.keys(ctx().slots).map(Number)).to.deep.equal([2, 3]);
    });

    it('accepts an identical repeat of an allocation and changes nothing', () => {
      const { actor, allocate, ctx } = startTable();
      actor.send({ type: 'START' });
      const id = allocate(0);
      const before = ctx();
      allocate(0, id);
      expect(ctx()).to.equal(before);
    });

    it(
      'refuses a taken index, a conflicting repeat, an index ' +
        'out of range and what the budget cannot cover, unchanged',
      () => {
        const { actor, allocate, ctx } = startTable();
        actor.send({ type: 'START' });
        const id = allocate(0);
        const before = ctx();
        allocate(0); // taken
        allocate(1, id); // same AllocationID, another index
        allocate(0, id, profile(0.5, 10)); // same AllocationID, another profile
        allocate(2); // out of range
        allocate(1, undefined, profile(2, 100)); // more CPU than is left
        expect(ctx()).to.equal(before);
      },
    );

    it('frees an empty slot at once: it leaves every index, its budget returns, its actor is done', () => {
      const { actor, allocate, ctx, emitted, jobId } = startTable();
      actor.send({ type: 'START' });
      const id = allocate(0);
      actor.send({ type: 'FREE_SLOT', allocationId: id });
      expect(ctx().slots).to.deep.equal({});
      expect(ctx().allocations).to.deep.equal({});
      expect(ctx().slotsPerJob).to.deep.equal({});
      expect(ctx().budget.available.equals(profile(2, 200))).to.equal(true);
      expect(emitted).to.deep.include({ type: 'slotFreed', allocationId: id, jobId, index: 0 });
      expect(ctx().closingSlots).to.equal(0);
      expect(actor.getSnapshot().children).to.deep.equal({});
      expect(emitted.map((e) => e.type)).to.deep.equal(['slotFreed', 'slotClosed']);
    });

    it('keeps a slot with tasks as releasing until its last task is removed', () => {
      const { actor, allocate, addTask, ctx, jobId, emitted } = startTable();
      actor.send({ type: 'START' });
      const id = allocate(0);
      actor.send({ type: 'MARK_SLOT_ACTIVE', allocationId: id });
      const a = fakeTask(jobId, id);
      const b = fakeTask(jobId, id);
      addTask(a);
      addTask(b);
      actor.send({ type: 'FREE_SLOT', allocationId: id, cause: 'canceled' });
      expect(slotState(ctx().slots[0]!)).to.equal('releasing');
      expect(a.failed).to.deep.equal(['canceled']);
      expect(ctx().budget.available.equals(profile(1, 100))).to.equal(true);
      actor.send({ type: 'REMOVE_TASK', executionAttemptId: a.executionAttemptId });
      expect(ctx().slots[0]).to.not.equal(undefined);
      actor.send({ type: 'REMOVE_TASK', executionAttemptId: b.executionAttemptId });
      expect(ctx().slots).to.deep.equal({});
      expect(slotOfTask(ctx(), a.executionAttemptId)).to.equal(undefined);
      expect(slotOfTask(ctx(), b.executionAttemptId)).to.equal(undefined);
      expect(ctx().budget.available.equals(profile(2, 200))).to.equal(true);
      expect(emitted.filter((e) => e.type === 'slotFreed')).to.have.length(1);
    });

    it('sends MARK_ACTIVE only to a slot that is not active yet', () => {
      const { actor, allocate, ctx } = startTable();
      actor.send({ type: 'START' });
      const id = allocate(0);
      const slot = ctx().slots[0]!;
      const seen: string[] = [];
      const subscription = actor.system.inspect(
        (e) => void (e.type === '@xstate.event' && e.actorRef === slot && seen.push(e.event.type)),
      );
      actor.send({ type: 'MARK_SLOT_ACTIVE', allocationId: id });
      actor.send({ type: 'MARK_SLOT_ACTIVE', allocationId: id });
      subscription.unsubscribe();
      expect(seen).to.deep.equal(['MARK_ACTIVE']);
      expect(slotState(slot)).to.equal('active');
    });

    it('keeps tasks in their slot only: adding and removing one leaves the table-wide ledger as it was', () => {
      const { actor, allocate, addTask, ctx, jobId } = startTable();
      actor.send({ type: 'START' });
      const id = allocate(0);
      actor.send({ type: 'MARK_SLOT_ACTIVE', allocationId: id });
      const { slots, allocations, slotsPerJob, budget } = ctx();
      const task = fakeTask(jobId, id);
      expect(addTask(task)).to.equal(undefined);
      expect(ctx()).to.include({ slots, allocations, slotsPerJob, budget });
      expect(addTask(task)).to.deep.equal({ reason: 'duplicate-execution-attempt' }); // the same attempt again: refused
      expect(ctx().slots[0]!.getSnapshot().context.tasks.ids()).to.deep.equal([task.executionAttemptId]);
      actor.send({ type: 'REMOVE_TASK', executionAttemptId: task.executionAttemptId });
      expect(ctx()).to.include({ slots, allocations, slotsPerJob, budget });
      expect(slotOfTask(ctx(), task.executionAttemptId)).to.equal(undefined);
    });

    it(
      'has no task-adding event of its own: ADD_TASK is a TaskSlot ' +
        'event, REMOVE_TASK a table event in running and closing',
      () => {
        const { actor, allocate, addTask, ctx, jobId } = startTable();
        actor.send({ type: 'START' });
        const id = allocate(0);
        actor.send({ type: 'MARK_SLOT_ACTIVE', allocationId: id });
        const task = fakeTask(jobId, id);
        const before = ctx();
        // Sent to the table anyway, ADD_TASK is ignored: no transition, no task in any slot.
        expect(
          taskSlotTableMachine.getTransitionData(actor.getSnapshot(), { type: 'ADD_TASK', task } as never),
        ).to.deep.equal([]);
        actor.send({ type: 'ADD_TASK', task } as never);
        expect(ctx()).to.equal(before);
        expect(slotOfTask(ctx(), task.executionAttemptId)).to.equal(undefined);
        expect(addTask(task)).to.equal(undefined);
        expect(actor.getSnapshot().can({ type: 'REMOVE_TASK', executionAttemptId: task.executionAttemptId })).to.equal(
          true,
        );
        actor.send({ type: 'CLOSE' });
        expect(actor.getSnapshot().value).to.equal('closing');
        expect(actor.getSnapshot().can({ type: 'REMOVE_TASK', executionAttemptId: task.executionAttemptId })).to.equal(
          true,
        );
      },
    );

    it('maps each task to its slot and refuses a task for an inactive or unknown slot', () => {
      const { actor, allocate, addTask, ctx, jobId } = startTable();
      actor.send({ type: 'START' });
      const id = allocate(0);
      const before = ctx();
      expect(addTask(fakeTask(jobId, id))).to.deep.equal({ reason: 'slot-allocated' }); // not active yet
      // an unknown slot
      expect(addTask(fakeTask(jobId, AllocationID.generate()))).to.deep.equal({ reason: 'slot-not-found' });
      expect(ctx()).to.equal(before);
      actor.send({ type: 'MARK_SLOT_ACTIVE', allocationId: id });
      const task = fakeTask(jobId, id);
      addTask(task);
      expect(slotOfTask(ctx(), task.executionAttemptId)).to.equal(ctx().slots[0]);
      expect(ctx().slots[0]!.getSnapshot().context.tasks.ids()).to.deep.equal([task.executionAttemptId]);
    });
  });

  describe('slot timeouts', () => {
    it('passes a slot timeout on as an emitted notice with the slot ticket', () => {
      const { actor, allocate, clock, emitted } = startTable();
      actor.send({ type: 'START' });
      const id = allocate(0);
      clock.increment(10_000);
      expect(emitted).to.deep.equal([{ type: 'slotTimedOut', allocationId: id, ticket: '1.1' }]);
    });

    it('gives every slot its own ticket space, so a re-allocated AllocationID never reuses a ticket', () => {
      const { actor, allocate, clock, emitted } = startTable();
      actor.send({ type: 'START' });
      const id = allocate(0);
      actor.send({ type: 'FREE_SLOT', allocationId: id });
      allocate(0, id);
      clock.increment(10_000);
      expect(emitted.filter((e) => e.type === 'slotTimedOut')).to.deep.equal([
        { type: 'slotTimedOut', allocationId: id, ticket: '2.1' },
      ]);
    });
  });
});
