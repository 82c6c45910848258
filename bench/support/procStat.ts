/**
 * CPU time from Linux's /proc, for the benchmarks that count what a task costs on every thread and
 * in the process-mode TaskExecutor's child process. Where there is no /proc, nothing is found.
 */
import { readdirSync, readFileSync } from 'node:fs';

/** Clock ticks per second of /proc's stat files (USER_HZ: 100 on Linux). */
export const USER_HZ = 100;

/** user + system CPU ticks in a /proc/<pid>/stat or /proc/<pid>/task/<tid>/stat file; undefined once it is gone. */
export function cpuTicks(statFile: string): number | undefined {
  try {
    const stat = readFileSync(statFile, 'utf8');
    // Fields after "(comm) ": state ppid … utime (14th field overall) stime (15th).
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return Number(fields[11]) + Number(fields[12]);
  } catch {
    return undefined;
  }
}

/** CPU ms each thread of this process has used so far, by thread id (/proc/self/task); none where there is no /proc. */
export function threadCpuMs(): Map<string, number> {
  const cpu = new Map<string, number>();
  let tids: string[];
  try {
    tids = readdirSync('/proc/self/task');
  } catch {
    return cpu;
  }
  for (const tid of tids) {
    const ticks = cpuTicks(`/proc/self/task/${tid}/stat`);
    if (ticks !== undefined) cpu.set(tid, (ticks * 1000) / USER_HZ);
  }
  return cpu;
}

/** The pids of this process's child processes. */
export function childPids(): string[] {
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return [];
  }
  const children: string[] = [];
  for (const pid of entries) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === process.pid) children.push(pid);
    } catch {
      // The process ended between the listing and the read.
    }
  }
  return children;
}

/**
 * CPU time this process has used, in µs (user + system, every thread: the benchmark's own and
 * V8's garbage collector and compiler threads). On a machine shared with other work this is the
 * steadier figure: wall time also counts the time the process waited for a core. (The main
 * thread's own counter in /proc's schedstat moves in scheduler ticks of ~4 ms, too coarse for a
 * 10 ms run.)
 */
export function cpuMicros(): number {
  const usage = process.cpuUsage();
  return usage.user + usage.system;
}

/** CPU ms of this process's child processes (process-mode TaskExecutors), from /proc; 0 where there is no /proc. */
export function childrenCpuMs(): number {
  let ticks = 0;
  for (const pid of childPids()) ticks += cpuTicks(`/proc/${pid}/stat`) ?? 0;
  return (ticks * 1000) / USER_HZ;
}

/** CPU time of this process (every thread) and of its child processes, in ms. */
export function processTreeCpuMs(): number {
  const usage = process.cpuUsage();
  return (usage.user + usage.system) / 1000 + childrenCpuMs();
}

/**
 * Waits until this process and its children used less than 3 ms of CPU in 150 ms, at most `limitMs`: what a job
 * leaves behind (threads refilled, slots freed, memory released) is counted before the next one starts.
 */
export async function untilIdle(limitMs = 30_000): Promise<void> {
  const deadline = performance.now() + limitMs;
  let last = processTreeCpuMs();
  for (;;) {
    await new Promise((resolve) => setTimeout(resolve, 150));
    const now = processTreeCpuMs();
    if (now - last < 3 || performance.now() > deadline) return;
    last = now;
  }
}
