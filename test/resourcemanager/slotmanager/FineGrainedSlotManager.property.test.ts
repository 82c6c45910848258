/**
 * Property-based test of the FineGrainedSlotManager: random sequences of what its neighbours do —
 * TaskExecutors register (some taking a pending worker's place), report their slots (truthfully,
 * or after freeing or gaining an allocation on their own), answer slot requests (acknowledge,
 * refuse, or answer late or never), get lost; jobs declare and clear requirements, free slots,
 * request and cancel slots imperatively; time passes — and after every step:
 *
 *   (a) no AllocationID is held by two slot records, nor by two executors; a static index holds at
 *       most one; records, the AllocationID lookup and the occupied count agree; right after an
 *       executor's report, the records of it match the report (allocation and static index);
 *   (b) the index agrees with the records: for several profiles findTaskManager / candidatesFor
 *       equal a brute-force answer under the cluster's policy; every executor's used / available /
 *       utilisation / idleSince follow from its records; no reservation is left open; the allocator
 *       and the tracker agree on the pending workers;
 *   (c) per executor free + pending + allocated static slots = its static slots, and across the
 *       cluster pending + allocated = numberOfOccupiedSlots;
 *   (d) per job the declarative slot records are exactly what the ResourceTracker counts as
 *       acquired (per profile); the job holds nothing beyond its requirement except what it held
 *       before a decrease or what a slot report showed (see `checkJobs`); pending workers carry no
 *       more of its slots than it misses;
 *   (e) a job that declares nothing gains no new declarative slot (only adopted ones); every
 *       imperative slot record is one the job asked for under that AllocationID; (e') a waiting
 *       slot request's AllocationID is held by no record.
 *
 * Each executor is a tiny double with its own slot table (what it acknowledged), so the reports it
 * sends are true: a late acknowledgement shows up in the next report, and a taken index is refused.
 * The first property lets the SlotManager plan workers (a recording allocator; the test decides
 * when a worker registers); the second runs a fixed cluster. Policy and limits vary per run.
 * It found two bugs, since fixed: a late acknowledgement of an imperative request adopted as a
 * declarative slot while the request still waited (then planned twice under one AllocationID), and
 * an allocation reported in a static slot whose record was pending for another request recorded as
 * a dynamic slot (leaving the static slot looking free while the executor held it).
 */
import { AssertionError } from 'chai';
import fc from 'fast-check';
import { SimulatedClock } from '../../../lib/core/clock.js';
import { AllocationID, JobID, ResourceID, SlotID } from '../../../lib/core/ids.js';
import { resolveOptions, type SlotwiseOptions } from '../../../lib/core/options.js';
import { ResourceProfile } from '../../../lib/core/ResourceProfile.js';
import type { SlotReport, SlotStatus } from '../../../lib/core/SlotReport.js';
import { FineGrainedSlotManager } from '../../../lib/resourcemanager/slotmanager/FineGrainedSlotManager.js';
import type { TaskManagerRegistrationRequest } from '../../../lib/resourcemanager/slotmanager/SlotManagerOptions.js';
import type { PendingTaskManagerID } from '../../../lib/resourcemanager/slotmanager/PendingTaskManager.js';
import type { ResourceAllocator } from '../../../lib/resourcemanager/slotmanager/ResourceAllocator.js';
import { ResourceRequirements } from '../../../lib/resourcemanager/slotmanager/ResourceRequirement.js';
import type { SlotMatchingPolicy } from '../../../lib/resourcemanager/slotmanager/SlotMatchingStrategy.js';
import type { ResourceSlotRecord } from '../../../lib/resourcemanager/slotmanager/TaskManagerRegistration.js';
import { WorkerResourceSpec } from '../../../lib/resourcemanager/slotmanager/WorkerResourceSpec.js';
import type { SlotRequest, TaskExecutorSlotGateway } from '../../../lib/rpc/TaskExecutorSlotGateway.js';

// ------------------------------------------------------------------------------ the cluster

const CONFIGURATION = {
  'taskmanager.numberOfTaskSlots': 2,
  'taskmanager.cpu.cores': 2,
  'taskmanager.memory.task.heap.size': '64m',
  'taskmanager.memory.task.off-heap.size': 0,
  'taskmanager.memory.managed.size': '32m',
  'taskmanager.memory.network.size': '16m',
  'slotmanager.requirement-check.delay': 0,
} as const satisfies SlotwiseOptions;

/** 2 cores, 64 mb heap, 32 mb managed, 16 mb network, in 2 slots. */
const WORKER = WorkerResourceSpec.fromOptions(resolveOptions(CONFIGURATION));
const build = (cpu: number, heap: number, managed: number, network: number) =>
  ResourceProfile.newBuilder()
    .setCpuCores(cpu)
    .setTaskHeapMemoryMB(heap)
    .setManagedMemoryMB(managed)
    .setNetworkMemoryMB(network)
    .build();

const PROFILES = {
  UNKNOWN: ResourceProfile.UNKNOWN,
  default: WORKER.defaultSlotResourceProfile,
  small: build(0.5, 16, 8, 4),
} as const;
type ProfileName = keyof typeof PROFILES;

