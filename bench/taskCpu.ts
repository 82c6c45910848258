/**
 * Where a trivial task's CPU goes, thread by thread: a profiling aid, not a benchmark (`npm run
 * bench` does not run it). Usage:
 *
 *   node --import tsx bench/taskCpu.ts [thread|process] [tasks]     (default: thread 20000)
 *
 * Starts the tasks benchmark's cluster (one TaskExecutor of 2 slots, bench/support/taskCluster.ts),
 * warms it with 3,000 tasks, then runs `tasks` trivial tasks with 64 in flight and prints, from
 * /proc, the CPU time each thread of this process (and of the process-mode TaskExecutor's child
 * process) spent per task. Worker threads all carry the name "node": in thread mode the busiest
 * one besides the main thread is the TaskExecutor's, the two next are the slots' pool threads, and
 * the four started right after the main thread are V8's platform threads (JIT compilation, GC).
 * CPU per task is steadier than tasks/s on a shared machine, but still moves ±10 % between
 * identical runs: compare builds with alternating runs and medians (docs/profiling.md).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { startTaskCluster, TASK_FIXTURE } from './support/taskCluster.js';

const SLOTS = 2;
const IN_FLIGHT = 64;
const WARMUP_TASKS = 3_000;
/** Clock ticks per second of /proc/<pid>/task/<tid>/stat (USER_HZ: 100 on Linux). */
const USER_HZ = 100;

const mode = process.argv[2] ?? 'thread';
const tasks = Number(process.argv[3] ?? 20_000);
if (mode !== 'thread' && mode !== 'process') throw new Error(`mode must be thread or process, got ${mode}`);
if (!Number.isSafeInteger(tasks) || tasks < 1) throw new Error(`tasks must be a positive integer, got ${process.argv[3]}`);

const cluster = await startTaskCluster(mode, SLOTS);
const taskModule = TASK_FIXTURE('increment');

/** Runs `count` tasks, IN_FLIGHT outstanding, round-robin over the slots; checks every output. */
function drive(count: number): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    let next = 0;
    let done = 0;
    const launch = (): void => {
      const i = next++;
      cluster.run(i % SLOTS, taskModule, i).then((output) => {
        if (output !== i + 1) return reject(new Error(`task ${i} returned ${String(output)}`));
        if (++done === count) resolve();
        else if (next < count) launch();
      }, reject);
    };
    for (let k = 0; k < Math.min(IN_FLIGHT, count); k++) launch();
  });
}

/** CPU ticks so far of every thread of this process and of its child processes, by "pid/tid". */
function threadTicks(): Map<string, number> {
  const ticks = new Map<string, number>();
  const fields = (stat: string) => stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const pids = [String(process.pid)];
  for (const pid of readdirSync('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    try {
      if (Number(fields(readFileSync(`/proc/${pid}/stat`, 'utf8'))[1]) === process.pid) pids.push(pid);
    } catch {
      // Gone between the listing and the read.
    }
  }
  for (const pid of pids) {
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      try {
        const f = fields(readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8'));
        ticks.set(`${pid}/${tid}`, Number(f[11]) + Number(f[12]));
      } catch {
        // Gone between the listing and the read.
      }
    }
  }
  return ticks;
}

await drive(WARMUP_TASKS);
const before = threadTicks();
const started = performance.now();
await drive(tasks);
const elapsedMs = performance.now() - started;
const after = threadTicks();
await cluster.close();

const microsPerTask = (ticks: number) => ((ticks * 1e6) / USER_HZ / tasks).toFixed(1);
let total = 0;
const rows: string[] = [];
for (const [thread, now] of after) {
  const spent = now - (before.get(thread) ?? 0);
  total += spent;
  if (spent > 0) rows.push(`  ${thread}${thread === `${process.pid}/${process.pid}` ? ' (main)' : ''}: ${microsPerTask(spent)} µs/task`);
}
console.log(`${mode} mode: ${Math.round((tasks / elapsedMs) * 1000)} tasks/s; CPU over every thread ${microsPerTask(total)} µs/task`);
console.log(rows.join('\n'));
