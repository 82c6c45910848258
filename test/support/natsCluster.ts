/**
 * A real 3-node nats-server cluster on loopback for the HA tests: each node with JetStream in a
 * temporary directory, routes to the others, one cluster name; ready once JetStream can place a stream
 * with 3 replicas (its meta leader elected). `kill(i)` SIGKILLs one node; `stop()` ends them all and
 * removes their stores.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { freePort } from './natsServer.js';

export interface NatsCluster {
  /** Every node's client URL, comma-separated (what `--nats` takes). */
  readonly url: string;
  readonly urls: readonly string[];
  kill(index: number): void;
  stop(): Promise<void>;
}

const READY_MS = 30_000;

export async function startNatsCluster(binary: string, size = 3): Promise<NatsCluster> {
  const ports = await Promise.all(Array.from({ length: size }, () => freePort()));
  const clusterPorts = await Promise.all(Array.from({ length: size }, () => freePort()));
  const dirs = ports.map(() => mkdtempSync(join(tmpdir(), 'slotwise-nats-cluster-')));
  const routes = clusterPorts.map((port) => `nats://127.0.0.1:${port}`).join(',');
  const children: ChildProcess[] = ports.map((port, i) =>
    spawn(
      binary,
      [
        ...['-a', '127.0.0.1', '-p', String(port), '-js', '-sd', dirs[i]!, '-n', `node-${i}`],
        ...['--cluster_name', 'slotwise-test', '--cluster', `nats://127.0.0.1:${clusterPorts[i]}`, '--routes', routes],
      ],
      { stdio: ['ignore', 'ignore', 'ignore'] },
    ),
  );
  const urls = ports.map((port) => `nats://127.0.0.1:${port}`);
  const stop = async () => {
    await Promise.all(
      children.map(async (child) => {
        if (child.exitCode !== null || child.signalCode !== null) return;
        const exited = new Promise((resolve) => child.once('exit', resolve));
        child.kill('SIGTERM');
        const forced = setTimeout(() => child.kill('SIGKILL'), 5_000);
        await exited;
        clearTimeout(forced);
      }),
    );
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  };
  // Ready when a stream of 3 replicas can be placed (and removed again).
  const deadline = Date.now() + READY_MS;
  for (;;) {
    try {
      const connection = await connect({ servers: urls, timeout: 1_000 });
      try {
        const jsm = await jetstreamManager(connection, { timeout: 2_000 });
        await jsm.streams.add({ name: 'ready-probe', subjects: ['ready.probe'], num_replicas: size });
        await jsm.streams.delete('ready-probe');
      } finally {
        await connection.close();
      }
      break;
    } catch (error) {
      if (Date.now() > deadline) {
        await stop();
        throw new Error(`the ${size}-node nats-server cluster did not get ready within ${READY_MS} ms: ${error}`);
      }
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  }
  return {
    url: urls.join(','),
    urls,
    kill: (index) => children[index]!.kill('SIGKILL'),
    stop,
  };
}