interface Shape {
  readonly total: ResourceProfile;
  readonly defaultSlot: ResourceProfile;
  readonly slots: number;
}
const SHAPES = {
  /** What the allocator starts: it may take a pending worker's place. */
  worker: { total: WORKER.totalResourceProfile, defaultSlot: WORKER.defaultSlotResourceProfile, slots: 2 },
  /** Two default slots plus room for one more default-sized dynamic slot. */
  wide: { total: build(3, 96, 48, 24), defaultSlot: WORKER.defaultSlotResourceProfile, slots: 2 },
  /** Default slots of another size: UNKNOWN means 1.5 cores here, a declared `default` is dynamic. */
  odd: { total: build(3, 96, 48, 24), defaultSlot: build(1.5, 48, 24, 12), slots: 2 },
} as const satisfies Record<string, Shape>;
type ShapeName = keyof typeof SHAPES;

/** The profiles the index is asked about after every step (the last one fits only an empty executor). */
const INDEX_PROBES = [
  PROFILES.UNKNOWN,
  PROFILES.default,
  PROFILES.small,
  SHAPES.odd.defaultSlot,
  WORKER.totalResourceProfile,
];

const JOBS = ['J0', 'J1', 'J2'] as const;
type JobName = (typeof JOBS)[number];
const REQUESTS = ['R0', 'R1', 'R2', 'R3'] as const;
type RequestName = (typeof REQUESTS)[number];
/** IDs are drawn once per file, so a sequence is a list of labels and fast-check prints it readably. */
const ids = {
  job: Object.fromEntries(JOBS.map((l) => [l, JobID.generate()])) as Record<JobName, JobID>,
  request: Object.fromEntries(REQUESTS.map((l) => [l, AllocationID.generate()])) as Record<RequestName, AllocationID>,
};
const jobLabel = (jobId: JobID | null) => JOBS.find((l) => ids.job[l] === jobId) ?? String(jobId);

// ------------------------------------------------------------------------------ operations

/** How an executor answers its n-th slot request (cycled): `silent` applies it but the answer is lost. */
type Answer = 'ack' | 'refuse' | 'hang' | 'silent';

type Op =
  | {
      op: 'register';
      shape: ShapeName;
      takeover: number | null;
      answers: Answer[];
      holding: { job: JobName; profile: 'default' | 'small' } | null;
    }
  | { op: 'reRegister'; tm: number }
  | { op: 'declare'; job: JobName; requirements: Array<[ProfileName, number]> }
  | { op: 'clear'; job: JobName }
  | { op: 'settle'; pick: number; answer: 'ack' | 'refuse' }
  | { op: 'tick'; ms: number }
  /** `drop`: the executor freed one of its allocations first; `add`: it holds one the SlotManager never asked for. */
  | {
      op: 'report';
      tm: number;
      variant: 'truthful' | 'drop' | 'add';
      pick: number;
      job: JobName;
      profile: 'default' | 'small';
    }
  | { op: 'lose'; tm: number }
  /** The workers the allocator was told to release stop and disconnect. */
  | { op: 'stopReleased' }
  | { op: 'freeSlot'; pick: number }
  | { op: 'requestSlot'; job: JobName; request: RequestName; profile: ProfileName; prefer: number | null }
  | { op: 'cancel'; request: RequestName };

const job = fc.constantFrom(...JOBS);
const pick = fc.nat({ max: 7 });
const opArbitrary: fc.Arbitrary<Op> = fc.oneof(
  {
    weight: 12,
    arbitrary: fc.record({
      op: fc.constant('register' as const),
      shape: fc.constantFrom<ShapeName>('worker', 'worker', 'wide', 'odd'),
      takeover: fc.option(pick, { nil: null }),
      answers: fc.array(fc.constantFrom<Answer>('ack', 'ack', 'ack', 'refuse', 'hang', 'silent'), {
        minLength: 1,
        maxLength: 4,
      }),
      holding: fc.option(fc.record({ job, profile: fc.constantFrom('default' as const, 'small' as const) }), {
        nil: null,
        freq: 6,
      }),
    }),
  },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('reRegister' as const), tm: pick }) },
  {
    weight: 14,
    arbitrary: fc.record({
      op: fc.constant('declare' as const),
      job,
      requirements: fc.array(
        fc.tuple(fc.constantFrom<ProfileName>('UNKNOWN', 'default', 'small'), fc.integer({ min: 0, max: 6 })),
        { minLength: 0, maxLength: 2 },
      ),
    }),
  },
  { weight: 3, arbitrary: fc.record({ op: fc.constant('clear' as const), job }) },
  {
    weight: 8,
    arbitrary: fc.record({
      op: fc.constant('settle' as const),
      pick,
      answer: fc.constantFrom('ack' as const, 'ack' as const, 'refuse' as const),
    }),
  },
  {
    weight: 6,
    arbitrary: fc.record({
      op: fc.constant('tick' as const),
      ms: fc.constantFrom(1_000, 5_000, 11_000, 11_000, 31_000, 301_000),
    }),
  },
  {
    weight: 10,
    arbitrary: fc.record({
      op: fc.constant('report' as const),
      tm: pick,
      variant: fc.constantFrom('truthful' as const, 'truthful' as const, 'drop' as const, 'add' as const),
      pick,
      job,
      profile: fc.constantFrom('default' as const, 'small' as const),
    }),
  },
  { weight: 3, arbitrary: fc.record({ op: fc.constant('lose' as const), tm: pick }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('stopReleased' as const) }) },
  { weight: 4, arbitrary: fc.record({ op: fc.constant('freeSlot' as const), pick }) },
  {
    weight: 4,
    arbitrary: fc.record({
      op: fc.constant('requestSlot' as const),
      job,
      request: fc.constantFrom(...REQUESTS),
      profile: fc.constantFrom<ProfileName>('UNKNOWN', 'default', 'small'),
      prefer: fc.option(pick, { nil: null }),
    }),
  },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('cancel' as const), request: fc.constantFrom(...REQUESTS) }) },
);

