/**
 * The NATS session cluster (`lib/cluster`), loaded only by the `jobmanager` and `taskmanager`
 * commands that need it, and only when this build has it: its absence is told in one line instead
 * of a stack trace. The shapes here are what those commands call.
 */
import { fileURLToPath } from 'node:url';
import { IllegalStateError } from '../core/errors.js';
import type { StoredTaskCode, TaskCodeUpload } from '../rest/RestTarget.js';
import type { TargetCluster } from '../rest/miniClusterTarget.js';

export interface SessionJobManager extends TargetCluster {
  storeTaskCode(upload: TaskCodeUpload): Promise<StoredTaskCode>;
  /** Its REST API's URL, when started with `rest`. */
  readonly restUrl: string | null;
  /** Its dashboard's page with the token, when started with `rest`. */
  readonly dashboardUrl: string | null;
  /** Whether it leads its cluster (else it stands by), and who does. */
  readonly isLeader: boolean;
  readonly leader: {
    readonly token: number;
    readonly holder: { readonly host: string; readonly pid: number; readonly restUrl: string | null };
  } | null;
  onLeadershipChange(
    listener: (change: { leading: boolean; token: number; reason: string | null }) => void,
  ): () => void;
  close(): Promise<void>;
}

export interface SessionTaskManager {
  readonly resourceId: string;
  readonly registered: boolean;
  /** Each registration at the ResourceManager: its ResourceID, and the one before (null for the first). */
  onRegistered(listener: (event: { resourceId: string; previous: string | null }) => void): () => void;
  close(): Promise<void>;
}

export interface SessionClusterModule {
  startJobManager(options: {
    nats: string;
    natsAuth?: Record<string, string>;
    clusterId: string;
    configuration?: Record<string, unknown>;
    rest?: {
      port: number;
      address: string;
      token?: string;
      tls?: { certFile: string; keyFile: string; clientCaFile?: string };
    };
  }): Promise<SessionJobManager>;
  startTaskManager(options: {
    nats: string;
    natsAuth?: Record<string, string>;
    clusterId: string;
    slots?: number;
    cpuCores?: number;
    taskHeap?: string;
    managedMemory?: string;
    networkMemory?: string;
    resources?: Record<string, number>;
    mode?: 'thread' | 'process';
  }): Promise<SessionTaskManager>;
}

/** lib/cluster/index, or IllegalStateError saying this build has no session cluster (and what to use instead). */
export async function loadSessionCluster(command: string): Promise<SessionClusterModule> {
  // A computed specifier: this build may not have the module, and the type checker must not insist.
  const specifier = new URL('../cluster/index.js', import.meta.url).href;
  let loaded: Partial<SessionClusterModule>;
  try {
    loaded = (await import(specifier)) as Partial<SessionClusterModule>;
  } catch (error) {
    // Only the entry itself missing means "not in this build"; a missing dependency of it (the NATS
    // client) is a broken install, told as it is.
    const code = (error as { code?: string }).code;
    const entry = fileURLToPath(specifier).replace(/\.js$/, '');
    if (code !== 'ERR_MODULE_NOT_FOUND' || !String((error as Error).message).includes(entry)) throw error;
    loaded = {};
  }
  if (typeof loaded.startJobManager !== 'function' || typeof loaded.startTaskManager !== 'function') {
    throw new IllegalStateError(
      `the NATS session cluster (lib/cluster) is not available in this build${
        command === 'jobmanager'
          ? '; slotwise jobmanager --local-taskmanagers N serves an in-process cluster over REST'
          : ''
      }`,
      { component: 'slotwise', operation: command, state: 'no-session-cluster', allowed: ['session-cluster'] },
    );
  }
  return loaded as SessionClusterModule;
}

/** Resolves when `io.shutdown` aborts, or at the process's first SIGINT or SIGTERM. */
export function untilShutdown(shutdown: AbortSignal | undefined): Promise<void> {
  if (shutdown !== undefined) {
    return new Promise((resolve) =>
      shutdown.aborted ? resolve() : shutdown.addEventListener('abort', () => resolve(), { once: true }),
    );
  }
  return new Promise((resolve) => {
    const stop = () => {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      resolve();
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
  });
}
