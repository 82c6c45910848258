/**
 * Task throughput (issue 4, "Benchmarks"): trivial tasks through a TaskExecutor against the same
 * function on a bare piscina pool of the same size.
 *
 * - TaskExecutor: one TaskExecutor of SLOTS slots (a worker thread, or a child process), its slots
 *   allocated once (SLOTS declared, SLOTS offers accepted), then tasks submitted round-robin over
 *   the slots with IN_FLIGHT outstanding; a task counts from its submit until the JobMaster (main
 *   thread) hears 'finished' with its output. Each slot runs its tasks on its own piscina pool of
 *   one thread (SlotTaskPool), inside the TaskExecutor.
 * - bare piscina, as its users run it: a plain task file (`export default (x) => x + 1`) on a
 *   Piscina with its default options but the same number of threads (min = max = SLOTS), given
 *   the task's input, with the same IN_FLIGHT. None of our code is in it.
 * - For the breakdown: SLOTS SlotTaskPools driven directly from the main thread (what a slot's
 *   pool adds to bare piscina, without the TaskExecutor, the Link and the reports).
 *
 * The task returns its input + 1 (bench/support/tasks/increment.mjs for ours, plusOnePlain.mjs
 * for bare piscina; plain JavaScript, so no thread pays tsx per call); each output is checked.
 * One benchmark iteration is TASKS_PER_ITERATION tasks; the variants run in ROUNDS interleaved
 * rounds (a 2-vCPU machine drifts) and each figure is the median over rounds. Workers start, every
 * slot loads the task module, and WARMUP_TASKS tasks per variant warm the JIT before anything is
 * timed (.ts workers under tsx start slowly). Beside tasks/s, each variant's CPU time per task
 * (every thread, and the process-mode TaskExecutor's child process, read from /proc) says what a
 * task costs whatever else the machine is doing. After the rounds, SEQUENTIAL_TASKS tasks one at a
 * time per variant give the latency of one task alone (a chain of cross-thread hops, each a wake-up).
 *
 * Targets (issue 9): TaskExecutor ≥ 0.8× bare piscina in thread mode, ≥ 0.6× in process mode; one
 * task alone ≤ 2× bare piscina's latency. Run with `npm run bench -- tasks`. The last
 * line of output is one JSON object with every figure.
 */