interface Setup {
  readonly policy: SlotMatchingPolicy;
  readonly redundant: number;
  readonly maxSlots: number;
}

// ------------------------------------------------------------------------------ the doubles

interface Held {
  readonly jobId: JobID;
  readonly profile: ResourceProfile;
  readonly slotNumber: number;
}

/** A slot request the executor has not answered yet (`applied`: it took the slot, the answer is what is missing). */
interface OpenCall {
  readonly executor: Executor;
  readonly request: SlotRequest;
  readonly applied: boolean;
  readonly resolve: () => void;
  readonly reject: (error: Error) => void;
}

/** A TaskExecutor reduced to its slot table: it takes a slot only if the index is free and the resources last. */
class Executor {
  readonly table = new Map<AllocationID, Held>();
  readonly info: TaskManagerRegistrationRequest;
  #calls = 0;
  #nextDynamic: number;

  constructor(
    readonly resourceId: ResourceID,
    readonly shape: Shape,
    private readonly answers: readonly Answer[],
    private readonly open: OpenCall[],
  ) {
    this.#nextDynamic = shape.slots;
    const gateway: TaskExecutorSlotGateway = {
      requestSlot: (request) => this.#requestSlot(request),
      // Every slot is inactive here (no tasks run), so the job's slots all go.
      freeInactiveSlots: async (jobId) => {
        for (const [allocationId, held] of this.table) if (held.jobId === jobId) this.table.delete(allocationId);
      },
    };
    this.info = {
      resourceId,
      host: 'localhost',
      totalResourceProfile: shape.total,
      defaultSlotResourceProfile: shape.defaultSlot,
      numberOfStaticSlots: shape.slots,
      gateway,
    };
  }

  /** What a TaskSlotTable accepts: an identical repeat, or a new AllocationID on a free index with enough resources. */
  apply(request: Pick<SlotRequest, 'index' | 'jobId' | 'allocationId' | 'resourceProfile'>): boolean {
    const existing = this.table.get(request.allocationId);
    if (existing !== undefined) {
      const sameSlot =
        request.index < 0 ? existing.slotNumber >= this.shape.slots : existing.slotNumber === request.index;
      return sameSlot && existing.jobId === request.jobId && existing.profile.equals(request.resourceProfile);
    }
    const used = [...this.table.values()].reduce((sum, h) => sum.merge(h.profile), ResourceProfile.ZERO);
    if (!this.shape.total.allFieldsNoLessThan(used.merge(request.resourceProfile))) return false;
    if (request.index >= this.shape.slots) return false;
    if (request.index >= 0 && [...this.table.values()].some((h) => h.slotNumber === request.index)) return false;
    const slotNumber = request.index >= 0 ? request.index : this.#nextDynamic++;
    this.table.set(request.allocationId, { jobId: request.jobId, profile: request.resourceProfile, slotNumber });
    return true;
  }

  freeStaticIndex(): number {
    for (let i = 0; i < this.shape.slots; i++) if (![...this.table.values()].some((h) => h.slotNumber === i)) return i;
    return -1;
  }

  /** The truth: every static slot (free ones with the default profile), then every dynamic slot. */
  report(): SlotReport {
    const slots: SlotStatus[] = [];
    const held = [...this.table].sort(([, a], [, b]) => a.slotNumber - b.slotNumber);
    for (let i = 0; i < this.shape.slots; i++) {
      const entry = held.find(([, h]) => h.slotNumber === i);
      slots.push(
        entry === undefined
          ? this.#status(i, this.shape.defaultSlot, null, null)
          : this.#status(i, entry[1].profile, entry[0], entry[1].jobId),
      );
    }
    for (const [allocationId, h] of held)
      if (h.slotNumber >= this.shape.slots) slots.push(this.#status(h.slotNumber, h.profile, allocationId, h.jobId));
    return { resourceId: this.resourceId, slots };
  }

  #status(
    slotNumber: number,
    resourceProfile: ResourceProfile,
    allocationId: AllocationID | null,
    jobId: JobID | null,
  ): SlotStatus {
    return {
      slotId: SlotID.of(this.resourceId, slotNumber),
      resourceProfile,
      allocationId,
      jobId,
      state: allocationId === null ? 'free' : 'allocated',
    };
  }

  #requestSlot(request: SlotRequest): Promise<void> {
    const answer = this.answers[this.#calls++ % this.answers.length]!;
    if (answer === 'ack')
      return this.apply(request)
        ? Promise.resolve()
        : Promise.reject(new Error(`${this.resourceId} cannot take ${request.allocationId} at index ${request.index}`));
    if (answer === 'refuse') return Promise.reject(new Error(`${this.resourceId} refuses`));
    return new Promise<void>((resolve, reject) =>
      this.open.push({ executor: this, request, applied: answer === 'silent' && this.apply(request), resolve, reject }),
    );
  }
}

