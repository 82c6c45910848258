/**
 * Running the CLI in tests: in this process through runCli (refusals, fast), or as the real
 * command in a child process (end to end); and a JobManager child to run it against.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import { runCli } from '../../lib/cli/runCli.js';

export const CLI = fileURLToPath(new URL('../../lib/cli/main.ts', import.meta.url));
export const FIXTURES = fileURLToPath(new URL('../fixtures/cli/', import.meta.url));

export interface CliRun {
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** runCli in this process, its output captured; `env` replaces the environment (default: none). */
export async function cliInProcess(
  argv: readonly string[],
  env: Record<string, string> = {},
): Promise<CliRun & { lines: { stdout: string[]; stderr: string[] } }> {
  const lines = { stdout: [] as string[], stderr: [] as string[] };
  const code = await runCli(argv, {
    stdout: (l) => lines.stdout.push(l),
    stderr: (l) => lines.stderr.push(l),
    env,
    cwd: FIXTURES,
  });
  return { code, stdout: lines.stdout.join('\n'), stderr: lines.stderr.join('\n'), lines };
}

/** `node [--import tsx] main ...argv` in a child process, in `cwd` (default the CLI fixtures). */
export function cliChild(
  command: readonly string[],
  argv: readonly string[],
  env: NodeJS.ProcessEnv = {},
  timeout = 60_000,
  cwd = FIXTURES,
): Promise<CliRun> {
  return new Promise((resolve) => {
    execFile(
      command[0]!,
      [...command.slice(1), ...argv],
      { cwd, env: { ...process.env, ...env }, timeout, killSignal: 'SIGKILL' },
      (error, stdout, stderr) => {
        resolve({ code: error ? ((error as { code?: number }).code ?? null) : 0, stdout, stderr });
      },
    );
  });
}

/** This repository's CLI under tsx. */
export const TSX_CLI = [process.execPath, '--import', 'tsx', CLI] as const;

/** A JobManager child (`jobmanager ... --rest-port 0`): resolves once it printed its REST URL. */
export async function startJobManagerChild(
  command: readonly string[],
  args: readonly string[],
  cwd = FIXTURES,
  env: NodeJS.ProcessEnv = process.env,
): Promise<{ url: string; child: ChildProcess; output: () => string; stop: () => Promise<number | null> }> {
  const child = spawn(command[0]!, [...command.slice(1), 'jobmanager', ...args], {
    cwd,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = once(child, 'exit');
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the JobManager printed no URL within 60 s:\n${output}`)), 60_000);
    const look = () => {
      const found = /^(http:\/\/\S+)$/m.exec(output)?.[1];
      if (found !== undefined) {
        clearTimeout(timer);
        resolve(found);
      }
    };
    child.stdout!.on('data', look);
    void exited.then(() => {
      clearTimeout(timer);
      reject(new Error(`the JobManager exited before it listened:\n${output}`));
    });
  });
  return {
    url,
    child,
    output: () => output,
    stop: async () => {
      if (child.exitCode !== null) return child.exitCode;
      child.kill('SIGTERM');
      const deadline = setTimeout(() => child.kill('SIGKILL'), 20_000);
      const [code] = (await exited) as [number | null];
      clearTimeout(deadline);
      return code;
    },
  };
}

/** A loopback port nothing listens on (taken, then given back). */
export async function closedPort(): Promise<number> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as { port: number };
  server.close();
  await once(server, 'close');
  return port;
}
