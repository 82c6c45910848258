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
import { isLoopback } from '../../dashboard/accessToken.js';
import { miniClusterTarget } from '../../rest/miniClusterTarget.js';
import { startRestServer, type RestServer } from '../../rest/RestServer.js';
import { resolveOptions, type SlotwiseOptions } from '../../core/options.js';
import {
  NATS_FLAGS,
  NATS_FLAGS_USAGE,
  natsAuthFlags,
  REST_SERVER_FLAGS,
  REST_SERVER_FLAGS_USAGE,
  restServerAccess,
} from '../accessFlags.js';
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
                           [--cluster-id ID] [-D key=value ...] [NATS credentials] [REST access]
       slotwise jobmanager --local-taskmanagers N [--slots N] [--mode thread|process]
                           [--rest-address ADDRESS] [--rest-port PORT] [REST access]

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
  --mode thread|process   with --local-taskmanagers: TaskExecutors on threads (default) or child processes

REST access (beyond loopback, a token or client certificates are required):
${REST_SERVER_FLAGS_USAGE}

NATS credentials (secrets from the environment or files, never the command line):
${NATS_FLAGS_USAGE}`;

const OPTIONS = {
  nats: { type: 'string' },
  'cluster-id': { type: 'string' },
  'rest-address': { type: 'string' },
  'rest-port': { type: 'string' },
  'local-taskmanagers': { type: 'string' },
  slots: { type: 'string' },
  mode: { type: 'string' },
  property: { type: 'string', short: 'D', multiple: true },
  ...REST_SERVER_FLAGS,
  ...NATS_FLAGS,
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
  const access = restServerAccess(values, io);
  const natsAuth = natsAuthFlags(values, io);
  // Anyone who reaches the REST API can run code on the cluster: beyond loopback, only callers it knows.
  if (!isLoopback(address) && access.token === undefined && access.tls?.clientCaFile === undefined)
    throw new IllegalArgumentError(
      'invalid-value',
      `--rest-address ${address} reaches beyond this machine, and whoever reaches the REST API can run code on the ` +
        `cluster: give it a token (SLOTWISE_REST_TOKEN or --rest-token-file FILE), or https with client ` +
        `certificates (--rest-cert, --rest-key, --rest-client-ca), or listen on 127.0.0.1`,
      { argument: '--rest-address' },
    );
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
    for (const flag of ['nats', 'cluster-id', ...Object.keys(NATS_FLAGS)])
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
      server = await startRestServer({ target: miniClusterTarget(cluster), address, port, ...access });
    } catch (error) {
      await closeCluster();
      throw error;
    }
  } else {
    const nats = natsUrlFlag(string('nats') ?? 'nats://127.0.0.1:4222');
    const clusterId = clusterIdFlag(string('cluster-id') ?? 'default');
    const { startJobManager } = await loadSessionCluster('jobmanager');
    // The JobManager serves its REST API, dashboard and /metrics itself (and closes them with it).
    const manager = await startJobManager({
      nats,
      ...(natsAuth === undefined ? {} : { natsAuth }),
      clusterId,
      configuration,
      rest: { address, port, ...access },
    });
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
  // Listening for SIGINT/SIGTERM before saying we are up: a signal sent as soon as the URL shows is ours to handle.
  const shutdown = untilShutdown(io.shutdown);
  io.stdout(`slotwise jobmanager: ${description}; REST API at`);
  io.stdout(server.url);
  if (server.dashboardUrl !== null)
    io.stdout(
      access.token === undefined
        ? `slotwise jobmanager: dashboard at ${server.dashboardUrl}`
        : // The configured token is a secret the operator has: not printed.
          `slotwise jobmanager: dashboard at ${server.url}/?token=<the REST token>; ` +
            '/metrics with Authorization: Bearer <the REST token>',
    );
  await shutdown;
  await server.close();
  await closeCluster();
  io.stdout('slotwise jobmanager: stopped');
  return 0;
}