/** Everything one run knows besides the SlotManager itself. */
interface World {
  readonly sm: FineGrainedSlotManager;
  readonly clock: SimulatedClock;
  readonly setup: Setup;
  /** Registered executors, in registration order. */
  readonly executors: Executor[];
  readonly open: OpenCall[];
  /** The allocator's view: workers asked for, not canceled and not yet replaced by a registration. */
  readonly pendingWorkers: PendingTaskManagerID[];
  readonly released: Set<ResourceID>;
  /** What each job declared last (profile key → count); a cleared job is absent. */
  readonly declared: Map<JobID, Map<string, number>>;
  /** AllocationID → the job that asked for it imperatively (the latest accepted request). */
  readonly requested: Map<AllocationID, JobID>;
  /** AllocationIDs shown in slot reports during the current step. */
  readonly reported: Set<AllocationID>;
  /** Executors that sent a slot report during the current step. */
  readonly reporters: Set<Executor>;
  /** What RPC continuations threw (they run on `execute`, outside any call the test made). */
  readonly asyncErrors: unknown[];
  /** Jobs whose requirements were declared or cleared during the current step. */
  readonly redeclared: Set<JobID>;
  nextExecutor: number;
}

function newWorld(setup: Setup, allocatorSupported: boolean): World {
  const clock = new SimulatedClock();
  const pendingWorkers: PendingTaskManagerID[] = [];
  const released = new Set<ResourceID>();
  const allocator: ResourceAllocator = {
    isSupported: allocatorSupported,
    allocateWorker: (id) => {
      pendingWorkers.push(id);
      return true;
    },
    cancelWorker: (id) => {
      const at = pendingWorkers.indexOf(id);
      if (at >= 0) pendingWorkers.splice(at, 1);
    },
    releaseWorker: (resourceId) => {
      released.add(resourceId);
    },
  };
  const asyncErrors: unknown[] = [];
  const sm = new FineGrainedSlotManager({
    configuration: {
      ...CONFIGURATION,
      'slotmanager.placement-policy': setup.policy,
      'slotmanager.redundant-taskmanager-num': setup.redundant,
      'slotmanager.number-of-slots.max': setup.maxSlots,
    },
    allocator,
    clock,
    // Synchronous: each operation settles before the model is compared; a throw is kept so its step fails.
    execute: (task) => {
      try {
        task();
      } catch (error) {
        asyncErrors.push(error);
      }
    },
  });
  sm.start();
  return {
    sm,
    clock,
    setup,
    asyncErrors,
    executors: [],
    open: [],
    pendingWorkers,
    released,
    declared: new Map(),
    requested: new Map(),
    reported: new Set(),
    reporters: new Set(),
    redeclared: new Set(),
    nextExecutor: 0,
  };
}

const at = <T>(list: readonly T[], i: number): T | undefined => (list.length === 0 ? undefined : list[i % list.length]);

function sendReport(world: World, executor: Executor): SlotReport {
  const report = executor.report();
  world.reporters.add(executor);
  for (const s of report.slots) if (s.allocationId !== null) world.reported.add(s.allocationId);
  return report;
}

function unregister(world: World, executor: Executor): void {
  world.sm.unregisterTaskManager(executor.resourceId, 'lost');
  world.executors.splice(world.executors.indexOf(executor), 1);
  world.released.delete(executor.resourceId);
}

