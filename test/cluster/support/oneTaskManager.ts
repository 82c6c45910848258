/**
 * A session cluster of one JobManager (REST on a free port) and one TaskManager (thread mode) over a nats-server the
 * harness starts: for the focused NATS tests. Skips the suite, saying so, when nats-server is not installed.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startJobManager, type JobManager, type JobManagerOptions } from '../../../lib/cluster/JobManager.js';
import { TaskManager, type TaskManagerOptions } from '../../../lib/cluster/TaskManager.js';
import { until } from '../../support/eventually.js';
import { natsServerOrSkip, startNatsServer, type NatsServer } from '../../support/natsServer.js';

export interface OneTaskManagerCluster {
  readonly server: NatsServer;
  readonly jobManager: JobManager;
  readonly taskManager: TaskManager;
  close(): Promise<void>;
}

export interface OneTaskManagerOptions {
  readonly clusterId: string;
  /** Beyond nats, clusterId, rest (port 0) and a silent logger. */
  readonly jobManager?: Partial<JobManagerOptions>;
  /** Beyond nats, clusterId, cacheDir, 2 slots and a silent logger. */
  readonly taskManager?: Partial<TaskManagerOptions>;
  /** Start the TaskManager before the JobManager (default: after). */
  readonly taskManagerFirst?: boolean;
}

/** In a `before` hook: `what` names the suite in the skip message. Resolves once the TaskManager registered. */
export async function startOneTaskManagerCluster(
  context: Mocha.Context,
  what: string,
  o: OneTaskManagerOptions,
): Promise<OneTaskManagerCluster> {
  const binary = natsServerOrSkip(context, what);
  const server = await startNatsServer(binary);
  const cacheDir = mkdtempSync(join(tmpdir(), 'slotwise-tm-cache-'));
  let jobManager: JobManager | undefined;
  let taskManager: TaskManager | undefined;
  const close = async () => {
    await taskManager?.close();
    await jobManager?.close();
    await server.stop();
    rmSync(cacheDir, { recursive: true, force: true });
  };
  try {
    const startJm = async () =>
      (jobManager = await startJobManager({
        nats: server.url,
        clusterId: o.clusterId,
        rest: { port: 0 },
        logger: () => {},
        ...o.jobManager,
      }));
    const startTm = async () =>
      (taskManager = await TaskManager.start({
        nats: server.url,
        clusterId: o.clusterId,
        cacheDir,
        slots: 2,
        logger: () => {},
        ...o.taskManager,
      }));
    if (o.taskManagerFirst === true) await startTm().then(startJm);
    else await startJm().then(startTm);
    await until('the TaskManager to register', () => jobManager!.overview().taskExecutors.length === 1);
    return { server, jobManager: jobManager!, taskManager: taskManager!, close };
  } catch (error) {
    await close();
    throw error;
  }
}
