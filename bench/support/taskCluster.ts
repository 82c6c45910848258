/**
 * The cluster bench/tasks.bench.ts runs its tasks on: a real ResourceManager with a real driver
 * (worker threads or child processes) and, on the main thread, a JobMaster that accepts every
 * offered slot and settles one promise per submitted attempt when its terminal state arrives.
 * (test/integration/support/cluster.ts's TestingJobMaster keeps every state and polls; here a
 * waiter per ExecutionAttemptID, so thousands of tasks cost nothing to watch.)
 *
 * `startTaskCluster(mode, slots)` starts one TaskExecutor of `slots` slots, declares `slots` slots
 * and waits for their offers, so the slots are allocated once and reused by every task after.
 */
import { fileURLToPath } from 'node:url';
import { type AllocationID, ExecutionAttemptID, JobID, type ResourceID } from '../../lib/core/ids.js';
import type { SlotwiseOptions } from '../../lib/core/options.js';
import type { JobMasterGateway, TaskExecutorGateway } from '../../lib/rpc/gateways.js';
import type {
  ExecutionState,
  JobMasterRegistrationResponse,
  SlotOfferWire,
  TaskDeploymentDescriptor,
  TaskExecutionStateWire,
} from '../../lib/rpc/protocol.js';
import { LocalResourceManagerDriver } from '../../lib/resourcemanager/LocalResourceManagerDriver.js';
import { ResourceManager } from '../../lib/resourcemanager/ResourceManager.js';

/** A task fixture's absolute path (test/fixtures/tasks/<name>.ts). */
export const TASK_FIXTURE = (name: string): string =>
  fileURLToPath(new URL(`../../test/fixtures/tasks/${name}.ts`, import.meta.url));

interface Waiter {
  readonly resolve: (output: unknown) => void;
  readonly reject: (error: Error) => void;
}

export class BenchJobMaster implements JobMasterGateway {
  readonly offers: Array<{ resourceId: ResourceID; offer: SlotOfferWire }> = [];
  /** How many reports of each state arrived. */
  readonly stateCounts: Record<ExecutionState, number> = {
    deploying: 0,
    initializing: 0,
    running: 0,
    finished: 0,
    failed: 0,
    canceled: 0,
  };
  /** Task states received (single or batched). */
  reports = 0;
  readonly #waiters = new Map<ExecutionAttemptID, Waiter>();
  #offerWaiter: { count: number; resolve: () => void } | null = null;

  /** Accepts every TaskExecutor (a real JobMaster checks it can reach it). */
  async registerTaskManager(): Promise<JobMasterRegistrationResponse> {
    return { kind: 'accepted' };
  }

  async disconnectTaskManager(): Promise<void> {}

  async offerSlots(resourceId: ResourceID, offers: readonly SlotOfferWire[]): Promise<AllocationID[]> {
    for (const offer of offers) this.offers.push({ resourceId, offer });
    if (this.#offerWaiter !== null && this.offers.length >= this.#offerWaiter.count) this.#offerWaiter.resolve();
    return offers.map((o) => o.allocationId);
  }

  async updateTaskExecutionState(state: TaskExecutionStateWire): Promise<void> {
    this.#apply(state);
  }

  #apply(state: TaskExecutionStateWire): void {
    this.reports++;
    this.stateCounts[state.state]++;
    if (state.state !== 'finished' && state.state !== 'failed' && state.state !== 'canceled') return;
    const waiter = this.#waiters.get(state.executionAttemptId);
    if (waiter === undefined) return;
    this.#waiters.delete(state.executionAttemptId);
    if (state.state === 'finished') waiter.resolve(state.output);
    else
      waiter.reject(
        new Error(
          `task ${ExecutionAttemptID.short(state.executionAttemptId)} ${state.state}: ` +
            `${state.error?.message ?? 'no error'}`,
        ),
      );
  }

  /** updateTaskExecutionStates calls received (each state in them is counted in `reports` too). */
  batches = 0;

  /** The batched form the TaskExecutor sends: its states are counted like single reports. */
  async updateTaskExecutionStates(states: readonly TaskExecutionStateWire[]): Promise<void> {
    this.batches++;
    // All in this turn, as the JobMaster applies a batch: the tasks launched in answer go out together.
    for (const state of states) this.#apply(state);
  }

  async notifySlotFreed(): Promise<void> {}

