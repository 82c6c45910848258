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
import { readdirSync } from 'node:fs';
import { childPids, cpuTicks, USER_HZ } from './support/procStat.js';
import { startTaskCluster, TASK_FIXTURE } from './support/taskCluster.js';

const SLOTS = 2;
const IN_FLIGHT = 64;
const WARMUP_TASKS = 3_000;

const mode = process.argv[2] ?? 'thread';
const tasks = Number(process.argv[3] ?? 20_000);
if (mode !== 'thread' && mode !== 'process') throw new Error(`mode must be thread or process, got ${mode}`);
if (!Number.isSafeInteger(tasks) || tasks < 1)
  throw new Error(`tasks must be a positive integer, got ${process.argv[3]}`);

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
  for (const pid of [String(process.pid), ...childPids()]) {
    let tids: string[];
    try {
      tids = readdirSync(`/proc/${pid}/task`);
    } catch {
      continue;
    }
    for (const tid of tids) {
      const spent = cpuTicks(`/proc/${pid}/task/${tid}/stat`);
      if (spent !== undefined) ticks.set(`${pid}/${tid}`, spent);
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
  if (spent > 0)
    rows.push(
      `  ${thread}${thread === `${process.pid}/${process.pid}` ? ' (main)' : ''}: ${microsPerTask(spent)} µs/task`,
    );
}
console.log(
  `${mode} mode: ${Math.round((tasks / elapsedMs) * 1000)} ` +
    `tasks/s; CPU over every thread ${microsPerTask(total)} µs/task`,
);
console.log(rows.join('\n'));
