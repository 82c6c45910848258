/**
 * A real ResourceManager with a real driver (worker threads or child processes) and a testing
 * JobMaster on the main thread: the runtime without the JobMaster/Dispatcher of the end-to-end
 * issue. The JobMaster accepts every offered slot and records what it hears.
 */
import { fileURLToPath } from 'node:url';
import { type AllocationID, ExecutionAttemptID, JobID, type ResourceID } from '../../../lib/core/ids.js';
import type { SlotwiseOptions } from '../../../lib/core/options.js';
import type { JobMasterGateway } from '../../../lib/rpc/gateways.js';
import type {
  JobMasterRegistrationResponse,
  SlotOfferWire,
  TaskDeploymentDescriptor,
  TaskExecutionStateWire,
} from '../../../lib/rpc/protocol.js';
import { LocalResourceManagerDriver } from '../../../lib/resourcemanager/LocalResourceManagerDriver.js';
import { ResourceManager } from '../../../lib/resourcemanager/ResourceManager.js';
import type { ResourceEventListener } from '../../../lib/resourcemanager/slotmanager/ResourceEventListener.js';

export const TASKS = (name: string) => fileURLToPath(new URL(`../../fixtures/tasks/${name}.ts`, import.meta.url));

export class TestingJobMaster implements JobMasterGateway {
  readonly offers: Array<{ resourceId: ResourceID; offer: SlotOfferWire }> = [];
  readonly states: TaskExecutionStateWire[] = [];
  readonly freed: Array<{ resourceId: ResourceID; allocationId: AllocationID; cause: string }> = [];
  #waiters: Array<() => void> = [];

  /** TaskExecutors that registered, and that let go of the job, in order. */
  readonly registered: ResourceID[] = [];
  readonly disconnected: Array<{ resourceId: ResourceID; cause: string }> = [];

  async registerTaskManager(_jobId: JobID, resourceId: ResourceID): Promise<JobMasterRegistrationResponse> {
    this.registered.push(resourceId);
    return { kind: 'accepted' };
  }

  async disconnectTaskManager(resourceId: ResourceID, cause: string): Promise<void> {
    this.disconnected.push({ resourceId, cause });
  }

  async offerSlots(resourceId: ResourceID, offers: readonly SlotOfferWire[]): Promise<AllocationID[]> {
    for (const offer of offers) this.offers.push({ resourceId, offer });
    this.#wake();
    return offers.map((o) => o.allocationId);
  }

  async updateTaskExecutionState(state: TaskExecutionStateWire): Promise<void> {
    this.states.push(state);
    this.#wake();
  }

  /** Counts the batched calls, and records their states in order like single ones. */
  batches = 0;

  async updateTaskExecutionStates(states: readonly TaskExecutionStateWire[]): Promise<void> {
    this.batches++;
    this.states.push(...states);
    this.#wake();
  }

  async notifySlotFreed(resourceId: ResourceID, allocationId: AllocationID, cause: string): Promise<void> {
    this.freed.push({ resourceId, allocationId, cause });
    this.#wake();
  }

  /** Resolves when `condition` holds (checked on every message), or rejects after `timeoutMs`. */
  until<T>(condition: () => T | undefined | false, what: string, timeoutMs = 20_000): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(
        () => reject(new Error(`timed out after ${timeoutMs} ms waiting for ${what}`)),
        timeoutMs,
      );
      const check = () => {
        const value = condition();
        if (value === undefined || value === false) return false;
        clearTimeout(timer);
        resolve(value as T);
        return true;
      };
      if (!check()) this.#waiters.push(() => void (check() || this.#waiters.push(() => void check())));
      const poll = setInterval(() => {
        if (check()) clearInterval(poll);
      }, 25);
      setTimeout(() => clearInterval(poll), timeoutMs + 10).unref();
    });
  }

  terminalState(executionAttemptId: ExecutionAttemptID): TaskExecutionStateWire | undefined {
    return this.states.find(
      (s) => s.executionAttemptId === executionAttemptId && ['finished', 'failed', 'canceled'].includes(s.state),
    );
  }

  #wake(): void {
    const waiters = this.#waiters;
    this.#waiters = [];
    for (const waiter of waiters) waiter();
  }
}

