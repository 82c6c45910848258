/**
 * MiniCluster: the public way to embed slotwise. It starts a ResourceManager with its SlotManager,
 * a driver that runs TaskExecutors on worker threads (default) or in child processes, and a
 * Dispatcher; `submitJob(graph)` returns a JobClient; `overview()` shows executors, slots, waiting
 * requests and jobs; `close()` cancels the jobs, frees the slots and stops every worker, so the
 * process can exit with nothing left running.
 */
import { ConfigurationError, IllegalStateError } from './core/errors.js';
import type { JobID, ResourceID } from './core/ids.js';
import { resolveOptions, type ResolvedOptions, type SlotwiseOptions } from './core/options.js';
import { ResourceProfile, type ResourceSpec } from './core/ResourceProfile.js';
import { Dispatcher, type JobClient, type JobSummary } from './dispatcher/Dispatcher.js';
import type { JobGraph, JobGraphSpec } from './jobmaster/JobGraph.js';
import { DefaultTaskModuleChecker } from './jobmaster/TaskModuleChecker.js';
import type { TaskExecutorMetricsWire } from './rpc/protocol.js';
import { LocalResourceManagerDriver } from './resourcemanager/LocalResourceManagerDriver.js';
import { ResourceManager } from './resourcemanager/ResourceManager.js';
import type { SlotMatchingPolicy } from './resourcemanager/slotmanager/SlotMatchingStrategy.js';
import { WorkerResourceSpec } from './resourcemanager/slotmanager/WorkerResourceSpec.js';
import { describeWaitReason } from './resourcemanager/slotmanager/WaitReason.js';
import { createInspectionSink, type InspectOption, type InspectionSink } from './inspect.js';

export interface MiniClusterOptions {
  /** 'thread' (default): TaskExecutors on worker threads; 'process': each in a child process (hard memory isolation). */
  readonly mode?: 'thread' | 'process';
  /** A fixed number of TaskExecutors started with the cluster (default 2), or 'on-demand': started as jobs need them. */
  readonly taskExecutors?: number | 'on-demand';
  /** Static slots per TaskExecutor (taskmanager.numberOfTaskSlots); default 2. */
  readonly slotsPerTaskExecutor?: number;
  /** What each TaskExecutor offers (default: 1 core per slot, 256 mb task heap, 128 mb managed, 64 mb network). */
  readonly resources?: ResourceSpec;
  /** Which TaskExecutor gets a slot (slotmanager.placement-policy); default 'first-fit'. */
  readonly placementPolicy?: SlotMatchingPolicy;
  /** Any other option by its Flink name (timeouts, heartbeats, maxima, restart strategy, ...). */
  readonly configuration?: SlotwiseOptions;
  /** Every statechart's inspection events: a callback, or `{ stately: { port } }` for the Stately inspector. */
  readonly inspect?: InspectOption;
  /** Runtime messages (default: none). */
  readonly log?: (message: string) => void;
  /** ms to wait for the fixed TaskExecutors to register (default 60 s). */
  readonly startTimeoutMs?: number;
}

export interface ClusterOverview {
  readonly taskExecutors: ReadonlyArray<{
    readonly resourceId: ResourceID;
    readonly mode: 'thread' | 'process';
    readonly utilization: number;
    /** What no slot holds yet: the budget that free static slots and new dynamic slots draw on. */
    readonly available: string;
    readonly slots: ReadonlyArray<{
      readonly slot: string;
      /** 'unavailable': a free static slot whose resources dynamic slots have taken. */
      readonly state: 'free' | 'unavailable' | 'pending' | 'allocated';
      readonly jobId: JobID | null;
      readonly resourceProfile: string;
      /** `vertex#subtask (state)` of the subtasks running or deployed in it. */
      readonly tasks: readonly string[];
    }>;
  }>;
  readonly pendingWorkers: number;
  readonly pendingRequests: ReadonlyArray<{ readonly jobId: JobID; readonly missing: number; readonly profile: string; readonly why: string }>;
  readonly jobs: readonly JobSummary[];
}

const KNOWN_OPTIONS = ['mode', 'taskExecutors', 'slotsPerTaskExecutor', 'resources', 'placementPolicy', 'configuration', 'inspect', 'log', 'startTimeoutMs'];

