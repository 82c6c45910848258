/**
 * The ResourceManager (Flink's ResourceManager with its FineGrainedSlotManager): TaskExecutors register
 * with it, heartbeat, report their slots; JobMasters declare what their jobs need; the SlotManager
 * matches the two. Each worker it knows lives through machines/workerLifecycle.machine.ts (starting,
 * registered, lost with heartbeat.timeout to come back, released, stale — never to register again),
 * an actor per worker on its mailbox's clock; a fixed cluster's workers gone for good are replaced by
 * FixedWorkers (Flink's ActiveResourceManager). Workers are started, stopped and reached through its
 * ResourceManagerDriver.
 */
import { createActor, type Actor, type InspectionEvent } from 'xstate';
import { workerLifecycleMachine } from '../../machines/workerLifecycle.machine.js';
import { mailboxClock, systemClock, type Clock } from '../core/clock.js';
import type { RuntimeLog } from '../core/Logger.js';
import { describeError, IllegalArgumentError } from '../core/errors.js';
import { JobID, type ResourceID, ResourceManagerId, type AllocationID } from '../core/ids.js';
import { resolveOptions, type ResolvedOptions } from '../core/options.js';
import { ResourceProfile } from '../core/ResourceProfile.js';
import type { JobMasterGateway, ResourceManagerGateway } from '../rpc/gateways.js';
import { HeartbeatMonitor } from '../rpc/HeartbeatMonitor.js';
import { MainThreadExecutor } from '../rpc/MainThreadExecutor.js';
import type {
  RegistrationResponse,
  ResourceRequirementsWire,
  SlotReportWire,
  TaskExecutorRegistrationWire,
  PartitionFiguresWire,
} from '../rpc/protocol.js';
import { slotReportFromWire } from '../rpc/slotReportWire.js';
import { requirementsFromWire } from './requirementsWire.js';
import { FixedWorkers } from './FixedWorkers.js';
import type { ResourceManagerDriver } from './ResourceManagerDriver.js';
import { FineGrainedSlotManager } from './slotmanager/FineGrainedSlotManager.js';
import type { PendingTaskManagerID } from './slotmanager/PendingTaskManager.js';
import type { ResourceAllocator } from './slotmanager/ResourceAllocator.js';
import type { ResourceEventListener } from './slotmanager/ResourceEventListener.js';
import { WorkerResourceSpec } from './slotmanager/WorkerResourceSpec.js';
import { jobMasterInMailbox, slotGateway, workerGateway } from './workerGateways.js';
import { checkRegistration, reportWithoutRevoked, type TaskExecutorRegistration } from './WorkerRegistration.js';

import { StaleWorkers } from './StaleWorkers.js';
import type {
  ResourceManagerOptions,
  TaskExecutorLossCause,
  TaskExecutorRegistrationEvent,
} from './ResourceManagerOptions.js';

export type { ResourceManagerOptions, TaskExecutorLossCause, TaskExecutorRegistrationEvent };

export class ResourceManager implements ResourceManagerGateway {
  /** Who this ResourceManager is to its TaskExecutors: its slot requests carry it. */
  readonly resourceManagerId: ResourceManagerId = ResourceManagerId.generate();
  readonly mailbox: MainThreadExecutor;
  readonly options: ResolvedOptions;
  readonly slotManager: FineGrainedSlotManager;
  readonly #driver: ResourceManagerDriver;
  readonly #clock: Clock;
  readonly #log: RuntimeLog;
  readonly #taskExecutors = new Map<ResourceID, TaskExecutorRegistration>();
  /** Every live worker and where it is in its life (machines/workerLifecycle); a stale one leaves for #stale. */
  readonly #workers = new Map<ResourceID, Worker>();
  /** Why workers that went stale may not register again (the last STALE_KEPT). */
  readonly #stale = new StaleWorkers();
  /** With workersOnDemand false: the workers that make up the fixed cluster, replaced when gone for good. */
  readonly #fixedWorkers: FixedWorkers;
  readonly #heartbeats: HeartbeatMonitor<ResourceID>;
  readonly #onDemand: boolean;
  readonly #jobMasters = new Map<JobID, { address: string; gateway: JobMasterGateway }>();
  readonly #jobMastersByAddress = new Map<string, JobMasterGateway>();
  readonly #withdrawnListeners = new Set<(address: string) => void>();
  readonly #onLost: NonNullable<ResourceManagerOptions['onTaskExecutorLost']>;
  readonly #registrationListeners = new Set<(event: TaskExecutorRegistrationEvent) => void>();
  /** Where the workers' lifecycles report (the dashboard's actors view), as the SlotManager's does. */
  readonly #inspect: ((event: InspectionEvent) => void) | undefined;
  #registrations = 0;
  #closed = false;