export interface TestCluster {
  readonly rm: ResourceManager;
  readonly driver: LocalResourceManagerDriver;
  readonly jobMaster: TestingJobMaster;
  readonly jobId: JobID;
  readonly events: Array<[string, ...unknown[]]>;
  /** Declares `slots` default slots for the job (the SlotManager then asks for workers). */
  declare(slots: number): Promise<void>;
  /** Waits until `count` offers arrived and returns them. */
  offers(count: number): Promise<Array<{ resourceId: ResourceID; offer: SlotOfferWire }>>;
  /** Submits a subtask running fixture `task` in the offered slot. */
  submit(
    offer: { resourceId: ResourceID; offer: SlotOfferWire },
    task: string,
    extra?: Partial<TaskDeploymentDescriptor>,
  ): Promise<TaskDeploymentDescriptor>;
  close(): Promise<void>;
}

/** Small TaskExecutors of one slot: cheap to start. */
export const SMALL_WORKER: SlotwiseOptions = {
  'taskmanager.numberOfTaskSlots': 1,
  'taskmanager.cpu.cores': 1,
  'taskmanager.memory.task.heap.size': '64m',
  'taskmanager.memory.managed.size': '1m',
  'taskmanager.memory.network.size': '1m',
  'taskmanager.memory.segment-size': '64k',
};

export async function startTestCluster(
  mode: 'thread' | 'process',
  configuration: SlotwiseOptions = {},
  extra: { entry?: URL } = {},
): Promise<TestCluster> {
  const options: SlotwiseOptions = {
    ...SMALL_WORKER,
    'slotmanager.requirement-check.delay': 10,
    'task.cancellation.grace-period': '1 s',
    ...configuration,
  };
  const events: Array<[string, ...unknown[]]> = [];
  const listener: ResourceEventListener = {
    slotsLost: (_jobId, allocationIds, resourceId, cause) =>
      events.push(['slotsLost', resourceId, allocationIds, cause]),
  };
  const driver = new LocalResourceManagerDriver({
    mode,
    configuration: options,
    log: (m) => events.push(['driver', m]),
    ...(extra.entry ? { entry: extra.entry } : {}),
  });
  const rm = new ResourceManager({ configuration: options, driver, listener, log: (m) => events.push(['log', m]) });
  rm.start();
  const jobMaster = new TestingJobMaster();
  const jobId = JobID.generate();
  const address = `jobmaster-${JobID.short(jobId)}`;
  rm.serveJobMaster(address, jobMaster);
  await rm.mailbox.callAsync(() => rm.registerJobMaster(jobId, address));
  return {
    rm,
    driver,
    jobMaster,
    jobId,
    events,
    declare: (slots) =>
      rm.mailbox.callAsync(() =>
        rm.declareRequiredResources({
          jobId,
          targetAddress: address,
          requirements: slots === 0 ? [] : [{ resourceProfile: 'UNKNOWN', numberOfRequiredSlots: slots }],
        }),
      ),
    offers: (count) =>
      jobMaster.until(
        () => jobMaster.offers.length >= count && jobMaster.offers.slice(0, count),
        `${count} slot offers`,
      ),
    submit: async ({ resourceId, offer }, task, extra = {}) => {
      const descriptor: TaskDeploymentDescriptor = {
        jobId,
        jobName: 'integration',
        vertexId: 'v',
        vertexName: task,
        subtaskIndex: 0,
        parallelism: 1,
        attemptNumber: 0,
        executionAttemptId: ExecutionAttemptID.generate({ vertex: task, subtask: 0, attempt: 0 }),
        allocationId: offer.allocationId,
        taskModule: TASKS(task),
        inputs: [1, 2, 3],
        ...extra,
      };
      const gateway = driver.taskExecutorGateway(resourceId);
      if (gateway === undefined) throw new Error(`no live TaskExecutor ${resourceId}`);
      await gateway.submitTask(descriptor);
      return descriptor;
    },
    close: () => rm.close(),
  };
}