function apply(world: World, op: Op): void {
  const { sm } = world;
  switch (op.op) {
    case 'register': {
      const executor = new Executor(
        ResourceID.parse(`tm-${world.nextExecutor++}`),
        SHAPES[op.shape],
        op.answers,
        world.open,
      );
      if (op.holding !== null) {
        const profile = PROFILES[op.holding.profile];
        executor.apply({
          index: profile.equals(executor.shape.defaultSlot) ? 0 : -1,
          jobId: ids.job[op.holding.job],
          allocationId: AllocationID.generate(),
          resourceProfile: profile,
        });
      }
      const pendingWorkerId = op.takeover === null ? undefined : at(world.pendingWorkers, op.takeover);
      const result = sm.registerTaskManager(
        { ...executor.info, ...(pendingWorkerId === undefined ? {} : { pendingWorkerId }) },
        sendReport(world, executor),
      );
      if (result.kind === 'registered') {
        world.executors.push(executor);
        if (result.replacedPendingWorker !== undefined)
          world.pendingWorkers.splice(world.pendingWorkers.indexOf(result.replacedPendingWorker), 1);
      }
      return;
    }
    case 'reRegister': {
      const executor = at(world.executors, op.tm);
      if (executor !== undefined)
        holds(
          `re-registering ${executor.resourceId} is ignored`,
          sm.registerTaskManager(executor.info, sendReport(world, executor)).kind,
          'ignored',
        );
      return;
    }
    case 'declare': {
      const requirements = op.requirements
        .filter(([, n]) => n > 0)
        .map(([p, n]) => ({ resourceProfile: PROFILES[p], numberOfRequiredSlots: n }));
      const declaration = ResourceRequirements.create(ids.job[op.job], `jobmaster-${op.job}`, requirements);
      world.declared.set(
        declaration.jobId,
        new Map(declaration.resourceRequirements.map((r) => [r.resourceProfile.key, r.numberOfRequiredSlots])),
      );
      world.redeclared.add(declaration.jobId);
      sm.declareResourceRequirements(declaration);
      return;
    }
    case 'clear':
      world.declared.delete(ids.job[op.job]);
      world.redeclared.add(ids.job[op.job]);
      sm.clearResourceRequirements(ids.job[op.job]);
      return;
    case 'settle': {
      const call = at(world.open, op.pick);
      if (call === undefined) return;
      world.open.splice(world.open.indexOf(call), 1);
      // An executor that took the slot acknowledges it whatever the plan says; one that cannot take it refuses.
      if (call.applied || (op.answer === 'ack' && call.executor.apply(call.request))) call.resolve();
      else call.reject(new Error(`${call.executor.resourceId} refuses late`));
      return;
    }
    case 'tick':
      world.clock.increment(op.ms);
      return;
    case 'report': {
      const executor = at(world.executors, op.tm);
      if (executor === undefined) return;
      if (op.variant === 'drop') {
        const dropped = at([...executor.table.keys()], op.pick);
        if (dropped !== undefined) executor.table.delete(dropped);
      } else if (op.variant === 'add') {
        const profile = PROFILES[op.profile];
        const index = profile.equals(executor.shape.defaultSlot) ? executor.freeStaticIndex() : -1;
        executor.apply({
          index,
          jobId: ids.job[op.job],
          allocationId: AllocationID.generate(),
          resourceProfile: profile,
        });
      }
      sm.reportSlotStatus(executor.resourceId, sendReport(world, executor));
      return;
    }
    case 'lose': {
      const executor = at(world.executors, op.tm);
      if (executor !== undefined) unregister(world, executor);
      return;
    }
    case 'stopReleased':
      for (const executor of world.executors.filter((e) => world.released.has(e.resourceId)))
        unregister(world, executor);
      return;
    case 'freeSlot': {
      const slot = at(recordsOf(world), op.pick);
      if (slot === undefined) return;
      // The executor freed it and says so (Flink: notifySlotAvailable).
      world.executors.find((e) => e.resourceId === slot.taskManager.resourceId)?.table.delete(slot.allocationId!);
      sm.freeSlot(slot.allocationId!);
      return;
    }
    case 'requestSlot': {
      const prefer = op.prefer === null ? undefined : at(world.executors, op.prefer);
      const allocationId = ids.request[op.request];
      if (
        sm.requestSlot(
          ids.job[op.job],
          allocationId,
          PROFILES[op.profile],
          prefer === undefined ? undefined : { resourceId: prefer.resourceId },
        ) === 'accepted'
      ) {
        world.requested.set(allocationId, ids.job[op.job]);
      }
      return;
    }
    case 'cancel':
      sm.cancelSlotRequest(ids.request[op.request]);
      return;
  }
}

// ------------------------------------------------------------------------------ invariants

/** A plain check (chai's expect is slow at this volume), naming what was wrong. */
function holds(what: string, actual: unknown, expected: unknown): void {
  const [a, e] = [JSON.stringify(actual), JSON.stringify(expected)];
  if (a !== e) throw new AssertionError(`${what}: expected ${e}, got ${a}`, { actual, expected, showDiff: true });
}

function recordsOf(world: World): ResourceSlotRecord[] {
  return [...world.sm.tracker.taskManagers].flatMap((tm) => world.sm.tracker.slotsOf(tm));
}

const sum = (profiles: Iterable<ResourceProfile>) => [...profiles].reduce((s, p) => s.merge(p), ResourceProfile.ZERO);
const count = (list: ReadonlyArray<{ numberOfRequiredSlots: number }>) =>
  list.reduce((n, r) => n + r.numberOfRequiredSlots, 0);
const byKey = (list: ReadonlyArray<{ resourceProfile: ResourceProfile; numberOfRequiredSlots: number }>) =>
  Object.fromEntries(
    list
      .map((r) => [r.resourceProfile.key, r.numberOfRequiredSlots])
      .sort(([a], [b]) => String(a).localeCompare(String(b))),
  );

/** total − used, field by field, never below zero (no extended resources in this test). */
function minus(total: ResourceProfile, used: ResourceProfile): ResourceProfile {
  return ResourceProfile.newBuilder()
    .setCpuCores(Math.max(0, Math.round((total.cpuCores - used.cpuCores) * 1e8) / 1e8))
    .setTaskHeapMemory(Math.max(0, total.taskHeapMemory - used.taskHeapMemory))
    .setTaskOffHeapMemory(Math.max(0, total.taskOffHeapMemory - used.taskOffHeapMemory))
    .setManagedMemory(Math.max(0, total.managedMemory - used.managedMemory))
    .setNetworkMemory(Math.max(0, total.networkMemory - used.networkMemory))
    .build();
}

const ORDER: Record<SlotMatchingPolicy, (a: { u: number; seq: number }, b: { u: number; seq: number }) => number> = {
  'first-fit': (a, b) => a.seq - b.seq,
  spread: (a, b) => a.u - b.u || a.seq - b.seq,
  pack: (a, b) => b.u - a.u || a.seq - b.seq,
};