export class MiniCluster {
  readonly options: ResolvedOptions;
  readonly mode: 'thread' | 'process';
  readonly resourceManager: ResourceManager;
  readonly dispatcher: Dispatcher;
  readonly #driver: LocalResourceManagerDriver;
  readonly #spec: WorkerResourceSpec;
  readonly #inspection: InspectionSink | null;
  readonly #startTimeoutMs: number;
  #closed: Promise<void> | null = null;

  private constructor(options: MiniClusterOptions) {
    const unknown = Object.keys(options).find((key) => !KNOWN_OPTIONS.includes(key));
    if (unknown !== undefined) throw new ConfigurationError('unknown-option', `unknown MiniCluster option '${unknown}'; known: ${KNOWN_OPTIONS.join(', ')}`, { option: unknown });
    const mode = options.mode ?? 'thread';
    if (mode !== 'thread' && mode !== 'process') throw new ConfigurationError('invalid-value', `mode must be 'thread' or 'process', got ${String(mode)}`, { option: 'mode' });
    const executors = options.taskExecutors ?? 2;
    if (executors !== 'on-demand' && (!Number.isSafeInteger(executors) || executors < 0)) {
      throw new ConfigurationError('invalid-value', `taskExecutors must be an integer >= 0 or 'on-demand', got ${String(executors)}`, { option: 'taskExecutors' });
    }
    const slots = options.slotsPerTaskExecutor ?? 2;
    const resources = ResourceProfile.fromSpec(options.resources ?? { cpuCores: slots, taskHeapMemory: '256m', managedMemory: '128m', networkMemory: '64m' });
    this.options = resolveOptions({
      ...options.configuration,
      'taskmanager.numberOfTaskSlots': slots,
      'taskmanager.cpu.cores': resources.cpuCores,
      'taskmanager.memory.task.heap.size': resources.taskHeapMemory,
      'taskmanager.memory.task.off-heap.size': resources.taskOffHeapMemory,
      'taskmanager.memory.managed.size': resources.managedMemory,
      'taskmanager.memory.network.size': resources.networkMemory,
      'taskmanager.extended-resources': resources.extendedResources,
      ...(options.placementPolicy === undefined ? {} : { 'slotmanager.placement-policy': options.placementPolicy }),
    });
    this.mode = mode;
    this.#startTimeoutMs = options.startTimeoutMs ?? 60_000;
    this.#spec = WorkerResourceSpec.fromOptions(this.options);
    this.#inspection = options.inspect === undefined ? null : createInspectionSink(options.inspect);
    const log = options.log;
    this.#driver = new LocalResourceManagerDriver({ mode, configuration: this.options, ...(log ? { log } : {}), ...(this.#inspection ? { inspect: this.#inspection.forward } : {}) });
    this.resourceManager = new ResourceManager({
      configuration: this.options,
      driver: this.#driver,
      workersOnDemand: executors === 'on-demand',
      ...(log ? { log } : {}),
      ...(this.#inspection ? { inspect: this.#inspection.inspect } : {}),
    });
    const rm = this.resourceManager;
    this.dispatcher = new Dispatcher({
      options: this.options,
      resourceManager: {
        registerJobMaster: (jobId, address) => rm.mailbox.callAsync(() => rm.registerJobMaster(jobId, address)),
        declareRequiredResources: (requirements) => rm.mailbox.callAsync(() => rm.declareRequiredResources(requirements)),
        disconnectJobMaster: (jobId, cause, terminal) => rm.mailbox.callAsync(() => rm.disconnectJobMaster(jobId, cause, terminal)),
      },
      serveJobMaster: (address, gateway, mailbox) => rm.serveJobMaster(address, gateway, mailbox),
      withdrawJobMaster: (address) => rm.withdrawJobMaster(address),
      taskExecutor: (resourceId) => this.#driver.taskExecutorGateway(resourceId),
      reasonFor: (jobId) => this.#reasonFor(jobId),
      ...(this.#inspection ? { inspect: this.#inspection.inspect } : {}),
      ...(log ? { log } : {}),
      // User code at submit runs where the tasks would: a thread of its own, or a child process.
      taskModuleChecker: new DefaultTaskModuleChecker({ mode, timeoutMs: this.options['dispatcher.task-module-check.timeout'] }),
    });
    this.#fixedExecutors = executors === 'on-demand' ? 0 : executors;
  }

  readonly #fixedExecutors: number;

  /** Starts a cluster; with a fixed number of TaskExecutors, resolves once they have all registered. */
  static async start(options: MiniClusterOptions = {}): Promise<MiniCluster> {
    if (typeof options !== 'object' || options === null) throw new ConfigurationError('invalid-value', 'MiniCluster options must be an object', { option: '(options)' });
    const cluster = new MiniCluster(options);
    await cluster.#inspection?.ready;
    cluster.resourceManager.start();
    const rm = cluster.resourceManager;
    await rm.mailbox.callAsync(() => {
      for (let i = 0; i < cluster.#fixedExecutors; i++) cluster.#driver.requestResource(cluster.#spec, null);
    });
    try {
      await cluster.#waitForExecutors(cluster.#fixedExecutors);
    } catch (error) {
      await cluster.close();
      throw error;
    }
    return cluster;
  }

  /**
   * The Stately inspector relay's page, with its token (`http://localhost:<port>/?token=…`; the
   * port picked when `inspect.stately.port` is 0), or null when the cluster was not started with
   * `inspect: { stately }`. Only holders of this URL can watch or send events.
   */
  get inspectorUrl(): string | null {
    return this.#inspection?.url ?? null;
  }

  /** Starts one more TaskExecutor of the configured shape; resolves when it has registered. */
  async addTaskExecutor(): Promise<ResourceID> {
    this.#requireOpen('addTaskExecutor');
    const resourceId = await this.resourceManager.mailbox.callAsync(() => this.#driver.requestResource(this.#spec, null));
    await this.#waitUntil(() => this.resourceManager.slotManager.tracker.getTaskManager(resourceId) !== undefined, () => `TaskExecutor ${resourceId} did not register`, 'addTaskExecutor', () =>
      // The driver forgets a worker whose link closed: it will never register.
      this.#driver.workers().some((worker) => worker.resourceId === resourceId) ? undefined : `TaskExecutor ${resourceId} ended before it registered`,
    );
    return resourceId;
  }

  /** Stops a TaskExecutor at once, as a crash would (for failover drills). */
  killTaskExecutor(resourceId: ResourceID): boolean {
    this.#requireOpen('killTaskExecutor');
    return this.#driver.killWorker(resourceId);
  }

  /** Validates and submits a job. Throws JobGraphError for a bad graph or task module. */
  async submitJob(job: JobGraphSpec | JobGraph): Promise<JobClient> {
    this.#requireOpen('submitJob');
    return this.dispatcher.submitJob(job);
  }

  listJobs(): JobSummary[] {
    return this.dispatcher.listJobs();
  }

  /** Cancels a job of this cluster (IllegalArgumentError for an unknown JobID). */
  async cancelJob(jobId: JobID): Promise<void> {
    this.#requireOpen('cancelJob');
    return this.dispatcher.cancelJob(jobId);
  }

  /** The cluster now: executors and their slots (which subtask runs where), waiting requests with reasons, jobs. */
  overview(): ClusterOverview {
    const tracker = this.resourceManager.slotManager.tracker;
    const tasksBySlot = new Map<string, string[]>();
    for (const job of this.dispatcher.listJobs()) {
      for (const e of this.dispatcher.getJobMaster(job.jobId)?.executions() ?? []) {
        if (e.allocationId !== null && !['finished', 'failed', 'canceled'].includes(e.state)) tasksBySlot.set(e.allocationId, [...(tasksBySlot.get(e.allocationId) ?? []), `${e.key} (${e.state})`]);
      }
    }
    const taskExecutors = [...tracker.taskManagers].map((tm) => {
      // Dynamic slots take from the same budget: a free static slot is usable only while what is
      // left still covers it (taken in index order, as the SlotManager would).
      let left = tm.available;
      const usable = (profile: ResourceProfile) => {
        if (!left.allFieldsNoLessThan(profile)) return false;
        left = left.subtract(profile);
        return true;
      };
      const slots = [...tm.staticSlots, ...tm.dynamicSlots.values()].map((slot) => ({
        slot: slot.index >= 0 ? `${slot.index}` : 'dynamic',
        state: slot.state === 'free' && !usable(slot.profile) ? ('unavailable' as const) : slot.state,
        jobId: slot.jobId,
        resourceProfile: slot.profile.toString(),
        tasks: slot.allocationId === null ? [] : (tasksBySlot.get(slot.allocationId) ?? []),
      }));
      return { resourceId: tm.resourceId, mode: this.mode, utilization: tm.utilization, available: tm.available.toString(), slots };
    });
    const pendingRequests = this.resourceManager.slotManager.getPendingRequests().map((r) => ({
      jobId: r.jobId,
      missing: r.kind === 'requirement' ? r.missing : 1,
      profile: r.resourceProfile.isUnknown() ? 'default slot' : r.resourceProfile.toString(),
      why: r.description,
    }));
    return { taskExecutors, pendingWorkers: tracker.numberOfPendingTaskManagers, pendingRequests, jobs: this.dispatcher.listJobs() };
  }

  /**
   * Each running TaskExecutor's figures, asked of it now: its slots by state, running tasks, and
   * its task threads (booted so far, spare, in use). A TaskExecutor that does not answer within
   * rpc.ask.timeout is left out.
   */
  async taskExecutorMetrics(): Promise<TaskExecutorMetricsWire[]> {
    this.#requireOpen('taskExecutorMetrics');
    const asked = this.#driver.workers().map((worker) => this.#driver.taskExecutorGateway(worker.resourceId)?.requestMetrics());
    const answers = await Promise.allSettled(asked.filter((call) => call !== undefined));
    return answers.flatMap((answer) => (answer.status === 'fulfilled' ? [answer.value] : []));
  }

  /** Cancels running jobs, frees their slots, stops every TaskExecutor; the same promise every time. */
  close(): Promise<void> {
    this.#closed ??= (async () => {
      await this.dispatcher.close(this.options['rpc.ask.timeout']);
      await this.resourceManager.close();
      await this.#inspection?.close();
    })();
    return this.#closed;
  }

  #reasonFor(jobId: JobID): string {
    const reasons = this.resourceManager.slotManager.getPendingRequests().filter((r) => r.jobId === jobId);
    if (reasons.length === 0) return 'no reason reported by the SlotManager';
    return reasons.map((r) => `${r.kind === 'requirement' ? r.missing : 1} × ${r.resourceProfile.isUnknown() ? 'default slot' : r.resourceProfile}: ${r.reason === null ? r.description : describeWaitReason(r.reason)}`).join('; ');
  }

