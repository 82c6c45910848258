/**
 * Property-based test of the TaskSlotTable ledger: random sequences of table operations — valid and
 * not (wrong job, unknown IDs, inactive slots, profiles that do not fit), time passing and the
 * microtask queue draining — and after every single step the ledger's invariants must hold:
 *
 *   (a) the live slots' profiles add up to no more than the total, and to exactly total − available;
 *   (b) no index holds two slots, and every static index is either free or holds one;
 *   (c) no AllocationID names two slots, and lookups by AllocationID agree with the slot list;
 *   (d) every task is in exactly one slot, and getSlotOfTask / getTask agree;
 *   (e) a refused call (a SlotwiseError) left describe() exactly as it was; nothing else is thrown;
 *   (f) the slot report has one entry per static slot and one per live dynamic slot.
 *
 * At the end of each run the table is closed, its remaining tasks removed, and it must reach
 * `closed` with every resource back. fast-check prints the seed and the shrunk sequence on failure.
 */
import { AssertionError, expect } from 'chai';
import fc from 'fast-check';
import { SlotwiseError } from '../../lib/core/errors.js';
import { ResourceID } from '../../lib/core/ids.js';
import { TaskSlotTable } from '../../lib/taskexecutor/TaskSlotTable.js';
import {
  AllocationID,
  ExecutionAttemptID,
  JobID,
  ResourceProfile,
  SimulatedClock,
  fakeTask,
  flushMicrotasks,
  profile,
  recordingSlotActions,
} from '../support/fixtures.js';

// ------------------------------------------------------------------------------ pools

const NUMBER_SLOTS = 3;
/** Three default slots of 1 core, 100 mb heap, 64 mb managed memory. */
const TOTAL = profile(3, 300, 192);
const JOBS = ['J0', 'J1', 'J2'] as const;
const ALLOCATIONS = ['A0', 'A1', 'A2', 'A3', 'A4', 'A5'] as const;
const ATTEMPTS = ['T0', 'T1', 'T2', 'T3', 'T4', 'T5', 'T6', 'T7'] as const;
const PROFILES = {
  UNKNOWN: ResourceProfile.UNKNOWN,
  default: profile(1, 100, 64),
  half: profile(0.5, 50, 32),
  double: profile(2, 200, 128),
  tooManyCores: profile(4, 10, 0),
  gpu: profile(0.5, 10, 0, { gpu: 1 }),
} as const;
type ProfileName = keyof typeof PROFILES;

/** IDs are drawn once per file: a sequence is a list of labels, so fast-check prints it readably. */
const ids = {
  job: Object.fromEntries(JOBS.map((l) => [l, JobID.generate()])) as Record<(typeof JOBS)[number], JobID>,
  allocation: Object.fromEntries(ALLOCATIONS.map((l) => [l, AllocationID.generate()])) as Record<
    (typeof ALLOCATIONS)[number],
    AllocationID
  >,
  attempt: Object.fromEntries(ATTEMPTS.map((l) => [l, ExecutionAttemptID.generate()])) as Record<
    (typeof ATTEMPTS)[number],
    ExecutionAttemptID
  >,
};

// ------------------------------------------------------------------------------ operations

type Op =
  | {
      op: 'allocate';
      index: number;
      job: (typeof JOBS)[number];
      allocation: (typeof ALLOCATIONS)[number];
      profile: ProfileName;
    }
  | { op: 'markActive' | 'markInactive' | 'free'; allocation: (typeof ALLOCATIONS)[number] }
  /** `job: 'owner'` offers the task for the job that holds the allocation (when one does). */
  | {
      op: 'addTask';
      attempt: (typeof ATTEMPTS)[number];
      allocation: (typeof ALLOCATIONS)[number];
      job: (typeof JOBS)[number] | 'owner';
    }
  | { op: 'removeTask'; attempt: (typeof ATTEMPTS)[number] }
  | { op: 'tick'; ms: number }
  | { op: 'flush' }
  /** What a TaskExecutor does with slot timeouts: free each reported slot whose ticket is still valid. */
  | { op: 'expireTimedOut' }
  | { op: 'close' };

