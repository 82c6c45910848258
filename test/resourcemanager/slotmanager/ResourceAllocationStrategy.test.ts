import { expect } from 'chai';
import { MiB } from '../../../lib/core/MemorySize.js';
import { ResourceProfile } from '../../../lib/core/ResourceProfile.js';
import {
  DefaultResourceAllocationStrategy,
  type ResourceAllocationLimits,
  type ResourceAllocationResult,
  type ResourceDemand,
} from '../../../lib/resourcemanager/slotmanager/ResourceAllocationStrategy.js';
import { RegisteredResourcePlan } from '../../../lib/resourcemanager/slotmanager/RegisteredResourcePlan.js';
import {
  SLOT_MATCHING_POLICIES,
  type SlotMatchingPolicy,
} from '../../../lib/resourcemanager/slotmanager/SlotMatchingStrategy.js';
// biome-ignore format: the module's path leaves no room on one line for the name it imports
import type {
  TaskManagerResourceInfoProvider,
} from '../../../lib/resourcemanager/slotmanager/TaskManagerResourceInfoProvider.js';
import { describeWaitReason, type WaitReason } from '../../../lib/resourcemanager/slotmanager/WaitReason.js';
import type { WorkerResourceSpec } from '../../../lib/resourcemanager/slotmanager/WorkerResourceSpec.js';
import { viewWith } from './planningView.js';
import { job, profile, shape, workerSpec, type ExecutorShape } from './support.js';

const UNKNOWN = ResourceProfile.UNKNOWN;
/** Workers of 4 cores / 400 mb in 4 slots of 1 core / 100 mb. */
const SPEC = workerSpec(4, 400, 4);
const NO_LIMITS: ResourceAllocationLimits = {
  maxSlots: Infinity,
  maxTotalCpu: Infinity,
  maxTotalMemory: Infinity,
  redundantTaskManagers: 0,
};

const demand = (
  jobN: number,
  p: ResourceProfile,
  count: number,
  extra: Partial<ResourceDemand> = {},
): ResourceDemand => ({ jobId: job(jobN), profile: p, count, ...extra });
const plan = (
  view: TaskManagerResourceInfoProvider,
  demands: ResourceDemand[],
  limits: Partial<ResourceAllocationLimits> = {},
  spec: WorkerResourceSpec | null = SPEC,
) => new DefaultResourceAllocationStrategy(spec, { ...NO_LIMITS, ...limits }).tryFulfillRequirements(demands, view);

/** Each outcome as [placed, onWorkers, unfulfilled, reason without its explanation lists]. */
const outcomes = (r: ResourceAllocationResult) =>
  r.outcomes.map((o) => [o.placed, o.onWorkers, o.unfulfilled, o.reason === undefined ? null : brief(o.reason)]);
const brief = (reason: WaitReason) =>
  reason.kind === 'insufficient-resources' ? { kind: reason.kind, couldFitWhenFree: reason.couldFitWhenFree } : reason;
/** Each new worker as [purpose, slots it carries]. */
const workers = (r: ResourceAllocationResult) =>
  r.newWorkers.map((w) => [w.purpose, [...w.allocations.values()].reduce((n, c) => n + c.getTotalResourceCount(), 0)]);
/** Per job, the number of slots (of all profiles) a plan puts on a worker. */
const perJob = (allocations: ReadonlyMap<unknown, { getTotalResourceCount(): number }>) =>
  [...allocations].map(([j, c]) => [String(j).slice(0, 1), c.getTotalResourceCount()]);
const placedOn = (r: ResourceAllocationResult) => r.slotsOnRegistered.map((s) => s.taskManager.resourceId);
/**
 * Whether a planned slot takes its executor's default slot (a static one, when one is free as it is applied) or a
 * dynamic one.
 */
const slotKind = (s: ResourceAllocationResult['slotsOnRegistered'][number]) =>
  s.profile.equals(s.taskManager.defaultSlotResourceProfile) ? 'default' : 'dynamic';

