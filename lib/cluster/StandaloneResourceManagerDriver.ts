/**
 * The driver of a standalone session cluster (Flink's StandaloneResourceManager): it starts no
 * workers. TaskManagers on any host start themselves and talk to the JobManager's subject; the
 * first message of one we do not know opens a Link to it over NATS, wired as the local driver
 * wires a worker's (the ResourceManager's gateway on `rm`, each JobMaster's on `jm:<address>`, the
 * TaskExecutor's called on `te` with its submissions batched). Whether it may register is the
 * ResourceManager's call.
 *
 * A TaskExecutor on another host shows no exit: it is lost when it says so (its Link's close), or
 * by heartbeat timeout, after which the ResourceManager gives it heartbeat.timeout to register
 * again over the same Link — its NATS connection may have come back — and otherwise releases it:
 * we close its Link, and its TaskManager starts a fresh TaskExecutor under a new ResourceID.
 */
import { IllegalStateError } from '../core/errors.js';
import type { ResourceID } from '../core/ids.js';
import type { LogSink } from '../core/Logger.js';
import type { TaskExecutorGateway } from '../rpc/gateways.js';
import { Link } from '../rpc/Link.js';
import type { NatsInbox } from '../rpc/natsTransport.js';
import type { TaskDeploymentDescriptor } from '../rpc/protocol.js';
import { INSPECT_CHANNEL } from '../rpc/WorkerBootstrap.js';
import { wireWorkerLink } from '../resourcemanager/workerLink.js';
import { LinkedWorkersDriver, type LinkedWorker } from '../resourcemanager/LinkedWorkers.js';
import type { ResourceManagerDriver, ResourceManagerDriverContext } from '../resourcemanager/ResourceManagerDriver.js';
import { WorkerResourceSpec } from '../resourcemanager/slotmanager/WorkerResourceSpec.js';
import type { ResolvedOptions } from '../core/options.js';
import type { Clock } from '../core/clock.js';
import type { InspectionDetail } from '../InspectionRecord.js';
import { checkResourceIdToken } from './clusterSubjects.js';
import { isInspectionBatch, type InspectionRequest } from './forwardedInspection.js';

export interface StandaloneDriverOptions {
  /** The JobManager's subscription on `slotwise.<clusterId>.rm`. */
  readonly inbox: NatsInbox;
  readonly configuration: ResolvedOptions;
  readonly clock: Clock;
  readonly logger?: LogSink;
  /** What a TaskExecutor is told to run for a task module (the JobManager's cached code → its blob key). */
  readonly taskModuleFor?: (taskModule: string) => string;
  /** Where the TaskExecutors' statecharts go (their inspection events, by ResourceID); none asked for when absent. */
  readonly inspect?: (origin: string, event: unknown) => void;
  /** How much of each event the TaskExecutors are asked to send (default 'full'). */
  readonly inspectDetail?: InspectionDetail;
}

type RemoteWorker = LinkedWorker;

