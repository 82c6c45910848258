/**
 * A ResourceManagerDriver whose TaskExecutors run in this thread, each behind its own Link over a
 * memory transport pair: the same gateways on the same channels as LocalResourceManagerDriver
 * (main side: wireWorkerLink, as every driver — the ResourceManager served on `rm`, JobMasters on
 * `jm:<address>`, the TaskExecutor connected on `te` with its submissions batched, each gateway's
 * control methods by comlink on its `/control` channel) and taskExecutorMain.ts (worker side), with
 * a task runner that computes outputs in-process instead of piscina threads. Every message between
 * the ResourceManager or a JobMaster and a TaskExecutor crosses the memory transport, structured-cloned.
 */
import type { Clock } from '../../lib/core/clock.js';
import { ResourceID } from '../../lib/core/ids.js';
import type { ResolvedOptions } from '../../lib/core/options.js';
import { connectGateway, serveGateway } from '../../lib/rpc/connect.js';
import {
  CONTROL_METHODS,
  GATEWAY,
  type JobMasterGateway,
  type ResourceManagerGateway,
  type TaskExecutorGateway,
} from '../../lib/rpc/gateways.js';
import { Link } from '../../lib/rpc/Link.js';
import { memoryTransportPair } from '../../lib/rpc/memoryTransport.js';
import type { Transport } from '../../lib/rpc/Transport.js';
import type {
  ResourceManagerDriver,
  ResourceManagerDriverContext,
  WorkerInfo,
} from '../../lib/resourcemanager/ResourceManagerDriver.js';
import type { PendingTaskManagerID } from '../../lib/resourcemanager/slotmanager/PendingTaskManager.js';
import type { WorkerResourceSpec } from '../../lib/resourcemanager/slotmanager/WorkerResourceSpec.js';
import { wireWorkerLink } from '../../lib/resourcemanager/workerLink.js';
import type { TaskInvocation } from '../../lib/taskexecutor/SlotTaskPool.js';
import { TaskExecutor, type SlotTaskRunner } from '../../lib/taskexecutor/TaskExecutor.js';
import { watched } from './support/transports.js';

/** What the in-process runner returns for one attempt. */
export type ComputeOutput = (invocation: TaskInvocation) => unknown;

interface MemoryWorker extends WorkerInfo {
  readonly link: Link;
  readonly taskExecutor: TaskExecutor;
  readonly gateway: TaskExecutorGateway;
}

/** A transport that records the channel names of every frame it sends. */
const recording = (inner: Transport, channels: Set<string>): Transport =>
  watched(inner, (batch) => {
    const frames = batch as unknown[];
    for (let i = 0; i < frames.length; i += 2) if (typeof frames[i] === 'string') channels.add(frames[i] as string);
  });

export class MemoryResourceManagerDriver implements ResourceManagerDriver {
  readonly mode = 'thread' as const;
  /** Channel names of the frames sent, either way, over every worker's link. */
  readonly channelsUsed = new Set<string>();
  readonly #workers = new Map<ResourceID, MemoryWorker>();
  #context: ResourceManagerDriverContext | null = null;
  #started = 0;

  constructor(
    private readonly options: ResolvedOptions,
    private readonly clock: Clock,
    private readonly compute: ComputeOutput,
  ) {}

  start(context: ResourceManagerDriverContext): void {
    this.#context = context;
  }

