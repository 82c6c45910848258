/**
 * A churn soak (issue 24, item 9): a profiling aid like bench/taskCpu.ts, not a benchmark (`npm run
 * bench` does not run it). Usage:
 *
 *   node --expose-gc --import tsx bench/soak.ts [thread|process] [minutes]     (default: thread 20)
 *
 * Starts a MiniCluster from the compiled build (bench/support/compiled.ts: 3 TaskExecutors × 2 slots)
 * and keeps it busy for `minutes` with a steady mix of jobs from the trivial task modules of
 * bench/support/tasks/ — one-vertex jobs, three-vertex pipelines, jobs whose first attempt fails
 * (restarted), slow jobs canceled by `cancelJob` or by their submit signal at a random moment, slow
 * jobs left to finish — while a random TaskExecutor is killed (`killTaskExecutor`) every
 * SOAK_KILL_EVERY seconds and the ResourceManager replaces it. Every SOAK_SAMPLE_EVERY seconds (30)
 * it prints the main thread's heap in use after `gc()`, and the task threads' heap as their
 * TaskExecutors report it (`taskExecutorMetrics()`: each spare thread that has served an allocation,
 * its heap in use when it was last given back — the lanes are held for the sample until every
 * thread is back in its reserve — measured after a full collection: the whole process
 * runs with --expose-gc and SLOTWISE_GC_AFTER_JOBS=1; in process mode NODE_OPTIONS carries the flag
 * to the children).
 * At the end it prints the slope of each (least squares, MB/min) from SOAK_WARMUP minutes (3) on,
 * over the whole run and over its second half, and one JSON line with every sample.
 *
 * Ended jobs stay listed for `jobstore.expiration-time`, a legitimate growth while it lasts: the soak
 * sets it to SOAK_JOBSTORE_EXPIRATION (default '1 min', within the warm-up) so a flat heap is the
 * steady state. SOAK_LANES (4) jobs run at a time. SOAK_SNAPSHOTS='5,15' writes heap snapshots of
 * the main thread (v8.writeHeapSnapshot, after gc()) at those minutes into SOAK_SNAPSHOT_DIR (the OS
 * tmpdir), to diff with bench/support/heapSnapshotDiff.ts. The machine is loaded meanwhile: the
 * heap figures do not mind, timings would.
 */
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import v8 from 'node:v8';
import type { JobGraphSpec } from '../lib/jobmaster/JobGraph.js';
import type { JobResult } from '../lib/jobmaster/JobResult.js';
import type { MiniCluster as MiniClusterType } from '../lib/MiniCluster.js';
import type { ResourceID } from '../lib/core/ids.js';
import { compiled } from './support/compiled.js';

const mode = process.argv[2] ?? 'thread';
const minutes = Number(process.argv[3] ?? 20);
if (mode !== 'thread' && mode !== 'process') throw new Error(`mode must be thread or process, got ${mode}`);
if (!(minutes > 0)) throw new Error(`minutes must be a number > 0, got ${process.argv[3]}`);
const gc = (globalThis as { gc?: () => void }).gc;
if (gc === undefined) throw new Error('run node with --expose-gc: the heap is measured after gc()');

const env = (name: string, fallback: number): number => {
  const value = Number(process.env[name] ?? fallback);
  if (!Number.isFinite(value) || value <= 0) throw new Error(`${name} must be a number > 0, got ${process.env[name]}`);
  return value;
};
const LANES = env('SOAK_LANES', 4);
const KILL_EVERY_S = env('SOAK_KILL_EVERY', 45);
const SAMPLE_EVERY_S = env('SOAK_SAMPLE_EVERY', 30);
const WARMUP_MIN = env('SOAK_WARMUP', 3);
const EXPIRATION = process.env['SOAK_JOBSTORE_EXPIRATION'] ?? '1 min';
const SNAPSHOTS = (process.env['SOAK_SNAPSHOTS'] ?? '')
  .split(',')
  .filter((s) => s.trim() !== '')
  .map(Number);
const SNAPSHOT_DIR = process.env['SOAK_SNAPSHOT_DIR'] ?? tmpdir();

// Child processes (process mode's TaskExecutors, the task module checker) collect before measuring too.
if (!(process.env['NODE_OPTIONS'] ?? '').includes('--expose-gc'))
  process.env['NODE_OPTIONS'] = `${process.env['NODE_OPTIONS'] ?? ''} --expose-gc`.trim();
// Task threads measure their heap after a full collection as they go idle after a batch (taskWorker's afterBatch).
process.env['SLOTWISE_GC_AFTER_JOBS'] = '1';