/** Half the AllocationIDs come up three times as often, so operations meet the slots they name. */
const allocation = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom('A0', 'A1', 'A2') },
  { weight: 1, arbitrary: fc.constantFrom('A3', 'A4', 'A5') },
);
const opArbitrary: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 20,
    arbitrary: fc.record({
      op: fc.constant('allocate' as const),
      index: fc.integer({ min: -1, max: 3 }),
      job: fc.constantFrom(...JOBS),
      allocation,
      profile: fc.constantFrom(...(Object.keys(PROFILES) as ProfileName[])),
    }),
  },
  { weight: 16, arbitrary: fc.record({ op: fc.constant('markActive' as const), allocation }) },
  { weight: 3, arbitrary: fc.record({ op: fc.constant('markInactive' as const), allocation }) },
  { weight: 8, arbitrary: fc.record({ op: fc.constant('free' as const), allocation }) },
  {
    weight: 24,
    arbitrary: fc.record({
      op: fc.constant('addTask' as const),
      attempt: fc.constantFrom(...ATTEMPTS),
      allocation,
      job: fc.constantFrom('owner' as const, 'owner' as const, 'owner' as const, ...JOBS),
    }),
  },
  {
    weight: 12,
    arbitrary: fc.record({ op: fc.constant('removeTask' as const), attempt: fc.constantFrom(...ATTEMPTS) }),
  },
  {
    weight: 4,
    arbitrary: fc.record({ op: fc.constant('tick' as const), ms: fc.constantFrom(1_000, 10_000, 180_000) }),
  },
  { weight: 6, arbitrary: fc.record({ op: fc.constant('flush' as const) }) },
  { weight: 3, arbitrary: fc.record({ op: fc.constant('expireTimedOut' as const) }) },
  // Rare: after a close every operation but freeSlot / removeTask is refused, and the run learns little more.
  { weight: 1, arbitrary: fc.record({ op: fc.constant('close' as const) }) },
);

function newTable() {
  const clock = new SimulatedClock();
  const slotActions = recordingSlotActions();
  const table = new TaskSlotTable({
    totalResourceProfile: TOTAL,
    numberSlots: NUMBER_SLOTS,
    clock,
    slotActions,
    pageSize: 64 * 1024,
    slotTimeout: 10_000,
    releaseTimeout: 180_000,
  });
  table.start();
  return { table, clock, slotActions };
}

type Fixture = ReturnType<typeof newTable>;

/** Applies one operation; a promise only when the operation waits (awaiting otherwise would drain microtasks). */
function apply({ table, clock, slotActions }: Fixture, op: Op): Promise<void> | undefined {
  switch (op.op) {
    case 'allocate':
      table.allocateSlot({
        index: op.index,
        jobId: ids.job[op.job],
        allocationId: ids.allocation[op.allocation],
        resourceProfile: PROFILES[op.profile],
      });
      return;
    case 'markActive':
      table.markSlotActive(ids.allocation[op.allocation]);
      return;
    case 'markInactive':
      table.markSlotInactive(ids.allocation[op.allocation]);
      return;
    case 'free':
      table.freeSlot(ids.allocation[op.allocation]).closed.catch(() => {});
      return;
    case 'addTask': {
      const allocationId = ids.allocation[op.allocation];
      const jobId = op.job === 'owner' ? (table.getOwningJob(allocationId) ?? ids.job.J0) : ids.job[op.job];
      table.addTask(fakeTask(jobId, allocationId, ids.attempt[op.attempt]));
      return;
    }
    case 'removeTask':
      table.removeTask(ids.attempt[op.attempt]);
      return;
    case 'tick':
      clock.increment(op.ms);
      return;
    case 'flush':
      return flushMicrotasks();
    case 'expireTimedOut': {
      const reported = slotActions.calls.filter(([name]) => name === 'timeoutSlot') as Array<
        [string, AllocationID, string]
      >;
      slotActions.calls.length = 0;
      for (const [, allocationId, ticket] of reported) {
        if (table.isValidTimeout(allocationId, ticket)) table.freeSlot(allocationId).closed.catch(() => {});
      }
      return;
    }
    case 'close':
      table.closeAsync().catch(() => {});
      return;
  }
}

// ------------------------------------------------------------------------------ invariants

const RESOURCE_ID = ResourceID.parse('taskexecutor-property');

/** A plain check: chai's expect costs ~5 µs a call, and this runs ~60 checks after each of ~6 k steps. */
function holds(what: string, actual: unknown, expected: unknown): void {
  const [a, e] = [JSON.stringify(actual), JSON.stringify(expected)];
  if (a !== e) throw new AssertionError(`${what}: expected ${e}, got ${a}`, { actual, expected, showDiff: true });
}