import { cpus, loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { Piscina } from 'piscina';
import { Bench } from 'tinybench';
import { SlotTaskPool } from '../lib/taskexecutor/SlotTaskPool.js';
import type { TaskInvocationContext } from '../lib/taskexecutor/taskWorker.js';
import { processTreeCpuMs } from './support/procStat.js';
import { printJson, round, runBench, type BenchRow } from './support/report.js';
import { startTaskCluster, type TaskCluster } from './support/taskCluster.js';

const SLOTS = 2;
const IN_FLIGHT = 64;
const TASKS_PER_ITERATION = 500;
/** Short settings for a quick before/after comparison: `TASKS_ROUNDS=3 TASKS_WARMUP=1000 TASKS_SEQUENTIAL=100`. */
const ROUNDS = Number(process.env['TASKS_ROUNDS'] ?? 5);
/**
 * Tasks per variant before anything is timed: the JIT warms up over the first thousands (a cold run reads ~30 % lower).
 */
const WARMUP_TASKS = Number(process.env['TASKS_WARMUP'] ?? 3_000);
const SEQUENTIAL_TASKS = Number(process.env['TASKS_SEQUENTIAL'] ?? 200);
/** Throughput against bare piscina, per mode, and one task alone: at most this many times bare piscina's latency. */
const TARGET = { thread: 0.8, process: 0.6, aloneLatency: 2 } as const;
const TASK_MODULE = fileURLToPath(new URL('./support/tasks/increment.mjs', import.meta.url));
const PLAIN_TASK = fileURLToPath(new URL('./support/tasks/plusOnePlain.mjs', import.meta.url));

/** Runs one task with input `i` on slot `slot`, resolving with its output. */
type RunOne = (slot: number, i: number) => Promise<unknown>;

// ------------------------------------------------------------------------------ the variants

function context(slot: number, i: number): TaskInvocationContext {
  return {
    jobId: '00000000000000000000000000000000',
    jobName: 'tasks-bench',
    vertexId: 'v',
    vertexName: 'increment',
    subtaskIndex: i % 1_000_000,
    parallelism: 1_000_000,
    attemptNumber: 0,
    executionAttemptId: `${String(i).padStart(32, '0')}`,
    allocationId: `${String(slot).padStart(32, '0')}`,
  };
}

function barePiscina(): { run: RunOne; pool: Piscina } {
  const pool = new Piscina({ filename: PLAIN_TASK, minThreads: SLOTS, maxThreads: SLOTS });
  pool.on('error', (error: unknown) => console.error('bare piscina pool error:', error));
  const run: RunOne = (_slot, i) => pool.run(i) as Promise<unknown>;
  return { run, pool };
}

function slotTaskPools(): { run: RunOne; pools: SlotTaskPool[] } {
  const pools = Array.from(
    { length: SLOTS },
    (_, s) => new SlotTaskPool({ name: `bench-slot-${s}`, heapLimitMb: 64, log: () => {} }),
  );
  const run: RunOne = async (slot, i) => {
    const pool = pools[slot % SLOTS]!;
    const result = await pool.run({
      taskModule: TASK_MODULE,
      context: context(slot, i),
      inputs: i,
      config: undefined,
      memory: null,
    });
    return result.output;
  };
  return { run, pools };
}

const viaCluster =
  (cluster: TaskCluster): RunOne =>
  (slot, i) =>
    cluster.run(slot, TASK_MODULE, i);

// ------------------------------------------------------------------------------ driving

interface Latencies {
  values: number[];
}

/**
 * Runs `count` tasks, `inFlight` outstanding, round-robin over the slots; checks every output
 * (input + 1) and records each task's latency (ms) into `latencies` when given.
 */
function drive(run: RunOne, count: number, inFlight: number, latencies?: Latencies): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    let next = 0;
    let done = 0;
    let failed = false;
    const launch = (): void => {
      const i = next++;
      const started = performance.now();
      run(i % SLOTS, i).then(
        (output) => {
          if (failed) return;
          if (output !== i + 1) {
            failed = true;
            reject(new Error(`task ${i} returned ${String(output)}, expected ${i + 1}`));
            return;
          }
          latencies?.values.push(performance.now() - started);
          if (++done === count) resolve();
          else if (next < count) launch();
        },
        (error: unknown) => {
          if (failed) return;
          failed = true;
          reject(error instanceof Error ? error : new Error(String(error)));
        },
      );
    };
    for (let k = 0; k < Math.min(inFlight, count); k++) launch();
  });
}

// ------------------------------------------------------------------------------ setup

const setupStarted = performance.now();
const bare = barePiscina();
const direct = slotTaskPools();
const [threadCluster, processCluster] = await Promise.all([
  startTaskCluster('thread', SLOTS),
  startTaskCluster('process', SLOTS),
]);
// Every thread up and every slot's thread has loaded the task module (the first task on a thread
// starts the thread and registers tsx there): a few tasks per slot, outside any timing.
const VARIANTS = {
  bare: { label: `bare piscina (${SLOTS} threads)`, run: bare.run },
  direct: { label: `SlotTaskPool ×${SLOTS}, main thread`, run: direct.run },
  thread: { label: 'TaskExecutor, thread mode', run: viaCluster(threadCluster) },
  process: { label: 'TaskExecutor, process mode', run: viaCluster(processCluster) },
} as const;
type Key = keyof typeof VARIANTS;
const KEYS = Object.keys(VARIANTS) as Key[];
await Promise.all(KEYS.map((key) => drive(VARIANTS[key].run, SLOTS * 8, SLOTS * 2)));
for (const key of KEYS) await drive(VARIANTS[key].run, WARMUP_TASKS, IN_FLIGHT);
const setupMs = performance.now() - setupStarted;

// ------------------------------------------------------------------------------ throughput rounds

const perRound: Record<Key, BenchRow[]> = { bare: [], direct: [], thread: [], process: [] };
/**
 * Per round, CPU µs per task over the round's timed and warmup iterations (all threads, the TaskExecutor process
 * included).
 */
