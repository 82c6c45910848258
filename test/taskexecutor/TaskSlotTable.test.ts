import { expect } from 'chai';
import {
  DuplicateTaskError,
  IllegalArgumentError,
  IllegalStateError,
  SlotAllocationError,
  SlotNotActiveError,
  SlotNotFoundError,
  SlotOwnerMismatchError,
  TaskNotFoundError,
  type SlotwiseError,
} from '../../lib/core/errors.js';
import { ResourceID, SlotID } from '../../lib/core/ids.js';
import { TaskSlotTable } from '../../lib/taskexecutor/TaskSlotTable.js';
import {
  AllocationID,
  ExecutionAttemptID,
  JobID,
  ResourceProfile,
  fakeTask,
  flushMicrotasks,
  profile,
  startedTable,
} from '../support/fixtures.js';

/** Runs `call`, expects it to throw `type` with `reason`, and checks the table did not change. */
function expectRefusal(
  table: TaskSlotTable,
  call: () => unknown,
  type: new (...args: never[]) => SlotwiseError,
  reason?: string,
  message?: RegExp,
) {
  const before = JSON.stringify(table.describe());
  let error: unknown;
  try {
    call();
  } catch (e) {
    error = e;
  }
  expect(error, 'the call should have been refused').to.be.instanceOf(type);
  if (reason !== undefined) expect((error as SlotwiseError).reason).to.equal(reason);
  if (message !== undefined) expect((error as Error).message).to.match(message);
  expect(JSON.stringify(table.describe())).to.equal(before);
  return error as SlotwiseError;
}

