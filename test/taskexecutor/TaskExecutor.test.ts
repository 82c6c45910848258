/**
 * The TaskExecutor endpoint in-process: fake ResourceManager and JobMaster gateways, a fake task
 * runner, a SimulatedClock. (Real threads and processes are in test/integration.)
 */
import { expect } from 'chai';
import { SimulatedClock } from '../../lib/core/clock.js';
import {
  IllegalArgumentError,
  IllegalStateError,
  RpcTimeoutError,
  SlotNotFoundError,
  SlotOwnerMismatchError,
  TaskExecutionError,
} from '../../lib/core/errors.js';
import {
  AllocationID,
  ExecutionAttemptID,
  JobID,
  ResourceID,
  ResourceManagerId,
  type ExecutionAttemptID as EAID,
} from '../../lib/core/ids.js';
import { ResourceProfile } from '../../lib/core/ResourceProfile.js';
import type { JobMasterGateway, ResourceManagerGateway } from '../../lib/rpc/gateways.js';
import type {
  JobMasterRegistrationResponse,
  RegistrationResponse,
  TaskDeploymentDescriptor,
  TaskExecutionStateWire,
} from '../../lib/rpc/protocol.js';
import type { TaskInvocation } from '../../lib/taskexecutor/SlotTaskPool.js';
import { INTERMEDIATE_STATES_DELAY_MS } from '../../lib/taskexecutor/JobTable.js';
import { SLOT_TASKS_DELAY_MS } from '../../lib/taskexecutor/RunningTasks.js';
import { TaskExecutor, type SlotTaskRunner } from '../../lib/taskexecutor/TaskExecutor.js';

const settle = async () => {
  for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve));
};

function deferred<T>() {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((res, rej) => ((resolve = res), (reject = rej)));
  return { promise, resolve, reject };
}

/** The ResourceManager of the fake gateway: its registrations are accepted under this id. */
const RM_ID = ResourceManagerId.generate();

/**
 * `registration`: how the fake ResourceManager answers each registration in turn (then: accepted); a promise answers
 * when it settles.
 */
