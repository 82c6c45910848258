/**
 * The entry of a TaskExecutor worker, on a worker thread (bootstrap in workerData, transport over
 * parentPort) or in a child process (bootstrap as the first IPC message, transport over IPC).
 * It wires a TaskExecutor to its Link: the ResourceManager on channel `rm`, JobMasters on
 * `jm:<address>`, its own gateway served on `te` through its mailbox. When the TaskExecutor stops,
 * the worker ends with its exit code.
 */
import { isMainThread, parentPort, workerData } from 'node:worker_threads';
import { Link } from '../rpc/Link.js';
import { serveTaskExecutor, taskExecutorGateways } from './taskExecutorGateways.js';
import { portTransport, processTransport, type Transport } from '../rpc/Transport.js';
import { BOOTSTRAP_MESSAGE, INSPECT_CHANNEL, LOG_CHANNEL, type WorkerBootstrap } from '../rpc/WorkerBootstrap.js';
import { atLeast, formatLogRecord, type LogRecord } from '../core/Logger.js';
import { systemClock } from '../core/clock.js';
import { broadcastPartitionPeers, socketPartitionPeers } from './localPartitionPeers.js';
import { ResultPartitions, spillOptionsOf } from './ResultPartitions.js';
import { SlotTaskPool, type SlotTaskPoolLogEntry } from './SlotTaskPool.js';
import { taskThreadReserve } from './TaskThreadReserve.js';
import { TaskExecutor } from './TaskExecutor.js';

/**
 * The bootstrap and the Link to the driver. In a child process the Link takes over the IPC channel
 * in the very call that receives the bootstrap: Node emits the messages of one read one after
 * another, before any await could resume, and drops those no 'message' listener takes — a call
 * sent while this process was still starting (the driver's shutdown when the cluster closes)
 * would be lost, and its caller would wait out `rpc.ask.timeout` (see docs/runtime.md, Failures).
 */
function connect(): Promise<{ bootstrap: WorkerBootstrap; link: Link }> {
  const linkOf = (bootstrap: WorkerBootstrap, transport: Transport) =>
    new Link(`TaskExecutor ${bootstrap.resourceId}`, transport);
  if (!isMainThread && parentPort !== null) {
    const bootstrap = workerData as WorkerBootstrap;
    return Promise.resolve({ bootstrap, link: linkOf(bootstrap, portTransport(parentPort)) });
  }
  return new Promise((resolve) => {
    const onMessage = (message: unknown) => {
      const value = (message as Record<string, unknown> | null)?.[BOOTSTRAP_MESSAGE];
      if (value === undefined) return;
      const bootstrap = value as WorkerBootstrap;
      const link = linkOf(bootstrap, processTransport(process));
      process.off('message', onMessage);
      resolve({ bootstrap, link });
    };
    process.on('message', onMessage);
  });
}

/**
 * The worker inspector module (an ES module of its own, not in the bundle). Run as the bundle, this
 * code is a vm script, whose own `import()` Node 20 allows only under --experimental-vm-modules:
 * taskExecutorStart.cts lends its `import()` then, resolving against this entry's URL.
 */
function importWorkerInspector(): Promise<typeof import('../workerInspector.js')> {
  const lent = (globalThis as Record<symbol, ((specifier: string) => Promise<unknown>) | undefined>)[
    Symbol.for('slotwise.importFromEntry')
  ];
  return lent === undefined
    ? import('../workerInspector.js')
    : (lent('../workerInspector.js') as Promise<typeof import('../workerInspector.js')>);
}

/**
 * An async main, not top-level awaits: the one-file bundle of this entry that a compiled build
 * starts is CommonJS (scripts/bundleWorkers.ts), so that its V8 code cache can be used.
 */
