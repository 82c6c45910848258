/**
 * What the session-cluster benchmarks share: TaskManagers started as an operator starts them (`slotwise taskmanager`
 * from the built package, each with a temporary directory of its own), and CPU time split by who spent it.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { cpuTicks, USER_HZ } from './procStat.js';

const root = dirname(dirname(dirname(fileURLToPath(import.meta.url))));

export interface CliTaskManager {
  readonly child: ChildProcess;
  /** SIGTERM, then its directory removed once it exited. */
  stop(): Promise<void>;
}

/** `slotwise taskmanager` joining cluster `clusterId` at `url` with `slots` slots (dist/ must be built). */
export function startCliTaskManager(url: string, clusterId: string, slots: number): CliTaskManager {
  const dir = mkdtempSync(join(tmpdir(), 'slotwise-bench-taskmanager-'));
  const args = ['--nats', url, '--cluster-id', clusterId, '--slots', String(slots), '--cpu-cores', String(slots)];
  args.push('--task-heap', '1g', '--managed-memory', '64m', '--network-memory', '32m');
  const child = spawn(process.execPath, [join(root, 'dist/lib/cli/main.js'), 'taskmanager', ...args], {
    stdio: ['ignore', 'ignore', 'inherit'],
    env: { ...process.env, TMPDIR: dir },
  });
  return {
    child,
    stop: async () => {
      const exited = new Promise((resolve) => (child.exitCode !== null ? resolve(0) : child.once('exit', resolve)));
      child.kill('SIGTERM');
      await exited;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** CPU ms per part so far: this process (every thread), and each named group of processes (by pid, from /proc). */
export function cpuByPart(children: Record<string, () => readonly number[]>): Record<string, number> {
  const usage = process.cpuUsage();
  const parts: Record<string, number> = { 'this process': (usage.user + usage.system) / 1000 };
  for (const [name, pids] of Object.entries(children)) {
    parts[name] = pids().reduce((ms, pid) => ms + ((cpuTicks(`/proc/${pid}/stat`) ?? 0) * 1000) / USER_HZ, 0);
  }
  return parts;
}
