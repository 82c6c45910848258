/**
 * In-process doubles for the SlotManager tests (Flink's TestingTaskExecutorGateway,
 * TestingResourceAllocator and a recording ResourceEventListener), and a harness that builds a
 * started FineGrainedSlotManager on a SimulatedClock with `execute: (f) => f()`, so listener calls
 * and RPC completions run as soon as their promise settles. No timer is real: timeouts are crossed
 * with `clock.increment`, promise continuations are drained with `settle()`.
 */
import type { InspectionEvent } from 'xstate';
import { SimulatedClock } from '../../../lib/core/clock.js';
import { SlotAllocationError, type SlotRequestError } from '../../../lib/core/errors.js';
import { AllocationID, JobID, ResourceID, SlotID } from '../../../lib/core/ids.js';
import type { SlotwiseOptions } from '../../../lib/core/options.js';
import type { ResourceProfile } from '../../../lib/core/ResourceProfile.js';
import type { SlotReport, SlotStatus } from '../../../lib/core/SlotReport.js';
import type { SlotRequest, TaskExecutorSlotGateway } from '../../../lib/rpc/TaskExecutorSlotGateway.js';
import { FineGrainedSlotManager } from '../../../lib/resourcemanager/slotmanager/FineGrainedSlotManager.js';
import type {
  RegistrationResult,
  TaskManagerRegistrationRequest,
} from '../../../lib/resourcemanager/slotmanager/SlotManagerOptions.js';
import type { PendingTaskManagerID } from '../../../lib/resourcemanager/slotmanager/PendingTaskManager.js';
import type { ResourceAllocator } from '../../../lib/resourcemanager/slotmanager/ResourceAllocator.js';
import type {
  ResourceEventListener,
  WaitingRequirement,
} from '../../../lib/resourcemanager/slotmanager/ResourceEventListener.js';
import {
  ResourceRequirement,
  ResourceRequirements,
} from '../../../lib/resourcemanager/slotmanager/ResourceRequirement.js';
import { WorkerResourceSpec } from '../../../lib/resourcemanager/slotmanager/WorkerResourceSpec.js';

/** Lets every settled promise's continuations run (the gateway's answers, the syncer's completions). */
export const settle = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

// ------------------------------------------------------------------ TaskExecutor gateway

/**
 * How the gateway answers one requestSlot: acknowledge, refuse with a SlotAllocationError, never
 * answer (a promise that never settles), or hold the answer for the test to give later (`deferred`).
 */
export type SlotAnswer = 'ack' | 'refuse' | 'never' | 'defer';

/** A requestSlot whose answer the test gives when it wants (e.g. after the RPC timed out). */
export interface DeferredAnswer {
  readonly request: SlotRequest;
  ack(): void;
  refuse(): void;
}

export class TestingTaskExecutorGateway implements TaskExecutorSlotGateway {
  /** Every requestSlot call, in order. */
  readonly requestSlotCalls: SlotRequest[] = [];
  /** Every freeInactiveSlots call, in order. */
  readonly freeInactiveSlotsCalls: JobID[] = [];
  /** Answers for the next requestSlot calls, consumed in order; when empty, `defaultAnswer`. */
  readonly answers: SlotAnswer[] = [];
  defaultAnswer: SlotAnswer = 'ack';
  /** The calls answered 'defer', waiting for the test. */
  readonly deferred: DeferredAnswer[] = [];

  /** Replaceable: answers one call as told. */
  answerSlotRequest: (request: SlotRequest, answer: SlotAnswer) => Promise<void> = (request, answer) => {
    switch (answer) {
      case 'ack':
        return Promise.resolve();
      case 'refuse':
        return Promise.reject(
          new SlotAllocationError('index-taken', `slot ${request.index} is taken (testing refusal)`, {
            index: request.index,
          }),
        );
      case 'never':
        return new Promise<void>(() => {});
      case 'defer':
        return new Promise<void>((resolve, reject) => {
          this.deferred.push({
            request,
            ack: () => resolve(),
            refuse: () =>
              reject(
                new SlotAllocationError('index-taken', `slot ${request.index} is taken (late testing refusal)`, {
                  index: request.index,
                }),
              ),
          });
        });
    }
  };

