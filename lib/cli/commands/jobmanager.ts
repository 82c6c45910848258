/**
 * `slotwise jobmanager`: a session cluster's JobManager (Dispatcher, ResourceManager, JobMasters)
 * with its REST endpoint. With `--nats` (the default) it is the NATS session cluster's, which
 * TaskManagers on any host join; with `--local-taskmanagers N` it is an in-process MiniCluster of
 * N TaskExecutors served over the same REST API. It prints the REST URL on a line of its own once
 * it listens (and, for the NATS JobManager, its dashboard's URL with the token on the next line),
 * and runs until SIGINT or SIGTERM.
 */
import { IllegalArgumentError } from '../../core/errors.js';
import { formatMemorySize } from '../../core/MemorySize.js';
import { MiniCluster } from '../../MiniCluster.js';
import { miniClusterTarget } from '../../rest/miniClusterTarget.js';
import { startRestServer, type RestServer } from '../../rest/RestServer.js';
import { resolveOptions, type SlotwiseOptions } from '../../core/options.js';
import {
  choiceFlag,
  clusterIdFlag,
  integerFlag,
  natsUrlFlag,
  parseFlags,
  propertyFlags,
  type CliIo,
} from '../flags.js';
import { loadSessionCluster, untilShutdown } from '../sessionCluster.js';

export const JOBMANAGER_USAGE = `Usage: slotwise jobmanager [--nats URL] [--rest-address ADDRESS] [--rest-port PORT]
                           [--cluster-id ID] [-D key=value ...]
       slotwise jobmanager --local-taskmanagers N [--slots N] [--mode thread|process]
                           [--rest-address ADDRESS] [--rest-port PORT]

Starts a JobManager (Dispatcher, ResourceManager, REST API) and prints its REST URL on a line of
its own; with --nats also its dashboard's URL (the page at / and Prometheus text at /metrics, on
the REST port, with the token the URL carries); runs until Ctrl-C.

  --nats URL              the NATS server TaskManagers join through (default nats://127.0.0.1:4222)
  --cluster-id ID         the cluster's name on that server (default 'default')
  -D key=value            a runtime option (docs/configuration.md), repeatable, e.g.
                          -D high-availability.leader-election.lease-duration=5s
  --rest-address ADDRESS  where the REST API listens (default 127.0.0.1)
  --rest-port PORT        its port (default 8081; 0: any free port)
  --local-taskmanagers N  no NATS: an in-process cluster of N TaskExecutors on worker threads
  --slots N               with --local-taskmanagers: slots per TaskExecutor (default 2); a TaskExecutor
                          offers 1 core per slot and 256 mb of task heap shared by its slots (128 mb each
                          at --slots 2)
  --mode thread|process   with --local-taskmanagers: TaskExecutors on threads (default) or child processes`;

const OPTIONS = {
  nats: { type: 'string' },
  'cluster-id': { type: 'string' },
  'rest-address': { type: 'string' },
  'rest-port': { type: 'string' },
  'local-taskmanagers': { type: 'string' },
  slots: { type: 'string' },
  mode: { type: 'string' },
  property: { type: 'string', short: 'D', multiple: true },
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

  // -D options, checked before anything starts.
  const configuration = propertyFlags((values['property'] as string[] | undefined) ?? []) as SlotwiseOptions;
  resolveOptions(configuration);
  let description: string;
  let server: Pick<RestServer, 'url' | 'dashboardUrl' | 'close'>;
  let closeCluster: () => Promise<void>;
  if (local !== null) {
    const slots = string('slots') === undefined ? 2 : integerFlag('slots', string('slots')!, 1, 1024);
    const mode =
      string('mode') === undefined ? 'thread' : choiceFlag('mode', string('mode')!, ['thread', 'process'] as const);
    const cluster = await MiniCluster.start({ taskExecutors: local, slotsPerTaskExecutor: slots, mode, configuration });
    closeCluster = () => cluster.close();
    const kind = mode === 'process' ? 'child processes' : 'worker threads';
    const slot = cluster.overview().taskExecutors[0]?.slots[0]?.resources;
    const shape =
      slot === undefined
        ? ''
        : `, each slot ${slot.cpuCores} core(s) and ${formatMemorySize(slot.taskHeapMemory)} of task heap`;
    description = `an in-process cluster of ${local} TaskExecutor(s) × ${slots} slot(s) (${kind})${shape}`;
    try {
      server = await startRestServer({ target: miniClusterTarget(cluster), address, port });
    } catch (error) {
      await closeCluster();
      throw error;
    }
  } else {
    const nats = natsUrlFlag(string('nats') ?? 'nats://127.0.0.1:4222');
    const clusterId = clusterIdFlag(string('cluster-id') ?? 'default');
    const { startJobManager } = await loadSessionCluster('jobmanager');
    // The JobManager serves its REST API, dashboard and /metrics itself (and closes them with it).
    const manager = await startJobManager({ nats, clusterId, configuration, rest: { address, port } });
    closeCluster = () => manager.close();
    manager.onLeadershipChange((change) =>
      io.stdout(
        change.leading
          ? `slotwise jobmanager: now leads cluster '${clusterId}' (fencing token ${change.token})`
          : `slotwise jobmanager: stopped leading cluster '${clusterId}': ${change.reason}; standing by`,
      ),
    );
    const leader = manager.leader;
    const other =
      leader === null
        ? 'nobody leads yet'
        : `led by the JobManager on ${leader.holder.host}, pid ${leader.holder.pid}` +
          (leader.holder.restUrl === null ? '' : ` at ${leader.holder.restUrl}`);
    description =
      `the JobManager of cluster '${clusterId}' at ${nats}, ` +
      (manager.isLeader ? `leading (fencing token ${leader?.token})` : `standing by (${other})`);
    server = { url: manager.restUrl!, dashboardUrl: manager.dashboardUrl, close: async () => {} };
  }
  io.stdout(`slotwise jobmanager: ${description}; REST API at`);
  io.stdout(server.url);
  if (server.dashboardUrl !== null) io.stdout(`slotwise jobmanager: dashboard at ${server.dashboardUrl}`);
  await untilShutdown(io.shutdown);
  await server.close();
  await closeCluster();
  io.stdout('slotwise jobmanager: stopped');
  return 0;
}