const { MiniCluster } = await compiled<{ MiniCluster: typeof MiniClusterType }>('lib/index.js');
const task = (name: string) => new URL(`./support/tasks/${name}.mjs`, import.meta.url);

/** A seeded generator (mulberry32): the same mix every run. */
let seed = Number(process.env['SOAK_SEED'] ?? 24);
const random = (): number => {
  seed = (seed + 0x6d2b79f5) | 0;
  let t = seed;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
};
const between = (low: number, high: number) => low + Math.floor(random() * (high - low + 1));

const cluster = await MiniCluster.start({
  mode,
  taskExecutors: 3,
  slotsPerTaskExecutor: 2,
  configuration: {
    'jobstore.expiration-time': EXPIRATION,
    'restart-strategy.fixed-delay.attempts': 5,
    'restart-strategy.fixed-delay.delay': '200 ms',
  },
  // Killed TaskExecutors make warnings by design; they would drown the samples.
  log: () => {},
});

const counts = { finished: 0, failed: 0, canceled: 0, wrong: 0, killed: 0 };
const started = performance.now();
const elapsedMin = () => (performance.now() - started) / 60_000;
let stopping = false;

interface Kind {
  readonly spec: () => JobGraphSpec;
  readonly check?: (outputs: Readonly<Record<string, unknown[]>>) => boolean;
  /** ms after the submit at which the job is canceled (by cancelJob, or by its submit signal). */
  readonly cancelAfter?: () => { ms: number; by: 'cancelJob' | 'signal' };
}

const oneVertex: Kind = {
  spec: () => ({
    name: 'soak one vertex',
    vertices: [{ id: 'v', taskModule: task('subtaskIndex'), parallelism: between(1, 4) }],
  }),
  check: (outputs) => (outputs['v'] ?? []).every((value, i) => value === i),
};
const pipeline: Kind = {
  spec: () => ({
    name: 'soak pipeline',
    vertices: [
      { id: 'source', taskModule: task('subtaskIndex'), parallelism: 1 },
      { id: 'map', taskModule: task('plusOne'), parallelism: 2 },
      { id: 'sink', taskModule: task('sum'), parallelism: 1 },
    ],
    edges: [
      { from: 'source', to: 'map', pattern: 'all-to-all' },
      { from: 'map', to: 'sink', pattern: 'all-to-all' },
    ],
  }),
  check: (outputs) => outputs['sink']?.[0] === 2,
};
const failingFirst: Kind = {
  spec: () => ({
    name: 'soak fails once',
    vertices: [{ id: 'flaky', taskModule: task('failFirstAttempt'), parallelism: 2 }],
  }),
  check: (outputs) => (outputs['flaky'] ?? []).every((value, i) => value === i),
};
const slow = (cancel: 'cancelJob' | 'signal' | null): Kind => ({
  spec: () => ({
    name: `soak slow${cancel === null ? '' : ` canceled by ${cancel}`}`,
    vertices: [{ id: 'slow', taskModule: task('sleep'), parallelism: 2, config: { ms: between(200, 1500) } }],
  }),
  ...(cancel === null ? {} : { cancelAfter: () => ({ ms: between(0, 1200), by: cancel }) }),
});
const MIX: ReadonlyArray<readonly [number, Kind]> = [
  [0.4, oneVertex],
  [0.2, pipeline],
  [0.1, failingFirst],
  [0.1, slow(null)],
  [0.1, slow('cancelJob')],
  [0.1, slow('signal')],
];
const pick = (): Kind => {
  let r = random();
  for (const [share, kind] of MIX) if ((r -= share) < 0) return kind;
  return oneVertex;
};

async function runOne(kind: Kind): Promise<void> {
  const cancel = kind.cancelAfter?.();
  const abort = cancel?.by === 'signal' ? new AbortController() : undefined;
  let result: JobResult;
  try {
    const job = await cluster.submitJob(kind.spec(), abort ? { signal: abort.signal } : undefined);
    // Each subtask's last task event, for the stall report.
    const tasks = new Map<string, string>();
    taskStates.set(job.jobId, tasks);
    job.onEvent((event) => {
      if (event.type === 'task') tasks.set(`${event.vertexId}#${event.subtaskIndex}`, taskLine(event));
    });
    let timer: ReturnType<typeof setTimeout> | undefined;
    if (cancel !== undefined)
      timer = setTimeout(() => {
        if (abort !== undefined) abort.abort();
        else cluster.cancelJob(job.jobId).catch(() => {});
      }, cancel.ms);
    result = await job.result;
    taskStates.delete(job.jobId);
    clearTimeout(timer);
  } catch (error) {
    // Aborted before the job started (the signal's AbortError): counted as canceled.
    if (abort?.signal.aborted) return void counts.canceled++;
    throw error;
  }
  counts[result.status === 'finished' ? 'finished' : result.status === 'canceled' ? 'canceled' : 'failed']++;
  if (result.status === 'finished' && kind.check !== undefined && !kind.check(result.outputs)) counts.wrong++;
}

