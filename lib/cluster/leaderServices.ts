/**
 * What a session cluster's JobManager runs while it leads (Flink's leader's Dispatcher,
 * ResourceManager and JobMasters): its inbox on `slotwise.<clusterId>.rm`, stamped with the
 * leadership's fencing token (a message carrying a newer one means another leads: we step down and
 * drop it), the StandaloneResourceManagerDriver that TaskManagers register through, the
 * ResourceManager and the Dispatcher. Built at each grant, stopped at each revocation; a standby runs
 * none of it.
 */
import type { NatsConnection } from '@nats-io/transport-node';
import { systemClock } from '../core/clock.js';
import type { JobID } from '../core/ids.js';
import type { LogSink, RuntimeLog } from '../core/Logger.js';
import type { ResolvedOptions } from '../core/options.js';
import { Dispatcher } from '../dispatcher/Dispatcher.js';
import { resourceManagerServices } from '../dispatcher/resourceManagerServices.js';
import type { InspectionSink } from '../inspect.js';
import { JobGraph, type JobGraphSpec } from '../jobmaster/JobGraph.js';
import type { FinishedSubtask } from '../jobmaster/JobMasterOptions.js';
import type { JobResult } from '../jobmaster/JobResult.js';
import { DefaultTaskModuleChecker } from '../jobmaster/TaskModuleChecker.js';
import type { Observability } from '../Observability.js';
import { ResourceManager } from '../resourcemanager/ResourceManager.js';
import { NatsInbox, type LargeMessageStore } from '../rpc/natsTransport.js';
import { clusterSubjects, JOBMANAGER_PEER_ID } from './clusterSubjects.js';
import { StandaloneResourceManagerDriver } from './StandaloneResourceManagerDriver.js';

/** This JobManager started leading (`reason` null) or stopped (`reason` says why), with that leadership's token. */
export interface LeadershipChange {
  readonly leading: boolean;
  readonly token: number;
  readonly reason: string | null;
}

export interface LeaderServices {
  readonly token: number;
  readonly inbox: NatsInbox;
  readonly driver: StandaloneResourceManagerDriver;
  readonly resourceManager: ResourceManager;
  readonly dispatcher: Dispatcher;
  /** Set when leadership goes: its jobs end here but are not ended for the cluster (the next leader recovers them). */
  suspended: boolean;
  /** Set once the jobs of earlier leaders are recovered: TaskExecutors are admitted from then on. */
  ready: boolean;
}

export interface LeaderServicesContext {
  readonly clusterId: string;
  readonly token: number;
  readonly connection: NatsConnection;
  readonly largeMessages: LargeMessageStore;
  readonly options: ResolvedOptions;
  readonly log: LogSink;
  readonly inspection: InspectionSink | null;
  readonly observability: Observability;
  /** What a TaskExecutor is told to run for a task module. */
  readonly taskModuleFor: (taskModule: string) => string;
  /** A TaskManager follows a newer leader (`token`): we no longer lead. */
  readonly fenced: (token: number) => void;
  /** The job store (high-availability.type nats), when there is one: what it is told of the jobs. */
  readonly jobStore?: LeaderJobStore;
}

/** What a leader tells the job store (RecoveredJobs) of its jobs, each call with the services it leads with. */
export interface LeaderJobStore {
  /** A submitted job, before it starts (a submit whose job cannot be persisted fails). */
  persist(jobId: JobID, spec: JobGraphSpec): Promise<void>;
  /** A subtask that finished. */
  finished(services: LeaderServices, jobId: JobID, finished: FinishedSubtask): void;
  /** A job that ended. */
  ended(services: LeaderServices, result: JobResult): void;
}

/** Builds and starts the leader's services; TaskExecutors are not admitted until `ready` is set. */
export function startLeaderServices(c: LeaderServicesContext): LeaderServices {
  const { options, log, observability, token } = c;
  const inspect = c.inspection ? { inspect: c.inspection.inspect } : {};
  let self: LeaderServices | null = null;
  const runtimeLog: RuntimeLog = (message, fields, level = 'info') =>
    log({ level, source: 'runtime', message, ...fields });
  const inbox = new NatsInbox({
    connection: c.connection,
    subject: clusterSubjects(c.clusterId).resourceManager,
    id: JOBMANAGER_PEER_ID,
    largeMessages: c.largeMessages,
    log: (message) => log({ level: 'warn', source: 'runtime', message }),
    // TaskExecutors offer back the slots their jobs hold once registered: the jobs' JobMasters must be there.
    admitting: () => self?.ready === true,
    fencing: {
      outgoing: () => token,
      incoming: (_peer, theirs) => {
        if (theirs === undefined || theirs <= token) return 'accept';
        c.fenced(theirs);
        return 'drop';
      },
    },
  });
  const driver = new StandaloneResourceManagerDriver({
    inbox,
    configuration: options,
    clock: systemClock,
    logger: log,
    taskModuleFor: c.taskModuleFor,
    ...(c.inspection ? { inspect: c.inspection.forward, inspectDetail: c.inspection.detail } : {}),
  });
  const resourceManager = new ResourceManager({
    configuration: options,
    driver,
    workersOnDemand: false,
    log: runtimeLog,
    onTaskExecutorLost: observability.onTaskExecutorLost,
    ...inspect,
  });
  const store = c.jobStore;
  const dispatcher = new Dispatcher({
    options,
    ...resourceManagerServices(resourceManager),
    taskExecutor: (resourceId) => driver.taskExecutorGateway(resourceId),
    reasonFor: (jobId) => {
      const waiting = resourceManager.slotManager.getPendingRequests().filter((r) => r.jobId === jobId);
      return waiting.length === 0
        ? 'no reason reported by the SlotManager'
        : waiting.map((r) => r.description).join('; ');
    },
    log: runtimeLog,
    taskModuleChecker: new DefaultTaskModuleChecker({
      mode: 'thread',
      timeoutMs: options['dispatcher.task-module-check.timeout'],
    }),
    jobObserver: observability.jobObserver,
    ...(store === undefined
      ? {}
      : {
          // Only specs come through a JobManager's submitJob.
          persistJob: async (jobId: JobID, job: JobGraphSpec | JobGraph) =>
            job instanceof JobGraph ? undefined : store.persist(jobId, job),
          subtaskFinished: (jobId: JobID, finished: FinishedSubtask) => store.finished(self!, jobId, finished),
          jobEnded: (result: JobResult) => store.ended(self!, result),
        }),
    ...inspect,
  });
  self = { token, inbox, driver, resourceManager, dispatcher, suspended: false, ready: false };
  resourceManager.start();
  return self;
}

/**
 * Stops the services of a leadership that went: its jobs stop here without ending for the cluster, the
 * ResourceManager stops, and nothing more goes out (its TaskExecutors register with the next leader as they are).
 */
export async function stopLeaderServices(services: LeaderServices, waitMs: number): Promise<void> {
  services.suspended = true;
  services.inbox.silence();
  await services.dispatcher.close(waitMs);
  await services.resourceManager.close();
  services.inbox.close();
}