interface JobView {
  readonly required: number;
  readonly missing: number;
  readonly acquired: number;
  /** Acquired beyond what fulfils a requirement: acquired − (required − missing). */
  readonly excess: number;
}

interface Snapshot {
  readonly records: ReadonlyMap<AllocationID, { readonly jobId: JobID; readonly tracked: boolean }>;
  readonly jobs: ReadonlyMap<JobID, JobView>;
}

function observe(world: World): Snapshot {
  const { resourceTracker } = world.sm;
  const records = new Map(recordsOf(world).map((s) => [s.allocationId!, { jobId: s.jobId!, tracked: s.tracked }]));
  const missing = resourceTracker.getMissingResources();
  const jobs = new Map<JobID, JobView>();
  for (const label of JOBS) {
    const jobId = ids.job[label];
    const required = count(resourceTracker.getRequiredResources(jobId));
    const missed = count(missing.get(jobId) ?? []);
    const acquired = count(resourceTracker.getAcquiredResources(jobId));
    jobs.set(jobId, { required, missing: missed, acquired, excess: acquired - (required - missed) });
  }
  return { records, jobs };
}

function checkRecords(world: World): void {
  const { tracker } = world.sm;
  const seen = new Map<AllocationID, ResourceSlotRecord>();
  let occupied = 0;
  let registeredSlots = 0;
  for (const tm of tracker.taskManagers) {
    const name = tm.resourceId;
    registeredSlots += tm.numberOfStaticSlots;
    // (a) static records sit at their index and hold one allocation at most; dynamic ones are live.
    tm.staticSlots.forEach((s, i) => {
      holds(
        `(a) ${name} static record ${i} sits at its index on its executor`,
        [s.index, s.taskManager === tm],
        [i, true],
      );
      holds(
        `(a) ${name}/${i} holds an allocation exactly when it is not free`,
        s.allocationId !== null,
        s.state !== 'free',
      );
      holds(`(b) ${name}/${i} is not left reserved`, s.reserved, false);
    });
    for (const [allocationId, s] of tm.dynamicSlots) {
      holds(
        `(a) ${name} dynamic record of ${allocationId}`,
        [s.index, s.allocationId, s.state !== 'free', s.taskManager === tm],
        [-1, allocationId, true, true],
      );
    }
    const slots = tracker.slotsOf(tm);
    for (const s of slots) {
      const id = s.allocationId!;
      if (seen.has(id))
        throw new AssertionError(`(a) allocation ${id} is held by ${show(seen.get(id)!)} and by ${show(s)}`);
      seen.set(id, s);
      holds(`(a) getSlot(${id}) is the record on ${name}`, tracker.getSlot(id) === s, true);
      holds(`(a) ${show(s)} names its job`, s.jobId !== null, true);
    }

    // (b) the executor's capacity follows from its records alone.
    const used = sum(slots.map((s) => s.profile));
    holds(`(b) ${name}: no reservation left open after a check`, tm.reservations, 0);
    holds(`(b) ${name}: used = sum of its pending/allocated slots`, tm.used.toString(), used.toString());
    holds(
      `(b) ${name}: available = total − used`,
      tm.available.toString(),
      minus(tm.totalResourceProfile, used).toString(),
    );
    const u = Math.max(
      used.cpuCores / tm.totalResourceProfile.cpuCores,
      used.totalMemory / tm.totalResourceProfile.totalMemory,
    );
    holds(`(b) ${name}: utilization`, tm.utilization, u);
    holds(`(b) ${name}: idle exactly when it holds nothing`, tm.idleSince === null, slots.length > 0);

    // (c) free + pending + allocated = the static slots; the counters agree with the records.
    const statics = slots.filter((s) => s.index >= 0);
    holds(
      `(c) ${name}: free + pending + allocated static slots`,
      tm.freeStaticSlots +
        statics.filter((s) => s.state === 'pending').length +
        statics.filter((s) => s.state === 'allocated').length,
      tm.numberOfStaticSlots,
    );
    holds(`(c) ${name}: occupiedSlots`, tm.occupiedSlots, slots.length);
    occupied += slots.length;
  }
  holds('(c) pending + allocated across the cluster = numberOfOccupiedSlots', tracker.numberOfOccupiedSlots, occupied);
  holds(
    '(a) every record in the AllocationID map is on its executor',
    [...tracker.slots].every((s) => seen.get(s.allocationId!) === s),
    true,
  );
  holds('(c) numberOfRegisteredSlots', tracker.numberOfRegisteredSlots, registeredSlots);
  holds(
    '(c) registeredResource',
    tracker.registeredResource.toString(),
    sum([...tracker.taskManagers].map((tm) => tm.totalResourceProfile)).toString(),
  );
}