async function main(): Promise<void> {
  const { bootstrap: config, link } = await connect();
  const timeoutMs = config.configuration['rpc.ask.timeout'];
  const debug = process.env['SLOTWISE_DEBUG'] !== undefined;
  const logChannel = link.channel(LOG_CHANNEL);
  const logLevel = config.logLevel ?? 'debug';
  // Records go to the cluster's logger as plain data (the driver adds this worker's ResourceID), those
  // below its level stay here; under SLOTWISE_DEBUG every one is also written to stderr.
  const send = (record: LogRecord) => {
    if (config.log && atLeast(record.level, logLevel)) logChannel.postMessage(record);
    if (debug) process.stderr.write(`${formatLogRecord({ ...record, resourceId: config.resourceId })}\n`);
  };
  const log = (message: string) => send({ level: 'info', source: 'runtime', message });
  // A slot's task pool: a task's context.log(...) lines and the pool's own warnings, with their task.
  const poolLog = (entry: SlotTaskPoolLogEntry) =>
    send({
      level: entry.level,
      source: entry.source,
      message: entry.message,
      slotId: entry.pool,
      ...(entry.jobId === undefined ? {} : { jobId: entry.jobId }),
      ...(entry.vertexId === undefined ? {} : { vertexId: entry.vertexId }),
      ...(entry.vertexName === undefined ? {} : { vertexName: entry.vertexName }),
      ...(entry.subtaskIndex === undefined ? {} : { subtaskIndex: entry.subtaskIndex }),
      ...(entry.executionAttemptId === undefined ? {} : { executionAttemptId: entry.executionAttemptId }),
    });
  const inspectChannel = link.channel(INSPECT_CHANNEL);
  // Loaded only when asked for: the inspector and its serializer cost a worker more to load than the rest of it
  // (the worker side alone: the relay and the browser opener stay on the main thread, inspect.ts).
  const inspect = config.inspect
    ? await (await importWorkerInspector()).loadWorkerInspector(
        (event) => inspectChannel.postMessage(event),
        config.inspectDetail,
      )
    : undefined;

  // Task threads booted ahead of need, one lent to each slot allocation and given back when it ends.
  // It speaks only of a spare thread's errors: warnings of the pools.
  const taskThreads = taskThreadReserve(config.configuration, (message) =>
    send({ level: 'warn', source: 'pool', message }),
  );

  // A MiniCluster's TaskExecutors keep their producers' outputs and read each other's (ResultPartitions.ts).
  const peers =
    config.partitions?.kind === 'in-process' && !isMainThread
      ? broadcastPartitionPeers(config.resourceId, systemClock)
      : config.partitions?.kind === 'sockets'
        ? socketPartitionPeers(config.partitions.directory, config.resourceId, systemClock)
        : undefined;
  const partitions =
    peers === undefined
      ? undefined
      : new ResultPartitions(config.resourceId, peers, timeoutMs, spillOptionsOf(config.configuration));

  const taskExecutor = new TaskExecutor({
    resourceId: config.resourceId,
    mode: config.mode,
    configuration: config.configuration,
    ...(config.pendingWorkerId === null ? {} : { pendingWorkerId: config.pendingWorkerId }),
    ...taskExecutorGateways(link, timeoutMs),
    createTaskRunner: ({ name, heapLimitMb }) => {
      const lease = taskThreads.lease(heapLimitMb);
      const pool = new SlotTaskPool({
        name,
        ...(heapLimitMb === undefined ? {} : { heapLimitMb }),
        cancelGraceMs: config.configuration['task.cancellation.grace-period'],
        threads: lease.threads,
        returnThreads: lease.returnThreads,
        log: poolLog,
      });
      return {
        run: (invocation, options) => pool.run(invocation, options),
        cancel: (executionAttemptId, reason) => pool.cancel(executionAttemptId, reason),
        close: () => lease.release(pool.close()),
      };
    },
    taskThreads,
    ...(partitions === undefined ? {} : { partitions }),
    onTerminated: (code, reason) => {
      if (debug) log(`stopped (${code}): ${reason}`);
      // The build's warm-up takes the V8 code cache of this worker's bundle now, with every function
      // of its run compiled (taskExecutorStart.cts sets this only then).
      (globalThis as Record<symbol, (() => void) | undefined>)[Symbol.for('slotwise.writeCodeCache')]?.();
      link.close(`the TaskExecutor stopped: ${reason}`);
      // Give the last frames (disconnect, final states) a moment to leave, then end the worker.
      setTimeout(() => process.exit(code), 50).unref();
    },
    ...(debug || config.log ? { log } : {}),
    ...(inspect === undefined ? {} : { inspect }),
  });
  serveTaskExecutor(link, taskExecutor);
  // The ResourceManager gone (the link closed under us): nothing left to work for.
  link.onClosed(() => setTimeout(() => process.exit(0), 50).unref());
  taskExecutor.start();
}

// A failure to start is an uncaught error of this worker: its 'error' event (a thread), its exit (a process).
main().catch((error: unknown) => {
  process.nextTick(() => {
    throw error;
  });
});