  /** Replaceable: what freeInactiveSlots does (default: resolves). */
  freeInactiveSlotsFunction: (jobId: JobID) => Promise<void> = () => Promise.resolve();

  readonly requestSlot = (request: SlotRequest): Promise<void> => {
    this.requestSlotCalls.push(request);
    return this.answerSlotRequest(request, this.answers.shift() ?? this.defaultAnswer);
  };

  readonly freeInactiveSlots = (jobId: JobID): Promise<void> => {
    this.freeInactiveSlotsCalls.push(jobId);
    return this.freeInactiveSlotsFunction(jobId);
  };

  /** Answers the next calls as given, then falls back to `defaultAnswer`. */
  willAnswer(...answers: SlotAnswer[]): this {
    this.answers.push(...answers);
    return this;
  }
}

// ------------------------------------------------------------------ resource allocator

export class TestingResourceAllocator implements ResourceAllocator {
  readonly allocateWorkerCalls: Array<{ id: PendingTaskManagerID; spec: WorkerResourceSpec }> = [];
  readonly cancelWorkerCalls: PendingTaskManagerID[] = [];
  readonly releaseWorkerCalls: Array<{ resourceId: ResourceID; reason: string }> = [];
  /** When true, allocateWorker answers false (the worker cannot be started now). */
  refuse = false;
  /** Called after each allocateWorker is recorded (e.g. to call back into the SlotManager). */
  onAllocateWorker: (id: PendingTaskManagerID, spec: WorkerResourceSpec) => void = () => {};

  constructor(readonly isSupported: boolean = true) {}

  allocateWorker(id: PendingTaskManagerID, spec: WorkerResourceSpec): boolean {
    this.allocateWorkerCalls.push({ id, spec });
    this.onAllocateWorker(id, spec);
    return !this.refuse;
  }

  cancelWorker(id: PendingTaskManagerID): void {
    this.cancelWorkerCalls.push(id);
  }

  releaseWorker(resourceId: ResourceID, reason: string): void {
    this.releaseWorkerCalls.push({ resourceId, reason });
  }
}

// ------------------------------------------------------------------ listener

export type ListenerCall =
  | {
      readonly type: 'notEnoughResourcesAvailable';
      readonly jobId: JobID;
      readonly acquired: readonly ResourceRequirement[];
      readonly waiting: readonly WaitingRequirement[];
    }
  | {
      readonly type: 'resourceRequirementsTimedOut';
      readonly jobId: JobID;
      readonly waiting: readonly WaitingRequirement[];
    }
  | {
      readonly type: 'slotRequestFulfilled';
      readonly jobId: JobID;
      readonly allocationId: AllocationID;
      readonly resourceId: ResourceID;
      readonly index: number;
    }
  | {
      readonly type: 'slotRequestFailed';
      readonly jobId: JobID;
      readonly allocationId: AllocationID;
      readonly error: SlotRequestError;
    }
  | {
      readonly type: 'slotsLost';
      readonly jobId: JobID;
      readonly allocationIds: readonly AllocationID[];
      readonly resourceId: ResourceID;
      readonly cause: string;
    };

/** Records every callback, in order; `after` runs after each one is recorded (to test re-entrant calls). */
export class RecordingListener implements ResourceEventListener {
  readonly calls: ListenerCall[] = [];
  after: (call: ListenerCall) => void = () => {};

  of<T extends ListenerCall['type']>(type: T): Array<Extract<ListenerCall, { type: T }>> {
    return this.calls.filter((c): c is Extract<ListenerCall, { type: T }> => c.type === type);
  }