  requestResource(spec: WorkerResourceSpec, pendingWorkerId: PendingTaskManagerID | null): ResourceID {
    const context = this.#context;
    if (context === null) throw new Error('the driver was not started');
    const resourceId = ResourceID.parse(`taskexecutor-memory-${++this.#started}`);
    const [mainEnd, workerEnd] = memoryTransportPair();

    // The main side, as LocalResourceManagerDriver wires it.
    const link = new Link(`memory ${resourceId}`, recording(mainEnd, this.channelsUsed));
    const timeoutMs = this.options['rpc.ask.timeout'];
    const gateway = wireWorkerLink(link, context, { resourceId, timeoutMs, clock: this.clock });

    // The worker side, as taskExecutorMain.ts wires it.
    const workerLink = new Link(`TaskExecutor ${resourceId}`, recording(workerEnd, this.channelsUsed));
    const taskExecutor = new TaskExecutor({
      resourceId,
      mode: 'thread',
      clock: this.clock,
      configuration: {
        ...this.options,
        'taskmanager.numberOfTaskSlots': spec.numberOfSlots,
        'taskmanager.cpu.cores': spec.totalResourceProfile.cpuCores,
        'taskmanager.memory.task.heap.size': spec.totalResourceProfile.taskHeapMemory,
        'taskmanager.memory.task.off-heap.size': spec.totalResourceProfile.taskOffHeapMemory,
        'taskmanager.memory.managed.size': spec.totalResourceProfile.managedMemory,
        'taskmanager.memory.network.size': spec.totalResourceProfile.networkMemory,
        'taskmanager.extended-resources': spec.totalResourceProfile.extendedResources,
      },
      ...(pendingWorkerId === null ? {} : { pendingWorkerId }),
      resourceManager: connectGateway<ResourceManagerGateway>(workerLink, 'rm', {
        gateway: GATEWAY.resourceManager,
        timeoutMs,
        clock: this.clock,
        endpoint: 'ResourceManager',
        control: CONTROL_METHODS.resourceManager,
      }),
      connectJobMaster: (address) =>
        connectGateway<JobMasterGateway>(workerLink, `jm:${address}`, {
          gateway: GATEWAY.jobMaster,
          timeoutMs,
          clock: this.clock,
          endpoint: address,
          control: CONTROL_METHODS.jobMaster,
        }),
      createTaskRunner: () => this.#runner(),
      onTerminated: (_code, reason) => workerLink.close(`the TaskExecutor stopped: ${reason}`),
    });
    serveGateway(workerLink, 'te', taskExecutor, {
      mailbox: taskExecutor.mailbox,
      control: CONTROL_METHODS.taskExecutor,
    });

    const worker: MemoryWorker = {
      resourceId,
      pendingWorkerId,
      spec,
      startedAt: this.clock.now(),
      state: 'starting',
      link,
      taskExecutor,
      gateway,
    };
    this.#workers.set(resourceId, worker);
    link.onClosed((reason) => {
      if (this.#workers.get(resourceId) !== worker) return;
      this.#workers.delete(resourceId);
      context.onWorkerTerminated(resourceId, reason);
    });
    taskExecutor.start();
    return resourceId;
  }

  /** Runs each attempt at once, in this thread: `compute` gives its output. */
  #runner(): SlotTaskRunner {
    return {
      run: async (invocation, options) => {
        options?.listener?.started();
        return { output: this.compute(invocation) };
      },
      cancel: () => false,
      close: async () => {},
    };
  }

  releaseResource(resourceId: ResourceID, reason: string): void {
    const worker = this.#workers.get(resourceId);
    if (worker === undefined || worker.state === 'stopping') return;
    worker.state = 'stopping';
    worker.gateway.shutdown(reason).catch(() => worker.link.close(reason));
  }

  cancelPendingWorker(): void {}

  markRegistered(resourceId: ResourceID): void {
    const worker = this.#workers.get(resourceId);
    if (worker?.state === 'starting') worker.state = 'running';
  }

  taskExecutorGateway(resourceId: ResourceID): TaskExecutorGateway | undefined {
    const worker = this.#workers.get(resourceId);
    return worker === undefined || worker.link.closed ? undefined : worker.gateway;
  }

  workers(): readonly WorkerInfo[] {
    return [...this.#workers.values()].map(({ resourceId, pendingWorkerId, spec, startedAt, state }) => ({
      resourceId,
      pendingWorkerId,
      spec,
      startedAt,
      state,
    }));
  }

  async close(): Promise<void> {
    const workers = [...this.#workers.values()];
    // Each TaskExecutor stops too: left running, it would try to register for as long as its registration timeout.
    await Promise.all(
      workers.map(({ taskExecutor }) =>
        taskExecutor.mailbox.callAsync(() => taskExecutor.shutdown('the driver is closing')).catch(() => {}),
      ),
    );
    for (const worker of workers) worker.link.close('the driver is closing');
  }
}