function harness(
  options: {
    registration?: Array<RegistrationResponse | Error | Promise<RegistrationResponse>>;
    /** The ResourceManager never answers a goodbye (hung, or gone without a word). */
    goodbyeHangs?: boolean;
  } = {},
) {
  const clock = new SimulatedClock();
  const calls: Array<[string, ...unknown[]]> = [];
  const answers = [...(options.registration ?? [])];
  const resourceManager: ResourceManagerGateway = {
    registerTaskExecutor: async (registration) => {
      calls.push(['registerTaskExecutor', registration]);
      const answer = (await answers.shift()) ?? {
        kind: 'accepted',
        registrationId: 'r-1',
        resourceManagerId: RM_ID,
        heartbeatIntervalMs: 10_000,
        heartbeatTimeoutMs: 30_000,
      };
      if (answer instanceof Error) throw answer;
      return answer;
    },
    sendSlotReport: async (_resourceId, registrationId, report) =>
      void calls.push(['sendSlotReport', registrationId, report.slots.length]),
    notifySlotAvailable: async (_resourceId, allocationId) => void calls.push(['notifySlotAvailable', allocationId]),
    disconnectTaskExecutor: (_resourceId, cause) => {
      calls.push(['disconnectTaskExecutor', cause]);
      return options.goodbyeHangs ? new Promise<void>(() => {}) : Promise.resolve();
    },
    registerJobMaster: async () => {},
    declareRequiredResources: async () => {},
    disconnectJobMaster: async () => {},
    notifyNewBlockedNodes: async () => {},
  };
  const states: TaskExecutionStateWire[] = [];
  /** The size of each updateTaskExecutionStates call. */
  const batches: number[] = [];
  /** How many states the JobMaster had heard at each notifySlotFreed. */
  const statesAtSlotFreed: number[] = [];
  const offers: Array<AllocationID[]> = [];
  let offerAnswer: (ids: AllocationID[]) => Promise<AllocationID[]> = async (ids) => ids;
  let registrationAnswer: JobMasterRegistrationResponse = { kind: 'accepted' };
  const jobMaster: JobMasterGateway = {
    registerTaskManager: async (jobId, resourceId) => {
      calls.push(['registerTaskManager', jobId, resourceId]);
      return registrationAnswer;
    },
    disconnectTaskManager: async (resourceId, cause) => void calls.push(['disconnectTaskManager', resourceId, cause]),
    offerSlots: (_resourceId, slotOffers) => {
      calls.push(['offerSlots', slotOffers.length]);
      const ids = slotOffers.map((o) => o.allocationId);
      offers.push(ids);
      return offerAnswer(ids);
    },
    updateTaskExecutionState: async (state) => void states.push(state),
    updateTaskExecutionStates: async (batch) => {
      batches.push(batch.length);
      states.push(...batch);
    },
    notifySlotFreed: async (_resourceId, allocationId) => {
      statesAtSlotFreed.push(states.length);
      calls.push(['notifySlotFreed', allocationId]);
    },
  };
  const runs = new Map<
    EAID,
    {
      invocation: TaskInvocation;
      canceled: string | null;
      result: ReturnType<typeof deferred<{ output: unknown }>>;
      start: () => void;
    }
  >();
  /** Whether the runner starts an attempt as it gets it (a free thread), or waits for the test's `start()`. */
  const runner_ = { startsAtOnce: true };
  const runner: SlotTaskRunner = {
    run: (invocation, options) => {
      const result = deferred<{ output: unknown }>();
      const start = () => options?.listener?.started();
      runs.set(invocation.context.executionAttemptId as EAID, { invocation, canceled: null, result, start });
      if (runner_.startsAtOnce) start();
      return result.promise;
    },
    cancel: (executionAttemptId, reason) => {
      const run = runs.get(executionAttemptId);
      if (run === undefined || run.canceled !== null) return false;
      run.canceled = reason;
      const { context } = run.invocation;
      run.result.reject(
        new TaskExecutionError('canceled', 'canceled', {
          executionAttemptId: context.executionAttemptId,
          vertexName: context.vertexName,
          cause: reason,
        }),
      );
      return true;
    },
    close: async () => void calls.push(['runner.close']),
  };
  const terminated: Array<[number, string]> = [];
  let registrations = 0;
  /** What the TaskExecutor tells its task threads' reserve: how many allocations could still take a spare. */
  let freeSlotsForSpares: (() => number) | null = null;
  /** The events its TaskSlotTable and TaskSlots received, by type (XState inspection). */
  const slotEvents: string[] = [];
  const te = new TaskExecutor({
    resourceId: ResourceID.parse('te-test'),
    mode: 'thread',
    clock,
    inspect: (event) => {
      if (event.type === '@xstate.event') slotEvents.push(event.event.type);
    },
    configuration: {
      'taskmanager.numberOfTaskSlots': 2,
      'taskmanager.cpu.cores': 2,
      'taskmanager.memory.managed.size': '1m',
      'taskmanager.memory.segment-size': '64k',
    },
    resourceManager,
    connectJobMaster: (address) => (calls.push(['connectJobMaster', address]), jobMaster),
    createTaskRunner: (slot) => (calls.push(['createTaskRunner', slot.name, slot.heapLimitMb]), runner),
    onTerminated: (code, reason) => terminated.push([code, reason]),
    onRegistered: () => registrations++,
    taskThreads: {
      start: (_heapLimitMb, freeSlots) => void (freeSlotsForSpares = freeSlots),
      close: async () => {},
      stats: { started: 0, served: 0, bootedOnDemand: 0, spare: 0, inUse: 0, reused: 0, retired: 0, servedSpares: [] },
    },
  });
  const call = <T>(fn: () => Promise<T>) => te.mailbox.callAsync(fn);
  return {
    te,
    clock,
    calls,
    states,
    batches,
    statesAtSlotFreed,
    slotEvents,
    offers,
    runs,
    terminated,
    registrations: () => registrations,
    freeSlotsForSpares: () => freeSlotsForSpares?.() ?? null,
    call,
    runner: runner_,
    setOfferAnswer: (f: typeof offerAnswer) => (offerAnswer = f),
    setRegistrationAnswer: (answer: JobMasterRegistrationResponse) => (registrationAnswer = answer),
    /** Registers and lets the first report go out. */
    async started() {
      te.start();
      await settle();
      return te;
    },
  };
}

const jobId = JobID.generate();

function descriptor(
  allocationId: AllocationID,
  overrides: Partial<TaskDeploymentDescriptor> = {},
): TaskDeploymentDescriptor {
  return {
    jobId,
    jobName: 'wordcount',
    vertexId: 'v1',
    vertexName: 'tokenize',
    subtaskIndex: 0,
    parallelism: 1,
    attemptNumber: 0,
    executionAttemptId: ExecutionAttemptID.generate({ vertex: 'tokenize', subtask: 0, attempt: 0 }),
    allocationId,
    taskModule: '/tasks/tokenize.js',
    inputs: ['to be or not'],
    ...overrides,
  };
}

async function slotFor(h: ReturnType<typeof harness>, index = 0) {
  const allocationId = AllocationID.generate();
  await h.call(() =>
    h.te.requestSlot({
      index,
      jobId,
      allocationId,
      resourceProfile: 'UNKNOWN',
      targetAddress: 'jobmaster@wordcount',
      resourceManagerId: RM_ID,
    }),
  );
  await settle();
  return allocationId;
}