/** A subtask's last task event: state@attempt, its TaskExecutor, its error. */
const taskLine = (e: {
  state: string;
  attemptNumber: number;
  resourceId: string | null;
  error: { name: string } | null;
}) => `${e.state}@${e.attemptNumber} ${e.resourceId?.slice(-6) ?? '-'}${e.error ? ` ${e.error.name}` : ''}`;
const jobLine = (job: { name: string; jobId: string; status: string }) =>
  `${job.name} ${job.jobId.slice(0, 8)} ${job.status} ` +
  `{${[...(taskStates.get(job.jobId) ?? [])].map(([k, v]) => `${k} ${v}`).join(', ')}}`;
/** Per running job, each subtask's last task event (state@attempt, TaskExecutor, error). */
const taskStates = new Map<string, Map<string, string>>();
let lastEnded = performance.now();
/** While a sample is taken, the lanes submit nothing (see {@link quiesce}); their jobs in flight, counted. */
let hold: Promise<void> | null = null;
let inFlight = 0;
async function lane(): Promise<void> {
  while (!stopping) {
    if (hold !== null) await hold;
    inFlight++;
    try {
      await runOne(pick());
    } finally {
      inFlight--;
    }
    lastEnded = performance.now();
  }
}

/**
 * Holds the lanes until their jobs have ended and every task thread is back in its reserve: only an idle spare has a
 * heap to report (what it answered as its last slot went back), and under four lanes on six slots there is hardly
 * ever one. Returns what lets the lanes go on. Waits at most 30 s for each.
 */
async function quiesce(): Promise<() => void> {
  let release = (): void => {};
  hold = new Promise<void>((resolve) => (release = resolve));
  const until = async (done: () => boolean | Promise<boolean>) => {
    for (const deadline = performance.now() + 30_000; !(await done()) && performance.now() < deadline; ) {
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  };
  await until(() => inFlight === 0);
  await until(async () => (await cluster.taskExecutorMetrics()).every((m) => (m.taskThreads?.inUse ?? 0) === 0));
  return () => {
    hold = null;
    release();
  };
}

/** Every 15 s without a job ending: what the cluster looks like (jobs, waiting requests, slots). */
const STALL_MS = 15_000;
type Overview = ReturnType<MiniClusterType['overview']>;
const pendingLine = (r: Overview['pendingRequests'][number]) => `${r.jobId.slice(0, 8)} ×${r.missing}: ${r.why}`;
const slotLine = (slot: Overview['taskExecutors'][number]['slots'][number]) =>
  `${slot.state}${slot.jobId ? ` ${slot.jobId.slice(0, 8)} ${slot.tasks.join(',')}` : ''}`;
const slotsLine = (te: Overview['taskExecutors'][number]) =>
  `${te.resourceId.slice(-6)}[${te.slots.map(slotLine).join(' | ')}]`;
const stallWatch = setInterval(() => {
  if (performance.now() - lastEnded < STALL_MS) return;
  const overview = cluster.overview();
  const running = overview.jobs.filter((job) => !['finished', 'failed', 'canceled'].includes(job.status));
  console.log(
    `        no job ended for ${((performance.now() - lastEnded) / 1000).toFixed(0)} s: ` +
      `running ${running.map(jobLine).join(', ')}; ` +
      `pending requests ${overview.pendingRequests.map(pendingLine).join('; ')}; ` +
      `slots ${overview.taskExecutors.map(slotsLine).join(' ')}`,
  );
}, STALL_MS);

/** Ends the killer's wait for its next round at once (the soak is stopping). */
let wakeKiller = (): void => {};
async function killer(): Promise<void> {
  while (!stopping) {
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, KILL_EVERY_S * 1000);
      wakeKiller = () => (clearTimeout(timer), resolve());
    });
    if (stopping) return;
    const executors = cluster.overview().taskExecutors;
    if (executors.length < 2) continue;
    const victim: ResourceID = executors[between(0, executors.length - 1)]!.resourceId;
    if (cluster.killTaskExecutor(victim)) counts.killed++;
  }
}