function checkInvariants(table: TaskSlotTable): void {
  const slots = table.getTaskSlots();

  // (a) resources: what the live slots hold is what the budget lacks, and never more than the total.
  const held = slots.reduce((sum, slot) => sum.merge(slot.resourceProfile), ResourceProfile.ZERO);
  holds(
    `(a) the slots' ${held} fit in the total ${table.totalResourceProfile}`,
    table.totalResourceProfile.allFieldsNoLessThan(held),
    true,
  );
  holds(
    '(a) total − available = the sum of the live slots',
    table.totalResourceProfile.subtract(table.availableResources).toString(),
    held.toString(),
  );

  // (b) indexes: one slot per index; statics are free exactly when no slot holds them.
  const indexes = slots.map((slot) => slot.index);
  holds(`(b) one slot per index (${indexes})`, new Set(indexes).size, indexes.length);
  holds(
    `(b) indexes are non-negative integers (${indexes})`,
    indexes.every((index) => Number.isSafeInteger(index) && index >= 0),
    true,
  );
  for (let index = 0; index < NUMBER_SLOTS; index++)
    holds(`(b) isSlotFree(${index})`, table.isSlotFree(index), !indexes.includes(index));

  // (c) allocations: one slot per AllocationID, and every lookup by AllocationID agrees.
  const allocationIds = slots.map((slot) => slot.allocationId);
  holds('(c) one slot per AllocationID', new Set(allocationIds).size, allocationIds.length);
  for (const [label, allocationId] of Object.entries(ids.allocation)) {
    const slot = slots.find((s) => s.allocationId === allocationId);
    holds(`(c) getTaskSlot(${label})`, table.getTaskSlot(allocationId)?.index, slot?.index);
    holds(`(c) getOwningJob(${label})`, table.getOwningJob(allocationId), slot?.jobId);
  }
  for (const [label, jobId] of Object.entries(ids.job)) {
    const owned = slots.filter((s) => s.jobId === jobId).map((s) => s.allocationId);
    holds(`(c) getAllocationIdsPerJob(${label})`, [...table.getAllocationIdsPerJob(jobId)].sort(), owned.sort());
    holds(`(c) hasAllocatedSlots(${label})`, table.hasAllocatedSlots(jobId), owned.length > 0);
    const active = slots.filter((s) => s.jobId === jobId && s.state === 'active').map((s) => s.allocationId);
    holds(`(c) getActiveSlots(${label})`, [...table.getActiveSlots(jobId)].sort(), active.sort());
    const tasks = slots.filter((s) => s.jobId === jobId).flatMap((s) => s.tasks);
    holds(
      `(d) getTasks(${label})`,
      table
        .getTasks(jobId)
        .map((t) => t.executionAttemptId)
        .sort(),
      tasks.sort(),
    );
  }

  // (d) tasks: each in exactly one slot, of that slot's job, and the task index agrees.
  const placed = slots.flatMap((slot) => slot.tasks.map((task) => [task, slot] as const));
  holds('(d) every task in one slot only', new Set(placed.map(([task]) => task)).size, placed.length);
  for (const [label, attempt] of Object.entries(ids.attempt)) {
    const home = placed.find(([task]) => task === attempt)?.[1];
    holds(`(d) getSlotOfTask(${label})`, table.getSlotOfTask(attempt), home?.allocationId);
    holds(`(d) getTask(${label})`, table.getTask(attempt)?.executionAttemptId, home && attempt);
    holds(`(d) task ${label} runs for its slot's job`, table.getTask(attempt)?.jobId, home?.jobId);
  }

  // (f) the slot report: every static slot, plus one entry per live dynamic slot.
  const report = table.createSlotReport(RESOURCE_ID);
  const dynamic = slots.filter((slot) => slot.index >= NUMBER_SLOTS);
  holds('(f) report size', report.slots.length, NUMBER_SLOTS + dynamic.length);
  report.slots.slice(0, NUMBER_SLOTS).forEach((status, index) => {
    holds(`(f) static slot ${index}: number`, status.slotId.slotNumber, index);
    holds(
      `(f) static slot ${index}: allocation`,
      status.allocationId,
      slots.find((s) => s.index === index)?.allocationId ?? null,
    );
  });
  holds(
    '(f) dynamic slots',
    report.slots
      .slice(NUMBER_SLOTS)
      .map((s) => s.allocationId)
      .sort(),
    dynamic.map((s) => s.allocationId).sort(),
  );
}

/** Runs one sequence, checking the invariants after every step, then closes the table down. */
async function run(ops: readonly Op[]): Promise<void> {
  const fixture = newTable();
  const { table } = fixture;
  for (const [step, op] of ops.entries()) {
    const before = JSON.stringify(table.describe());
    try {
      const waiting = apply(fixture, op);
      if (waiting !== undefined) await waiting;
    } catch (error) {
      // (e) a refusal is a SlotwiseError and changes nothing.
      if (!(error instanceof SlotwiseError)) throw error;
      expect(
        JSON.stringify(table.describe()),
        `(e) step ${step} ${JSON.stringify(op)} was refused (${error._tag}: ${error.message}) yet changed the table`,
      ).to.equal(before);
    }
    checkInvariants(table);
  }

  // Closing: every task fails, the TaskExecutor removes them, every slot closes, every resource returns.
  const closed = table.closeAsync();
  for (const slot of table.getTaskSlots()) for (const task of slot.tasks) table.removeTask(task);
  await flushMicrotasks();
  checkInvariants(table);
  expect(table.state, 'closed once every task is gone').to.equal('closed');
  expect(table.getTaskSlots()).to.deep.equal([]);
  expect(table.availableResources.equals(table.totalResourceProfile), 'every resource returned').to.equal(true);
  await closed;
}

describe('TaskSlotTable, property-based', () => {
  it('keeps its ledger consistent through any sequence of operations, refusing without changing anything', async () => {
    await fc.assert(fc.asyncProperty(fc.array(opArbitrary, { minLength: 1, maxLength: 60, size: 'max' }), run), {
      numRuns: 200,
      seed: 0x5107,
    });
  });
});