const cpuPerTask: Record<Key, number[]> = { bare: [], direct: [], thread: [], process: [] };
const latencies: Record<Key, Latencies> = {
  bare: { values: [] },
  direct: { values: [] },
  thread: { values: [] },
  process: { values: [] },
};
const roundsStarted = performance.now();
for (let r = 0; r < ROUNDS; r++) {
  const bench = new Bench({
    name: `tasks round ${r + 1}`,
    time: 1_000,
    warmupTime: 150,
    warmupIterations: 1,
    iterations: 3,
  });
  for (const key of KEYS) {
    let recording = false;
    let cpuStart = 0;
    let tasks = 0;
    bench.add(
      VARIANTS[key].label,
      () => {
        tasks += TASKS_PER_ITERATION;
        return drive(VARIANTS[key].run, TASKS_PER_ITERATION, IN_FLIGHT, recording ? latencies[key] : undefined);
      },
      {
        // Latencies of timed iterations only.
        beforeAll(mode) {
          recording = mode === 'run';
          if (mode === 'run') {
            cpuStart = processTreeCpuMs();
            tasks = 0;
          }
        },
        afterAll(mode) {
          if (mode === 'run' && tasks > 0) cpuPerTask[key].push(((processTreeCpuMs() - cpuStart) * 1000) / tasks);
        },
      },
    );
  }
  const rows = await runBench(bench);
  KEYS.forEach((key, i) => perRound[key].push(rows[i]!));
}
const roundsMs = performance.now() - roundsStarted;

// ------------------------------------------------------------------------------ one task alone

const sequential = {} as Record<Key, { meanMicros: number; p50Micros: number; p99Micros: number }>;
for (const key of KEYS) {
  const measured: Latencies = { values: [] };
  await drive(VARIANTS[key].run, 20, 1);
  await drive(VARIANTS[key].run, SEQUENTIAL_TASKS, 1, measured);
  const sorted = measured.values.sort((a, b) => a - b);
  sequential[key] = {
    meanMicros: (sorted.reduce((a, b) => a + b, 0) / sorted.length) * 1000,
    p50Micros: percentile(sorted, 0.5) * 1000,
    p99Micros: percentile(sorted, 0.99) * 1000,
  };
}

// ------------------------------------------------------------------------------ figures

function median(values: number[]): number {
  const sorted = values.filter(Number.isFinite).sort((a, b) => a - b);
  return sorted.length === 0 ? NaN : sorted[Math.floor((sorted.length - 1) / 2)]!;
}

function percentile(sorted: readonly number[], p: number): number {
  return sorted.length === 0 ? NaN : sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))]!;
}

interface Figure {
  readonly tasksPerSec: number;
  readonly microsPerTask: number;
  /** Per-task latency (submit → 'finished') at IN_FLIGHT outstanding, over every timed iteration of every round. */
  readonly latencyP50Micros: number;
  readonly latencyP99Micros: number;
  /**
   * CPU time per task, every thread and the TaskExecutor process counted (what it costs whatever the machine's load).
   */
  readonly cpuMicrosPerTask: number;
}

const figures = {} as Record<Key, Figure>;
for (const key of KEYS) {
  const tasksPerSec = median(perRound[key].map((row) => row.opsPerSec * TASKS_PER_ITERATION));
  const sorted = latencies[key].values.sort((a, b) => a - b);
  figures[key] = {
    tasksPerSec,
    microsPerTask: 1e6 / tasksPerSec,
    latencyP50Micros: percentile(sorted, 0.5) * 1000,
    latencyP99Micros: percentile(sorted, 0.99) * 1000,
    cpuMicrosPerTask: median(cpuPerTask[key]),
  };
}

console.log(
  `\n${SLOTS} slots, ${IN_FLIGHT} tasks in flight, ${TASKS_PER_ITERATION} ` +
    `tasks per iteration, median of ${ROUNDS} rounds`,
);
console.table(
  KEYS.map((key) => ({
    variant: VARIANTS[key].label,
    'tasks/s': Math.round(figures[key].tasksPerSec).toLocaleString('en-US'),
    'µs/task': round(figures[key].microsPerTask),
    'vs bare': round(figures[key].tasksPerSec / figures.bare.tasksPerSec),
    'CPU µs/task': round(figures[key].cpuMicrosPerTask),
    'p50 latency µs': round(figures[key].latencyP50Micros),
    'p99 latency µs': round(figures[key].latencyP99Micros),
    'alone µs (p50)': round(sequential[key].p50Micros),
    rounds: perRound[key].map((row) => Math.round(row.opsPerSec * TASKS_PER_ITERATION)).join(' / '),
  })),
);

