/**
 * This process's child processes as Linux's /proc lists them, zombies (state Z: exited, not yet reaped) included —
 * for tests that check what a cluster leaves running. Empty where there is no /proc.
 */
import { readdirSync, readFileSync } from 'node:fs';

export interface ChildProcessInfo {
  readonly pid: number;
  /** The command name (/proc's comm: may hold spaces and parentheses). */
  readonly comm: string;
  /** /proc's state letter: R, S, Z (defunct), … */
  readonly state: string;
}

export function childProcesses(): ChildProcessInfo[] {
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return [];
  }
  const children: ChildProcessInfo[] = [];
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
    } catch {
      continue; // gone meanwhile
    }
    // "pid (comm) state ppid …": comm may hold spaces and parentheses, so split at the last ')'.
    const comm = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
    const [state, ppid] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (Number(ppid) === process.pid) children.push({ pid: Number(entry), comm, state: state! });
  }
  return children;
}