  /** Settles when `executionAttemptId` reports a terminal state: its output on 'finished', else an error. */
  terminal(executionAttemptId: ExecutionAttemptID): Promise<unknown> {
    return new Promise((resolve, reject) => this.#waiters.set(executionAttemptId, { resolve, reject }));
  }

  /** Resolves once `count` offers arrived; rejects after `timeoutMs`. */
  untilOffers(count: number, timeoutMs: number): Promise<void> {
    if (this.offers.length >= count) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const timer = setTimeout(
        () =>
          reject(
            new Error(`timed out after ${timeoutMs} ms waiting for ${count} slot offers (got ${this.offers.length})`),
          ),
        timeoutMs,
      );
      this.#offerWaiter = {
        count,
        resolve: () => {
          clearTimeout(timer);
          this.#offerWaiter = null;
          resolve();
        },
      };
    });
  }
}

export interface TaskCluster {
  readonly mode: 'thread' | 'process';
  readonly jobMaster: BenchJobMaster;
  /** The offered slots, in the order they came. */
  readonly slots: ReadonlyArray<{ resourceId: ResourceID; offer: SlotOfferWire }>;
  /** How long starting the worker and allocating the slots took (ms). */
  readonly startupMs: number;
  /**
   * Submits an attempt of `taskModule` with `inputs` to slot `slot` (modulo the slot count) and
   * resolves with its output when the JobMaster hears 'finished' (rejects on 'failed'/'canceled',
   * or when the submit itself fails).
   */
  run(slot: number, taskModule: string, inputs: unknown): Promise<unknown>;
  close(): Promise<void>;
}

export async function startTaskCluster(
  mode: 'thread' | 'process',
  slots: number,
  configuration: SlotwiseOptions = {},
): Promise<TaskCluster> {
  const started = performance.now();
  const options: SlotwiseOptions = {
    'taskmanager.numberOfTaskSlots': slots,
    'taskmanager.cpu.cores': slots,
    'taskmanager.memory.task.heap.size': `${64 * slots}m`,
    'taskmanager.memory.managed.size': '1m',
    'taskmanager.memory.network.size': '1m',
    'taskmanager.memory.segment-size': '64k',
    'slotmanager.requirement-check.delay': 10,
    // No heartbeat or slot timeout inside a run: the bench's figures are the tasks' alone.
    'heartbeat.interval': '60 s',
    'heartbeat.timeout': '120 s',
    'rpc.ask.timeout': '60 s',
    ...configuration,
  };
  const log = (message: string) => {
    if (process.env['SLOTWISE_DEBUG'] !== undefined) console.error(`[${mode}] ${message}`);
  };
  const driver = new LocalResourceManagerDriver({ mode, configuration: options, log });
  const rm = new ResourceManager({ configuration: options, driver, log });
  rm.start();
  const jobMaster = new BenchJobMaster();
  const jobId = JobID.generate();
  const address = `jobmaster-bench-${mode}`;
  rm.serveJobMaster(address, jobMaster);
  await rm.mailbox.callAsync(() => rm.registerJobMaster(jobId, address));
  await rm.mailbox.callAsync(() =>
    rm.declareRequiredResources({
      jobId,
      targetAddress: address,
      requirements: [{ resourceProfile: 'UNKNOWN', numberOfRequiredSlots: slots }],
    }),
  );
  await jobMaster.untilOffers(slots, 30_000);
  const offered = jobMaster.offers.slice(0, slots);
  const gateways = new Map<ResourceID, TaskExecutorGateway>();
  for (const { resourceId } of offered) {
    const gateway = driver.taskExecutorGateway(resourceId);
    if (gateway === undefined) throw new Error(`no live TaskExecutor ${resourceId}`);
    gateways.set(resourceId, gateway);
  }
  let subtask = 0;
  return {
    mode,
    jobMaster,
    slots: offered,
    startupMs: performance.now() - started,
    run: (slot, taskModule, inputs) => {
      const { resourceId, offer } = offered[slot % offered.length]!;
      const descriptor: TaskDeploymentDescriptor = {
        jobId,
        jobName: 'tasks-bench',
        vertexId: 'v',
        vertexName: 'increment',
        subtaskIndex: subtask++ % 1_000_000,
        parallelism: 1_000_000,
        attemptNumber: 0,
        executionAttemptId: ExecutionAttemptID.generate(),
        allocationId: offer.allocationId,
        taskModule,
        inputs,
      };
      const terminal = jobMaster.terminal(descriptor.executionAttemptId);
      // The accept is not waited for: a task is done when its 'finished' arrives; a refused submit fails it.
      return Promise.race([
        terminal,
        gateways
          .get(resourceId)!
          .submitTask(descriptor)
          .then(() => terminal),
      ]);
    },
    close: () => rm.close(),
  };
}
