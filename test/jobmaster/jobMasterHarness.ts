/**
 * The JobMaster alone (no threads), as the JobMaster tests drive it: a fake ResourceManager and fake
 * TaskExecutors that record what they are asked, slot offers and task states driven by the test, a
 * simulated clock for restart delays and slot request timeouts.
 */
import { SimulatedClock } from '../../lib/core/clock.js';
import { AllocationID, ResourceID, type ExecutionAttemptID, JobID } from '../../lib/core/ids.js';
import { resolveOptions, type SlotwiseOptions } from '../../lib/core/options.js';
import { ResourceProfile, type ResourceSpec } from '../../lib/core/ResourceProfile.js';
import { JobGraph, type JobGraphSpec } from '../../lib/jobmaster/JobGraph.js';
import { JobMaster, type JobEvent } from '../../lib/jobmaster/JobMaster.js';
import type { JobMasterOptions } from '../../lib/jobmaster/JobMasterOptions.js';
import type { TaskExecutorGateway } from '../../lib/rpc/gateways.js';
import type {
  BlockedTaskManagerWire,
  ExecutionState,
  JobMasterRegistrationResponse,
  ResourceRequirementsWire,
  SlotOfferWire,
  TaskDeploymentDescriptor,
} from '../../lib/rpc/protocol.js';

export const DEFAULT_SLOT: ResourceSpec = { cpuCores: 1, taskHeapMemory: '128m' };

export class Harness {
  readonly clock = new SimulatedClock(0);
  readonly declared: ResourceRequirementsWire[] = [];
  readonly disconnected: Array<{ cause: string; terminal: boolean }> = [];
  /** The TaskExecutors the JobMaster asked the ResourceManager to block (speculative execution), in order. */
  readonly blocked: BlockedTaskManagerWire[] = [];
  readonly submitted: TaskDeploymentDescriptor[] = [];
  readonly canceled: ExecutionAttemptID[] = [];
  readonly freed: AllocationID[] = [];
  /** The TaskExecutors told to let go of the job's result partitions, in order. */
  readonly partitionsReleased: ResourceID[] = [];
  /** Partitions released before the job's end, every consumer having read them: where, and which. */
  readonly partitionsConsumed: Array<[ResourceID, readonly ExecutionAttemptID[]]> = [];
  readonly events: JobEvent[] = [];
  readonly executors = new Map<ResourceID, TaskExecutorGateway>();
  readonly master: JobMaster;
  registerFails: Error | null = null;
  /** When set, the ResourceManager refuses every declaration of requirements with it. */
  declareFails: Error | null = null;
  /** What the JobMaster logged, with its fields and level. */
  readonly logged: Array<{ message: string; fields: Record<string, unknown>; level: string }> = [];
  /** TaskExecutors added and not registered at the JobMaster yet: they register before their first offer. */
  readonly #connecting = new Set<ResourceID>();
  /** When set, the TaskExecutors refuse every submitTask with it. */
  submitFails: Error | null = null;

  /** `random`: the JobMaster's random source (the exponential delay's jitter), to make it deterministic. */
  /** `recovery`: a recovered job's restored subtasks, and a listener of each subtask that finishes. */
  constructor(
    spec: Omit<JobGraphSpec, 'name'>,
    options: SlotwiseOptions = {},
    random?: () => number,
    recovery: Pick<JobMasterOptions, 'restored' | 'onSubtaskFinished'> = {},
  ) {
    const resolved = resolveOptions({ 'restart-strategy.fixed-delay.delay': '1 s', ...options });
    this.master = new JobMaster({
      jobId: JobID.generate(),
      jobGraph: JobGraph.create({ name: 'job', ...spec }, resolved),
      address: 'jobmaster-test',
      options: resolved,
      clock: this.clock,
      ...(random === undefined ? {} : { random }),
      resourceManager: {
        registerJobMaster: async () => {
          if (this.registerFails) throw this.registerFails;
        },
        declareRequiredResources: async (requirements) => {
          if (this.declareFails) throw this.declareFails;
          this.declared.push(requirements);
        },
        disconnectJobMaster: async (_jobId, cause, terminal) => void this.disconnected.push({ cause, terminal }),
        notifyNewBlockedNodes: async (blocked) => void this.blocked.push(...blocked),
      },
      taskExecutor: (resourceId) => this.executors.get(resourceId),
      reasonFor: () => 'no TaskExecutor has 4 cores',
      onEvent: (event) => this.events.push(event),
      log: (message, fields = {}, level = 'info') => this.logged.push({ message, fields: { ...fields }, level }),
      ...recovery,
    });
  }

