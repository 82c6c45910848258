/**
 * A real nats-server for the tests, on a free loopback port, with JetStream in a temporary
 * directory; stopped (and its directory removed) by `stop()`. Without the binary, `natsServerOrSkip`
 * skips the suite with a line saying why — never a silent pass.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface NatsServer {
  readonly url: string;
  readonly port: number;
  readonly process: ChildProcess;
  /** Stops the server (SIGTERM, then SIGKILL after 5 s) and removes its store. */
  stop(): Promise<void>;
  /** Rewrites the `config` part of its configuration file and has it reload (SIGHUP): credentials revoked, say. */
  reload(config: string): void;
}

/** The nats-server binary, or undefined when it is not installed. */
export function natsServerBinary(): string | undefined {
  for (const candidate of [
    process.env['NATS_SERVER'],
    'nats-server',
    '/usr/sbin/nats-server',
    '/usr/bin/nats-server',
  ]) {
    if (candidate === undefined || candidate === '') continue;
    if (spawnSync(candidate, ['--version'], { stdio: 'ignore' }).status === 0) return candidate;
  }
  return undefined;
}

/** A TCP port free on 127.0.0.1 now. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() =>
        typeof address === 'object' && address !== null ? resolve(address.port) : reject(new Error('no port')),
      );
    });
  });
}

export interface NatsServerOptions {
  /** Largest message the server takes (its `max_payload`), in bytes; default the server's 1 MB. */
  readonly maxPayload?: number;
  /** Address to listen on; default 127.0.0.1. */
  readonly address?: string;
  /**
   * More of the server's configuration file, as written (`authorization { users = [...] }`, `tls { ... }`): a server
   * that asks its clients for credentials.
   */
  readonly config?: string;
}

/** Starts nats-server with JetStream; resolves once it is ready (at most 15 s). */
export async function startNatsServer(binary: string, options: NatsServerOptions = {}): Promise<NatsServer> {
  const address = options.address ?? '127.0.0.1';
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'slotwise-nats-'));
  const args = ['-a', address, '-p', String(port), '-js', '-sd', dir];
  // max_payload, authorization and tls are config-file settings only.
  const configFile = join(dir, 'server.conf');
  const writeConfig = (config: string | undefined) =>
    writeFileSync(
      configFile,
      `${[
        ...(options.maxPayload === undefined ? [] : [`max_payload: ${options.maxPayload}`]),
        ...(config === undefined ? [] : [config]),
      ].join('\n')}\n`,
    );
  if (options.maxPayload !== undefined || options.config !== undefined) {
    writeConfig(options.config);
    args.push('-c', configFile);
  }
  const child = spawn(binary, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  let output = '';
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`nats-server did not get ready within 15 s:\n${output}`)), 15_000);
    child.stderr!.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes('Server is ready')) {
        clearTimeout(timer);
        resolve();
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`nats-server exited (${code}) before it was ready:\n${output}`));
    });
  });
  child.stderr!.resume();
  const exited = new Promise<void>((resolve) =>
    child.exitCode !== null ? resolve() : child.once('exit', () => resolve()),
  );
  return {
    url: `nats://${address}:${port}`,
    port,
    process: child,
    reload: (config) => {
      if (!args.includes('-c')) throw new Error('reload needs a server started with options.config');
      writeConfig(config);
      child.kill('SIGHUP');
    },
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        const forced = setTimeout(() => child.kill('SIGKILL'), 5_000);
        await exited;
        clearTimeout(forced);
      }
      child.stderr!.destroy();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** In a mocha `before`: the binary, or `this.skip()` with a visible line when it is missing. */
export function natsServerOrSkip(context: Mocha.Context, suite: string): string {
  const binary = natsServerBinary();
  if (binary === undefined) {
    console.log(
      `      [skipped] ${suite}: nats-server is not installed (apt-get install -y nats-server, or set NATS_SERVER)`,
    );
    context.skip();
  }
  return binary;
}