describe('DefaultResourceAllocationStrategy', () => {
  it(
    'plans what looking every slot up in the index would plan, though it skips the ' +
      'lookup while the last executor stays the best (every policy, with preferences)',
    () => {
      const shapes: ExecutorShape[] = [
        shape(4, 400, 4, 'h1'),
        shape(8, 800, 4, 'h2'),
        shape(2, 200, 2, 'h1'),
        { total: profile(4, 400, 0, { gpu: 2 }), slots: 2, host: 'h2' },
        shape(16, 1600, 8, 'h1'),
      ];
      const cluster = Array.from({ length: 12 }, (_, i) => shapes[(i * 7) % shapes.length]!);
      const demands = (te: string) => [
        demand(1, UNKNOWN, 9),
        demand(2, profile(1, 100), 7, { preference: { host: 'h2' } }),
        demand(3, profile(0.5, 30), 11, { preference: { resourceId: te as never } }),
        demand(1, profile(1, 50, 0, { gpu: 1 }), 3),
        demand(4, profile(3, 300), 5),
      ];
      for (const policy of SLOT_MATCHING_POLICIES) {
        const placements = (lookEverySlot: boolean) => {
          const { view, tms } = viewWith(cluster, { policy });
          tms[1]!.use(profile(2, 100));
          tms[4]!.use(profile(1, 10));
          const claimAgain = RegisteredResourcePlan.prototype.claimAgain;
          if (lookEverySlot) RegisteredResourcePlan.prototype.claimAgain = () => undefined;
          let result: ResourceAllocationResult;
          try {
            result = plan(view, demands('te-6'), {}, null);
          } finally {
            RegisteredResourcePlan.prototype.claimAgain = claimAgain;
          }
          return [result.slotsOnRegistered.map((s) => [s.taskManager.resourceId, slotKind(s)]), outcomes(result)];
        };
        expect(placements(false), policy).to.deep.equal(placements(true));
      }
    },
  );

  it(
    'places demands on free registered resources first, ' + 'counting what it planned, and changes nothing in the view',
    () => {
      const {
        view,
        tms: [a],
      } = viewWith([shape(4, 400, 4), shape(4, 400, 4)]);
      const result = plan(view, [demand(1, UNKNOWN, 3), demand(2, profile(2, 200), 1)]);
      expect(placedOn(result)).to.deep.equal(['te-1', 'te-1', 'te-1', 'te-2']);
      expect([outcomes(result), workers(result), a!.available.cpuCores]).to.deep.equal([
        [
          [3, 0, 0, null],
          [1, 0, 0, null],
        ],
        [],
        4,
      ]);
    },
  );

  it('skips blocked executors and honours a demand’s host preference', () => {
    const {
      view,
      tms: [a],
    } = viewWith([shape(4, 400, 4, 'h1'), shape(4, 400, 4, 'h1'), shape(4, 400, 4, 'h2')]);
    a!.blocked = true;
    expect(
      placedOn(plan(view, [demand(1, UNKNOWN, 1), demand(1, UNKNOWN, 1, { preference: { host: 'h2' } })])),
    ).to.deep.equal(['te-2', 'te-3']);
  });

  it('gives UNKNOWN each executor’s own default slot on a mixed cluster, and a bigger demand a dynamic slot', () => {
    const { view } = viewWith([shape(2, 200, 2), shape(8, 800, 2)]);
    const result = plan(view, [demand(1, UNKNOWN, 3), demand(2, profile(2, 200), 1)]);
    const slots = result.slotsOnRegistered.map((s) => [s.taskManager.resourceId, slotKind(s), s.profile.cpuCores]);
    expect(slots).to.deep.equal([
      ['te-1', 'default', 1],
      ['te-1', 'default', 1],
      ['te-2', 'default', 4],
      ['te-2', 'dynamic', 2],
    ]);
  });

  it('fills existing pending workers next, re-planning them from scratch on every call', () => {
    const { view } = viewWith([]);
    const [p1, p2] = [view.addPending(SPEC), view.addPending(SPEC)];
    p1.allocations = plan(view, [demand(9, UNKNOWN, 4)]).slotsOnPending.get(p1.id)!;
    const first = plan(view, [demand(1, UNKNOWN, 5)]);
    expect([perJob(first.slotsOnPending.get(p1.id)!), perJob(first.slotsOnPending.get(p2.id)!)]).to.deep.equal([
      [['1', 4]],
      [['1', 1]],
    ]);
    expect([outcomes(first), workers(first)]).to.deep.equal([
      [[0, 5, 0, { kind: 'waiting-for-workers', workers: 2 }]],
      [],
    ]);
    const second = plan(view, [demand(2, UNKNOWN, 1)]);
    expect([perJob(second.slotsOnPending.get(p1.id)!), perJob(second.slotsOnPending.get(p2.id)!)]).to.deep.equal([
      [['2', 1]],
      [],
    ]);
    expect(perJob(p1.allocations)).to.deep.equal([['9', 4]]); // a plan is not applied by the strategy
  });

  it(
    'starts new workers of the spec shape, each carrying ' + 'as many effective profiles as fit (not its slot count)',
    () => {
      const { view } = viewWith([]);
      expect(workers(plan(view, [demand(1, profile(1.5, 150), 5)]))).to.deep.equal([
        ['requirements', 2],
        ['requirements', 2],
        ['requirements', 1],
      ]);
      expect(workers(plan(view, [demand(1, profile(0.5, 50), 8)]))).to.deep.equal([['requirements', 8]]);
      const unknown = plan(view, [demand(1, UNKNOWN, 2)]).newWorkers[0]!.allocations.get(job(1))!;
      expect(unknown.getResourceCount(SPEC.defaultSlotResourceProfile)).to.equal(2);
    },
  );

  it('lets later demands use what earlier demands left on new workers', () => {
    const { view } = viewWith([]);
    const result = plan(view, [demand(1, profile(1.5, 150), 5), demand(2, profile(0.5, 50), 8)]);
    expect(result.newWorkers.map((w) => perJob(w.allocations))).to.deep.equal([
      [
        ['1', 2],
        ['2', 2],
      ],
      [
        ['1', 2],
        ['2', 2],
      ],
      [
        ['1', 1],
        ['2', 4],
      ],
    ]);
    expect(outcomes(result)[1]).to.deep.equal([0, 8, 0, { kind: 'waiting-for-workers', workers: 3 }]);
  });

  it(
    'reports per demand what was placed, what waits on ' + 'workers (counting the workers involved) and what is left',
    () => {
      const { view } = viewWith([shape(4, 400, 4)]);
      view.addPending(SPEC);
      const result = plan(view, [demand(1, UNKNOWN, 2), demand(2, UNKNOWN, 4), demand(3, UNKNOWN, 7)]);
      expect(outcomes(result)).to.deep.equal([
        [2, 0, 0, null],
        [2, 2, 0, { kind: 'waiting-for-workers', workers: 1 }],
        [0, 7, 0, { kind: 'waiting-for-workers', workers: 3 }],
      ]);
      expect(result.outcomes.map((o) => o.demand.jobId)).to.deep.equal([job(1), job(2), job(3)]);
    },
  );

  describe('limits', () => {
    it(
      'stops new workers at maxSlots, counting registered and ' +
        'pending slots: max-slots-reached with limit and wouldBe',
      () => {
        expect(outcomes(plan(viewWith([]).view, [demand(1, UNKNOWN, 8)], { maxSlots: 6 }))).to.deep.equal([
          [0, 4, 4, { kind: 'max-slots-reached', limit: 6, wouldBe: 8 }],
        ]);
        expect(
          outcomes(plan(viewWith([shape(4, 400, 4)]).view, [demand(1, UNKNOWN, 12)], { maxSlots: 8 })),
        ).to.deep.equal([[4, 4, 4, { kind: 'max-slots-reached', limit: 8, wouldBe: 12 }]]);
        const { view } = viewWith([]);
        view.addPending(SPEC);
        const result = plan(view, [demand(1, UNKNOWN, 6)], { maxSlots: 4 });
        expect([outcomes(result), workers(result)]).to.deep.equal([
          [[0, 4, 2, { kind: 'max-slots-reached', limit: 4, wouldBe: 8 }]],
          [],
        ]);
      },
    );

    it('stops new workers at maxTotalCpu or maxTotalMemory: max-resources-reached naming the dimension', () => {
      const cpu = plan(viewWith([shape(4, 400, 4)]).view, [demand(1, UNKNOWN, 12)], { maxTotalCpu: 10 });
      expect([outcomes(cpu), workers(cpu)]).to.deep.equal([
        [[4, 4, 4, { kind: 'max-resources-reached', dimension: 'cpu', limit: 10, wouldBe: 12 }]],
        [['requirements', 4]],
      ]);
      const memory = plan(viewWith([shape(4, 400, 4)]).view, [demand(1, UNKNOWN, 12)], { maxTotalMemory: 1000 * MiB });
      expect(outcomes(memory)).to.deep.equal([
        [4, 4, 4, { kind: 'max-resources-reached', dimension: 'memory', limit: 1000 * MiB, wouldBe: 1200 * MiB }],
      ]);
    });
  });

  describe('demands that no worker can hold', () => {
    it('says exceeds-worker-shape with the short dimension when nothing registered could ever hold it', () => {
      const result = plan(viewWith([shape(2, 200, 2)]).view, [
        demand(1, profile(6, 100), 1),
        demand(2, profile(1, 10, 0, { gpu: 1 }), 1),
      ]);
      expect(outcomes(result)).to.deep.equal([
        [0, 0, 1, { kind: 'exceeds-worker-shape', shortfall: [{ field: 'cpuCores', available: 4, required: 6 }] }],
        [0, 0, 1, { kind: 'exceeds-worker-shape', shortfall: [{ field: 'gpu', available: 0, required: 1 }] }],
      ]);
      expect(workers(result)).to.deep.equal([]);
    });

    it('says insufficient-resources with couldFitWhenFree when a registered executor’s total could hold it', () => {
      const {
        view,
        tms: [, big],
      } = viewWith([shape(2, 200, 2), shape(8, 800, 4)]);
      big!.use(profile(4, 100));
      const [outcome] = plan(view, [demand(1, profile(6, 100), 2)]).outcomes;
      expect([outcome!.placed, outcome!.unfulfilled, brief(outcome!.reason!)]).to.deep.equal([
        0,
        2,
        { kind: 'insufficient-resources', couldFitWhenFree: ['te-2'] },
      ]);
    });

    it('without a worker spec (a fixed cluster), names the closest executors and their short dimensions', () => {
      const {
        view,
        tms: [a],
      } = viewWith([shape(4, 400, 4), shape(2, 200, 2), shape(8, 120, 4)]);
      a!.use(profile(3, 100));
      const [outcome] = plan(view, [demand(1, profile(3, 150), 1)], {}, null).outcomes;
      expect(outcome!.reason).to.deep.equal({
        kind: 'insufficient-resources',
        closest: [
          { resourceId: 'te-3', shortfall: [{ field: 'taskHeapMemory', available: 120 * MiB, required: 150 * MiB }] },
          { resourceId: 'te-2', shortfall: [{ field: 'cpuCores', available: 2, required: 3 }] },
          { resourceId: 'te-1', shortfall: [{ field: 'cpuCores', available: 1, required: 3 }] },
        ],
        couldFitWhenFree: ['te-1'],
        passedOver: [],
      });
      const partly = plan(viewWith([shape(4, 400, 4)]).view, [demand(1, UNKNOWN, 5)], {}, null);
      expect([outcomes(partly), workers(partly)]).to.deep.equal([
        [[4, 0, 1, { kind: 'insufficient-resources', couldFitWhenFree: ['te-1'] }]],
        [],
      ]);
    });
  });

  describe('redundancy (redundantTaskManagers = 2)', () => {
    const R = { redundantTaskManagers: 2 };
    it('plans empty workers until free resources cover two whole workers', () => {
      expect(workers(plan(viewWith([]).view, [], R))).to.deep.equal([
        ['redundancy', 0],
        ['redundancy', 0],
      ]);
      expect(workers(plan(viewWith([shape(4, 400, 4)]).view, [], R))).to.deep.equal([['redundancy', 0]]);
    });

    it(
      'counts free registered resources after this plan’s ' +
        'reservations, pending workers, and leftovers of new workers',
      () => {
        const idlePending = viewWith([shape(4, 400, 4)]).view;
        idlePending.addPending(SPEC);
        expect(workers(plan(idlePending, [], R))).to.deep.equal([]);
        expect(workers(plan(viewWith([shape(4, 400, 4)]).view, [demand(1, UNKNOWN, 2)], R))).to.deep.equal([
          ['redundancy', 0],
          ['redundancy', 0],
        ]);
        expect(workers(plan(viewWith([]).view, [demand(1, UNKNOWN, 2)], R))).to.deep.equal([
          ['requirements', 2],
          ['redundancy', 0],
          ['redundancy', 0],
        ]);
        expect(workers(plan(viewWith([]).view, [], { ...R, maxSlots: 4 }))).to.deep.equal([['redundancy', 0]]);
      },
    );

    // Flink's tryFulFillRequiredResources sums only the unblocked registered executors.
    it('does not count a blocked executor’s free resources as redundancy', () => {
      const {
        view,
        tms: [a],
      } = viewWith([shape(4, 400, 4)]);
      a!.blocked = true;
      expect(workers(plan(view, [], R))).to.deep.equal([
        ['redundancy', 0],
        ['redundancy', 0],
      ]);
    });
  });

  describe('tryReconcileClusterResources (what is no longer needed)', () => {
    const reconcile = (
      view: TaskManagerResourceInfoProvider,
      idle: Parameters<DefaultResourceAllocationStrategy['tryReconcileClusterResources']>[1],
      redundantTaskManagers = 0,
    ) =>
      new DefaultResourceAllocationStrategy(SPEC, { ...NO_LIMITS, redundantTaskManagers }).tryReconcileClusterResources(
        view,
        idle,
      );

    it('cancels every pending worker that carries no slot, newest first, and keeps those that do', () => {
      const { view } = viewWith([]);
      const [p1, p2, p3] = [view.addPending(SPEC), view.addPending(SPEC), view.addPending(SPEC)];
      p2!.allocations = plan(view, [demand(1, UNKNOWN, 2)]).slotsOnPending.get(p1!.id)!;
      expect(reconcile(view, [])).to.deep.equal({
        pendingTaskManagersToRelease: [p3!.id, p1!.id],
        taskManagersToRelease: [],
        taskManagersToKeep: [],
      });
    });

    it('with redundant workers wanted, cancels only what leaves their whole resources free', () => {
      const { view } = viewWith([shape(4, 400, 4)]);
      const [p1, p2] = [view.addPending(SPEC), view.addPending(SPEC)];
      // Free: the executor (one worker) + two empty pending workers; two redundant workers need only one of them.
      expect(reconcile(view, [], 2).pendingTaskManagersToRelease).to.deep.equal([p2!.id]);
      expect(reconcile(view, [], 3).pendingTaskManagersToRelease).to.deep.equal([]);
      expect(p1!.id).to.not.equal(p2!.id);
    });

    it(
      'releases idle executors the redundant workers do not ' +
        'need, and keeps the others (one rule for pending and idle)',
      () => {
        const {
          view,
          tms: [a, b],
        } = viewWith([shape(4, 400, 4), shape(4, 400, 4)]);
        expect(reconcile(view, [a!, b!])).to.deep.equal({
          pendingTaskManagersToRelease: [],
          taskManagersToRelease: ['te-1', 'te-2'],
          taskManagersToKeep: [],
        });
        expect(reconcile(view, [a!, b!], 1)).to.deep.equal({
          pendingTaskManagersToRelease: [],
          taskManagersToRelease: ['te-1'],
          taskManagersToKeep: ['te-2'],
        });
        b!.use(UNKNOWN);
        // te-2 keeps 3 of 4 slots free: not a whole worker, so te-1 is needed as the redundant one.
        expect(reconcile(view, [a!], 1)).to.deep.equal({
          pendingTaskManagersToRelease: [],
          taskManagersToRelease: [],
          taskManagersToKeep: ['te-1'],
        });
      },
    );
  });

  describe('shared scenarios: every policy plans the same counts, workers and reasons', () => {
    interface Scenario {
      readonly name: string;
      readonly cluster: readonly ExecutorShape[];
      readonly used?: ReadonlyArray<[number, ResourceProfile]>;
      readonly pending?: number;
      readonly spec?: WorkerResourceSpec | null;
      readonly limits?: Partial<ResourceAllocationLimits>;
      readonly demands: ResourceDemand[];
      readonly outcomes: unknown[];
      readonly workers: unknown[];
      /** Which executors got the slots, where the policies differ. */
      readonly placedOn?: Record<SlotMatchingPolicy, string[]>;
    }
    const waiting = (n: number) => ({ kind: 'waiting-for-workers', workers: n });
    const scenarios: Scenario[] = [
      {
        name: 'UNKNOWN slots on two empty executors',
        cluster: [shape(4, 400, 4), shape(4, 400, 4)],
        demands: [demand(1, UNKNOWN, 2)],
        outcomes: [[2, 0, 0, null]],
        workers: [],
        placedOn: { 'first-fit': ['te-1', 'te-1'], spread: ['te-1', 'te-2'], pack: ['te-1', 'te-1'] },
      },
      {
        name: 'more default slots than the partly used cluster has: the rest on a pending and a new worker',
        cluster: [shape(4, 400, 4), shape(2, 200, 2)],
        used: [
          [0, profile(1, 100)],
          [1, profile(1, 100)],
        ],
        pending: 1,
        demands: [demand(1, profile(1, 100), 6), demand(2, UNKNOWN, 3)],
        outcomes: [
          [4, 2, 0, waiting(1)],
          [0, 3, 0, waiting(2)],
        ],
        workers: [['requirements', 1]],
      },
      {
        name:
          'a mixed cluster with a gpu executor: gpu demands go only there ' +
          '(no worker has gpus), the rest to a worker',
        cluster: [shape(4, 400, 4), { total: profile(4, 400, 0, { gpu: 1 }), slots: 2 }],
        demands: [demand(1, profile(1, 50, 0, { gpu: 1 }), 2), demand(2, profile(2, 200), 4)],
        outcomes: [
          [1, 0, 1, { kind: 'insufficient-resources', couldFitWhenFree: ['te-2'] }],
          [3, 1, 0, waiting(1)],
        ],
        workers: [['requirements', 1]],
      },
      {
        name: 'the slot limit with a pending worker',
        cluster: [shape(4, 400, 4)],
        pending: 1,
        limits: { maxSlots: 12 },
        demands: [demand(1, UNKNOWN, 20)],
        outcomes: [[4, 8, 8, { kind: 'max-slots-reached', limit: 12, wouldBe: 16 }]],
        workers: [['requirements', 4]],
      },
      {
        name: 'a fixed cluster short of room',
        cluster: [shape(2, 200, 2), shape(2, 200, 2)],
        spec: null,
        demands: [demand(1, UNKNOWN, 3), demand(2, UNKNOWN, 2)],
        outcomes: [
          [3, 0, 0, null],
          [1, 0, 1, { kind: 'insufficient-resources', couldFitWhenFree: ['te-1', 'te-2'] }],
        ],
        workers: [],
      },
      {
        name: 'redundancy on top of requirements',
        cluster: [shape(4, 400, 4)],
        limits: { redundantTaskManagers: 1 },
        demands: [demand(1, UNKNOWN, 6)],
        outcomes: [[4, 2, 0, waiting(1)]],
        workers: [
          ['requirements', 2],
          ['redundancy', 0],
        ],
      },
    ];

    for (const s of scenarios) {
      it(s.name, () => {
        const seen = SLOT_MATCHING_POLICIES.map((policy) => {
          const { view, tms } = viewWith(s.cluster, { policy });
          for (const [i, p] of s.used ?? []) tms[i]!.use(p);
          for (let i = 0; i < (s.pending ?? 0); i++) view.addPending(SPEC);
          const result = plan(
            view,
            s.demands.map((d) => ({ ...d })),
            s.limits,
            s.spec === undefined ? SPEC : s.spec,
          );
          expect([outcomes(result), workers(result)], policy).to.deep.equal([s.outcomes, s.workers]);
          if (s.placedOn !== undefined) expect(placedOn(result), policy).to.deep.equal(s.placedOn[policy]);
          return JSON.stringify([outcomes(result), workers(result), result.slotsOnRegistered.length]);
        });
        expect(new Set(seen).size).to.equal(1);
      });
    }
  });

  it('describes every wait reason as a sentence naming its numbers', () => {
    const sentences = [
      describeWaitReason({ kind: 'waiting-for-workers', workers: 1 }),
      describeWaitReason({ kind: 'waiting-for-workers', workers: 3 }),
      describeWaitReason({
        kind: 'insufficient-resources',
        closest: [{ resourceId: 'te-1' as never, shortfall: [{ field: 'cpuCores', available: 1, required: 3 }] }],
        couldFitWhenFree: ['te-1' as never],
        passedOver: [],
      }),
      describeWaitReason({ kind: 'insufficient-resources', closest: [], couldFitWhenFree: [], passedOver: [] }),
      describeWaitReason({
        kind: 'exceeds-worker-shape',
        shortfall: [{ field: 'taskHeapMemory', available: 400 * MiB, required: 600 * MiB }],
      }),
      describeWaitReason({ kind: 'max-slots-reached', limit: 6, wouldBe: 8 }),
      describeWaitReason({ kind: 'max-resources-reached', dimension: 'cpu', limit: 10, wouldBe: 12 }),
      describeWaitReason({ kind: 'max-resources-reached', dimension: 'memory', limit: 1024, wouldBe: 2048 }),
    ];
    expect(sentences).to.deep.equal([
      'waiting for 1 worker to start and register',
      'waiting for 3 workers to start and register',
      'no TaskExecutor has room: closest te-1 (cpuCores available 1, required 3); ' +
        'it fits te-1 once slots there are freed',
      'no TaskExecutor is registered and none can be started',
      'larger than any worker can ever be (taskHeapMemory worker has 400 mb, needs 600 mb)',
      'starting a worker would make 8 slots, over slotmanager.number-of-slots.max = 6',
      'starting a worker would make 12 cores, over slotmanager.max-total-resource.cpu = 10',
      'starting a worker would make 2048 bytes, over slotmanager.max-total-resource.memory = 1024',
    ]);
  });
});
