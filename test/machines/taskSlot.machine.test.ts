import { expect } from 'chai';
import { createActor } from 'xstate';
import { SimulatedClock } from '../../lib/core/clock.js';
import { AllocationID, ExecutionAttemptID, JobID } from '../../lib/core/ids.js';
import { MemoryManager } from '../../lib/taskexecutor/MemoryManager.js';
import {
  addTaskRefusal,
  addTasksRefusal,
  currentTicket,
  taskSlotMachine,
  type TaskSlotNotification,
} from '../../machines/taskSlot.machine.js';
import { fakeTask, profile } from '../support/fixtures.js';

/** A standalone TaskSlot actor: its parent notifications are captured instead of sent. */
function startSlot(options: { slotTimeout?: number; releaseTimeout?: number; managedBytes?: number } = {}) {
  const clock = new SimulatedClock();
  const notifications: TaskSlotNotification[] = [];
  const jobId = JobID.generate();
  const allocationId = AllocationID.generate();
  const memoryManager = MemoryManager.create(options.managedBytes ?? 4 * 64 * 1024, 64 * 1024);
  const machine = taskSlotMachine.provide({
    actions: {
      notifySlotTimedOut: ({ context }) =>
        notifications.push({
          type: 'SLOT_TIMED_OUT',
          allocationId: context.allocationId,
          ticket: currentTicket(context),
        }),
      notifyReleaseTimedOut: ({ context }) =>
        notifications.push({
          type: 'SLOT_RELEASE_TIMED_OUT',
          allocationId: context.allocationId,
          executionAttemptIds: context.tasks.ids() as never,
        }),
    },
  });
  const actor = createActor(machine, {
    clock,
    input: {
      index: 0,
      resourceProfile: profile(1, 100, 1),
      jobId,
      allocationId,
      memoryManager,
      slotTimeout: options.slotTimeout ?? 10_000,
      releaseTimeout: options.releaseTimeout ?? 180_000,
      ticketPrefix: 's.',
    },
  }).start();
  return { actor, clock, notifications, jobId, allocationId, memoryManager };
}

