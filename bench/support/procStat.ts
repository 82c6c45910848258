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