export class StandaloneResourceManagerDriver
  extends LinkedWorkersDriver<RemoteWorker>
  implements ResourceManagerDriver
{
  /** How the TaskExecutors run is theirs to say (their registration tells); for the overview. */
  readonly mode = 'process' as const;
  /** It cannot start a worker: TaskManagers start themselves. */
  readonly canStartWorkers = false;
  readonly #o: StandaloneDriverOptions;
  /** TaskExecutors whose Link closed: gone for good here (the ResourceManager will not take them back). */
  readonly #ended = new Set<string>();
  #context: ResourceManagerDriverContext | null = null;
  #closing = false;

  constructor(options: StandaloneDriverOptions) {
    super();
    this.#o = options;
  }

  start(context: ResourceManagerDriverContext): void {
    this.#context = context;
    this.#o.inbox.onUnknownPeer((peerId, replySubject) => this.#connect(peerId, replySubject));
  }

  requestResource(): ResourceID {
    throw new IllegalStateError(
      'a standalone cluster starts no TaskExecutors: start a TaskManager (slotwise taskmanager) on any host',
      {
        component: 'StandaloneResourceManagerDriver',
        operation: 'requestResource',
        state: 'standalone',
        allowed: [],
      },
    );
  }

  /** Lets a TaskExecutor go: its Link is closed, and its TaskManager starts a fresh one. */
  releaseResource(resourceId: ResourceID, reason: string): void {
    const worker = this.linkedWorkers.get(resourceId);
    if (worker === undefined || worker.state === 'stopping') return;
    worker.state = 'stopping';
    worker.link.close(`released by the ResourceManager: ${reason}`);
  }

  cancelPendingWorker(): void {}

  /** Closes every Link (each TaskManager is told and keeps trying to register with a JobManager of its cluster). */
  async close(): Promise<void> {
    this.#closing = true;
    for (const worker of [...this.linkedWorkers.values()]) worker.link.close('the JobManager is shutting down');
  }

  #connect(peerId: string, replySubject: string): ReturnType<NatsInbox['transportTo']> | undefined {
    const context = this.#context;
    const log = this.#o.logger;
    if (context === null || this.#closing) return undefined;
    try {
      checkResourceIdToken(peerId, 'the ResourceID of a TaskExecutor');
    } catch (error) {
      log?.({
        level: 'warn',
        source: 'runtime',
        message: `ignored a peer on the JobManager subject: ${(error as Error).message}`,
      });
      return undefined;
    }
    const resourceId = peerId as ResourceID;
    const transport = this.#o.inbox.transportTo(peerId, replySubject);
    if (this.#ended.has(peerId)) {
      // One we let go while it could not hear us (its network was down): say goodbye now, from a new
      // session, so that its TaskManager drops this ResourceID and starts a fresh TaskExecutor.
      new Link(`TaskExecutor ${resourceId} (ended)`, transport).close(
        `TaskExecutor ${resourceId} was let go by the ResourceManager; start a new one`,
      );
      return transport;
    }
    const link = new Link(`TaskExecutor ${resourceId} over NATS`, transport);
    const connected = wireWorkerLink(link, context, {
      resourceId,
      timeoutMs: this.#o.configuration['rpc.ask.timeout'],
      clock: this.#o.clock,
      logger: this.#o.logger ?? null,
    });
    // Its statecharts (forwardedInspection.ts), asked for when someone watches; always heard, so that what a
    // TaskExecutor still sends after a leader that asked never waits in the Link's buffer.
    const inspect = this.#o.inspect;
    const inspection = link.channel(INSPECT_CHANNEL);
    inspection.addEventListener('message', (event) => {
      if (inspect !== undefined && isInspectionBatch(event.data))
        for (const record of event.data.events) inspect(resourceId, record);
    });
    if (inspect !== undefined)
      inspection.postMessage({ type: 'inspect', detail: this.#o.inspectDetail ?? 'full' } satisfies InspectionRequest);
    const rewrite = this.#o.taskModuleFor;
    const gateway: TaskExecutorGateway =
      rewrite === undefined
        ? connected
        : {
            ...connected,
            submitTask: (descriptor: TaskDeploymentDescriptor) =>
              connected.submitTask({ ...descriptor, taskModule: rewrite(descriptor.taskModule) }),
          };
    const worker: RemoteWorker = {
      resourceId,
      pendingWorkerId: null,
      // What it really offers comes with its registration; this is for the driver's own listing.
      spec: WorkerResourceSpec.fromOptions(this.#o.configuration),
      startedAt: this.#o.clock.now(),
      state: 'starting',
      link,
      gateway,
    };
    this.linkedWorkers.set(resourceId, worker);
    link.onClosed((reason) => {
      this.#ended.add(peerId);
      if (this.linkedWorkers.get(resourceId) !== worker) return;
      this.linkedWorkers.delete(resourceId);
      context.onWorkerTerminated(resourceId, reason);
    });
    return transport;
  }
}