const ratioThread = figures.thread.tasksPerSec / figures.bare.tasksPerSec;
const ratioProcess = figures.process.tasksPerSec / figures.bare.tasksPerSec;
const ratioDirect = figures.direct.tasksPerSec / figures.bare.tasksPerSec;
const verdict = (ratio: number, target: number) => `(target ≥ ${target}×: ${ratio >= target ? 'met' : 'MISSED'})`;
console.log(
  `TaskExecutor / bare piscina, thread mode:  ${round(ratioThread)}×  ${verdict(ratioThread, TARGET.thread)}`,
);
console.log(
  `TaskExecutor / bare piscina, process mode: ${round(ratioProcess)}×  ${verdict(ratioProcess, TARGET.process)}`,
);
const aloneThread = sequential.thread.p50Micros / sequential.bare.p50Micros;
const aloneProcess = sequential.process.p50Micros / sequential.bare.p50Micros;
const aloneVerdict = (ratio: number) =>
  `(target ≤ ${TARGET.aloneLatency}×: ${ratio <= TARGET.aloneLatency ? 'met' : 'MISSED'})`;
console.log(
  `one task alone, latency vs bare piscina: thread ${round(aloneThread)}× ${aloneVerdict(aloneThread)}, ` +
    `process ${round(aloneProcess)}× ${aloneVerdict(aloneProcess)}`,
);
console.log(
  `SlotTaskPool ×${SLOTS} / bare piscina:            ${round(ratioDirect)}×  (what the slots' pools alone keep)`,
);
const reportsPerTask = (cluster: TaskCluster) =>
  cluster.jobMaster.reports / Math.max(1, cluster.jobMaster.stateCounts.finished);
console.log(
  `task states the JobMaster heard per task: thread ${round(reportsPerTask(threadCluster))}, ` +
    `process ${round(reportsPerTask(processCluster))}`,
);
const reportCallsPerTask = (cluster: TaskCluster) =>
  cluster.jobMaster.batches / Math.max(1, cluster.jobMaster.stateCounts.finished);
console.log(
  `updateTaskExecutionStates calls per task: thread ${round(reportCallsPerTask(threadCluster))}, ` +
    `process ${round(reportCallsPerTask(processCluster))}`,
);

const closeStarted = performance.now();
await Promise.all([
  threadCluster.close(),
  processCluster.close(),
  bare.pool.destroy(),
  ...direct.pools.map((pool) => pool.close()),
]);
const closeMs = performance.now() - closeStarted;

printJson({
  bench: 'tasks',
  slots: SLOTS,
  inFlight: IN_FLIGHT,
  tasksPerIteration: TASKS_PER_ITERATION,
  rounds: ROUNDS,
  bareTasksPerSec: Math.round(figures.bare.tasksPerSec),
  slotTaskPoolsTasksPerSec: Math.round(figures.direct.tasksPerSec),
  threadTasksPerSec: Math.round(figures.thread.tasksPerSec),
  processTasksPerSec: Math.round(figures.process.tasksPerSec),
  ratioThreadOverBare: round(ratioThread),
  ratioProcessOverBare: round(ratioProcess),
  ratioSlotTaskPoolsOverBare: round(ratioDirect),
  target: TARGET,
  targetMetThread: ratioThread >= TARGET.thread,
  targetMetProcess: ratioProcess >= TARGET.process,
  aloneLatencyOverBare: { thread: round(aloneThread), process: round(aloneProcess) },
  latencyP50Micros: Object.fromEntries(KEYS.map((key) => [key, round(figures[key].latencyP50Micros)])),
  latencyP99Micros: Object.fromEntries(KEYS.map((key) => [key, round(figures[key].latencyP99Micros)])),
  cpuMicrosPerTask: Object.fromEntries(KEYS.map((key) => [key, round(figures[key].cpuMicrosPerTask)])),
  aloneP50Micros: Object.fromEntries(KEYS.map((key) => [key, round(sequential[key].p50Micros)])),
  reportsPerTask: round(reportsPerTask(threadCluster)),
  reportCallsPerTask: {
    thread: round(reportCallsPerTask(threadCluster)),
    process: round(reportCallsPerTask(processCluster)),
  },
  setupMs: Math.round(setupMs),
  roundsMs: Math.round(roundsMs),
  closeMs: Math.round(closeMs),
  node: process.version,
  cpus: cpus().length,
  loadavg1: round(loadavg()[0] ?? NaN),
});