  #record(call: ListenerCall): void {
    this.calls.push(call);
    this.after(call);
  }

  notEnoughResourcesAvailable(
    jobId: JobID,
    acquired: readonly ResourceRequirement[],
    waiting: readonly WaitingRequirement[],
  ): void {
    this.#record({ type: 'notEnoughResourcesAvailable', jobId, acquired, waiting });
  }
  resourceRequirementsTimedOut(jobId: JobID, waiting: readonly WaitingRequirement[]): void {
    this.#record({ type: 'resourceRequirementsTimedOut', jobId, waiting });
  }
  slotRequestFulfilled(jobId: JobID, allocationId: AllocationID, resourceId: ResourceID, index: number): void {
    this.#record({ type: 'slotRequestFulfilled', jobId, allocationId, resourceId, index });
  }
  slotRequestFailed(jobId: JobID, allocationId: AllocationID, error: SlotRequestError): void {
    this.#record({ type: 'slotRequestFailed', jobId, allocationId, error });
  }
  slotsLost(jobId: JobID, allocationIds: readonly AllocationID[], resourceId: ResourceID, cause: string): void {
    this.#record({ type: 'slotsLost', jobId, allocationIds: [...allocationIds], resourceId, cause });
  }
}

// ------------------------------------------------------------------ slot reports and executors

/** An allocation a slot report shows: a static index (< numberOfSlots) or a dynamic one (>=). */
export interface ReportedAllocation {
  readonly index: number;
  readonly jobId: JobID;
  readonly allocationId: AllocationID;
  /** Default: the worker's default slot profile. */
  readonly profile?: ResourceProfile;
}

/** The report of an executor of `spec`: its static slots (free unless listed) and any dynamic ones listed. */
export function slotReport(
  resourceId: ResourceID,
  spec: WorkerResourceSpec,
  allocated: readonly ReportedAllocation[] = [],
): SlotReport {
  const slots: SlotStatus[] = [];
  for (let index = 0; index < spec.numberOfSlots; index++) {
    const a = allocated.find((x) => x.index === index);
    slots.push({
      slotId: SlotID.of(resourceId, index),
      resourceProfile: a?.profile ?? spec.defaultSlotResourceProfile,
      allocationId: a?.allocationId ?? null,
      jobId: a?.jobId ?? null,
      state: a === undefined ? 'free' : 'allocated',
    });
  }
  for (const a of allocated.filter((x) => x.index >= spec.numberOfSlots)) {
    slots.push({
      slotId: SlotID.of(resourceId, a.index),
      resourceProfile: a.profile ?? spec.defaultSlotResourceProfile,
      allocationId: a.allocationId,
      jobId: a.jobId,
      state: 'allocated',
    });
  }
  return { resourceId, slots };
}

export interface RegisterOptions {
  readonly resourceId?: ResourceID;
  readonly host?: string;
  readonly gateway?: TestingTaskExecutorGateway;
  /** The executor's shape; default: the SlotManager's worker spec. */
  readonly spec?: WorkerResourceSpec;
  readonly allocated?: readonly ReportedAllocation[];
  readonly pendingWorkerId?: PendingTaskManagerID;
}

export interface RegisteredExecutor {
  readonly resourceId: ResourceID;
  readonly gateway: TestingTaskExecutorGateway;
  readonly spec: WorkerResourceSpec;
  readonly result: RegistrationResult;
  /** A fresh report of this executor showing `allocated`. */
  report(allocated?: readonly ReportedAllocation[]): SlotReport;
}

/** Registers an executor of the worker shape with its initial slot report. */
export function registerExecutor(
  sm: FineGrainedSlotManager,
  defaultSpec: WorkerResourceSpec,
  options: RegisterOptions = {},
): RegisteredExecutor {
  const spec = options.spec ?? defaultSpec;
  const resourceId = options.resourceId ?? ResourceID.generate('te');
  const gateway = options.gateway ?? new TestingTaskExecutorGateway();
  const request: TaskManagerRegistrationRequest = {
    resourceId,
    host: options.host ?? 'localhost',
    totalResourceProfile: spec.totalResourceProfile,
    defaultSlotResourceProfile: spec.defaultSlotResourceProfile,
    numberOfStaticSlots: spec.numberOfSlots,
    gateway,
    ...(options.pendingWorkerId === undefined ? {} : { pendingWorkerId: options.pendingWorkerId }),
  };
  const result = sm.registerTaskManager(request, slotReport(resourceId, spec, options.allocated));
  return { resourceId, gateway, spec, result, report: (allocated = []) => slotReport(resourceId, spec, allocated) };
}