/** (a) across the system: the SlotManager and the executors agree on who holds what. */
function checkAgainstExecutors(world: World): void {
  const { tracker } = world.sm;
  const imperative = new Set<AllocationID>(REQUESTS.map((l) => ids.request[l]));
  // A declarative AllocationID is fresh for every attempt, so at most one executor ever takes it.
  const holders = new Map<AllocationID, ResourceID>();
  for (const executor of world.executors) {
    for (const allocationId of executor.table.keys()) {
      if (imperative.has(allocationId)) continue; // reused across attempts by design: a late answer may land elsewhere
      const other = holders.get(allocationId);
      if (other !== undefined)
        throw new AssertionError(`(a) allocation ${allocationId} is held by ${other} and by ${executor.resourceId}`);
      holders.set(allocationId, executor.resourceId);
    }
  }
  // Right after an executor's report, the SlotManager's view of it is the report's: every allocated
  // record is in its table, every allocation in its table is known, and one the executor holds at a
  // static index is recorded at that index.
  for (const executor of world.reporters) {
    const tm = tracker.getTaskManager(executor.resourceId);
    if (tm === undefined) continue;
    for (const s of tracker.slotsOf(tm)) {
      if (s.state === 'allocated') holds(`(a) ${show(s)} was just reported`, executor.table.has(s.allocationId!), true);
    }
    for (const [allocationId, held] of executor.table) {
      const record = tracker.getSlot(allocationId);
      holds(
        `(a) ${executor.resourceId} reported ${allocationId}, which the SlotManager knows`,
        record !== undefined,
        true,
      );
      // Held on another executor: a late answer to an imperative request retried elsewhere under the
      // same AllocationID. By design left to the executor's slot timeout.
      if (record === undefined || record.taskManager !== tm || held.slotNumber >= executor.shape.slots) continue;
      holds(
        `(a) ${executor.resourceId} reported ${allocationId} in static slot ${held.slotNumber}; ` +
          `the SlotManager records it at`,
        record.index,
        held.slotNumber,
      );
    }
  }
}

function checkIndex(world: World): void {
  const { tracker } = world.sm;
  const order = ORDER[world.setup.policy];
  for (const probe of INDEX_PROBES) {
    const fits = [...tracker.taskManagers].filter(
      (tm) =>
        !tm.blocked &&
        minus(tm.totalResourceProfile, sum(tracker.slotsOf(tm).map((s) => s.profile))).allFieldsNoLessThan(
          tm.effectiveProfile(probe),
        ),
    );
    const best = fits.map((tm) => ({ tm, u: tm.utilization, seq: tm.seq })).sort(order)[0]?.tm;
    holds(
      `(b) candidatesFor(${probe})`,
      [...tracker.candidatesFor(probe)].map((tm) => tm.resourceId).sort(),
      fits.map((tm) => tm.resourceId).sort(),
    );
    holds(
      `(b) findTaskManager(${probe}) under ${world.setup.policy}`,
      tracker.findTaskManager(probe)?.resourceId ?? null,
      best?.resourceId ?? null,
    );
  }
  holds(
    '(b) the allocator and the tracker agree on the pending workers',
    [...tracker.pendingTaskManagers].map((p) => p.id).sort(),
    [...world.pendingWorkers].sort(),
  );
}

function checkJobs(world: World, before: Snapshot, after: Snapshot): void {
  const { sm } = world;
  const records = recordsOf(world);
  /** Records new in this step that a slot report showed: the SlotManager adopted them, it did not plan them. */
  const adopted = new Set(
    records
      .filter((s) => s.tracked && !before.records.has(s.allocationId!) && world.reported.has(s.allocationId!))
      .map((s) => s.allocationId!),
  );
  for (const label of JOBS) {
    const jobId = ids.job[label];
    const now = after.jobs.get(jobId)!;
    const then = before.jobs.get(jobId)!;
    const mine = records.filter((s) => s.jobId === jobId);
    const tracked = mine.filter((s) => s.tracked);

    // (d) the declarative slot records are the acquired resources, profile by profile.
    const acquired = sm.resourceTracker.getAcquiredResources(jobId);
    holds(`(d) ${label}: declarative slot records = acquired`, tracked.length, count(acquired));
    const recordsByProfile = new Map<string, number>();
    for (const s of tracked) recordsByProfile.set(s.profile.key, (recordsByProfile.get(s.profile.key) ?? 0) + 1);
    holds(
      `(d) ${label}: declarative slot records by profile`,
      Object.fromEntries([...recordsByProfile].sort(([a], [b]) => a.localeCompare(b))),
      byKey(acquired),
    );
    holds(
      `(d) ${label}: requirements as declared`,
      byKey(sm.resourceTracker.getRequiredResources(jobId)),
      Object.fromEntries([...(world.declared.get(jobId) ?? [])].sort(([a], [b]) => a.localeCompare(b))),
    );

    // (d) A job never holds more than it declared plus what it held before a decrease: everything
    // acquired fulfils a requirement (acquired − excess ≤ required, by construction), and the excess
    // grows only by what a (re)declaration in this step unassigned, or by allocations a report showed.
    // No new slot is ever planned beyond a requirement: it would land in the excess.
    const adoptedHere = tracked.filter((s) => adopted.has(s.allocationId!)).length;
    const allowance = then.excess + adoptedHere + (world.redeclared.has(jobId) ? then.acquired - then.excess : 0);
    if (now.excess < 0 || now.excess > allowance) {
      throw new AssertionError(
        `(d) ${label} holds ${now.acquired} slots for a requirement of ${now.required} ` +
          `(${now.missing} missing): ${now.excess} beyond it, but before this step it held ${then.acquired} ` +
          `(${then.excess} beyond a requirement of ${then.required}), ${adoptedHere} were adopted, ` +
          `and it was${world.redeclared.has(jobId) ? '' : ' not'} redeclared: at most ${allowance} may be beyond it`,
      );
    }
    // Pending workers carry no more of the job's slots than it misses (declared, or asked for imperatively).
    let planned = 0;
    for (const pending of sm.tracker.pendingTaskManagers)
      planned += pending.pendingAllocations.get(jobId)?.getTotalResourceCount() ?? 0;
    const waiting = sm
      .getPendingRequests()
      .filter((r) => r.kind === 'slot-request' && r.jobId === jobId && r.state === 'waiting').length;
    if (planned > now.missing + waiting)
      throw new AssertionError(
        `(d) pending workers carry ${planned} slots of ${label}, ` +
          `which misses only ${now.missing} (+ ${waiting} slot requests)`,
      );

    // (e) a job that declares nothing gains no new declarative slot, only adopted ones.
    if (now.required === 0) {
      for (const s of tracked) {
        const id = s.allocationId!;
        if (before.records.get(id)?.jobId !== jobId && !adopted.has(id))
          throw new AssertionError(`(e) ${label} declares nothing yet got a new slot ${show(s)}`);
      }
    }
    // (e) every imperative record is one the job asked for, under that AllocationID.
    for (const s of mine.filter((r) => !r.tracked)) {
      holds(
        `(e) imperative record ${show(s)} was requested by ${label}`,
        world.requested.get(s.allocationId!) === jobId,
        true,
      );
    }
  }
}

