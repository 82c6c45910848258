/**
 * Small helpers shared by the benchmarks in bench/: run a tinybench Bench, turn its tasks into
 * plain rows, print them as a table, and print the run's figures as one final JSON line (the line a
 * script or CI reads). Benchmarks report; nothing here asserts a timing.
 */
import type { Bench, Task } from 'tinybench';
import { cpuMicros } from './procStat.js';

/** One task's figures. An errored or unfinished task keeps its row, with NaN figures and `error` set. */
export interface BenchRow {
  readonly name: string;
  /** 1000 / mean latency: what one caller doing nothing else gets (not tinybench's mean of per-sample rates). */
  readonly opsPerSec: number;
  readonly meanMicros: number;
  readonly p99Micros: number;
  /** Timed iterations behind the figures. */
  readonly samples: number;
  readonly error?: string;
}

/**
 * Runs every task of `bench` and returns one row per task, in the order they were added. A task
 * that threw is printed (name and stack) and its row carries the error; `process.exitCode` is set
 * to 1 so bench/run.ts reports the file as failed even though the other figures still print.
 */
export async function runBench(bench: Bench): Promise<BenchRow[]> {
  await bench.run();
  return bench.tasks.map(toRow);
}

export function toRow(task: Task): BenchRow {
  const result = task.result;
  switch (result.state) {
    case 'completed':
    case 'aborted-with-statistics':
      return {
        name: task.name,
        opsPerSec: result.latency.mean > 0 ? 1000 / result.latency.mean : Infinity,
        meanMicros: result.latency.mean * 1000,
        p99Micros: result.latency.p99 * 1000,
        samples: result.latency.samplesCount,
        ...(result.state === 'aborted-with-statistics' ? { error: 'aborted' } : {}),
      };
    case 'errored':
      console.error(`benchmark task "${task.name}" failed:`, result.error);
      process.exitCode = 1;
      return failedRow(task.name, result.error.message);
    case 'aborted':
    case 'not-started':
    case 'started':
      process.exitCode = 1;
      return failedRow(task.name, `task ${result.state}`);
  }
}

function failedRow(name: string, error: string): BenchRow {
  return { name, opsPerSec: NaN, meanMicros: NaN, p99Micros: NaN, samples: 0, error };
}

/** The row named `name`; throws (naming the rows there are) when there is none. */
export function rowNamed(rows: readonly BenchRow[], name: string): BenchRow {
  const row = rows.find((r) => r.name === name);
  if (row === undefined)
    throw new Error(`no benchmark row named "${name}"; rows: ${rows.map((r) => r.name).join(', ')}`);
  return row;
}

/** Prints the rows as a console table with readable numbers. */
export function printTable(rows: readonly BenchRow[]): void {
  console.table(
    rows.map((r) => ({
      task: r.name,
      'ops/s': formatNumber(r.opsPerSec),
      'mean µs': formatNumber(r.meanMicros, 3),
      'p99 µs': formatNumber(r.p99Micros, 3),
      samples: r.samples,
      ...(r.error === undefined ? {} : { error: r.error }),
    })),
  );
}

/** Prints `figures` as one JSON line; meant to be the last line of a benchmark's output. */
export function printJson(figures: Record<string, unknown>): void {
  console.log(
    JSON.stringify(figures, (_key, value: unknown) =>
      typeof value === 'number' && !Number.isFinite(value) ? null : value,
    ),
  );
}

/** Rounds to `digits` significant digits (whole numbers stay whole), for printing and the JSON line. */
export function round(value: number, digits = 3): number {
  if (!Number.isFinite(value) || value === 0) return value;
  if (Math.abs(value) >= 10 ** digits) return Math.round(value);
  return Number(value.toPrecision(digits));
}

function formatNumber(value: number, digits = 4): string {
  return Number.isFinite(value) ? round(value, digits).toLocaleString('en-US') : String(value);
}

/** Node's `gc()` when the process runs with --expose-gc, else undefined. */
export function exposedGc(): (() => void) | undefined {
  const gc = (globalThis as { gc?: unknown }).gc;
  return typeof gc === 'function' ? () => void gc() : undefined;
}

/**
 * Node's gc({ type: 'minor' }) when the process runs with --expose-gc (a scavenge: young objects
 * that survive it twice move to the old generation), else undefined. Run twice after building a
 * cluster, it makes the cluster old, as one that has been up a while is, without the full
 * collection that resets V8's heap sizing (a run right after one pays for growing the heap back).
 */
export function exposedMinorGc(): (() => void) | undefined {
  const gc = (globalThis as { gc?: unknown }).gc;
  return typeof gc === 'function'
    ? () => void (gc as (options: { type: string }) => void)({ type: 'minor' })
    : undefined;
}

/**
 * heapUsed after a full collection (several passes, so finalizers and weak maps settle). Without
 * --expose-gc it reads heapUsed as it is, which is noisy: callers should say so in their output.
 */
export function settledHeapUsed(): number {
  const gc = exposedGc();
  if (gc !== undefined) for (let i = 0; i < 3; i++) gc();
  return process.memoryUsage().heapUsed;
}

/** The smallest, middle and largest of a few figures (one per interleaved round). */
export interface Spread {
  readonly min: number;
  readonly median: number;
  readonly max: number;
}

/** min / median / max of `values` (the median of an even count is the mean of the middle two). */
export function spreadOf(values: readonly number[]): Spread {
  if (values.length === 0) return { min: NaN, median: NaN, max: NaN };
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  const median = sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
  return { min: sorted[0]!, median, max: sorted[sorted.length - 1]! };
}

/** The `q` quantile of `values` by nearest rank (0.5: the median, 0.99: the p99). */
export function quantile(values: readonly number[], q: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? NaN;
}

/** `1.2 / 1.5 / 2.1` (min / median / max), rounded for printing. */
export function formatSpread(s: Spread, digits = 3): string {
  return `${round(s.min, digits)} / ${round(s.median, digits)} / ${round(s.max, digits)}`;
}

/** The spread rounded for the JSON line. */
export function roundedSpread(s: Spread): Spread {
  return { min: round(s.min), median: round(s.median), max: round(s.max) };
}

/** What ops cost on average: wall time, and CPU time of the process (see cpuMicros). */
export interface OpCost {
  readonly wallMicros: number;
  readonly cpuMicros: number;
  readonly ops: number;
}

/**
 * Runs `op` back to back for at least `budgetMs` of wall time and at least `minOps` times
 * (awaiting it when it returns a promise) and returns the mean cost per op.
 */
export async function timeOps(op: () => void | Promise<void>, budgetMs: number, minOps = 3): Promise<OpCost> {
  let ops = 0;
  const cpuStarted = cpuMicros();
  const started = performance.now();
  let now = started;
  while (ops < minOps || now - started < budgetMs) {
    const pending = op();
    if (pending !== undefined) await pending;
    ops++;
    // Reading the clock costs ~0.1 µs: look at it every 16 ops once past the minimum.
    if (ops < minOps || (ops & 15) === 0) now = performance.now();
  }
  const wall = performance.now() - started;
  const cpu = cpuMicros() - cpuStarted;
  return { wallMicros: (wall * 1000) / ops, cpuMicros: cpu / ops, ops };
}