// ------------------------------------------------------------------ the harness

/**
 * Workers of 2 slots, 2 cores, 200 mb heap, 128 mb managed, 64 mb network (a default slot: 1 core,
 * 100 mb heap, 64 mb managed, 32 mb network); requirement checks coalesced over 50 ms.
 */
export const WORKER_OPTIONS: SlotwiseOptions = Object.freeze({
  'taskmanager.numberOfTaskSlots': 2,
  'taskmanager.cpu.cores': 2,
  'taskmanager.memory.task.heap.size': '200m',
  'taskmanager.memory.task.off-heap.size': 0,
  'taskmanager.memory.managed.size': '128m',
  'taskmanager.memory.network.size': '64m',
  'slotmanager.requirement-check.delay': 50,
});

export interface HarnessOptions {
  /** Options over WORKER_OPTIONS. */
  readonly configuration?: SlotwiseOptions;
  /** Default: a supported TestingResourceAllocator; false: a fixed cluster (NO_RESOURCE_ALLOCATOR-like, recording). */
  readonly allocator?: TestingResourceAllocator | false;
  /** Default true. */
  readonly start?: boolean;
  /** Where listener calls run; default at once, `(f) => f()`. */
  readonly execute?: (task: () => void) => void;
  /** An inspector of the SlotManager's statechart. */
  readonly inspect?: (event: InspectionEvent) => void;
}

export function createSlotManager(options: HarnessOptions = {}) {
  const clock = new SimulatedClock();
  const listener = new RecordingListener();
  const allocator =
    options.allocator === false
      ? new TestingResourceAllocator(false)
      : (options.allocator ?? new TestingResourceAllocator(true));
  const logs: string[] = [];
  const sm = new FineGrainedSlotManager({
    configuration: { ...WORKER_OPTIONS, ...options.configuration },
    allocator,
    listener,
    clock,
    execute: options.execute ?? ((f) => f()),
    log: (message) => logs.push(message),
    ...(options.inspect === undefined ? {} : { inspect: options.inspect }),
  });
  if (options.start !== false) sm.start();
  const spec = WorkerResourceSpec.fromOptions(sm.options);
  const delay = sm.options['slotmanager.requirement-check.delay'];
  return {
    sm,
    clock,
    listener,
    allocator,
    logs,
    spec,
    /** Crosses the requirement-check delay and lets the executors' answers arrive. */
    async check(): Promise<void> {
      clock.increment(delay);
      await settle();
    },
    /** Moves the clock and lets whatever settled run. */
    async advance(ms: number): Promise<void> {
      clock.increment(ms);
      await settle();
    },
    register: (o: RegisterOptions = {}) => registerExecutor(sm, spec, o),
    /** Declares the job's whole requirements: `[profile, count]` pairs. */
    declare(jobId: JobID, ...requirements: Array<[ResourceProfile, number]>): void {
      sm.declareResourceRequirements(
        ResourceRequirements.create(
          jobId,
          'jobmaster@test',
          requirements.map(([p, n]) => ResourceRequirement.create(p, n)),
        ),
      );
    },
    /** How many slots the job holds (pending or allocated) per the ResourceTracker. */
    acquired: (jobId: JobID) =>
      sm.resourceTracker.getAcquiredResources(jobId).reduce((n, r) => n + r.numberOfRequiredSlots, 0),
    /** Requirement checks run so far (CHECKED events counted by the statechart). */
    checks: () => sm.actor.getSnapshot().context.checks,
  };
}

export type Harness = ReturnType<typeof createSlotManager>;

export { AllocationID, JobID, ResourceID, SimulatedClock, WorkerResourceSpec };
