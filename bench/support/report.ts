/**
 * Small helpers shared by the benchmarks in bench/: run a tinybench Bench, turn its tasks into
 * plain rows, print them as a table, and print the run's figures as one final JSON line (the line a
 * script or CI reads). Benchmarks report; nothing here asserts a timing.
 */
import type { Bench, Task } from 'tinybench';

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
  if (row === undefined) throw new Error(`no benchmark row named "${name}"; rows: ${rows.map((r) => r.name).join(', ')}`);
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
  console.log(JSON.stringify(figures, (_key, value: unknown) => (typeof value === 'number' && !Number.isFinite(value) ? null : value)));
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
 * heapUsed after a full collection (several passes, so finalizers and weak maps settle). Without
 * --expose-gc it reads heapUsed as it is, which is noisy: callers should say so in their output.
 */
export function settledHeapUsed(): number {
  const gc = exposedGc();
  if (gc !== undefined) for (let i = 0; i < 3; i++) gc();
  return process.memoryUsage().heapUsed;
}
