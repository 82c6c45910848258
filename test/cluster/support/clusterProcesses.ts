/**
 * The cluster roles as child processes for the tests (test/fixtures/clusterProcess.ts), each driven
 * by its control gateway over the IPC Link to it.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { JobGraphSpec } from '../../../lib/jobmaster/JobGraph.js';
import { connectGateway, type Gateway } from '../../../lib/rpc/connect.js';
import { forkProcess } from '../../../lib/rpc/forkProcess.js';
import { Link } from '../../../lib/rpc/Link.js';
import { resolveTsx } from '../../../lib/rpc/startWorker.js';
import { processTransport } from '../../../lib/rpc/Transport.js';
import type { JobManagerControl, TaskManagerControl } from '../../fixtures/clusterProcess.js';
import { until } from '../../support/eventually.js';
import { startNatsServer, type NatsServer } from '../../support/natsServer.js';
import type { TestNetwork } from '../../support/netns.js';

export const ENTRY = new URL('../../fixtures/clusterProcess.ts', import.meta.url);

/** A spec whose task modules are file: URL strings: a URL object does not cross a process boundary. */
export const crossable = (spec: JobGraphSpec): JobGraphSpec => ({
  ...spec,
  vertices: spec.vertices.map((v) => ({ ...v, taskModule: String(v.taskModule) })),
});

export interface Started<T> {
  readonly child: ChildProcess;
  readonly link: Link;
  readonly control: Gateway<T>;
  readonly exited: Promise<void>;
}

/**
 * Forks a JobManager or TaskManager child. Its temporary files (its task code cache) go to a directory of its own,
 * removed once it exited: a child killed with SIGKILL leaves nothing behind in the OS tmpdir.
 */
export function start<T>(role: 'jobmanager' | 'taskmanager', options: Record<string, unknown>): Started<T> {
  const dir = mkdtempSync(join(tmpdir(), `slotwise-test-${role}-`));
  const child = forkProcess(ENTRY, [role, JSON.stringify(options)], {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    env: { ...process.env, TMPDIR: dir },
  });
  child.once('exit', () => rmSync(dir, { recursive: true, force: true }));
  return control<T>(role, child);
}

/**
 * A TaskManager child run in network namespace `namespace` (test/support/netns.ts): `ip netns exec` execs node there,
 * and the IPC channel's descriptor goes with it.
 */
export function startTaskManagerIn(namespace: string, options: Record<string, unknown>): Started<TaskManagerControl> {
  const child = spawn(
    'ip',
    [
      'netns',
      'exec',
      namespace,
      process.execPath,
      '--import',
      resolveTsx('.', ENTRY),
      fileURLToPath(ENTRY),
      'taskmanager',
      JSON.stringify(options),
    ],
    { stdio: ['ignore', 'inherit', 'inherit', 'ipc'], serialization: 'advanced' },
  );
  return control<TaskManagerControl>(`taskmanager in ${namespace}`, child);
}

export function control<T>(role: string, child: ChildProcess): Started<T> {
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const link = new Link(`test to ${role}`, processTransport(child));
  // A child under tsx takes a few seconds to start on a loaded machine: the first calls wait for it.
  const control = connectGateway<T>(link, 'control', { gateway: `${role} control`, timeoutMs: 60_000 });
  return { child, link, control, exited };
}

export async function stop(
  started:
    | {
        readonly child: ChildProcess;
        readonly link: Link;
        readonly exited: Promise<void>;
        readonly control: { close(): Promise<void> };
      }
    | undefined,
): Promise<void> {
  if (started === undefined) return;
  if (started.child.exitCode === null && started.child.signalCode === null) {
    await started.control.close().catch(() => {});
    const forced = setTimeout(() => started.child.kill('SIGKILL'), 15_000);
    await started.exited;
    clearTimeout(forced);
  }
  started.link.close();
}

export interface ClusterProcessesOptions {
  /** The nats-server binary (natsServerOrSkip). */
  readonly natsServer: string;
  readonly clusterId: string;
  /** Every process's configuration. */
  readonly configuration: Record<string, unknown>;
  readonly taskManagers: number;
  /** Each TaskManager's options besides `nats`, `clusterId` and `configuration`. */
  readonly taskManager: Record<string, unknown>;
  /** TaskManager i (1-based) in namespace i of this network, nats-server on its server address; else loopback. */
  readonly network?: TestNetwork;
}

/**
 * A nats-server, a JobManager and TaskManagers, each role in a child process of its own, for a suite's before and
 * after hooks: `start` resolves once every TaskManager registered; `stop` stops whatever had started, also after a
 * start that failed half-way.
 */
export class ClusterProcesses {
  server: NatsServer | undefined;
  jobManager: Started<JobManagerControl> | undefined;
  readonly taskManagers: Array<Started<TaskManagerControl>> = [];

  async start(options: ClusterProcessesOptions): Promise<void> {
    const { clusterId, configuration, network } = options;
    const server = (this.server = await startNatsServer(
      options.natsServer,
      network === undefined ? {} : { address: network.serverAddress },
    ));
    const jobManager = (this.jobManager = start<JobManagerControl>('jobmanager', {
      nats: server.url,
      clusterId,
      configuration,
    }));
    await jobManager.control.overview();
    for (let i = 1; i <= options.taskManagers; i++) {
      const taskManager = { ...options.taskManager, nats: server.url, clusterId, configuration };
      this.taskManagers.push(
        network === undefined
          ? start<TaskManagerControl>('taskmanager', taskManager)
          : startTaskManagerIn(network.namespace(i), taskManager),
      );
    }
    await until(
      `${options.taskManagers} TaskManagers registered`,
      async () => (await jobManager.control.overview()).taskExecutors.length === options.taskManagers,
      60_000,
    );
  }

  /** The JobManager's control gateway (after `start`). */
  get jm(): Gateway<JobManagerControl> {
    if (this.jobManager === undefined) throw new Error('the cluster processes were not started');
    return this.jobManager.control;
  }

  async stop(): Promise<void> {
    for (const taskManager of this.taskManagers) await stop(taskManager);
    await stop(this.jobManager);
    await this.server?.stop();
  }
}