  addExecutor(name: string): ResourceID {
    const resourceId = ResourceID.parse(name);
    const gateway = {
      submitTask: async (descriptor: TaskDeploymentDescriptor) => {
        if (this.submitFails) throw this.submitFails;
        this.submitted.push(descriptor);
      },
      cancelTask: async (attempt: ExecutionAttemptID) => void this.canceled.push(attempt),
      freeSlot: async (allocationId: AllocationID) => void this.freed.push(allocationId),
      releasePartitions: async (_jobId: JobID, ids?: readonly ExecutionAttemptID[]) => {
        if (ids === undefined) this.partitionsReleased.push(resourceId);
        else this.partitionsConsumed.push([resourceId, ids]);
      },
    } as unknown as TaskExecutorGateway;
    this.executors.set(resourceId, gateway);
    this.#connecting.add(resourceId);
    return resourceId;
  }

  /** Registers a TaskExecutor at the JobMaster, as its JobTable does when it connects for the job. */
  async register(resourceId: ResourceID): Promise<JobMasterRegistrationResponse> {
    this.#connecting.delete(resourceId);
    return this.master.mailbox.callAsync(() => this.master.registerTaskManager(this.master.jobId, resourceId));
  }

  /** Lets the mailbox and every promise chain run. */
  async settle(): Promise<void> {
    for (let i = 0; i < 20; i++) await new Promise((resolve) => setImmediate(resolve));
  }

  async start(): Promise<void> {
    this.master.start();
    await this.settle();
  }

  /** The latest declaration, as `profile → count` (UNKNOWN as 'UNKNOWN'). */
  lastDeclaration(): Record<string, number> {
    const last = this.declared.at(-1);
    return Object.fromEntries(
      (last?.requirements ?? []).map((r) => [
        ResourceProfile.fromJSON(r.resourceProfile).isUnknown()
          ? 'UNKNOWN'
          : ResourceProfile.fromJSON(r.resourceProfile).toString(),
        r.numberOfRequiredSlots,
      ]),
    );
  }

  async offer(resourceId: ResourceID, count: number, spec: ResourceSpec = DEFAULT_SLOT): Promise<AllocationID[]> {
    const offers: SlotOfferWire[] = Array.from({ length: count }, (_, index) => ({
      allocationId: AllocationID.generate(),
      index,
      resourceProfile: ResourceProfile.fromSpec(spec).toJSON(),
    }));
    // A TaskExecutor added here registers before its first offer, as a real one connects for the job.
    if (this.#connecting.has(resourceId)) await this.register(resourceId);
    const accepted = await this.master.mailbox.callAsync(() => this.master.offerSlots(resourceId, offers));
    await this.settle();
    return accepted;
  }

  async report(
    descriptor: TaskDeploymentDescriptor,
    state: ExecutionState,
    extra: { output?: unknown; error?: { name: string; message: string } } = {},
  ): Promise<void> {
    await this.master.mailbox.callAsync(() =>
      this.master.updateTaskExecutionState({
        jobId: descriptor.jobId,
        executionAttemptId: descriptor.executionAttemptId,
        state,
        resourceId: ResourceID.parse('taskexecutor-a'),
        ...extra,
      }),
    );
    await this.settle();
  }

  /** Reports running then finished with `output`. */
  async finish(descriptor: TaskDeploymentDescriptor, output: unknown): Promise<void> {
    await this.report(descriptor, 'running');
    await this.report(descriptor, 'finished', { output });
  }

  /**
   * Reports running then finished on `resourceId`, its output kept there as a result partition of `bytes` per
   * subpartition (one subpartition of 8 bytes by default).
   */
  async finishKept(descriptor: TaskDeploymentDescriptor, resourceId: ResourceID, bytes: number[] = [8]): Promise<void> {
    await this.report(descriptor, 'running');
    await this.master.mailbox.callAsync(() =>
      this.master.updateTaskExecutionState({
        jobId: descriptor.jobId,
        executionAttemptId: descriptor.executionAttemptId,
        state: 'finished',
        resourceId,
        partition: { partitionId: descriptor.executionAttemptId, resourceId, bytes },
      }),
    );
    await this.settle();
  }

  submittedFor(vertexId: string, subtask = 0): TaskDeploymentDescriptor[] {
    return this.submitted.filter((d) => d.vertexId === vertexId && d.subtaskIndex === subtask);
  }

  statuses(): string[] {
    return this.events.filter((e) => e.type === 'status').map((e) => (e as { status: string }).status);
  }

  async advance(ms: number): Promise<void> {
    this.clock.increment(ms);
    await this.settle();
  }
}