describe('taskSlot machine', () => {
  describe('allocated', () => {
    it('starts allocated, holding its index, profile, job, allocation and memory manager', () => {
      const { actor, jobId, allocationId, memoryManager } = startSlot();
      const { value, context } = actor.getSnapshot();
      expect(value).to.equal('allocated');
      expect(context).to.include({ index: 0, jobId, allocationId, memoryManager });
      expect(context.resourceProfile.equals(profile(1, 100, 1))).to.equal(true);
      expect(context.tasks.toJSON()).to.deep.equal({});
    });

    it('reports a timeout with its ticket when not activated within the slot timeout', () => {
      const { actor, clock, notifications, allocationId } = startSlot({ slotTimeout: 10_000 });
      clock.increment(9_999);
      expect(notifications).to.have.length(0);
      clock.increment(1);
      expect(notifications).to.deep.equal([{ type: 'SLOT_TIMED_OUT', allocationId, ticket: 's.1' }]);
      expect(actor.getSnapshot().value).to.equal('allocated');
    });

    it('refuses tasks: only an active slot takes tasks', () => {
      const { actor, jobId, allocationId } = startSlot();
      const task = fakeTask(jobId, allocationId);
      expect(actor.getSnapshot().can({ type: 'ADD_TASK', task })).to.equal(false);
      actor.send({ type: 'ADD_TASK', task });
      expect(actor.getSnapshot().context.tasks.toJSON()).to.deep.equal({});
      expect(addTaskRefusal('allocated', actor.getSnapshot().context, task)).to.deep.equal({
        reason: 'slot-allocated',
      });
    });

    it('marked inactive again, re-registers the timeout with a new ticket (Flink)', () => {
      const { actor, clock, notifications } = startSlot({ slotTimeout: 10_000 });
      clock.increment(6_000);
      actor.send({ type: 'MARK_INACTIVE', slotTimeout: 5_000 });
      expect(actor.getSnapshot().value).to.equal('allocated');
      expect(currentTicket(actor.getSnapshot().context)).to.equal('s.2');
      clock.increment(4_999);
      expect(notifications).to.have.length(0);
      clock.increment(1);
      expect(notifications.map((n) => (n as { ticket: string }).ticket)).to.deep.equal(['s.2']);
    });
  });

  describe('active', () => {
    it('activation cancels the slot timeout', () => {
      const { actor, clock, notifications } = startSlot({ slotTimeout: 10_000 });
      actor.send({ type: 'MARK_ACTIVE' });
      expect(actor.getSnapshot().value).to.equal('active');
      clock.increment(60_000);
      expect(notifications).to.have.length(0);
    });

    it('marking an active slot active again is accepted and changes nothing', () => {
      const { actor } = startSlot();
      actor.send({ type: 'MARK_ACTIVE' });
      const before = actor.getSnapshot();
      actor.send({ type: 'MARK_ACTIVE' });
      expect(actor.getSnapshot().value).to.equal('active');
      expect(actor.getSnapshot().context).to.deep.equal(before.context);
    });

    it('adds tasks of its own job and allocation, keyed by ExecutionAttemptID', () => {
      const { actor, jobId, allocationId } = startSlot();
      actor.send({ type: 'MARK_ACTIVE' });
      const a = fakeTask(jobId, allocationId);
      const b = fakeTask(jobId, allocationId);
      actor.send({ type: 'ADD_TASK', task: a });
      actor.send({ type: 'ADD_TASK', task: b });
      expect(actor.getSnapshot().context.tasks.ids()).to.have.members([a.executionAttemptId, b.executionAttemptId]);
    });

    it(
      'refuses a task of another job, another allocation, or ' +
        'a repeated attempt, each for its own reason, unchanged',
      () => {
        const { actor, jobId, allocationId } = startSlot();
        actor.send({ type: 'MARK_ACTIVE' });
        const first = fakeTask(jobId, allocationId);
        actor.send({ type: 'ADD_TASK', task: first });
        const otherJob = JobID.generate();
        const otherAllocation = AllocationID.generate();
        const cases = [
          [fakeTask(otherJob, allocationId), { reason: 'job-mismatch', expected: jobId, actual: otherJob }],
          [
            fakeTask(jobId, otherAllocation),
            { reason: 'allocation-mismatch', expected: allocationId, actual: otherAllocation },
          ],
          [fakeTask(jobId, allocationId, first.executionAttemptId), { reason: 'duplicate-execution-attempt' }],
        ] as const;
        for (const [task, refusal] of cases) {
          const before = actor.getSnapshot().context;
          expect(addTaskRefusal('active', before, task)).to.deep.equal(refusal);
          actor.send({ type: 'ADD_TASK', task });
          expect(actor.getSnapshot().context).to.equal(before);
        }
        expect(actor.getSnapshot().context.tasks.get(first.executionAttemptId)).to.equal(first);
      },
    );

    it(
      'adds several tasks in one event, or none of them when ' + 'any would be refused (the first refusal says which)',
      () => {
        const { actor, jobId, allocationId } = startSlot();
        actor.send({ type: 'ADD_TASKS', tasks: [fakeTask(jobId, allocationId)] });
        expect(actor.getSnapshot().context.tasks.size).to.equal(0); // allocated, not active
        actor.send({ type: 'MARK_ACTIVE' });
        const [a, b] = [fakeTask(jobId, allocationId), fakeTask(jobId, allocationId)];
        const twice = [
          a,
          fakeTask(JobID.generate(), allocationId),
          fakeTask(jobId, allocationId, a.executionAttemptId),
        ];
        expect(addTasksRefusal('active', actor.getSnapshot().context, twice)).to.deep.include({ index: 1 });
        const before = actor.getSnapshot().context;
        actor.send({ type: 'ADD_TASKS', tasks: twice });
        expect(actor.getSnapshot().context).to.equal(before);
        expect(
          addTasksRefusal('active', before, [a, fakeTask(jobId, allocationId, a.executionAttemptId)]),
        ).to.deep.equal({ index: 1, refusal: { reason: 'duplicate-execution-attempt' } });
        actor.send({ type: 'ADD_TASKS', tasks: [a, b] });
        expect(actor.getSnapshot().context.tasks.ids()).to.have.members([a.executionAttemptId, b.executionAttemptId]);
        // Removals in one event skip what the slot does not hold.
        actor.send({
          type: 'REMOVE_TASKS',
          executionAttemptIds: [ExecutionAttemptID.generate(), a.executionAttemptId],
        });
        expect(actor.getSnapshot().context.tasks.ids()).to.deep.equal([b.executionAttemptId]);
        expect(actor.getSnapshot().can({ type: 'REMOVE_TASKS', executionAttemptIds: [a.executionAttemptId] })).to.equal(
          false,
        );
      },
    );

    it('marked inactive goes back to allocated, keeps its tasks, and its timeout runs again', () => {
      const { actor, clock, notifications, jobId, allocationId } = startSlot({ slotTimeout: 1_000 });
      actor.send({ type: 'MARK_ACTIVE' });
      actor.send({ type: 'ADD_TASK', task: fakeTask(jobId, allocationId) });
      actor.send({ type: 'MARK_INACTIVE' });
      expect(actor.getSnapshot().value).to.equal('allocated');
      expect(actor.getSnapshot().context.tasks.ids()).to.have.length(1);
      clock.increment(1_000);
      expect(notifications).to.have.length(1);
    });

    it('removes a task it holds and ignores one it does not', () => {
      const { actor, jobId, allocationId } = startSlot();
      actor.send({ type: 'MARK_ACTIVE' });
      const task = fakeTask(jobId, allocationId);
      actor.send({ type: 'ADD_TASK', task });
      expect(
        actor.getSnapshot().can({ type: 'REMOVE_TASK', executionAttemptId: ExecutionAttemptID.generate() }),
      ).to.equal(false);
      actor.send({ type: 'REMOVE_TASK', executionAttemptId: task.executionAttemptId });
      expect(actor.getSnapshot().context.tasks.toJSON()).to.deep.equal({});
    });
  });

  describe('releasing', () => {
    it('closing an empty slot shuts its memory down at once and ends with the leak report', () => {
      const { actor, memoryManager } = startSlot();
      actor.send({ type: 'CLOSE', cause: 'job finished' });
      // As Flink's TaskSlot.closeAsync without tasks: done in the same call, no release timeout armed.
      expect(actor.getSnapshot().status).to.equal('done');
      expect(actor.getSnapshot().output?.leaks).to.deep.equal({ leakedPages: 0, leakedBytes: 0, owners: [] });
      expect(memoryManager.isShutdown).to.equal(true);
    });

    it('fails every task it holds with the cause, then waits for them to be removed', () => {
      const { actor, jobId, allocationId, memoryManager } = startSlot();
      actor.send({ type: 'MARK_ACTIVE' });
      const a = fakeTask(jobId, allocationId);
      const b = fakeTask(jobId, allocationId);
      actor.send({ type: 'ADD_TASK', task: a });
      actor.send({ type: 'ADD_TASK', task: b });
      actor.send({ type: 'CLOSE', cause: 'lost the JobMaster' });
      expect(a.failed).to.deep.equal(['lost the JobMaster']);
      expect(b.failed).to.deep.equal(['lost the JobMaster']);
      expect(actor.getSnapshot().value).to.equal('releasing');
      actor.send({ type: 'REMOVE_TASK', executionAttemptId: a.executionAttemptId });
      expect(actor.getSnapshot().value).to.equal('releasing');
      expect(memoryManager.isShutdown).to.equal(false);
      actor.send({ type: 'REMOVE_TASK', executionAttemptId: b.executionAttemptId });
      expect(actor.getSnapshot().status).to.equal('done');
      expect(memoryManager.isShutdown).to.equal(true);
    });

    it('reports the managed memory its tasks never released', () => {
      const { actor, memoryManager, jobId, allocationId } = startSlot({ managedBytes: 4 * 64 * 1024 });
      actor.send({ type: 'MARK_ACTIVE' });
      const task = fakeTask(jobId, allocationId);
      actor.send({ type: 'ADD_TASK', task });
      memoryManager.allocatePages(task.executionAttemptId, 3);
      actor.send({ type: 'CLOSE' });
      actor.send({ type: 'REMOVE_TASK', executionAttemptId: task.executionAttemptId });
      expect(actor.getSnapshot().output?.leaks).to.deep.equal({
        leakedPages: 3,
        leakedBytes: 3 * 64 * 1024,
        owners: [{ owner: task.executionAttemptId, pages: 3 }],
      });
    });

    it('refuses new tasks and activation, and treats a second CLOSE as the same close', () => {
      const { actor, jobId, allocationId } = startSlot();
      actor.send({ type: 'MARK_ACTIVE' });
      const task = fakeTask(jobId, allocationId);
      actor.send({ type: 'ADD_TASK', task });
      actor.send({ type: 'CLOSE', cause: 'first' });
      const before = actor.getSnapshot();
      expect(before.can({ type: 'ADD_TASK', task: fakeTask(jobId, allocationId) })).to.equal(false);
      expect(before.can({ type: 'MARK_ACTIVE' })).to.equal(false);
      expect(before.can({ type: 'MARK_INACTIVE' })).to.equal(false);
      actor.send({ type: 'CLOSE', cause: 'second' });
      expect(task.failed).to.deep.equal(['first']);
      expect(actor.getSnapshot().context.closeCause).to.equal('first');
    });

    it('reports tasks still running after the release timeout, and keeps waiting for them', () => {
      const { actor, clock, notifications, jobId, allocationId } = startSlot({ releaseTimeout: 180_000 });
      actor.send({ type: 'MARK_ACTIVE' });
      const task = fakeTask(jobId, allocationId);
      actor.send({ type: 'ADD_TASK', task });
      actor.send({ type: 'CLOSE' });
      clock.increment(180_000);
      expect(notifications).to.deep.equal([
        { type: 'SLOT_RELEASE_TIMED_OUT', allocationId, executionAttemptIds: [task.executionAttemptId] },
      ]);
      expect(actor.getSnapshot().value).to.equal('releasing');
    });

    it('still ends when the memory manager fails to shut down, and says why', () => {
      const { actor } = startSlot();
      const failing = createActor(taskSlotMachine, {
        input: {
          ...actor.getSnapshot().context,
          memoryManager: {
            shutdown: () => {
              throw new Error('pages still mapped');
            },
          },
        },
      }).start();
      failing.send({ type: 'CLOSE' });
      expect(failing.getSnapshot().status).to.equal('done');
      expect(failing.getSnapshot().output?.shutdownError).to.equal('pages still mapped');
    });
  });
});