interface Sample {
  readonly min: number;
  readonly mainHeapMb: number;
  readonly rssMb: number;
  readonly jobsListed: number;
  /** Median heap of the spare task threads that served an allocation (NaN: none reported). */
  readonly threadHeapMb: number;
  readonly threads: number;
}
const samples: Sample[] = [];
const mb = (bytes: number) => bytes / 1_048_576;
const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted.length === 0 ? Number.NaN : sorted[Math.floor(sorted.length / 2)]!;
};

async function sample(): Promise<void> {
  const resume = await quiesce();
  const metrics = await cluster.taskExecutorMetrics();
  resume();
  const heaps = metrics.flatMap((m) => m.taskThreads?.servedSpares ?? []);
  gc!();
  gc!();
  const memory = process.memoryUsage();
  const s: Sample = {
    min: elapsedMin(),
    mainHeapMb: mb(memory.heapUsed),
    rssMb: mb(memory.rss),
    jobsListed: cluster.listJobs().length,
    threadHeapMb: mb(median(heaps.map((h) => h.heapUsedBytes))),
    threads: heaps.length,
  };
  samples.push(s);
  const threadHeaps = heaps.map((h) => mb(h.heapUsedBytes).toFixed(2));
  console.log(
    `${s.min.toFixed(1).padStart(5)} min  main heap ${s.mainHeapMb.toFixed(2)} MB  rss ${s.rssMb.toFixed(0)} MB  ` +
      `jobs ${counts.finished} finished ${counts.failed} failed ${counts.canceled} canceled ` +
      `(${s.jobsListed} listed, ${counts.wrong} wrong)  TEs killed ${counts.killed}  ` +
      `task threads [${threadHeaps.join(' ')}] MB after ` +
      `[${heaps.map((h) => h.allocations).join(' ')}] allocations`,
  );
  const snapshotAt = SNAPSHOTS.find((at) => at <= s.min);
  if (snapshotAt !== undefined) {
    SNAPSHOTS.splice(SNAPSHOTS.indexOf(snapshotAt), 1);
    const file = v8.writeHeapSnapshot(join(SNAPSHOT_DIR, `soak-${mode}-${process.pid}-${snapshotAt}min.heapsnapshot`));
    console.log(`        heap snapshot: ${file}`);
  }
}

/** Least-squares slope of y over x (MB per minute), NaN with fewer than 2 points. */
function slope(points: ReadonlyArray<readonly [number, number]>): number {
  const usable = points.filter(([, y]) => Number.isFinite(y));
  if (usable.length < 2) return Number.NaN;
  const mx = usable.reduce((sum, [x]) => sum + x, 0) / usable.length;
  const my = usable.reduce((sum, [, y]) => sum + y, 0) / usable.length;
  let num = 0;
  let den = 0;
  for (const [x, y] of usable) {
    num += (x - mx) * (y - my);
    den += (x - mx) ** 2;
  }
  return num / den;
}

console.log(
  `soak: ${mode} mode, ${minutes} min, ${LANES} jobs at a time, a TaskExecutor killed every ${KILL_EVERY_S} s, ` +
    `jobstore.expiration-time ${EXPIRATION}, pid ${process.pid}`,
);
const work = [...Array.from({ length: LANES }, lane), killer()];
const sampler = setInterval(() => void sample(), SAMPLE_EVERY_S * 1000);
await new Promise((resolve) => setTimeout(resolve, minutes * 60_000));
clearInterval(sampler);
await sample();
stopping = true;
wakeKiller();
await Promise.all(work);
clearInterval(stallWatch);
await cluster.close();

const after = samples.filter((s) => s.min >= WARMUP_MIN);
const half = after.filter((s) => s.min >= (WARMUP_MIN + minutes) / 2);
const slopes = {
  mainMbPerMin: slope(after.map((s) => [s.min, s.mainHeapMb])),
  mainMbPerMinSecondHalf: slope(half.map((s) => [s.min, s.mainHeapMb])),
  threadMbPerMin: slope(after.map((s) => [s.min, s.threadHeapMb])),
  threadMbPerMinSecondHalf: slope(half.map((s) => [s.min, s.threadHeapMb])),
};
console.log(
  `slope from minute ${WARMUP_MIN}: main heap ${slopes.mainMbPerMin.toFixed(3)} MB/min ` +
    `(second half ${slopes.mainMbPerMinSecondHalf.toFixed(3)}), task threads (median) ` +
    `${slopes.threadMbPerMin.toFixed(3)} MB/min (second half ${slopes.threadMbPerMinSecondHalf.toFixed(3)})`,
);
console.log(JSON.stringify({ mode, minutes, lanes: LANES, killEverySec: KILL_EVERY_S, counts, slopes, samples }));