describe('TaskSlotTable', () => {
  describe('construction', () => {
    it('derives the default slot profile by dividing the total among the static slots', () => {
      const table = new TaskSlotTable({ totalResourceProfile: profile(3, 300, 0, { gpu: 3 }), numberSlots: 3 });
      expect(table.defaultSlotResourceProfile.equals(profile(1, 100, 0, { gpu: 1 }))).to.equal(true);
      expect(table.state).to.equal('created');
    });

    it(
      'rounds the default slot down, so that every static ' + 'slot fits: 2 cores over 3, 1 core over 6, 2 gpu over 3',
      () => {
        for (const [total, slots, expected] of [
          [profile(2), 3, profile(0.66666666)],
          [profile(1), 6, profile(0.16666666)],
          [profile(3, 0, 0, { gpu: 2 }), 3, profile(1, 0, 0, { gpu: 0.66666666 })],
        ] as const) {
          const { table } = startedTable({ totalResourceProfile: total, numberSlots: slots });
          expect(
            table.defaultSlotResourceProfile.equals(expected),
            table.defaultSlotResourceProfile.toString(),
          ).to.equal(true);
          const jobId = JobID.generate();
          for (let index = 0; index < slots; index++) {
            expect(
              table.allocateSlot({
                index,
                jobId,
                allocationId: AllocationID.generate(),
                resourceProfile: ResourceProfile.UNKNOWN,
              }),
              `static slot ${index} of ${slots}`,
            ).to.equal(true);
          }
          expect(table.describe().slots).to.have.length(slots);
        }
      },
    );

    it('refuses an UNKNOWN total, a negative slot count, a zero timeout and a bad page size', () => {
      expect(() => new TaskSlotTable({ totalResourceProfile: ResourceProfile.UNKNOWN })).to.throw(
        IllegalArgumentError,
        /totalResourceProfile/,
      );
      expect(() => new TaskSlotTable({ totalResourceProfile: profile(1), numberSlots: -1 })).to.throw(
        IllegalArgumentError,
        /numberSlots/,
      );
      expect(() => new TaskSlotTable({ totalResourceProfile: profile(1), slotTimeout: 0 })).to.throw(
        IllegalArgumentError,
        /slotTimeout/,
      );
      expect(() => new TaskSlotTable({ totalResourceProfile: profile(1), pageSize: 1000 })).to.throw(
        IllegalArgumentError,
        /pageSize|power of two/,
      );
    });

    it('accepts timeouts written with units', () => {
      const table = new TaskSlotTable({ totalResourceProfile: profile(1), slotTimeout: '2 s' });
      expect(table.slotTimeout).to.equal(2000);
    });
  });

  describe('state', () => {
    it(
      'refuses slot operations before start and after close ' + 'with IllegalStateError naming the allowed states',
      async () => {
        const table = new TaskSlotTable({ totalResourceProfile: profile(1), numberSlots: 1 });
        const request = {
          index: 0,
          jobId: JobID.generate(),
          allocationId: AllocationID.generate(),
          resourceProfile: ResourceProfile.UNKNOWN,
        };
        const error = expectRefusal(
          table,
          () => table.allocateSlot(request),
          IllegalStateError,
          'wrong-state',
          /allocateSlot is not allowed while the table is created \(allowed: running\)/,
        );
        expect(error.details).to.include({ state: 'created' });
        table.start();
        expectRefusal(table, () => table.start(), IllegalStateError);
        await table.closeAsync();
        expect(table.state).to.equal('closed');
        expectRefusal(table, () => table.allocateSlot(request), IllegalStateError);
        expectRefusal(table, () => table.addTask(fakeTask(request.jobId, request.allocationId)), IllegalStateError);
      },
    );
  });

  describe('allocateSlot', () => {
    it('allocates a static slot with the default profile for UNKNOWN', () => {
      const { table, jobId } = startedTable();
      const allocationId = AllocationID.generate();
      expect(table.allocateSlot({ index: 1, jobId, allocationId, resourceProfile: ResourceProfile.UNKNOWN })).to.equal(
        true,
      );
      const slot = table.getTaskSlot(allocationId)!;
      expect(slot).to.include({ index: 1, jobId, allocationId, state: 'allocated' });
      expect(slot.resourceProfile.equals(table.defaultSlotResourceProfile)).to.equal(true);
      expect(slot.memoryManager.totalPages).to.equal(64 * 16); // 64 mb of 64 kb pages
      expect(table.isAllocated(1, jobId, allocationId)).to.equal(true);
      expect(table.isSlotFree(0)).to.equal(true);
    });

    it('gives a negative index the next free dynamic index', () => {
      const { table, jobId } = startedTable({ numberSlots: 2 });
      const ids = [AllocationID.generate(), AllocationID.generate()];
      for (const allocationId of ids)
        table.allocateSlot({ index: -1, jobId, allocationId, resourceProfile: profile(0.5, 10) });
      expect(ids.map((id) => table.getTaskSlot(id)!.index)).to.deep.equal([2, 3]);
    });

    it('accepts an identical repeat (returns false) and changes nothing', () => {
      const { table, jobId } = startedTable();
      const request = {
        index: 0,
        jobId,
        allocationId: AllocationID.generate(),
        resourceProfile: ResourceProfile.UNKNOWN,
      };
      table.allocateSlot(request);
      const before = JSON.stringify(table.describe());
      expect(table.allocateSlot(request)).to.equal(false);
      expect(table.allocateSlot({ ...request, resourceProfile: table.defaultSlotResourceProfile })).to.equal(false);
      expect(JSON.stringify(table.describe())).to.equal(before);
    });

    it('accepts a repeated dynamic request for the same allocation wherever it landed', () => {
      const { table, jobId } = startedTable();
      const request = { index: -1, jobId, allocationId: AllocationID.generate(), resourceProfile: profile(0.5, 10) };
      table.allocateSlot(request);
      expect(table.allocateSlot(request)).to.equal(false);
    });

    it('refuses a taken index', () => {
      const { table, jobId } = startedTable();
      const holder = AllocationID.generate();
      table.allocateSlot({ index: 0, jobId, allocationId: holder, resourceProfile: ResourceProfile.UNKNOWN });
      const error = expectRefusal(
        table,
        () =>
          table.allocateSlot({
            index: 0,
            jobId,
            allocationId: AllocationID.generate(),
            resourceProfile: ResourceProfile.UNKNOWN,
          }),
        SlotAllocationError,
        'index-taken',
        /slot index 0 is already held/,
      );
      expect(error.details).to.include({ holder });
    });

    it('refuses an AllocationID repeated with another job, profile or index', () => {
      const { table, jobId } = startedTable();
      const allocationId = AllocationID.generate();
      table.allocateSlot({ index: 0, jobId, allocationId, resourceProfile: ResourceProfile.UNKNOWN });
      for (const request of [
        { index: 0, jobId: JobID.generate(), allocationId, resourceProfile: ResourceProfile.UNKNOWN },
        { index: 0, jobId, allocationId, resourceProfile: profile(0.5, 10) },
        { index: 1, jobId, allocationId, resourceProfile: ResourceProfile.UNKNOWN },
      ]) {
        expectRefusal(
          table,
          () => table.allocateSlot(request),
          SlotAllocationError,
          'allocation-conflict',
          /a repeat must name the same job, profile and index/,
        );
      }
    });

    it('refuses an index beyond the static slots, telling how to get a dynamic one', () => {
      const { table, jobId } = startedTable({ numberSlots: 2 });
      expectRefusal(
        table,
        () =>
          table.allocateSlot({
            index: 2,
            jobId,
            allocationId: AllocationID.generate(),
            resourceProfile: ResourceProfile.UNKNOWN,
          }),
        SlotAllocationError,
        'index-out-of-range',
        /2 static slots .*negative index/,
      );
    });

    it('refuses a profile the remaining budget cannot cover, naming the short dimension', () => {
      const { table, jobId } = startedTable({ numberSlots: 2 });
      table.allocateSlot({
        index: -1,
        jobId,
        allocationId: AllocationID.generate(),
        resourceProfile: profile(1.5, 10),
      });
      expectRefusal(
        table,
        () =>
          table.allocateSlot({
            index: 0,
            jobId,
            allocationId: AllocationID.generate(),
            resourceProfile: ResourceProfile.UNKNOWN,
          }),
        SlotAllocationError,
        'insufficient-resources',
        /cpuCores available 0\.5, required 1/,
      );
    });

    it('refuses malformed requests with IllegalArgumentError naming the argument', () => {
      const { table, jobId } = startedTable();
      const good = { index: 0, jobId, allocationId: AllocationID.generate(), resourceProfile: ResourceProfile.UNKNOWN };
      expectRefusal(table, () => table.allocateSlot({ ...good, index: 0.5 }), IllegalArgumentError, undefined, /index/);
      expectRefusal(
        table,
        () => table.allocateSlot({ ...good, jobId: 'job-1' as JobID }),
        IllegalArgumentError,
        undefined,
        /jobId/,
      );
      expectRefusal(
        table,
        () => table.allocateSlot({ ...good, allocationId: 7 as unknown as AllocationID }),
        IllegalArgumentError,
        undefined,
        /allocationId/,
      );
      expectRefusal(
        table,
        () => table.allocateSlot({ ...good, resourceProfile: { cpuCores: 1 } as unknown as ResourceProfile }),
        IllegalArgumentError,
        undefined,
        /resourceProfile/,
      );
      expectRefusal(
        table,
        () => table.allocateSlot({ ...good, resourceProfile: ResourceProfile.ANY }),
        IllegalArgumentError,
        undefined,
        /ANY/,
      );
      expectRefusal(
        table,
        () => table.allocateSlot({ ...good, slotTimeout: -5 }),
        IllegalArgumentError,
        undefined,
        /slotTimeout/,
      );
    });
  });

  describe('activation and slot timeouts', () => {
    it(
      'reports a slot left allocated past its timeout, with ' + 'a ticket that stays valid until something changes',
      async () => {
        const { table, clock, slotActions, jobId } = startedTable({ slotTimeout: '10 s' });
        const allocationId = AllocationID.generate();
        table.allocateSlot({ index: 0, jobId, allocationId, resourceProfile: ResourceProfile.UNKNOWN });
        clock.increment(9_999);
        await flushMicrotasks();
        expect(slotActions.calls).to.deep.equal([]);
        clock.increment(1);
        await flushMicrotasks();
        expect(slotActions.calls).to.have.length(1);
        const [, reported, ticket] = slotActions.calls[0] as [string, AllocationID, string];
        expect(reported).to.equal(allocationId);
        expect(table.isValidTimeout(allocationId, ticket)).to.equal(true);
        // The slot is not freed by the table itself: that is the TaskExecutor's decision.
        expect(table.getTaskSlot(allocationId)!.state).to.equal('allocated');
      },
    );

    it('activation cancels the timeout, and a report delivered before the activation becomes stale', async () => {
      const { table, clock, slotActions, jobId } = startedTable({ slotTimeout: 1000 });
      const allocationId = AllocationID.generate();
      table.allocateSlot({ index: 0, jobId, allocationId, resourceProfile: ResourceProfile.UNKNOWN });
      clock.increment(1000);
      await flushMicrotasks();
      const ticket = slotActions.calls[0]![2] as string;
      expect(table.markSlotActive(allocationId)).to.equal(true);
      expect(table.isValidTimeout(allocationId, ticket)).to.equal(false);
      clock.increment(60_000);
      await flushMicrotasks();
      expect(slotActions.calls).to.have.length(1);
    });

    it('deactivation starts the timeout again, and the old ticket stays stale after that re-registration', async () => {
      const { table, clock, slotActions, jobId } = startedTable({ slotTimeout: 1000 });
      const allocationId = AllocationID.generate();
      table.allocateSlot({ index: 0, jobId, allocationId, resourceProfile: ResourceProfile.UNKNOWN });
      clock.increment(1000);
      await flushMicrotasks();
      const staleTicket = slotActions.calls[0]![2] as string;
      table.markSlotActive(allocationId);
      expect(table.markSlotInactive(allocationId, 500)).to.equal(true);
      expect(table.getTaskSlot(allocationId)!.state).to.equal('allocated');
      expect(table.isValidTimeout(allocationId, staleTicket)).to.equal(false);
      clock.increment(500);
      await flushMicrotasks();
      const freshTicket = slotActions.calls[1]![2] as string;
      expect(freshTicket).to.not.equal(staleTicket);
      expect(table.isValidTimeout(allocationId, freshTicket)).to.equal(true);
    });

    it('ignores a stale ticket after the AllocationID was freed and allocated again', async () => {
      const { table, clock, slotActions, jobId } = startedTable({ slotTimeout: 1000 });
      const allocationId = AllocationID.generate();
      const request = { index: 0, jobId, allocationId, resourceProfile: ResourceProfile.UNKNOWN };
      table.allocateSlot(request);
      clock.increment(1000);
      await flushMicrotasks();
      const staleTicket = slotActions.calls[0]![2] as string;
      table.freeSlot(allocationId);
      table.allocateSlot(request);
      expect(table.isValidTimeout(allocationId, staleTicket)).to.equal(false);
    });

    it('marks a slot active with one event, straight to the slot, and an active one again with none', () => {
      const events: string[] = [];
      const { table, jobId } = startedTable({
        inspect: (e) => void (e.type === '@xstate.event' && events.push((e as { event: { type: string } }).event.type)),
      });
      const allocationId = AllocationID.generate();
      table.allocateSlot({ index: 0, jobId, allocationId, resourceProfile: ResourceProfile.UNKNOWN });
      expect(table.markSlotActive(allocationId)).to.equal(true);
      // The table would only forward it: the slot hears it from the table's owner (a TaskExecutor does so per job).
      expect(events.filter((type) => type === 'MARK_SLOT_ACTIVE' || type === 'MARK_ACTIVE')).to.deep.equal([
        'MARK_ACTIVE',
      ]);
      events.length = 0;
      expect(table.markSlotActive(allocationId)).to.equal(true);
      expect(table.markSlotActive(allocationId)).to.equal(true);
      expect(events).to.deep.equal([]);
      expect(table.getTaskSlot(allocationId)!.state).to.equal('active');
    });

    it('refuses to activate or deactivate a slot it does not have', () => {
      const { table } = startedTable();
      expectRefusal(
        table,
        () => table.markSlotActive(AllocationID.generate()),
        SlotNotFoundError,
        'unknown-allocation',
      );
      expectRefusal(table, () => table.markSlotInactive(AllocationID.generate()), SlotNotFoundError);
      expectRefusal(table, () => table.markSlotActive('nope' as AllocationID), IllegalArgumentError);
    });

    it('cannot activate a releasing slot (returns false, nothing changes)', () => {
      const { table, jobId } = startedTable();
      const allocationId = AllocationID.generate();
      table.allocateSlot({ index: 0, jobId, allocationId, resourceProfile: ResourceProfile.UNKNOWN });
      table.markSlotActive(allocationId);
      table.addTask(fakeTask(jobId, allocationId));
      table.freeSlot(allocationId);
      expect(table.markSlotActive(allocationId)).to.equal(false);
      expect(table.markSlotInactive(allocationId)).to.equal(false);
      expect(table.getTaskSlot(allocationId)!.state).to.equal('releasing');
    });
  });

  describe('tasks', () => {
    function activeSlot() {
      const fixture = startedTable();
      const allocationId = AllocationID.generate();
      fixture.table.allocateSlot({
        index: 0,
        jobId: fixture.jobId,
        allocationId,
        resourceProfile: ResourceProfile.UNKNOWN,
      });
      fixture.table.markSlotActive(allocationId);
      return { ...fixture, allocationId };
    }

    it('adds tasks to an active slot and finds them by attempt, by job and by slot', () => {
      const { table, jobId, allocationId } = activeSlot();
      const a = fakeTask(jobId, allocationId);
      const b = fakeTask(jobId, allocationId);
      table.addTask(a);
      table.addTask(b);
      expect(table.getTask(a.executionAttemptId)).to.equal(a);
      expect(table.getSlotOfTask(b.executionAttemptId)).to.equal(allocationId);
      expect(table.getTasks(jobId)).to.have.members([a, b]);
      expect(table.getAllocationIdsPerJob(jobId)).to.deep.equal([allocationId]);
      expect(table.getActiveSlots(jobId)).to.deep.equal([allocationId]);
      expect(table.getOwningJob(allocationId)).to.equal(jobId);
      expect(table.hasAllocatedSlots(jobId)).to.equal(true);
      expect(table.getTasks(JobID.generate())).to.deep.equal([]);
    });

    it(
      'refuses a task for an unknown slot, an inactive slot, ' +
        'another job, or a repeated attempt — each with its own error',
      () => {
        const { table, jobId, allocationId } = activeSlot();
        const first = fakeTask(jobId, allocationId);
        table.addTask(first);
        const inactive = AllocationID.generate();
        table.allocateSlot({ index: 1, jobId, allocationId: inactive, resourceProfile: ResourceProfile.UNKNOWN });
        expectRefusal(
          table,
          () => table.addTask(fakeTask(jobId, AllocationID.generate())),
          SlotNotFoundError,
          'unknown-allocation',
          /no slot with allocation/,
        );
        expectRefusal(
          table,
          () => table.addTask(fakeTask(jobId, inactive)),
          SlotNotActiveError,
          'slot-allocated',
          /mark it active first/,
        );
        expectRefusal(
          table,
          () => table.addTask(fakeTask(JobID.generate(), allocationId)),
          SlotOwnerMismatchError,
          'job-mismatch',
          /belongs to job/,
        );
        expectRefusal(
          table,
          () => table.addTask(fakeTask(jobId, allocationId, first.executionAttemptId)),
          DuplicateTaskError,
          'duplicate-execution-attempt',
        );
        table.markSlotActive(inactive);
        expectRefusal(
          table,
          () => table.addTask(fakeTask(jobId, inactive, first.executionAttemptId)),
          DuplicateTaskError,
          undefined,
          /already in this table/,
        );
      },
    );

    it('refuses a task once its slot is releasing', () => {
      const { table, jobId, allocationId } = activeSlot();
      table.addTask(fakeTask(jobId, allocationId));
      table.freeSlot(allocationId);
      expectRefusal(table, () => table.addTask(fakeTask(jobId, allocationId)), SlotNotActiveError, 'slot-releasing');
    });

    it('refuses a malformed task payload', () => {
      const { table, jobId, allocationId } = activeSlot();
      const task = fakeTask(jobId, allocationId);
      expectRefusal(
        table,
        () => table.addTask({ ...task, executionAttemptId: 'x' as ExecutionAttemptID }),
        IllegalArgumentError,
        undefined,
        /executionAttemptId/,
      );
      expectRefusal(
        table,
        () => table.addTask({ ...task, failExternally: undefined as never }),
        IllegalArgumentError,
        undefined,
        /failExternally/,
      );
    });

    it(
      'sends an added or removed task to its slot alone, ' + 'and through the table only when the slot is releasing',
      () => {
        const events: Array<[string, string]> = [];
        const { table, jobId } = startedTable({
          inspect: (e) => {
            if (e.type === '@xstate.event' && /TASK/.test(e.event.type))
              events.push([e.actorRef === table.actor ? 'table' : 'slot', e.event.type]);
          },
        });
        const allocationId = AllocationID.generate();
        table.allocateSlot({ index: 0, jobId, allocationId, resourceProfile: ResourceProfile.UNKNOWN });
        table.markSlotActive(allocationId);
        const a = fakeTask(jobId, allocationId);
        const b = fakeTask(jobId, allocationId);
        table.addTask(a);
        table.addTask(b);
        table.removeTask(a.executionAttemptId);
        expect(events).to.deep.equal([
          ['slot', 'ADD_TASK'],
          ['slot', 'ADD_TASK'],
          ['slot', 'REMOVE_TASK'],
        ]);
        events.length = 0;
        table.freeSlot(allocationId);
        table.removeTask(b.executionAttemptId);
        // The table decides whether the slot leaves with its last task: here it does.
        expect(events).to.deep.equal([
          ['table', 'REMOVE_TASK'],
          ['slot', 'REMOVE_TASK'],
        ]);
        expect(table.getTaskSlot(allocationId)).to.equal(undefined);
        expect(table.isSlotFree(0)).to.equal(true);
      },
    );

    it(
      'addTasks adds what addTask would add one by one, with one event ' +
        'per slot, and gives each refusal its own error while the rest go in',
      () => {
        const events: Array<[string, string, number]> = [];
        const { table, jobId } = startedTable({
          numberSlots: 3,
          inspect: (e) => {
            if (e.type === '@xstate.event' && /TASK/.test(e.event.type)) {
              const event = e.event as { type: string; tasks?: unknown[]; executionAttemptIds?: unknown[] };
              events.push([
                e.actorRef === table.actor ? 'table' : 'slot',
                event.type,
                (event.tasks ?? event.executionAttemptIds ?? [1]).length,
              ]);
            }
          },
        });
        const [s0, s1, inactive] = [AllocationID.generate(), AllocationID.generate(), AllocationID.generate()];
        table.allocateSlot({ index: 0, jobId, allocationId: s0, resourceProfile: ResourceProfile.UNKNOWN });
        table.allocateSlot({ index: 1, jobId, allocationId: s1, resourceProfile: ResourceProfile.UNKNOWN });
        table.allocateSlot({ index: 2, jobId, allocationId: inactive, resourceProfile: ResourceProfile.UNKNOWN });
        table.markSlotActive(s0);
        table.markSlotActive(s1);
        const earlier = fakeTask(jobId, s1);
        table.addTask(earlier);
        events.length = 0;
        const [a, b, c] = [fakeTask(jobId, s0), fakeTask(jobId, s0), fakeTask(jobId, s1)];
        const tasks = [
          a,
          fakeTask(jobId, inactive),
          b,
          fakeTask(jobId, s0, a.executionAttemptId), // the same attempt as one before it in this call
          fakeTask(jobId, s0, earlier.executionAttemptId), // already in another slot
          { ...fakeTask(jobId, s0), executionAttemptId: 'x' as ExecutionAttemptID },
          c,
        ];
        // checkTasks answers as addTasks will, and adds nothing.
        const checked = table.checkTasks(tasks).map((e) => e?.constructor.name);
        expect(events).to.deep.equal([]);
        expect(table.getTasks(jobId)).to.deep.equal([earlier]);
        const errors = table.addTasks(tasks);
        expect(errors.map((e) => e?.constructor.name)).to.deep.equal(checked);
        expect(errors.map((e) => e?.constructor.name)).to.deep.equal([
          undefined,
          'SlotNotActiveError',
          undefined,
          'DuplicateTaskError',
          'DuplicateTaskError',
          'IllegalArgumentError',
          undefined,
        ]);
        expect(table.getTasks(jobId)).to.have.members([earlier, a, b, c]);
        expect(events).to.deep.equal([
          ['slot', 'ADD_TASKS', 2],
          ['slot', 'ADD_TASK', 1],
        ]);
        events.length = 0;
        // Removals: one event per slot; an unknown ID and a repeat are skipped.
        expect(
          table.removeTasksIfPresent([
            a.executionAttemptId,
            c.executionAttemptId,
            b.executionAttemptId,
            ExecutionAttemptID.generate(),
            a.executionAttemptId,
          ]),
        ).to.deep.equal([a, c, b, undefined, undefined]);
        expect(events).to.deep.equal([
          ['slot', 'REMOVE_TASKS', 2],
          ['slot', 'REMOVE_TASK', 1],
        ]);
        expect(table.getTasks(jobId)).to.deep.equal([earlier]);
        expect(() => table.addTasks('nope' as never)).to.throw(IllegalArgumentError, /tasks must be an array/);
        expect(() => table.checkTasks('nope' as never)).to.throw(IllegalArgumentError, /tasks must be an array/);
      },
    );

    it(
      'removeTasksIfPresent lets a releasing slot leave ' + 'with its last task, as removing them one by one would',
      async () => {
        const { table, jobId, allocationId } = activeSlot();
        const [a, b] = [fakeTask(jobId, allocationId), fakeTask(jobId, allocationId)];
        expect(table.addTasks([a, b])).to.deep.equal([undefined, undefined]);
        table.freeSlot(allocationId);
        expect(a.failed).to.have.length(1);
        expect(table.getTaskSlot(allocationId)?.state).to.equal('releasing');
        expect(table.removeTasksIfPresent([a.executionAttemptId, b.executionAttemptId])).to.deep.equal([a, b]);
        expect(table.getTaskSlot(allocationId)).to.equal(undefined);
        expect(table.isSlotFree(0)).to.equal(true);
        await table.closeAsync();
        expect(table.removeTasksIfPresent([a.executionAttemptId])).to.deep.equal([undefined]);
      },
    );

    it('removes a task and returns it; an unknown attempt is refused', () => {
      const { table, jobId, allocationId } = activeSlot();
      const task = fakeTask(jobId, allocationId);
      table.addTask(task);
      expect(table.removeTask(task.executionAttemptId)).to.equal(task);
      expect(table.getTask(task.executionAttemptId)).to.equal(undefined);
      expectRefusal(
        table,
        () => table.removeTask(task.executionAttemptId),
        TaskNotFoundError,
        'unknown-execution-attempt',
      );
    });

    it(
      'removeTaskIfPresent removes a task it holds and ' + 'ignores one it does not, also once the table is closed',
      async () => {
        const { table, jobId, allocationId } = activeSlot();
        const task = fakeTask(jobId, allocationId);
        table.addTask(task);
        expect(table.removeTaskIfPresent(task.executionAttemptId)).to.equal(task);
        expect(table.getTask(task.executionAttemptId)).to.equal(undefined);
        expect(table.removeTaskIfPresent(task.executionAttemptId)).to.equal(undefined);
        await table.closeAsync();
        expect(table.removeTaskIfPresent(task.executionAttemptId)).to.equal(undefined);
      },
    );
  });

  describe('freeSlot', () => {
    it('frees an empty slot at once: its index is free and its resources return', async () => {
      const { table, slotActions, jobId } = startedTable();
      const allocationId = AllocationID.generate();
      table.allocateSlot({ index: 0, jobId, allocationId, resourceProfile: ResourceProfile.UNKNOWN });
      const result = table.freeSlot(allocationId);
      expect(result).to.include({ index: 0, state: 'freed' });
      expect(table.isSlotFree(0)).to.equal(true);
      expect(table.availableResources.equals(table.totalResourceProfile)).to.equal(true);
      const output = await result.closed;
      expect(output).to.deep.include({ index: 0, allocationId, jobId });
      expect(output.leaks.leakedPages).to.equal(0);
      await flushMicrotasks();
      expect(slotActions.calls.map((c) => c[0])).to.deep.equal(['slotFreed', 'slotClosed']);
      expectRefusal(table, () => table.freeSlot(allocationId), SlotNotFoundError);
    });

    it('moves a slot with tasks to releasing, fails its tasks, and lets it leave with the last task', async () => {
      const { table, slotActions, jobId } = startedTable();
      const allocationId = AllocationID.generate();
      table.allocateSlot({ index: 0, jobId, allocationId, resourceProfile: ResourceProfile.UNKNOWN });
      table.markSlotActive(allocationId);
      const task = fakeTask(jobId, allocationId);
      table.addTask(task);
      const first = table.freeSlot(allocationId, 'job canceled');
      const second = table.freeSlot(allocationId, 'again');
      expect(first).to.include({ state: 'releasing' });
      expect(second.closed).to.equal(first.closed);
      expect(task.failed).to.deep.equal(['job canceled']);
      expect(table.isSlotFree(0)).to.equal(false);
      table.removeTask(task.executionAttemptId);
      expect(table.isSlotFree(0)).to.equal(true);
      expect(table.hasAllocatedSlots(jobId)).to.equal(false);
      await first.closed;
      await flushMicrotasks();
      expect(slotActions.calls.map((c) => c[0])).to.deep.equal(['slotFreed', 'slotClosed']);
    });

    it('reports the pages a task never gave back when its slot closes', async () => {
      const { table, jobId } = startedTable();
      const allocationId = AllocationID.generate();
      table.allocateSlot({ index: 0, jobId, allocationId, resourceProfile: ResourceProfile.UNKNOWN });
      table.markSlotActive(allocationId);
      const task = fakeTask(jobId, allocationId);
      table.addTask(task);
      table.getTaskMemoryManager(allocationId).allocatePages(task.executionAttemptId, 2);
      const { closed } = table.freeSlot(allocationId);
      table.removeTask(task.executionAttemptId);
      expect((await closed).leaks).to.deep.equal({
        leakedPages: 2,
        leakedBytes: 2 * 64 * 1024,
        owners: [{ owner: task.executionAttemptId, pages: 2 }],
      });
    });

    it('reports tasks that do not terminate within the release timeout', async () => {
      const { table, clock, slotActions, jobId } = startedTable({ releaseTimeout: '3 min' });
      const allocationId = AllocationID.generate();
      table.allocateSlot({ index: 0, jobId, allocationId, resourceProfile: ResourceProfile.UNKNOWN });
      table.markSlotActive(allocationId);
      const task = fakeTask(jobId, allocationId);
      table.addTask(task);
      table.freeSlot(allocationId);
      clock.increment(180_000);
      await flushMicrotasks();
      expect(slotActions.calls).to.deep.include(['releaseTimedOut', allocationId, [task.executionAttemptId]]);
    });
  });

  describe('slot report', () => {
    it('lists every static slot (free ones with the default profile) and every live dynamic slot', () => {
      const { table, jobId } = startedTable({ numberSlots: 3 });
      const resourceId = ResourceID.parse('taskexecutor-test');
      const staticId = AllocationID.generate();
      const dynamicId = AllocationID.generate();
      table.allocateSlot({ index: 1, jobId, allocationId: staticId, resourceProfile: ResourceProfile.UNKNOWN });
      table.allocateSlot({ index: -1, jobId, allocationId: dynamicId, resourceProfile: profile(0.5, 10) });
      table.markSlotActive(dynamicId);
      const report = table.createSlotReport(resourceId);
      expect(report.resourceId).to.equal(resourceId);
      expect(report.slots.map((s) => [SlotID.toString(s.slotId), s.state, s.allocationId, s.jobId])).to.deep.equal([
        ['taskexecutor-test/0', 'free', null, null],
        ['taskexecutor-test/1', 'allocated', staticId, jobId],
        ['taskexecutor-test/2', 'free', null, null],
        ['taskexecutor-test/3', 'active', dynamicId, jobId],
      ]);
      expect(report.slots[0]!.resourceProfile.equals(table.defaultSlotResourceProfile)).to.equal(true);
      expect(report.slots[3]!.resourceProfile.equals(profile(0.5, 10))).to.equal(true);
    });
  });

  describe('closeAsync', () => {
    it('frees every slot, fails running tasks, and completes when all have closed', async () => {
      const { table, jobId } = startedTable({ numberSlots: 2 });
      const idle = AllocationID.generate();
      const busy = AllocationID.generate();
      table.allocateSlot({ index: 0, jobId, allocationId: idle, resourceProfile: ResourceProfile.UNKNOWN });
      table.allocateSlot({ index: 1, jobId, allocationId: busy, resourceProfile: ResourceProfile.UNKNOWN });
      table.markSlotActive(busy);
      const task = fakeTask(jobId, busy);
      table.addTask(task);
      let done = false;
      const closing = table.closeAsync('TaskExecutor shutting down');
      expect(table.closeAsync()).to.equal(closing);
      void closing.then(() => (done = true));
      expect(table.state).to.equal('closing');
      expect(task.failed).to.deep.equal(['TaskExecutor shutting down']);
      await flushMicrotasks();
      expect(done).to.equal(false);
      table.removeTask(task.executionAttemptId);
      await closing;
      expect(table.state).to.equal('closed');
      expect(table.getTaskSlots()).to.deep.equal([]);
      expect(table.availableResources.equals(table.totalResourceProfile)).to.equal(true);
    });
  });
});