  constructor(options: ResourceManagerOptions) {
    this.options = resolveOptions(options.configuration ?? {});
    this.#driver = options.driver;
    this.#clock = options.clock ?? systemClock;
    this.#log = options.log ?? (() => {});
    this.#onLost = options.onTaskExecutorLost ?? (() => {});
    this.#inspect = options.inspect;
    this.mailbox = new MainThreadExecutor('ResourceManager', this.#clock, (error) =>
      this.#log(`uncaught in mailbox: ${describeError(error)}`, {}, 'error'),
    );
    this.#onDemand = options.workersOnDemand ?? true;
    this.#fixedWorkers = new FixedWorkers(this.#driver, this.#log, () => this.#closed);
    this.#heartbeats = new HeartbeatMonitor<ResourceID>({
      mailbox: this.mailbox,
      intervalMs: this.options['heartbeat.interval'],
      timeoutMs: this.options['heartbeat.timeout'],
      onRound: (targets) => this.#requestHeartbeats(targets),
      onTimeout: (resourceId, silentMs) => this.#heartbeatTimedOut(resourceId, silentMs),
      log: (message) => this.#log(message),
    });
    const allocator: ResourceAllocator = {
      isSupported: this.#onDemand,
      allocateWorker: (id, spec) => {
        this.#worker(this.#driver.requestResource(spec, id), id);
        return true;
      },
      cancelWorker: (id) => this.#driver.cancelPendingWorker(id),
      releaseWorker: (resourceId, reason) => {
        this.#workers.get(resourceId)?.actor.send({ type: 'RELEASED' });
        this.#driver.releaseResource(resourceId, reason);
      },
    };
    const listener: ResourceEventListener = options.listener ?? {};
    // The SlotManager's timers (its coalesced checks, idle releases, request timeouts) fire into our mailbox.
    this.slotManager = new FineGrainedSlotManager({
      configuration: this.options,
      workerSpec: WorkerResourceSpec.fromOptions(this.options),
      allocator,
      clock: mailboxClock(this.#clock, (fn) => this.mailbox.execute(fn)),
      execute: (task) => this.mailbox.execute(task),
      log: (message) => this.#log(`SlotManager: ${message}`),
      ...(options.inspect ? { inspect: options.inspect } : {}),
      // Delegating calls, not a spread: a listener that is a class instance keeps its methods.
      listener: {
        notEnoughResourcesAvailable: (...args) => listener.notEnoughResourcesAvailable?.(...args),
        resourceRequirementsTimedOut: (...args) => listener.resourceRequirementsTimedOut?.(...args),
        slotRequestFulfilled: (...args) => listener.slotRequestFulfilled?.(...args),
        slotRequestFailed: (...args) => listener.slotRequestFailed?.(...args),
        slotsLost: (jobId, allocationIds, resourceId, cause) => {
          const jobMaster = this.#jobMasters.get(jobId);
          for (const allocationId of allocationIds)
            void jobMaster?.gateway.notifySlotFreed(resourceId, allocationId, cause).catch(() => {});
          listener.slotsLost?.(jobId, allocationIds, resourceId, cause);
        },
      },
    });
  }

  /** Starts the SlotManager, the driver and the heartbeats. */
  start(): void {
    this.mailbox.execute(() => {
      this.slotManager.start();
      this.#driver.start({
        mailbox: this.mailbox,
        onWorkerTerminated: (resourceId, reason) =>
          this.mailbox.execute(() => this.#workerTerminated(resourceId, reason)),
        resourceManagerGateway: (resourceId) => workerGateway(this, resourceId, this.mailbox),
        jobMasterGateway: (address) => this.#jobMastersByAddress.get(address),
        onJobMasterWithdrawn: (listener) => {
          this.#withdrawnListeners.add(listener);
          return () => this.#withdrawnListeners.delete(listener);
        },
      });
      this.#heartbeats.start();
    });
  }

  /** Registered TaskExecutors, for the overview. */
  get taskExecutors(): readonly ResourceID[] {
    return [...this.#taskExecutors.keys()];
  }

  /** How a registered TaskExecutor runs, as its registration told: for the overview. */
  taskExecutorMode(resourceId: ResourceID): 'thread' | 'process' | undefined {
    return this.#taskExecutors.get(resourceId)?.info.mode;
  }

  /** A registered TaskExecutor's result partitions as its last heartbeat told: for the overview. */
  taskExecutorPartitions(resourceId: ResourceID): PartitionFiguresWire | null {
    return this.#taskExecutors.get(resourceId)?.partitions ?? null;
  }

  /** Tells `listener`, in the mailbox, each TaskExecutorRegistrationEvent (one that throws is logged); unsubscribes. */
  onTaskExecutorRegistration(listener: (event: TaskExecutorRegistrationEvent) => void): () => void {
    this.#registrationListeners.add(listener);
    return () => void this.#registrationListeners.delete(listener);
  }

  // ------------------------------------------------------------------ ResourceManagerGateway (as served to one worker)

  async registerTaskExecutor(registration: TaskExecutorRegistrationWire): Promise<RegistrationResponse> {
    this.mailbox.assertRunningInMainThread('ResourceManager.registerTaskExecutor');
    checkRegistration(registration);
    const { resourceId } = registration;
    const refuse = (reason: string): RegistrationResponse => {
      this.#log(`refused the registration of ${resourceId}: ${reason}`, { resourceId }, 'warn');
      return { kind: 'refused', reason };
    };
    const stale = this.#stale.reasonOf(resourceId);
    if (stale !== null) return refuse(`stale: TaskExecutor ${resourceId} may not register again: ${stale}`);
    const gateway = this.#driver.taskExecutorGateway(resourceId);
    if (gateway === undefined)
      return refuse(`unknown: no live worker ${resourceId} was started by this ResourceManager`);
    const previous = this.#taskExecutors.get(resourceId);
    const worker = this.#workers.get(resourceId) ?? this.#worker(resourceId, null);
    const lost = worker.actor.getSnapshot().matches('lost') ? worker.actor.getSnapshot().context.lostCause : null;
    const revoked = new Map(previous?.revoked);
    if (previous !== undefined) {
      // The same worker registering again (it lost us): replace the old registration. Its slots stay
      // in the SlotManager, and the slot report that follows reconciles them (nobody is told they were lost).
      this.#log(`TaskExecutor ${resourceId} registers again; replacing its registration`, { resourceId });
    } else if (lost !== null) {
      // Declared lost, but alive (Flink's reconnect): a new registration. Its slot report puts it
      // back in the SlotManager; the slots whose jobs were told they are lost are freed on it.
      for (const allocationId of worker.revokedOnLoss) revoked.set(allocationId, 'to-free');
      worker.revokedOnLoss = new Set();
      this.#log(`TaskExecutor ${resourceId}, declared lost (${lost}), registers again`, { resourceId });
    }
    const registrationId = `registration-${++this.#registrations}`;
    this.#taskExecutors.set(resourceId, {
      resourceId,
      registrationId,
      gateway,
      info: registration,
      inSlotManager: previous?.inSlotManager ?? false,
      partitions: previous?.partitions ?? null,
      revoked,
    });
    this.#heartbeats.monitorTarget(resourceId);
    worker.actor.send({ type: 'REGISTERED' });
    if (!this.#onDemand && !this.#fixedWorkers.has(resourceId))
      this.#fixedWorkers.remember(resourceId, this.#specOf(resourceId));
    this.#driver.markRegistered(resourceId);
    return {
      kind: 'accepted',
      registrationId,
      resourceManagerId: this.resourceManagerId,
      heartbeatIntervalMs: this.options['heartbeat.interval'],
      heartbeatTimeoutMs: this.options['heartbeat.timeout'],
    };
  }

  async sendSlotReport(resourceId: ResourceID, registrationId: string, report: SlotReportWire): Promise<void> {
    this.mailbox.assertRunningInMainThread('ResourceManager.sendSlotReport');
    const registration = this.#taskExecutors.get(resourceId);
    if (registration === undefined || registration.registrationId !== registrationId) {
      throw new IllegalArgumentError(
        'invalid-value',
        `sendSlotReport: ${resourceId} is not registered under ${registrationId}`,
        { argument: 'registrationId' },
      );
    }
    const info = registration.info;
    const result = this.slotManager.registerTaskManager(
      {
        resourceId,
        host: info.host,
        totalResourceProfile: ResourceProfile.fromJSON(info.totalResourceProfile),
        defaultSlotResourceProfile: ResourceProfile.fromJSON(info.defaultSlotResourceProfile),
        numberOfStaticSlots: info.numberOfSlots,
        gateway: slotGateway(registration.gateway, this.resourceManagerId),
        ...(info.pendingWorkerId === undefined
          ? {}
          : { pendingWorkerId: info.pendingWorkerId as PendingTaskManagerID }),
      },
      slotReportFromWire(reportWithoutRevoked(registration, report, this.mailbox, this.#log)),
    );
    if (result.kind === 'ignored') return; // registered before: the report was reconciled as a slot report
    if (result.kind === 'rejected') {
      this.#log(`TaskExecutor ${resourceId} rejected by the SlotManager: ${result.reason}`, { resourceId }, 'warn');
      this.#fixedWorkers.forget(resourceId); // refused on purpose: no replacement
      this.#closeConnection(resourceId, result.reason, 'REJECTED', 'rejected');
      this.#driver.releaseResource(resourceId, result.reason);
      return;
    }
    registration.inSlotManager = true;
    this.#tell({ type: 'registered', resourceId });
  }

  async notifySlotAvailable(resourceId: ResourceID, allocationId: AllocationID): Promise<void> {
    this.mailbox.assertRunningInMainThread('ResourceManager.notifySlotAvailable');
    if (!this.#taskExecutors.get(resourceId)?.inSlotManager) return;
    // Only the executor holding a slot may free it.
    if (this.slotManager.tracker.getSlot(allocationId)?.taskManager.resourceId !== resourceId) return;
    this.slotManager.freeSlot(allocationId);
  }

  async disconnectTaskExecutor(resourceId: ResourceID, cause: string): Promise<void> {
    this.mailbox.assertRunningInMainThread('ResourceManager.disconnectTaskExecutor');
    this.#closeConnection(resourceId, `it disconnected: ${cause}`, 'DISCONNECTED', 'disconnected', true);
  }

  async registerJobMaster(jobId: JobID, address: string): Promise<void> {
    this.mailbox.assertRunningInMainThread('ResourceManager.registerJobMaster');
    if (!JobID.is(jobId))
      throw new IllegalArgumentError('invalid-value', `registerJobMaster: jobId must be a JobID`, {
        argument: 'jobId',
      });
    if (!this.#jobMastersByAddress.has(address))
      throw new IllegalArgumentError(
        'invalid-value',
        `registerJobMaster: no JobMaster is served at ${address}; call serveJobMaster first`,
        { argument: 'address' },
      );
    this.#jobMasters.set(jobId, { address, gateway: this.#jobMastersByAddress.get(address)! });
  }

  async declareRequiredResources(requirements: ResourceRequirementsWire): Promise<void> {
    this.mailbox.assertRunningInMainThread('ResourceManager.declareRequiredResources');
    this.slotManager.declareResourceRequirements(requirementsFromWire(requirements));
  }

  async disconnectJobMaster(jobId: JobID, cause: string, terminal: boolean): Promise<void> {
    this.mailbox.assertRunningInMainThread('ResourceManager.disconnectJobMaster');
    this.#log(`JobMaster of ${JobID.short(jobId)} disconnected: ${cause}`, { jobId });
    if (terminal) this.slotManager.clearResourceRequirements(jobId);
    this.#jobMasters.delete(jobId);
  }

  async notifyNewBlockedNodes(blocked: Parameters<ResourceManagerGateway['notifyNewBlockedNodes']>[0]): Promise<void> {
    this.mailbox.assertRunningInMainThread('ResourceManager.notifyNewBlockedNodes');
    this.slotManager.blockTaskManagers(blocked);
  }

  // ------------------------------------------------------------------ for the main thread

  /**
   * Makes a JobMaster reachable at `address` for TaskExecutors (they connect when offered a slot of
   * its job). With its mailbox, every call runs there.
   */
  serveJobMaster(address: string, gateway: JobMasterGateway, mailbox?: MainThreadExecutor): void {
    this.#jobMastersByAddress.set(address, mailbox === undefined ? gateway : jobMasterInMailbox(gateway, mailbox));
  }

  withdrawJobMaster(address: string): void {
    this.#jobMastersByAddress.delete(address);
    for (const listener of this.#withdrawnListeners) listener(address);
  }

  /** Stops heartbeats, the SlotManager and every worker. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.mailbox
      .callAsync(() => {
        this.#heartbeats.stop();
        for (const worker of this.#workers.values()) worker.actor.stop();
        this.slotManager.close();
      })
      .catch(() => {});
    await this.#driver.close();
    this.mailbox.close();
  }

  // ------------------------------------------------------------------ heartbeats and losses

  /** Asks every monitored executor for its heartbeat (answered with its slot report). */
  #requestHeartbeats(targets: readonly ResourceID[]): void {
    for (const resourceId of targets) {
      const registration = this.#taskExecutors.get(resourceId);
      if (registration === undefined) continue;
      this.mailbox.whenComplete(registration.gateway.heartbeatFromResourceManager(), (report, error) => {
        // Closing: its SlotManager is suspended and takes no report (the answer may come after).
        if (this.#closed || this.#taskExecutors.get(resourceId) !== registration) return;
        if (error !== undefined) return; // silence counts against heartbeat.timeout
        this.#heartbeats.reportHeartbeat(resourceId);
        registration.partitions = report?.partitions ?? null;
        if (registration.inSlotManager && report !== undefined)
          this.slotManager.reportSlotStatus(
            resourceId,
            slotReportFromWire(reportWithoutRevoked(registration, report, this.mailbox, this.#log)),
          );
      });
    }
  }

  /**
   * Silent for heartbeat.timeout while we looked: lost (its slots freed, their jobs told), asked to
   * register again, and stopped if it does not within heartbeat.timeout.
   */
  #heartbeatTimedOut(resourceId: ResourceID, silentMs: number): void {
    const registration = this.#taskExecutors.get(resourceId);
    if (registration === undefined) return;
    const cause = `no heartbeat for ${silentMs} ms (heartbeat.timeout ${this.options['heartbeat.timeout']} ms)`;
    const revoked = new Set([
      ...registration.revoked.keys(),
      ...this.#closeConnection(resourceId, cause, null, 'heartbeat-timeout'),
    ]);
    this.#log(
      `TaskExecutor ${resourceId} lost: ${cause}; it may register again within heartbeat.timeout`,
      { resourceId },
      'warn',
    );
    // Flink's closeTaskManagerConnection: an executor that is alive reconnects at once.
    registration.gateway.disconnectResourceManager(`declared lost: ${cause}`).catch(() => {});
    // Registered, hence known (its lifecycle began at its start or its registration).
    const worker = this.#workers.get(resourceId);
    if (worker === undefined) return;
    worker.revokedOnLoss = revoked;
    worker.actor.send({ type: 'HEARTBEAT_TIMED_OUT', cause });
  }

  /** Lost and not registered again in time (its lifecycle's deadline): hung, or gone. Stopped; a fixed one replaced. */
  #notBackInTime(resourceId: ResourceID, lostCause: string): void {
    const reason = `${lostCause}, and it did not register again within heartbeat.timeout`;
    const replacement = this.#fixedWorkers.replace(resourceId, reason);
    const stopped = replacement === undefined ? 'its worker was stopped' : `${replacement} was started in its place`;
    this.#workers.get(resourceId)?.actor.send({ type: 'STOPPED', reason: `${reason}; ${stopped}` });
    this.#driver.releaseResource(resourceId, reason);
  }

  #workerTerminated(resourceId: ResourceID, reason: string): void {
    this.#log(`worker ${resourceId} ended: ${reason}`, { resourceId });
    const worker = this.#workers.get(resourceId) ?? this.#worker(resourceId, null);
    const snapshot = worker.actor.getSnapshot();
    const lostCause = snapshot.context.lostCause;
    const released = snapshot.matches('released');
    const ended = lostCause === null ? `its worker ended: ${reason}` : `${lostCause}, then its worker ended: ${reason}`;
    const replacement = this.#fixedWorkers.replace(resourceId, ended);
    worker.actor.send({
      type: 'ENDED',
      reason: replacement === undefined ? ended : `${ended}; ${replacement} was started in its place`,
    });
    this.#closeConnection(resourceId, `its worker ended: ${reason}`, null, released ? null : 'worker-exited', true);
    this.#tell({ type: 'worker-ended', resourceId });
  }

  #tell(event: TaskExecutorRegistrationEvent): void {
    for (const listener of [...this.#registrationListeners]) {
      try {
        listener(event);
      } catch (error) {
        this.#log(`a TaskExecutor registration listener threw: ${describeError(error)}`, {}, 'warn');
      }
    }
  }

  /** The spec a fixed worker was started with (the driver knows it), else the one the options describe. */
  #specOf(resourceId: ResourceID): WorkerResourceSpec {
    const started = this.#driver.workers().find((worker) => worker.resourceId === resourceId);
    return started?.spec ?? WorkerResourceSpec.fromOptions(this.options);
  }

  /**
   * Flink's closeTaskManagerConnection: the SlotManager frees its slots and tells their jobs; the
   * allocations it held there. `stale`: the lifecycle event that makes its ResourceID stale (its goodbye,
   * a refusal), null when its lifecycle moves otherwise. Gone for good (`gone`: a goodbye, its worker
   * ended), every JobMaster hears it first: the result partitions it kept are lost with it, slots or not.
   */
  #closeConnection(
    resourceId: ResourceID,
    cause: string,
    stale: 'DISCONNECTED' | 'REJECTED' | null,
    loss: TaskExecutorLossCause | null,
    gone = false,
  ): AllocationID[] {
    if (stale !== null) this.#workers.get(resourceId)?.actor.send({ type: stale, reason: cause });
    if (gone)
      for (const jm of this.#jobMasters.values())
        void jm.gateway.disconnectTaskManager(resourceId, cause).catch(() => {});
    const registration = this.#taskExecutors.get(resourceId);
    if (registration === undefined) return [];
    this.#taskExecutors.delete(resourceId);
    if (loss !== null && !this.#closed) this.#onLost(resourceId, loss, cause);
    this.#heartbeats.unmonitorTarget(resourceId);
    if (!registration.inSlotManager || this.slotManager.state !== 'started') return [];
    const taskManager = this.slotManager.tracker.getTaskManager(resourceId);
    const held =
      taskManager === undefined ? [] : this.slotManager.tracker.slotsOf(taskManager).map((slot) => slot.allocationId!);
    this.slotManager.unregisterTaskManager(resourceId, cause);
    return held;
  }

  /** A worker's lifecycle, begun: `starting` when started for a pending worker, else `registered`. */
  #worker(resourceId: ResourceID, pendingWorkerId: PendingTaskManagerID | null): Worker {
    const machine = workerLifecycleMachine.provide({
      actions: {
        startFailed: ({ event }) => {
          if (pendingWorkerId !== null && this.slotManager.state === 'started')
            this.slotManager.pendingWorkerFailed(pendingWorkerId, (event as { reason: string }).reason);
        },
        notBackInTime: ({ context }) => this.mailbox.execute(() => this.#notBackInTime(resourceId, context.lostCause!)),
      },
    });
    const actor = createActor(machine, {
      input: { heartbeatTimeoutMs: this.options['heartbeat.timeout'] },
      clock: mailboxClock(this.#clock, (fn) => this.mailbox.execute(fn)),
      ...(this.#inspect === undefined ? {} : { inspect: this.#inspect }),
    });
    const worker: Worker = { actor, revokedOnLoss: new Set() };
    this.#workers.set(resourceId, worker);
    actor.subscribe({ complete: () => this.#wentStale(resourceId, worker) });
    actor.start();
    return worker;
  }

  #wentStale(resourceId: ResourceID, worker: Worker): void {
    const { staleReason } = worker.actor.getSnapshot().context;
    if (this.#workers.get(resourceId) === worker) this.#workers.delete(resourceId);
    this.#stale.add(resourceId, staleReason ?? 'it went stale');
  }
}

export { STALE_KEPT } from './StaleWorkers.js';

/** A worker the ResourceManager knows: its lifecycle, and the allocations its jobs were told are lost with it. */
interface Worker {
  readonly actor: Actor<typeof workerLifecycleMachine>;
  revokedOnLoss: ReadonlySet<AllocationID>;
}
