/**
 * Which attempts are slow (Flink's ExecutionTimeBasedSlowTaskDetector), as a pure function of the job's attempts and
 * the time now: no timer, no JobMaster — SpeculativeExecutions calls it every `slow-task-detector.check-interval` on
 * the JobMaster's clock.
 *
 * A vertex is looked at once at least `baseline-ratio` of its subtasks have finished (and not all). Its baseline is
 * the median execution time of its first round(parallelism × ratio) finished subtasks, times `baseline-multiplier`;
 * an attempt of one of its unfinished subtasks that has run at least the baseline, and at least
 * `baseline-lower-bound`, is slow. Execution time counts from DEPLOYING (an attempt not deployed yet has run 0 ms)
 * to its end, or to now. Flink weighs each time by the subtask's input bytes since 1.17; here every subtask of a
 * vertex is taken to read about as much (time alone), which is what a straggler on a slow TaskExecutor looks like.
 */
import type { ExecutionAttemptID } from '../../core/ids.js';

/** One attempt of a subtask as the detector sees it. */
export interface AttemptTimes {
  readonly executionAttemptId: ExecutionAttemptID;
  /** ExecutionState, or `created` / `scheduled` before it deployed. */
  readonly state: string;
  /** Epoch ms it started deploying, -1 (or null: an ExecutionRecord's) before. */
  readonly startTime: number | null;
  /** Epoch ms it ended, -1 (or null) while it has not. */
  readonly endTime: number | null;
}

/** One subtask: whether it finished (one of its attempts did), and its attempts (a finished one among them). */
export interface SubtaskAttempts {
  readonly key: string;
  readonly finished: boolean;
  readonly attempts: readonly AttemptTimes[];
}

export interface SlowTaskDetectorOptions {
  /** `slow-task-detector.execution-time.baseline-lower-bound`, ms. */
  readonly lowerBoundMs: number;
  /** `slow-task-detector.execution-time.baseline-ratio`, in [0, 1). */
  readonly ratio: number;
  /** `slow-task-detector.execution-time.baseline-multiplier`, > 0. */
  readonly multiplier: number;
}

const ENDED: ReadonlySet<string> = new Set(['finished', 'failed', 'canceled']);

/** How long the attempt has run (or ran), from DEPLOYING; 0 before it deployed. */
export function executionTime(attempt: AttemptTimes, now: number): number {
  const start = attempt.startTime ?? -1;
  const end = attempt.endTime ?? -1;
  if (start < 0) return 0;
  return (end >= 0 ? end : now) - start;
}

/**
 * The baseline of a vertex whose subtasks are `subtasks`, or null when too few have finished for one (fewer than
 * `ratio` of them, or all): round(n × ratio) fastest finished times, their median (the upper one of an even count, as
 * Flink's), times the multiplier.
 */
export function baselineOf(
  subtasks: readonly SubtaskAttempts[],
  now: number,
  o: SlowTaskDetectorOptions,
): number | null {
  const finished: number[] = [];
  for (const subtask of subtasks) {
    if (!subtask.finished) continue;
    const done = subtask.attempts.find((a) => a.state === 'finished');
    if (done !== undefined) finished.push(executionTime(done, now));
  }
  if (finished.length === subtasks.length || finished.length < subtasks.length * o.ratio) return null;
  const count = Math.round(subtasks.length * o.ratio);
  if (count === 0) return 0;
  finished.sort((a, b) => a - b);
  return Math.floor(finished[Math.floor(count / 2)]! * o.multiplier);
}

/**
 * The slow attempts, by subtask key, of the vertices given (each vertex its subtasks): attempts of unfinished subtasks
 * that are scheduled or on a TaskExecutor (not created, not ended) and have run at least the baseline and the lower
 * bound. A subtask none of whose attempts is slow is absent.
 */
export function findSlowTasks(
  vertices: Iterable<readonly SubtaskAttempts[]>,
  now: number,
  o: SlowTaskDetectorOptions,
): Map<string, ExecutionAttemptID[]> {
  const slow = new Map<string, ExecutionAttemptID[]>();
  for (const subtasks of vertices) {
    const baseline = baselineOf(subtasks, now, o);
    if (baseline === null) continue;
    for (const subtask of subtasks) {
      if (subtask.finished) continue;
      const attempts: ExecutionAttemptID[] = [];
      for (const attempt of subtask.attempts) {
        if (attempt.state === 'created' || ENDED.has(attempt.state)) continue;
        const time = executionTime(attempt, now);
        if (time >= o.lowerBoundMs && time >= baseline) attempts.push(attempt.executionAttemptId);
      }
      if (attempts.length > 0) slow.set(subtask.key, attempts);
    }
  }
  return slow;
}
