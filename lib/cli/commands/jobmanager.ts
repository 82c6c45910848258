/**
 * `slotwise jobmanager`: a session cluster's JobManager (Dispatcher, ResourceManager, JobMasters)
 * with its REST endpoint. With `--nats` (the default) it is the NATS session cluster's, which
 * TaskManagers on any host join; with `--local-taskmanagers N` it is an in-process MiniCluster of
 * N TaskExecutors served over the same REST API. It prints the REST URL on a line of its own once
 * it listens, and runs until SIGINT or SIGTERM.
 */
import { IllegalArgumentError } from '../../core/errors.js';
import { MiniCluster } from '../../MiniCluster.js';
import { clusterTarget, miniClusterTarget } from '../../rest/miniClusterTarget.js';
import { startRestServer, type RestServer } from '../../rest/RestServer.js';
import type { RestTarget } from '../../rest/RestTarget.js';
import { choiceFlag, clusterIdFlag, integerFlag, natsUrlFlag, parseFlags, type CliIo } from '../flags.js';
import { loadSessionCluster, untilShutdown } from '../sessionCluster.js';

export const JOBMANAGER_USAGE = `Usage: slotwise jobmanager [--nats URL] [--rest-address ADDRESS] [--rest-port PORT]
                           [--cluster-id ID]
       slotwise jobmanager --local-taskmanagers N [--slots N] [--mode thread|process]
                           [--rest-address ADDRESS] [--rest-port PORT]

Starts a JobManager (Dispatcher, ResourceManager, REST API) and prints its REST URL on a line of
its own; runs until Ctrl-C.

  --nats URL              the NATS server TaskManagers join through (default nats://127.0.0.1:4222)
  --cluster-id ID         the cluster's name on that server (default 'default')
  --rest-address ADDRESS  where the REST API listens (default 127.0.0.1)
  --rest-port PORT        its port (default 8081; 0: any free port)
  --local-taskmanagers N  no NATS: an in-process cluster of N TaskExecutors on worker threads
  --slots N               with --local-taskmanagers: slots per TaskExecutor (default 2)
  --mode thread|process   with --local-taskmanagers: TaskExecutors on threads (default) or child processes`;

const OPTIONS = {
  nats: { type: 'string' },
  'cluster-id': { type: 'string' },
  'rest-address': { type: 'string' },
  'rest-port': { type: 'string' },
  'local-taskmanagers': { type: 'string' },
  slots: { type: 'string' },
  mode: { type: 'string' },
} as const;

export async function jobmanager(args: readonly string[], io: CliIo): Promise<number> {
  const { values } = parseFlags('jobmanager', args, OPTIONS, false);
  if (values['help']) return (io.stdout(JOBMANAGER_USAGE), 0);
  const string = (name: string) => values[name] as string | undefined;
  const address = string('rest-address') ?? '127.0.0.1';
  if (!/^[\w.:-]+$/.test(address))
    throw new IllegalArgumentError(
      'invalid-value',
      `--rest-address must be a host name or IP address like 127.0.0.1, got ${JSON.stringify(address)}`,
      { argument: '--rest-address' },
    );
  const port = string('rest-port') === undefined ? 8081 : integerFlag('rest-port', string('rest-port')!, 0, 65535);
  const local =
    string('local-taskmanagers') === undefined
      ? null
      : integerFlag('local-taskmanagers', string('local-taskmanagers')!, 1, 256);
  if (local === null) {
    for (const flag of ['slots', 'mode'])
      if (string(flag) !== undefined)
        throw new IllegalArgumentError(
          'invalid-value',
          `--${flag} goes with --local-taskmanagers (a NATS cluster's ` +
            `TaskManagers bring their own slots: slotwise taskmanager --slots N)`,
          { argument: `--${flag}` },
        );
  } else {
    for (const flag of ['nats', 'cluster-id'])
      if (string(flag) !== undefined)
        throw new IllegalArgumentError(
          'invalid-value',
          `--${flag} and --local-taskmanagers exclude each other: a local cluster uses no NATS`,
          { argument: `--${flag}` },
        );
  }

  let target: RestTarget;
  let closeCluster: () => Promise<void>;
  let description: string;
  if (local !== null) {
    const slots = string('slots') === undefined ? 2 : integerFlag('slots', string('slots')!, 1, 1024);
    const mode =
      string('mode') === undefined ? 'thread' : choiceFlag('mode', string('mode')!, ['thread', 'process'] as const);
    const cluster = await MiniCluster.start({ taskExecutors: local, slotsPerTaskExecutor: slots, mode });
    target = miniClusterTarget(cluster);
    closeCluster = () => cluster.close();
    const kind = mode === 'process' ? 'child processes' : 'worker threads';
    description = `an in-process cluster of ${local} TaskExecutor(s) × ${slots} slot(s) (${kind})`;
  } else {
    const nats = natsUrlFlag(string('nats') ?? 'nats://127.0.0.1:4222');
    const clusterId = clusterIdFlag(string('cluster-id') ?? 'default');
    const { startJobManager } = await loadSessionCluster('jobmanager');
    const manager = await startJobManager({ nats, clusterId });
    target = clusterTarget(manager, (upload) => manager.storeTaskCode(upload));
    closeCluster = () => manager.close();
    description = `the JobManager of cluster '${clusterId}' at ${nats}`;
  }
  let server: RestServer;
  try {
    server = await startRestServer({ target, address, port });
  } catch (error) {
    await closeCluster();
    throw error;
  }
  io.stdout(`slotwise jobmanager: ${description}; REST API at`);
  io.stdout(server.url);
  await untilShutdown(io.shutdown);
  await server.close();
  await closeCluster();
  io.stdout('slotwise jobmanager: stopped');
  return 0;
}
