/**
 * `slotwise taskmanager`: one TaskExecutor process that joins a NATS session cluster (registers with
 * its ResourceManager, heartbeats, reports its slots, runs tasks); runs until SIGINT or SIGTERM, and
 * stops within a second of one whatever the JobManager's state. Every flag is checked before anything
 * connects. It says when it joined (the JobManager accepted it), and each registration after that.
 */
import { ResourceProfile } from '../../core/ResourceProfile.js';
import { NATS_FLAGS, NATS_FLAGS_USAGE, natsAuthFlags } from '../accessFlags.js';
import {
  choiceFlag,
  clusterIdFlag,
  integerFlag,
  memoryFlag,
  natsUrlFlag,
  parseFlags,
  positiveNumberFlag,
  resourceFlags,
  type CliIo,
} from '../flags.js';
import { loadSessionCluster, untilShutdown } from '../sessionCluster.js';

export const TASKMANAGER_USAGE = `Usage: slotwise taskmanager [--nats URL] [--cluster-id ID] [--slots N] [--cpu-cores N]
                            [--task-heap SIZE] [--managed-memory SIZE] [--network-memory SIZE]
                            [--resource NAME=AMOUNT]... [--mode thread|process]
                            [--nats-user USER | --nats-token-file FILE | --nats-creds FILE | --nats-nkey FILE]
                            [--nats-ca FILE] [--nats-cert FILE --nats-key FILE]

Starts one TaskManager that joins the cluster's JobManager through NATS; runs until Ctrl-C.

  --nats URL              the NATS server (default nats://127.0.0.1:4222)
  --cluster-id ID         the cluster to join (default 'default')
  --slots N               static slots (default 1)
  --cpu-cores N           CPU cores offered (default: one per slot)
  --task-heap SIZE        task heap offered, like 512m
  --managed-memory SIZE   managed memory offered, like 256m
  --network-memory SIZE   network memory offered, like 64m
  --resource NAME=AMOUNT  an extended resource offered, like gpu=2 (repeatable)
  --mode thread|process   the TaskExecutor on this process's main thread, its tasks on task threads
                          (default), or in a child process with a hard heap limit
${NATS_FLAGS_USAGE}`;

const OPTIONS = {
  nats: { type: 'string' },
  'cluster-id': { type: 'string' },
  slots: { type: 'string' },
  'cpu-cores': { type: 'string' },
  'task-heap': { type: 'string' },
  'managed-memory': { type: 'string' },
  'network-memory': { type: 'string' },
  resource: { type: 'string', multiple: true },
  mode: { type: 'string' },
  ...NATS_FLAGS,
} as const;

export async function taskmanager(args: readonly string[], io: CliIo): Promise<number> {
  const { values } = parseFlags('taskmanager', args, OPTIONS, false);
  if (values['help']) return (io.stdout(TASKMANAGER_USAGE), 0);
  const string = (name: string) => values[name] as string | undefined;
  const natsAuth = natsAuthFlags(values, io);
  const options = {
    nats: natsUrlFlag(string('nats') ?? 'nats://127.0.0.1:4222'),
    ...(natsAuth === undefined ? {} : { natsAuth }),
    clusterId: clusterIdFlag(string('cluster-id') ?? 'default'),
    ...(string('slots') === undefined ? {} : { slots: integerFlag('slots', string('slots')!, 1, 1024) }),
    ...(string('cpu-cores') === undefined ? {} : { cpuCores: positiveNumberFlag('cpu-cores', string('cpu-cores')!) }),
    ...(string('task-heap') === undefined ? {} : { taskHeap: memoryFlag('task-heap', string('task-heap')!) }),
    ...(string('managed-memory') === undefined
      ? {}
      : { managedMemory: memoryFlag('managed-memory', string('managed-memory')!) }),
    ...(string('network-memory') === undefined
      ? {}
      : { networkMemory: memoryFlag('network-memory', string('network-memory')!) }),
    ...(values['resource'] === undefined ? {} : { resources: resourceFlags(values['resource'] as string[]) }),
    ...(string('mode') === undefined
      ? {}
      : { mode: choiceFlag('mode', string('mode')!, ['thread', 'process'] as const) }),
  };
  // The resources as one profile: ResourceProfile's own rules (names, amounts) refuse what it would.
  ResourceProfile.fromSpec({
    ...(options.cpuCores === undefined ? {} : { cpuCores: options.cpuCores }),
    ...(options.resources === undefined ? {} : { extendedResources: options.resources }),
  });
  const { startTaskManager } = await loadSessionCluster('taskmanager');
  const manager = await startTaskManager(options);
  const cluster = `cluster '${options.clusterId}' at ${options.nats}`;
  // Joined only once the JobManager accepted it; every registration after that with its ResourceID.
  const registered = ({ resourceId, previous }: { resourceId: string; previous: string | null }) =>
    io.stdout(
      previous === null
        ? `slotwise taskmanager: ${resourceId} joined ${cluster}`
        : previous === resourceId
          ? `slotwise taskmanager: ${resourceId} registered again with the JobManager`
          : `slotwise taskmanager: registered again as ${resourceId} (a fresh TaskExecutor: ${previous} was let go)`,
    );
  // Listening for SIGINT/SIGTERM before saying we are up: a signal sent as soon as the line shows is ours to handle.
  const shutdown = untilShutdown(io.shutdown);
  const stopListening = manager.onRegistered(registered);
  if (manager.registered) registered({ resourceId: manager.resourceId, previous: null });
  else io.stdout(`slotwise taskmanager: ${manager.resourceId} registering with the JobManager of ${cluster}`);
  await shutdown;
  stopListening();
  await manager.close();
  io.stdout('slotwise taskmanager: stopped');
  return 0;
}
