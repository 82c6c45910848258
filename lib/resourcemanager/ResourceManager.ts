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
} from '../rpc/protocol.js';
import { slotReportFromWire } from '../rpc/slotReportWire.js';
import { requirementsFromWire } from './requirementsWire.js';
import type { ResourceManagerDriver } from './ResourceManagerDriver.js';
import { FineGrainedSlotManager } from './slotmanager/FineGrainedSlotManager.js';
import type { PendingTaskManagerID } from './slotmanager/PendingTaskManager.js';
import type { ResourceAllocator } from './slotmanager/ResourceAllocator.js';
import type { ResourceEventListener } from './slotmanager/ResourceEventListener.js';
import { WorkerResourceSpec } from './slotmanager/WorkerResourceSpec.js';
import { jobMasterInMailbox, slotGateway, workerGateway } from './workerGateways.js';
import {
  checkRegistration,
  reportWithoutRevoked,
  type LostTaskExecutor,
  type TaskExecutorRegistration,
} from './WorkerRegistration.js';

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
  /** Workers ended, stopped or refused: their ResourceIDs may not register again. */
  readonly #stale = new Map<ResourceID, string>();
  /** Declared lost on heartbeat timeout and not registered again yet. */
  readonly #lost = new Map<ResourceID, LostTaskExecutor>();
  /** With workersOnDemand false: the workers that make up the fixed cluster, by the spec they were started with. */
  readonly #fixedWorkers = new Map<ResourceID, WorkerResourceSpec>();
  readonly #heartbeats: HeartbeatMonitor<ResourceID>;
  readonly #onDemand: boolean;
  readonly #jobMasters = new Map<JobID, { address: string; gateway: JobMasterGateway }>();
  readonly #jobMastersByAddress = new Map<string, JobMasterGateway>();
  readonly #withdrawnListeners = new Set<(address: string) => void>();
  /** Workers started for a pending worker and not registered yet: if one ends, its pending worker is gone. */
  readonly #startingWorkers = new Map<ResourceID, PendingTaskManagerID>();
  /** Workers the SlotManager released (idle): their end is no loss. */
  readonly #released = new Set<ResourceID>();
  readonly #onLost: NonNullable<ResourceManagerOptions['onTaskExecutorLost']>;
  readonly #registrationListeners = new Set<(event: TaskExecutorRegistrationEvent) => void>();
  #registrations = 0;
  #closed = false;

  constructor(options: ResourceManagerOptions) {
    this.options = resolveOptions(options.configuration ?? {});
    this.#driver = options.driver;
    this.#clock = options.clock ?? systemClock;
    this.#log = options.log ?? (() => {});
    this.#onLost = options.onTaskExecutorLost ?? (() => {});
    this.mailbox = new MainThreadExecutor('ResourceManager', this.#clock, (error) =>
      this.#log(`uncaught in mailbox: ${describeError(error)}`, {}, 'error'),
    );
    const onDemand = options.workersOnDemand ?? true;
    this.#onDemand = onDemand;
    this.#heartbeats = new HeartbeatMonitor<ResourceID>({
      mailbox: this.mailbox,
      intervalMs: this.options['heartbeat.interval'],
      timeoutMs: this.options['heartbeat.timeout'],
      onRound: (targets) => this.#requestHeartbeats(targets),
      onTimeout: (resourceId, silentMs) => this.#heartbeatTimedOut(resourceId, silentMs),
      log: (message) => this.#log(message),
    });
    const allocator: ResourceAllocator = {
      isSupported: onDemand,
      allocateWorker: (id, spec) => {
        this.#startingWorkers.set(this.#driver.requestResource(spec, id), id);
        return true;
      },
      cancelWorker: (id) => this.#driver.cancelPendingWorker(id),
      releaseWorker: (resourceId, reason) => {
        this.#released.add(resourceId);
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
    const stale = this.#stale.get(resourceId);
    if (stale !== undefined) return refuse(`stale: TaskExecutor ${resourceId} may not register again: ${stale}`);
    const gateway = this.#driver.taskExecutorGateway(resourceId);
    if (gateway === undefined)
      return refuse(`unknown: no live worker ${resourceId} was started by this ResourceManager`);
    const previous = this.#taskExecutors.get(resourceId);
    const lost = this.#lost.get(resourceId);
    const revoked = new Map(previous?.revoked);
    if (previous !== undefined) {
      // The same worker registering again (it lost us): replace the old registration. Its slots stay
      // in the SlotManager, and the slot report that follows reconciles them (nobody is told they were lost).
      this.#log(`TaskExecutor ${resourceId} registers again; replacing its registration`, { resourceId });
    } else if (lost !== undefined) {
      // Declared lost, but alive (Flink's reconnect): a new registration. Its slot report puts it
      // back in the SlotManager; the slots whose jobs were told they are lost are freed on it.
      lost.deadline.cancel();
      this.#lost.delete(resourceId);
      for (const allocationId of lost.revoked) revoked.set(allocationId, 'to-free');
      this.#log(`TaskExecutor ${resourceId}, declared lost (${lost.cause}), registers again`, { resourceId });
    }
    const registrationId = `registration-${++this.#registrations}`;
    this.#taskExecutors.set(resourceId, {
      resourceId,
      registrationId,
      gateway,
      info: registration,
      inSlotManager: previous?.inSlotManager ?? false,
      revoked,
    });
    this.#heartbeats.monitorTarget(resourceId);
    this.#startingWorkers.delete(resourceId);
    if (!this.#onDemand && !this.#fixedWorkers.has(resourceId))
      this.#fixedWorkers.set(resourceId, this.#specOf(resourceId));
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
      this.#fixedWorkers.delete(resourceId); // refused on purpose: no replacement
      this.#closeConnection(resourceId, result.reason, true, 'rejected');
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
    this.#closeConnection(resourceId, `it disconnected: ${cause}`, true, 'disconnected', true);
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
        for (const lost of this.#lost.values()) lost.deadline.cancel();
        this.#lost.clear();
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
        if (this.#taskExecutors.get(resourceId) !== registration) return;
        if (error !== undefined) return; // silence counts against heartbeat.timeout
        this.#heartbeats.reportHeartbeat(resourceId);
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
      ...this.#closeConnection(resourceId, cause, false, 'heartbeat-timeout'),
    ]);
    this.#log(
      `TaskExecutor ${resourceId} lost: ${cause}; it may register again within heartbeat.timeout`,
      { resourceId },
      'warn',
    );
    // Flink's closeTaskManagerConnection: an executor that is alive reconnects at once.
    registration.gateway.disconnectResourceManager(`declared lost: ${cause}`).catch(() => {});
    const deadline = this.mailbox.schedule(() => this.#notBackInTime(resourceId), this.options['heartbeat.timeout']);
    this.#lost.set(resourceId, { cause, revoked, deadline });
  }

  /** Declared lost and not registered again in time: hung, or gone. Stop it; a fixed worker is replaced. */
  #notBackInTime(resourceId: ResourceID): void {
    const lost = this.#lost.get(resourceId);
    if (lost === undefined) return;
    this.#lost.delete(resourceId);
    const reason = `${lost.cause}, and it did not register again within heartbeat.timeout`;
    const replacement = this.#replaceIfFixed(resourceId, reason);
    this.#stale.set(
      resourceId,
      `${reason}; ${replacement === undefined ? 'its worker was stopped' : `${replacement} was started in its place`}`,
    );
    this.#driver.releaseResource(resourceId, reason);
  }

  #workerTerminated(resourceId: ResourceID, reason: string): void {
    this.#log(`worker ${resourceId} ended: ${reason}`, { resourceId });
    const pending = this.#startingWorkers.get(resourceId);
    this.#startingWorkers.delete(resourceId);
    if (pending !== undefined && this.slotManager.state === 'started')
      this.slotManager.pendingWorkerFailed(pending, reason);
    const lost = this.#lost.get(resourceId);
    if (lost !== undefined) {
      lost.deadline.cancel();
      this.#lost.delete(resourceId);
    }
    const ended =
      lost === undefined ? `its worker ended: ${reason}` : `${lost.cause}, then its worker ended: ${reason}`;
    const replacement = this.#replaceIfFixed(resourceId, ended);
    if (!this.#stale.has(resourceId))
      this.#stale.set(
        resourceId,
        replacement === undefined ? ended : `${ended}; ${replacement} was started in its place`,
      );
    const released = this.#released.delete(resourceId);
    this.#closeConnection(resourceId, `its worker ended: ${reason}`, true, released ? null : 'worker-exited', true);
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

  /**
   * A worker of the fixed cluster is gone for good: start one of the same spec in its place (the
   * driver delays starts while they keep failing). Returns the new worker, if one was started.
   */
  #replaceIfFixed(resourceId: ResourceID, why: string): ResourceID | undefined {
    const spec = this.#fixedWorkers.get(resourceId);
    if (spec === undefined) return undefined;
    this.#fixedWorkers.delete(resourceId);
    if (this.#closed || this.#driver.canStartWorkers === false) return undefined;
    const replacement = this.#driver.requestResource(spec, null);
    this.#fixedWorkers.set(replacement, spec);
    this.#log(
      `TaskExecutor ${resourceId} of the fixed cluster is gone (${why}): started ${replacement} in its place`,
      { resourceId },
      'warn',
    );
    return replacement;
  }

  /** The spec a fixed worker was started with (the driver knows it), else the one the options describe. */
  #specOf(resourceId: ResourceID): WorkerResourceSpec {
    const started = this.#driver.workers().find((worker) => worker.resourceId === resourceId);
    return started?.spec ?? WorkerResourceSpec.fromOptions(this.options);
  }

  /**
   * Flink's closeTaskManagerConnection: the SlotManager frees its slots and tells their jobs; the
   * allocations it held there. Gone for good (`gone`: a goodbye, its worker ended), every JobMaster
   * hears it first: the result partitions it kept are lost with it, slots or not.
   */
  #closeConnection(
    resourceId: ResourceID,
    cause: string,
    stale: boolean,
    loss: TaskExecutorLossCause | null,
    gone = false,
  ): AllocationID[] {
    // The first cause is the one worth keeping (a release that follows a lost heartbeat says less).
    if (stale && !this.#stale.has(resourceId)) this.#stale.set(resourceId, cause);
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
}
