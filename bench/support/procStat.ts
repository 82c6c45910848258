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

const mainThreadSchedstat = `/proc/self/task/${process.pid}/schedstat`;
let schedstatWorks: boolean | undefined;

/**
 * CPU time the main thread has run, in µs: from /proc's schedstat (nanoseconds) where there is
 * one, else the whole process's user + system time (process.cpuUsage, which also counts the GC's
 * and other threads). On a machine shared with other work this is the steadier figure: wall time
 * also counts the time the thread waited for a core.
 */
export function threadCpuMicros(): number {
  if (schedstatWorks !== false) {
    try {
      const ns = Number(readFileSync(mainThreadSchedstat, 'utf8').split(' ')[0]);
      if (Number.isFinite(ns)) {
        schedstatWorks = true;
        return ns / 1000;
      }
    } catch {
      // No /proc (or no schedstat in it): fall back below.
    }
    schedstatWorks = false;
  }
  const usage = process.cpuUsage();
  return usage.user + usage.system;
}

/** Whether threadCpuMicros reads the main thread alone (schedstat) rather than the whole process. */
export function threadCpuIsPerThread(): boolean {
  threadCpuMicros();
  return schedstatWorks === true;
}