  /**
   * Waits until `count` TaskExecutors are registered with their slots, i.e. in the SlotManager (a
   * TaskExecutor registers at the ResourceManager first and sends its slot report after).
   */
  #waitForExecutors(count: number): Promise<void> {
    const tracker = this.resourceManager.slotManager.tracker;
    return this.#waitUntil(() => tracker.numberOfTaskManagers >= count, () => `only ${tracker.numberOfTaskManagers} of ${count} TaskExecutors registered`, 'start');
  }

  /** Polls `done` until it holds; fails at the start timeout, at once when the cluster closes or `lost` names why it never will. */
  async #waitUntil(done: () => boolean, failure: () => string, operation: string, lost: () => string | undefined = () => undefined): Promise<void> {
    const deadline = Date.now() + this.#startTimeoutMs;
    while (!done()) {
      this.#requireOpen(operation);
      const why = lost();
      if (why !== undefined) throw new IllegalStateError(why, { component: 'MiniCluster', operation, state: 'starting', allowed: ['started'] });
      if (Date.now() > deadline) {
        throw new IllegalStateError(`${failure()} within ${this.#startTimeoutMs} ms`, { component: 'MiniCluster', operation, state: 'starting', allowed: ['started'] });
      }
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }

  #requireOpen(operation: string): void {
    if (this.#closed !== null) throw new IllegalStateError(`MiniCluster.${operation}: the cluster is closed`, { component: 'MiniCluster', operation, state: 'closed', allowed: ['started'] });
  }
}

