/**
 * What the session-cluster benchmarks share: one TaskManager shape, TaskManagers started as an operator starts them
 * (`slotwise taskmanager` from the built package, each with a temporary directory of its own), a MiniCluster of the
 * same shape to compare with, and CPU time split by who spent it.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { cpuTicks, USER_HZ } from './procStat.js';

const root = dirname(dirname(dirname(fileURLToPath(import.meta.url))));

/** A benchmark TaskManager of `slots` slots: a core each, and this memory (the TaskManager's own option names). */
export const taskManagerShape = (slots: number) =>
  ({ slots, cpuCores: slots, taskHeap: '1g', managedMemory: '64m', networkMemory: '32m' }) as const;

/** MiniCluster options of `taskExecutors` such TaskManagers, each a TaskExecutor in a child process. */
export function sameShapeMiniCluster(taskExecutors: number, slots: number) {
  const { cpuCores, taskHeap, managedMemory, networkMemory } = taskManagerShape(slots);
  return {
    mode: 'process',
    taskExecutors,
    slotsPerTaskExecutor: slots,
    resources: { cpuCores, taskHeapMemory: taskHeap, managedMemory, networkMemory },
  } as const;
}

export interface CliTaskManager {
  readonly child: ChildProcess;
  /** SIGTERM, then its directory removed once it exited. */
  stop(): Promise<void>;
}

/** `slotwise taskmanager` joining cluster `clusterId` at `url` with `slots` slots (dist/ must be built). */
export function startCliTaskManager(url: string, clusterId: string, slots: number): CliTaskManager {
  const dir = mkdtempSync(join(tmpdir(), 'slotwise-bench-taskmanager-'));
  const shape = taskManagerShape(slots);
  const args = ['--nats', url, '--cluster-id', clusterId, '--slots', String(slots), '--cpu-cores', String(slots)];
  args.push('--task-heap', shape.taskHeap, '--managed-memory', shape.managedMemory);
  args.push('--network-memory', shape.networkMemory);
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