function show(slot: ResourceSlotRecord): string {
  const index = slot.index >= 0 ? slot.index : 'dynamic';
  const kind = slot.tracked ? 'declarative' : 'imperative';
  return `${slot.taskManager.resourceId}/${index} (${slot.state}, ${jobLabel(slot.jobId)}, ${kind})`;
}

// ------------------------------------------------------------------------------ the runs

async function run(setup: Setup, allocatorSupported: boolean, ops: readonly Op[]): Promise<void> {
  const world = newWorld(setup, allocatorSupported);
  try {
    for (const [step, op] of ops.entries()) {
      const before = observe(world);
      world.reported.clear();
      world.reporters.clear();
      world.redeclared.clear();
      const where = `step ${step} ${JSON.stringify(op)}`;
      try {
        apply(world, op);
      } catch (error) {
        throw new AssertionError(
          `${where} threw ${error instanceof Error ? `${error.name}: ${error.message}` : String(error)}`,
        );
      }
      await new Promise<void>((resolve) => setImmediate(resolve));
      const asyncError = world.asyncErrors.shift();
      if (asyncError !== undefined)
        throw new AssertionError(`${where}: an RPC continuation threw ${String(asyncError)}`);
      // (e') a waiting slot request's AllocationID is held by no slot record.
      const held = (id: AllocationID) => world.sm.tracker.getSlot(id) !== undefined;
      const doubled = world.sm
        .getPendingRequests()
        .find((r) => r.kind === 'slot-request' && r.state === 'waiting' && held(r.allocationId));
      if (doubled !== undefined)
        throw new AssertionError(
          `${where}: (e') waiting slot request ${JSON.stringify(doubled)} is also held by a slot record`,
        );
      try {
        checkRecords(world);
        checkAgainstExecutors(world);
        checkIndex(world);
        checkJobs(world, before, observe(world));
      } catch (error) {
        if (error instanceof AssertionError) error.message = `${where}: ${error.message}`;
        throw error;
      }
    }
  } finally {
    world.sm.close();
  }
}

const setupArbitrary = (allocatorSupported: boolean): fc.Arbitrary<Setup> =>
  fc.record({
    policy: fc.constantFrom<SlotMatchingPolicy>('first-fit', 'spread', 'pack'),
    redundant: allocatorSupported ? fc.constantFrom(0, 0, 1) : fc.constant(0),
    maxSlots: fc.constantFrom(Infinity, Infinity, 8),
  });
/** For bug hunts: SLOTWISE_PROPERTY_RUNS=2000 SLOTWISE_PROPERTY_SEED=7 (fixed seeds by default). */
const RUNS = Number(process.env['SLOTWISE_PROPERTY_RUNS'] ?? 100);
const SEED =
  process.env['SLOTWISE_PROPERTY_SEED'] === undefined ? undefined : Number(process.env['SLOTWISE_PROPERTY_SEED']);
const ops = fc.array(opArbitrary, { minLength: 1, maxLength: 40, size: 'max' });

describe('FineGrainedSlotManager, property-based', () => {
  it('keeps slots, index, counts and job holdings consistent while it plans workers', async () => {
    await fc.assert(
      fc.asyncProperty(setupArbitrary(true), ops, (setup, sequence) => run(setup, true, sequence)),
      { numRuns: RUNS, seed: SEED ?? 0x5107a1 },
    );
  });

  it('keeps slots, index, counts and job holdings consistent on a fixed cluster', async () => {
    await fc.assert(
      fc.asyncProperty(setupArbitrary(false), ops, (setup, sequence) => run(setup, false, sequence)),
      { numRuns: RUNS, seed: SEED ?? 0x5107a2 },
    );
  });
});