describe('TaskExecutor endpoint', () => {
  describe('registration and heartbeats', () => {
    it('registers with its resources, then sends its first slot report', async () => {
      const h = harness();
      await h.started();
      expect(h.te.isRegistered).to.equal(true);
      const [name, registration] = h.calls[0] as [string, Record<string, unknown>];
      expect(name).to.equal('registerTaskExecutor');
      expect(registration).to.include({ resourceId: 'te-test', numberOfSlots: 2, mode: 'thread' });
      expect(ResourceProfile.fromJSON(registration['totalResourceProfile']).cpuCores).to.equal(2);
      expect(h.calls[1]).to.deep.equal(['sendSlotReport', 'r-1', 2]);
    });

    it('retries a refused or failed registration with growing waits, and is accepted later', async () => {
      const h = harness({
        registration: [
          { kind: 'refused', reason: 'stale' },
          new Error('no answer'),
          { kind: 'refused', reason: 'busy' },
        ],
      });
      await h.started();
      expect(h.te.isRegistered).to.equal(false);
      h.clock.increment(100); // cluster.registration.initial-timeout
      await settle();
      h.clock.increment(200);
      await settle();
      expect(h.te.isRegistered).to.equal(false);
      h.clock.increment(400);
      await settle();
      expect(h.te.isRegistered).to.equal(true);
      expect(h.calls.filter((c) => c[0] === 'registerTaskExecutor')).to.have.length(4);
    });

    it('gives up and stops after taskmanager.registration.timeout', async () => {
      const refusals = Array.from({ length: 100 }, () => ({ kind: 'refused', reason: 'never' }) as const);
      const h = harness({ registration: refusals });
      await h.started();
      for (let t = 0; t < 310; t++) {
        h.clock.increment(1000);
        await settle();
      }
      expect(h.terminated).to.have.length(1);
      expect(h.terminated[0]![0]).to.equal(1);
      expect(h.te.lifecycle).to.equal('stopped');
    });

    it('answers the ResourceManager heartbeat with its slot report', async () => {
      const h = harness();
      await h.started();
      const allocationId = await slotFor(h);
      const report = await h.call(() => h.te.heartbeatFromResourceManager());
      expect(report.slots.find((s) => s.allocationId === allocationId)).to.include({ slotNumber: 0, state: 'active' });
    });

    it('registers again when the ResourceManager stays silent for heartbeat.timeout', async () => {
      const h = harness();
      await h.started();
      h.clock.increment(29_000);
      await settle();
      await h.call(() => h.te.heartbeatFromResourceManager()); // keeps it alive
      h.clock.increment(29_000);
      await settle();
      expect(h.calls.filter((c) => c[0] === 'registerTaskExecutor')).to.have.length(1);
      h.clock.increment(2_000);
      await settle();
      expect(h.calls.filter((c) => c[0] === 'registerTaskExecutor')).to.have.length(2);
      expect(h.te.isRegistered).to.equal(true);
    });

    it(
      'does not count its own stall against the ResourceManager: ' +
        'after a blocked event loop it gives it a fresh heartbeat.timeout',
      async () => {
        const h = harness();
        await h.started();
        h.clock.stall(45_000); // its thread was blocked for 45 s: longer than heartbeat.timeout
        await settle();
        expect(h.calls.filter((c) => c[0] === 'registerTaskExecutor')).to.have.length(1);
        expect(h.te.lifecycle).to.equal('registered');
        await h.call(() => h.te.heartbeatFromResourceManager()); // the request that waited behind the stall
        h.clock.increment(29_000);
        await settle();
        expect(h.te.lifecycle).to.equal('registered');
        // A ResourceManager really silent for heartbeat.timeout while it looked is still lost.
        h.clock.increment(1_000);
        await settle();
        expect(h.calls.filter((c) => c[0] === 'registerTaskExecutor')).to.have.length(2);
      },
    );

    it('handles a heartbeat request already queued behind its timeout before it registers again', async () => {
      const h = harness();
      await h.started();
      h.clock.increment(29_999);
      await settle();
      h.clock.increment(1); // the timeout is queued first ...
      const heartbeat = h.call(() => h.te.heartbeatFromResourceManager()); // ... and the request right behind it
      await heartbeat;
      await settle();
      expect(h.calls.filter((c) => c[0] === 'registerTaskExecutor')).to.have.length(1);
      expect(h.te.lifecycle).to.equal('registered');
    });
  });

  describe('requestSlot only while registered at that ResourceManager (Flink: "not connected")', () => {
    const request = (overrides: Record<string, unknown> = {}) => ({
      index: 0,
      jobId,
      allocationId: AllocationID.generate(),
      resourceProfile: 'UNKNOWN' as const,
      targetAddress: 'jm',
      resourceManagerId: RM_ID,
      ...overrides,
    });

    it(
      'refuses a slot request while its first registration is ' +
        'pending, with IllegalStateError, and allocates nothing',
      async () => {
        const h = harness({ registration: [{ kind: 'refused', reason: 'not yet' }] });
        await h.started();
        expect(h.te.lifecycle).to.equal('registering');
        const error = await h.call(() => h.te.requestSlot(request())).catch((e: unknown) => e);
        expect(error).to.be.instanceOf(IllegalStateError);
        expect(error).to.have.nested.property('details.state', 'registering');
        expect((error as Error).message).to.match(/is not connected to ResourceManager/);
        expect(h.te.table.getAllocationIdsPerJob(jobId)).to.deep.equal([]);
        expect(h.offers).to.deep.equal([]);
        h.clock.increment(100); // registered now: the same request goes through
        await settle();
        await h.call(() => h.te.requestSlot(request()));
        await settle();
        expect(h.offers).to.have.length(1);
      },
    );

    it('refuses a slot request while it registers again, until the new registration is accepted', async () => {
      let accept!: (response: RegistrationResponse) => void;
      const second = new Promise<RegistrationResponse>((resolve) => (accept = resolve));
      const h = harness({
        registration: [
          {
            kind: 'accepted',
            registrationId: 'r-1',
            resourceManagerId: RM_ID,
            heartbeatIntervalMs: 10_000,
            heartbeatTimeoutMs: 30_000,
          },
          second,
        ],
      });
      await h.started();
      await h.call(() => h.te.disconnectResourceManager('declared lost'));
      await settle();
      expect(h.te.lifecycle).to.equal('registering');
      const error = await h.call(() => h.te.requestSlot(request())).catch((e: unknown) => e);
      expect(error).to.be.instanceOf(IllegalStateError);
      expect(error).to.have.nested.property('details.state', 'registering');
      expect(h.te.table.getAllocationIdsPerJob(jobId)).to.deep.equal([]);
      accept({
        kind: 'accepted',
        registrationId: 'r-2',
        resourceManagerId: RM_ID,
        heartbeatIntervalMs: 10_000,
        heartbeatTimeoutMs: 30_000,
      });
      await settle();
      await h.call(() => h.te.requestSlot(request()));
      expect(h.te.table.getAllocationIdsPerJob(jobId)).to.have.length(1);
    });

    it('refuses a slot request from another ResourceManager, and one that names none', async () => {
      const h = harness();
      await h.started();
      const other = ResourceManagerId.generate();
      const error = await h
        .call(() => h.te.requestSlot(request({ resourceManagerId: other })))
        .catch((e: unknown) => e);
      expect(error).to.be.instanceOf(IllegalStateError);
      expect(error).to.have.nested.property('details.state', `registered at ResourceManager ${RM_ID}`);
      const missing = await h
        .call(() => h.te.requestSlot(request({ resourceManagerId: undefined })))
        .catch((e: unknown) => e);
      expect(missing).to.be.instanceOf(IllegalArgumentError);
      expect(missing).to.have.nested.property('details.argument', 'resourceManagerId');
      expect(h.te.table.getAllocationIdsPerJob(jobId)).to.deep.equal([]);
    });
  });

  describe("slots (Flink's requestSlot and offerSlotsToJobManager)", () => {
    it(
      'allocates a requested slot, connects to the JobMaster ' + 'at its address and offers it; accepted → active',
      async () => {
        const h = harness();
        await h.started();
        const allocationId = await slotFor(h);
        expect(h.calls).to.deep.include(['connectJobMaster', 'jobmaster@wordcount']);
        expect(h.offers).to.deep.equal([[allocationId]]);
        expect(h.te.table.getTaskSlot(allocationId)).to.include({ state: 'active', index: 0 });
      },
    );

    it('tells its task threads a freed slot is free only once its runner closes (its thread comes back)', async () => {
      const h = harness();
      await h.started();
      expect(h.freeSlotsForSpares()).to.equal(2);
      const allocationId = await slotFor(h, 0);
      expect(h.freeSlotsForSpares()).to.equal(1);
      // A task takes the slot's runner (its thread), and ends.
      const tdd = descriptor(allocationId);
      await h.call(() => h.te.submitTask(tdd));
      await settle();
      h.runs.get(tdd.executionAttemptId)!.result.resolve({ output: 1 });
      await settle();
      // Freed and out of the table at once (its task ended), but its runner closes as the slot's close
      // is reported, after this turn: until then a spare booted for it would be one too many.
      const during = await h.call(async () => {
        const freed = h.te.freeSlot(allocationId, 'idle');
        const count = h.freeSlotsForSpares();
        await freed;
        return count;
      });
      expect(during).to.equal(1);
      await settle();
      expect(h.calls.filter((c) => c[0] === 'runner.close')).to.have.length(1);
      expect(h.freeSlotsForSpares()).to.equal(2);
    });

    it(
      'registers at the JobMaster once per job as it first connects, ' +
        'before its first offer (Flink: JobLeaderService, registerTaskManager)',
      async () => {
        const h = harness();
        await h.started();
        await slotFor(h, 0);
        await slotFor(h, 1);
        const toJobMaster = h.calls.filter((c) => c[0] === 'registerTaskManager' || c[0] === 'offerSlots');
        expect(toJobMaster).to.deep.equal([
          ['registerTaskManager', jobId, 'te-test'],
          ['offerSlots', 1],
          ['offerSlots', 1],
        ]);
      },
    );

    it('a refused registration drops the connection: the next slot request of the job registers again', async () => {
      const h = harness();
      await h.started();
      h.setRegistrationAnswer({ kind: 'refused', reason: 'the JobMaster cannot reach TaskExecutor te-test' });
      h.setOfferAnswer(async () => []);
      const first = await slotFor(h, 0);
      expect(h.te.table.getTaskSlot(first)).to.equal(undefined);
      h.setRegistrationAnswer({ kind: 'accepted' });
      h.setOfferAnswer(async (ids) => ids);
      const second = await slotFor(h, 1);
      expect(h.calls.filter((c) => c[0] === 'registerTaskManager')).to.have.length(2);
      expect(h.te.table.getTaskSlot(second)).to.include({ state: 'active' });
    });

    it(
      'lets go of a job once its last slot here is freed: ' +
        'tells its JobMaster (disconnectTaskManager) after the freed slot',
      async () => {
        const h = harness();
        await h.started();
        const a = await slotFor(h, 0);
        const b = await slotFor(h, 1);
        await h.call(() => h.te.freeSlot(a, 'idle'));
        await settle();
        expect(h.calls.filter((c) => c[0] === 'disconnectTaskManager')).to.deep.equal([]);
        await h.call(() => h.te.freeSlot(b, 'idle'));
        await settle();
        const tail = h.calls.filter((c) => c[0] === 'notifySlotFreed' || c[0] === 'disconnectTaskManager');
        expect(tail).to.deep.equal([
          ['notifySlotFreed', a],
          ['notifySlotFreed', b],
          ['disconnectTaskManager', 'te-test', 'it holds no slot of the job any more'],
        ]);
      },
    );

    it('frees a slot the JobMaster rejects, or does not answer for, and tells the ResourceManager', async () => {
      const h = harness();
      await h.started();
      h.setOfferAnswer(async () => []);
      const rejected = await slotFor(h, 0);
      h.setOfferAnswer(() =>
        Promise.reject(
          new RpcTimeoutError('no answer', { gateway: 'JobMasterGateway', method: 'offerSlots', timeoutMs: 10_000 }),
        ),
      );
      const unanswered = await slotFor(h, 1);
      await settle();
      expect(h.te.table.getTaskSlot(rejected)).to.equal(undefined);
      expect(h.te.table.getTaskSlot(unanswered)).to.equal(undefined);
      expect(h.calls.filter((c) => c[0] === 'notifySlotAvailable').map((c) => c[1])).to.have.members([
        rejected,
        unanswered,
      ]);
    });

    it("refuses a taken index with the table's typed error", async () => {
      const h = harness();
      await h.started();
      await slotFor(h, 0);
      const error = await h
        .call(() =>
          h.te.requestSlot({
            index: 0,
            jobId,
            allocationId: AllocationID.generate(),
            resourceProfile: 'UNKNOWN',
            targetAddress: 'jm',
            resourceManagerId: RM_ID,
          }),
        )
        .catch((e: unknown) => e);
      expect(error).to.have.property('_tag', 'SlotAllocationError');
      expect(error).to.have.property('reason', 'index-taken');
    });

    it('fails loudly when its gateway is called outside its mailbox', async () => {
      const h = harness();
      await h.started();
      const error = await h.te
        .requestSlot({
          index: 0,
          jobId,
          allocationId: AllocationID.generate(),
          resourceProfile: 'UNKNOWN',
          targetAddress: 'jm',
          resourceManagerId: RM_ID,
        })
        .catch((e: unknown) => e);
      expect(error).to.be.instanceOf(IllegalStateError);
    });
  });

  describe('tasks', () => {
    it(
      "runs a submitted task on its slot's runner and reports " +
        'initializing → running → finished with the output, a short task in one call',
      async () => {
        const h = harness();
        await h.started();
        const allocationId = await slotFor(h);
        const tdd = descriptor(allocationId);
        h.batches.length = 0;
        await h.call(() => h.te.submitTask(tdd));
        await settle();
        const run = h.runs.get(tdd.executionAttemptId)!;
        expect(run.invocation).to.deep.include({ taskModule: '/tasks/tokenize.js', inputs: ['to be or not'] });
        expect(run.invocation.context).to.include({ vertexName: 'tokenize', subtaskIndex: 0, allocationId });
        expect(run.invocation.memory).to.have.property('totalPages', 8); // 1 mb / 2 slots / 64 kb pages
        expect(h.calls).to.deep.include(['createTaskRunner', 'te-test/0', 128]); // 256 mb heap / 2 slots
        run.result.resolve({ output: { to: 1, be: 1 } });
        await settle();
        // deploying is the JobMaster's own
        expect(h.states.map((s) => s.state)).to.deep.equal(['initializing', 'running', 'finished']);
        expect(h.states[2]!.output).to.deep.equal({ to: 1, be: 1 });
        // Initializing and running waited (INTERMEDIATE_STATES_DELAY_MS) for its end, which did not: one call.
        expect(h.batches).to.deep.equal([3]);
        // It would have entered its slot with the others of SLOT_TASKS_DELAY_MS: ended before, it never did.
        h.clock.increment(SLOT_TASKS_DELAY_MS);
        await settle();
        expect(h.te.table.getTask(tdd.executionAttemptId)).to.equal(undefined);
        expect(h.te.table.getTaskSlot(allocationId)!.state).to.equal('active');
      },
    );

    it(
      'reports running only once the slot runner says the attempt ' +
        'started (it may wait behind others), and not after it ended',
      async () => {
        const h = harness();
        h.runner.startsAtOnce = false;
        await h.started();
        const allocationId = await slotFor(h);
        const [a, b] = [
          descriptor(allocationId),
          descriptor(allocationId, {
            executionAttemptId: ExecutionAttemptID.generate({ vertex: 'tokenize', subtask: 1, attempt: 0 }),
            subtaskIndex: 1,
          }),
        ];
        await h.call(() => h.te.submitTasks([a, b]));
        await settle();
        const states = () =>
          h.states.map((s) => `${s.executionAttemptId === a.executionAttemptId ? 'a' : 'b'}:${s.state}`);
        h.clock.increment(INTERMEDIATE_STATES_DELAY_MS);
        await settle();
        expect(states()).to.deep.equal(['a:initializing', 'b:initializing']);
        h.runs.get(a.executionAttemptId)!.start();
        await settle();
        h.clock.increment(INTERMEDIATE_STATES_DELAY_MS);
        await settle();
        expect(states()).to.deep.equal(['a:initializing', 'b:initializing', 'a:running']);
        h.runs.get(a.executionAttemptId)!.result.resolve({ output: 1 });
        await settle();
        h.runs.get(b.executionAttemptId)!.start();
        h.runs.get(a.executionAttemptId)!.start(); // a late, repeated notice changes nothing
        await settle();
        h.clock.increment(INTERMEDIATE_STATES_DELAY_MS);
        await settle();
        expect(states()).to.deep.equal(['a:initializing', 'b:initializing', 'a:running', 'a:finished', 'b:running']);
      },
    );

    it(
      'submitTasks accepts or refuses each descriptor as ' + 'submitTask would, in order, and runs the accepted ones',
      async () => {
        const h = harness();
        await h.started();
        const allocationId = await slotFor(h);
        const ok = descriptor(allocationId);
        const unknownSlot = descriptor(AllocationID.generate());
        const duplicate = { ...ok };
        const outcomes = await h.call(() => h.te.submitTasks([ok, unknownSlot, duplicate]));
        expect(outcomes[0]).to.equal(null);
        expect(outcomes[1]).to.include({ _tag: 'SlotNotFoundError' });
        expect(outcomes[2]).to.include({ _tag: 'DuplicateTaskError' });
        await settle();
        expect([...h.runs.keys()]).to.deep.equal([ok.executionAttemptId]);
        const notAnArray = await h.call(() => h.te.submitTasks(ok as never)).catch((e: unknown) => e);
        expect(notAnArray)
          .to.be.instanceOf(IllegalArgumentError)
          .and.to.have.property('message')
          .that.matches(/descriptors must be an array/);
      },
    );

    it(
      'sends the states of one turn as one updateTaskExecutionStates ' +
        "call, in order, and a task's end before its freed slot",
      async () => {
        const h = harness();
        await h.started();
        const allocationId = await slotFor(h);
        const a = descriptor(allocationId);
        const b = descriptor(allocationId, {
          executionAttemptId: ExecutionAttemptID.generate({ vertex: 'tokenize', subtask: 1, attempt: 0 }),
          subtaskIndex: 1,
        });
        h.batches.length = 0;
        await Promise.all([h.call(() => h.te.submitTask(a)), h.call(() => h.te.submitTask(b))]);
        await settle();
        // States that end no attempt wait INTERMEDIATE_STATES_DELAY_MS for one that does, then go together.
        expect(h.batches).to.deep.equal([]);
        h.clock.increment(INTERMEDIATE_STATES_DELAY_MS);
        await settle();
        expect(h.batches).to.deep.equal([4]);
        // Each task's own states in order (its start notice comes from its runner, after both were handed over).
        expect(
          h.states.map((s) => `${s.executionAttemptId === a.executionAttemptId ? 'a' : 'b'}:${s.state}`),
        ).to.deep.equal(['a:initializing', 'b:initializing', 'a:running', 'b:running']);
        h.runs.get(a.executionAttemptId)!.result.resolve({ output: 1 });
        await settle();
        expect(h.batches).to.deep.equal([4, 1]);
        expect(h.states.at(-1)).to.include({ executionAttemptId: a.executionAttemptId, state: 'finished', output: 1 });
        // Freeing the slot cancels b: its 'canceled' must reach the JobMaster before notifySlotFreed.
        const before = h.states.length;
        await h.call(() => h.te.freeSlot(allocationId, 'job canceled'));
        await settle();
        expect(
          h.states.slice(before).map((s) => `${s.executionAttemptId === b.executionAttemptId ? 'b' : 'a'}:${s.state}`),
        ).to.deep.equal(['b:canceled']);
        expect(h.statesAtSlotFreed).to.deep.equal([before + 1]);
      },
    );

    it('puts the tasks of a slot in, and takes them out, in one TaskSlot event per SLOT_TASKS_DELAY_MS', async () => {
      const h = harness();
      await h.started();
      const allocationId = await slotFor(h);
      const tasks = [0, 1, 2].map((subtaskIndex) =>
        descriptor(allocationId, {
          executionAttemptId: ExecutionAttemptID.generate({ vertex: 'tokenize', subtask: subtaskIndex, attempt: 0 }),
          subtaskIndex,
        }),
      );
      const inSlot = () => tasks.map((tdd) => h.te.table.getTask(tdd.executionAttemptId) !== undefined);
      h.slotEvents.length = 0;
      // Two come in one call, the third 10 ms later: none is in the slot until the first one's window is over.
      await h.call(() => h.te.submitTasks(tasks.slice(0, 2)));
      h.clock.increment(10);
      await h.call(() => h.te.submitTasks(tasks.slice(2)));
      await settle();
      h.clock.increment(INTERMEDIATE_STATES_DELAY_MS);
      await settle();
      expect(h.states.filter((s) => s.state === 'running')).to.have.length(3);
      expect(inSlot()).to.deep.equal([false, false, false]);
      h.clock.increment(SLOT_TASKS_DELAY_MS - 10);
      await settle();
      expect(inSlot()).to.deep.equal([true, true, true]);
      expect(h.slotEvents.filter((type) => type.includes('TASK'))).to.deep.equal(['ADD_TASKS']);
      // They end in three turns, 10 ms apart: all three stay until the first one's window is over.
      for (const [i, tdd] of tasks.entries()) {
        h.runs.get(tdd.executionAttemptId)!.result.resolve({ output: i });
        await settle();
        if (i < tasks.length - 1) h.clock.increment(10);
      }
      expect(h.states.filter((s) => s.state === 'finished')).to.have.length(3);
      expect(inSlot()).to.deep.equal([true, true, true]);
      h.clock.increment(SLOT_TASKS_DELAY_MS - 20);
      await settle();
      expect(inSlot()).to.deep.equal([false, false, false]);
      expect(h.slotEvents.filter((type) => type.includes('TASK'))).to.deep.equal(['ADD_TASKS', 'REMOVE_TASKS']);
      expect(h.te.table.getTaskSlot(allocationId)!.state).to.equal('active');
    });

    it('costs its slot no event for a task that ends within SLOT_TASKS_DELAY_MS, and refuses it twice', async () => {
      const h = harness();
      await h.started();
      const allocationId = await slotFor(h);
      const tdd = descriptor(allocationId);
      h.slotEvents.length = 0;
      await h.call(() => h.te.submitTask(tdd));
      // Not in its slot yet, and still a duplicate: the table's own error.
      const again = await h.call(() => h.te.submitTasks([tdd]));
      expect(again[0]).to.include({ _tag: 'DuplicateTaskError' });
      h.runs.get(tdd.executionAttemptId)!.result.resolve({ output: 1 });
      await settle();
      h.clock.increment(SLOT_TASKS_DELAY_MS);
      await settle();
      expect(h.states.map((s) => s.state)).to.deep.equal(['initializing', 'running', 'finished']);
      expect(h.slotEvents.filter((type) => type.includes('TASK'))).to.deep.equal([]);
      expect(h.te.table.getTask(tdd.executionAttemptId)).to.equal(undefined);
    });

    it('reports a task that fails with its serialized error, and keeps the slot', async () => {
      const h = harness();
      await h.started();
      const allocationId = await slotFor(h);
      const tdd = descriptor(allocationId);
      await h.call(() => h.te.submitTask(tdd));
      await settle();
      h.runs.get(tdd.executionAttemptId)!.result.reject(
        new TaskExecutionError('threw', 'boom', {
          executionAttemptId: tdd.executionAttemptId,
          vertexName: 'tokenize',
          cause: 'boom',
        }),
      );
      await settle();
      const failed = h.states.at(-1)!;
      expect(failed.state).to.equal('failed');
      expect(failed.error).to.include({ _tag: 'TaskExecutionError', reason: 'threw', message: 'boom' });
      expect(h.te.table.getTaskSlot(allocationId)).to.not.equal(undefined);
    });

    it("refuses a task for an unknown slot or for another job's slot", async () => {
      const h = harness();
      await h.started();
      const allocationId = await slotFor(h);
      expect(
        await h.call(() => h.te.submitTask(descriptor(AllocationID.generate()))).catch((e: unknown) => e),
      ).to.be.instanceOf(SlotNotFoundError);
      expect(
        await h
          .call(() => h.te.submitTask(descriptor(allocationId, { jobId: JobID.generate() })))
          .catch((e: unknown) => e),
      ).to.be.instanceOf(SlotOwnerMismatchError);
    });

    it('cancels the tasks when another JobManager leads, and offers their slots there once registered', async () => {
      const h = harness();
      await h.started();
      const allocationId = await slotFor(h);
      const tdd = descriptor(allocationId);
      h.runner.startsAtOnce = false;
      await h.call(() => h.te.submitTask(tdd));
      await settle();
      expect(h.offers).to.have.length(1);
      await h.call(() => h.te.jobManagerLeaderChanged('a new leader'));
      await settle();
      expect(h.runs.get(tdd.executionAttemptId)!.canceled).to.equal('a new leader');
      // Marked inactive with its task in it, then offered again at the job's address and taken back.
      expect(h.offers).to.deep.equal([[allocationId], [allocationId]]);
      expect(h.te.table.getTaskSlot(allocationId)!.state).to.equal('active');
      expect(h.te.table.getTask(tdd.executionAttemptId)).to.not.equal(undefined);
      h.clock.increment(SLOT_TASKS_DELAY_MS);
      await settle();
      expect(h.te.table.getTask(tdd.executionAttemptId)).to.equal(undefined);
    });

    it('cancels a task through its slot runner and reports it canceled', async () => {
      const h = harness();
      await h.started();
      const allocationId = await slotFor(h);
      const tdd = descriptor(allocationId);
      await h.call(() => h.te.submitTask(tdd));
      await settle();
      await h.call(() => h.te.cancelTask(tdd.executionAttemptId));
      await settle();
      expect(h.runs.get(tdd.executionAttemptId)!.canceled).to.equal('canceled by the JobMaster');
      expect(h.states.at(-1)!.state).to.equal('canceled');
    });

    it(
      'freeing a slot with a running task cancels the task, ' + 'then frees the slot and tells the ResourceManager',
      async () => {
        const h = harness();
        await h.started();
        const allocationId = await slotFor(h);
        const tdd = descriptor(allocationId);
        await h.call(() => h.te.submitTask(tdd));
        await settle();
        // Not in its slot yet (SLOT_TASKS_DELAY_MS): the free puts it there first, so the slot's close cancels it.
        expect(h.te.table.getTask(tdd.executionAttemptId)).to.equal(undefined);
        await h.call(() => h.te.freeSlot(allocationId, 'job canceled'));
        await settle();
        expect(h.states.at(-1)!.state).to.equal('canceled');
        expect(h.te.table.getTaskSlot(allocationId)).to.equal(undefined);
        expect(h.calls).to.deep.include(['notifySlotAvailable', allocationId]);
        expect(h.calls).to.deep.include(['runner.close']);
      },
    );

    it(
      'shuts down gracefully: running tasks canceled, ' + 'slots freed, the ResourceManager told, then it stops',
      async () => {
        const h = harness();
        await h.started();
        const allocationId = await slotFor(h);
        const tdd = descriptor(allocationId);
        await h.call(() => h.te.submitTask(tdd));
        await settle();
        await h.call(() => h.te.shutdown('released: idle'));
        await settle();
        expect(h.states.at(-1)!.state).to.equal('canceled');
        expect(h.calls).to.deep.include(['disconnectTaskExecutor', 'released: idle']);
        expect(h.terminated).to.deep.equal([[0, 'released: idle']]);
        expect(h.te.table.state).to.equal('closed');
      },
    );

    it('waits at most 300 ms for the ResourceManager to answer its goodbye: a hung one holds nothing up', async () => {
      const h = harness({ goodbyeHangs: true });
      await h.started();
      const shutdown = h.call(() => h.te.shutdown('the TaskManager is closing'));
      await settle();
      expect(h.calls).to.deep.include(['disconnectTaskExecutor', 'the TaskManager is closing']);
      h.clock.increment(299);
      await settle();
      expect(h.terminated).to.deep.equal([]);
      h.clock.increment(1);
      await shutdown;
      expect(h.terminated).to.deep.equal([[0, 'the TaskManager is closing']]);
    });

    it('says no goodbye while it is not registered (no ResourceManager to hear it), and stops at once', async () => {
      const h = harness({ registration: [new Promise<RegistrationResponse>(() => {})], goodbyeHangs: true });
      await h.started();
      expect(h.te.isRegistered).to.equal(false);
      await h.call(() => h.te.shutdown('the TaskManager is closing'));
      await settle();
      expect(h.calls.filter(([name]) => name === 'disconnectTaskExecutor')).to.deep.equal([]);
      expect(h.terminated).to.deep.equal([[0, 'the TaskManager is closing']]);
    });
  });

  it('tells onRegistered each time the ResourceManager accepts its registration (after a disconnect too)', async () => {
    const h = harness();
    await h.started();
    expect(h.registrations()).to.equal(1);
    await h.call(() => h.te.disconnectResourceManager('the ResourceManager let it go'));
    await settle();
    expect([h.te.isRegistered, h.registrations()]).to.deep.equal([true, 2]);
  });
});
