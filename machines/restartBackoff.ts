/**
 * Flink's RestartBackoffTimeStrategy kinds (FixedDelayRestartBackoffTimeStrategy,
 * ExponentialDelayRestartBackoffTimeStrategy, FailureRateRestartBackoffTimeStrategy, and no restart)
 * as pure functions over plain data: what a strategy remembers between failures is a
 * RestartBackoffState the job status machine keeps in its context, and every function takes the
 * time of the failure (and, for the exponential delay's jitter, a draw of the JobMaster's random
 * source) instead of reading a clock. The same failures at the same times give the same decisions.
 *
 * As in Flink's ExecutionFailureHandler, a failure is first notified (notifyFailure: counted, or —
 * exponential-delay only — merged into the restart already due), then the strategy says whether the
 * job may restart (canRestart) and when (backoffTime).
 *
 * Pure: no I/O, no Node imports, no clock.
 */
import { formatDuration } from '../lib/core/Duration.js';

/** A job's restart strategy, resolved: durations in ms. */
export type RestartBackoffTimeStrategy =
  /** `attempts` restarts at most, each `delayMs` after its failure (Flink: counts every failure). */
  | { readonly type: 'fixed-delay'; readonly attempts: number; readonly delayMs: number }
  /**
   * Restarts with a backoff that starts at `initialBackoffMs` and is multiplied by
   * `backoffMultiplier` after every restart, up to `maxBackoffMs`, ± `jitterFactor` of itself; the
   * failures that arrive before the restart due are merged into it. The backoff (and the count of
   * restarts) starts again once the job ran `resetBackoffThresholdMs` past the last restart due;
   * more than `attemptsBeforeResetBackoff` restarts before that fail the job.
   */
  | {
      readonly type: 'exponential-delay';
      readonly initialBackoffMs: number;
      readonly maxBackoffMs: number;
      readonly backoffMultiplier: number;
      readonly resetBackoffThresholdMs: number;
      readonly jitterFactor: number;
      readonly attemptsBeforeResetBackoff: number;
    }
  /**
   * Restarts `delayMs` after each failure, while no more than `maxFailuresPerInterval` fall within
   * `failureRateIntervalMs`.
   */
  | {
      readonly type: 'failure-rate';
      readonly maxFailuresPerInterval: number;
      readonly failureRateIntervalMs: number;
      readonly delayMs: number;
    }
  | { readonly type: 'none' };

/** What a strategy remembers between failures (Flink's fields of the strategy objects). */
export interface RestartBackoffState {
  /** fixed-delay and exponential-delay: Flink's currentRestartAttempt (failures counted as attempts). */
  readonly attempts: number;
  /** exponential-delay: Flink's nextRestartTimestamp, when the restart of the last attempt is due; null before any. */
  readonly nextRestartAt: number | null;
  /** failure-rate: the times of the latest failures, oldest first (at most maxFailuresPerInterval + 1). */
  readonly failureTimes: readonly number[];
}

export const INITIAL_BACKOFF_STATE: RestartBackoffState = Object.freeze({
  attempts: 0,
  nextRestartAt: null,
  failureTimes: Object.freeze([]),
});

/**
 * A failure at `now` (Flink's notifyFailure): the strategy's next state, and whether the failure is a
 * new restart attempt — false only for exponential-delay, when a restart is already due at or after
 * `now` (the failure joins it). `random`, in [0, 1), draws the exponential delay's jitter.
 */
export function notifyFailure(
  strategy: RestartBackoffTimeStrategy,
  state: RestartBackoffState,
  now: number,
  random: number,
): { readonly state: RestartBackoffState; readonly newAttempt: boolean } {
  switch (strategy.type) {
    case 'none':
      return { state, newAttempt: true };
    case 'fixed-delay':
      return { state: { ...state, attempts: state.attempts + 1 }, newAttempt: true };
    case 'failure-rate': {
      // A queue of the latest maxFailuresPerInterval + 1 failures: the oldest leaves as one more comes.
      const full = state.failureTimes.length > strategy.maxFailuresPerInterval;
      const failureTimes = [...(full ? state.failureTimes.slice(1) : state.failureTimes), now];
      return { state: { ...state, failureTimes }, newAttempt: true };
    }
    case 'exponential-delay': {
      if (state.nextRestartAt !== null && now <= state.nextRestartAt) return { state, newAttempt: false };
      const reset = state.nextRestartAt === null || now - state.nextRestartAt >= strategy.resetBackoffThresholdMs;
      const attempt = reset ? 0 : state.attempts;
      const nextRestartAt = now + exponentialBackoff(strategy, attempt, random);
      return { state: { ...state, attempts: attempt + 1, nextRestartAt }, newAttempt: true };
    }
  }
}

/** Whether the job may restart after the failures notified so far, at `now` (Flink's canRestart). */
export function canRestart(strategy: RestartBackoffTimeStrategy, state: RestartBackoffState, now: number): boolean {
  switch (strategy.type) {
    case 'none':
      return false;
    case 'fixed-delay':
      return state.attempts <= strategy.attempts;
    case 'exponential-delay':
      return state.attempts <= strategy.attemptsBeforeResetBackoff;
    case 'failure-rate': {
      const times = state.failureTimes;
      if (times.length <= strategy.maxFailuresPerInterval) return true;
      return now - times[0]! > strategy.failureRateIntervalMs;
    }
  }
}

/** ms from `now` until the restart of the last failure (Flink's getBackoffTime). */
export function backoffTime(strategy: RestartBackoffTimeStrategy, state: RestartBackoffState, now: number): number {
  switch (strategy.type) {
    case 'none':
      return 0;
    case 'fixed-delay':
    case 'failure-rate':
      return strategy.delayMs;
    case 'exponential-delay':
      return state.nextRestartAt === null ? 0 : Math.max(0, state.nextRestartAt - now);
  }
}

/** Why the strategy allows no restart any more (after canRestart said no), to follow the failure's cause. */
export function noRestartReason(
  strategy: RestartBackoffTimeStrategy,
  state: RestartBackoffState,
  restarts: number,
): string | null {
  switch (strategy.type) {
    case 'none':
      return null;
    case 'fixed-delay': {
      // Failures of one attempt only (speculative execution's) count too, without a restart.
      const local = state.attempts - 1 - restarts;
      const counted = local > 0 ? `; ${local} failure${local > 1 ? 's' : ''} of one attempt only counted too` : '';
      return `no restart left (${restarts} of ${strategy.attempts} made${counted})`;
    }
    case 'exponential-delay':
      return (
        `no restart left (${state.attempts - 1} of ${strategy.attemptsBeforeResetBackoff} made ` +
        `since the backoff was last reset)`
      );
    case 'failure-rate':
      return (
        `failure rate exceeded (${state.failureTimes.length} failures within ` +
        `${formatDuration(strategy.failureRateIntervalMs)}, at most ${strategy.maxFailuresPerInterval} per interval)`
      );
  }
}

/**
 * The backoff of the `attempt`-th restart since the last reset (Flink's calculateActualBackoffTime):
 * initial × multiplier^attempt, ± a jitter of up to jitterFactor of it, within [initial, max].
 */
function exponentialBackoff(
  strategy: Extract<RestartBackoffTimeStrategy, { type: 'exponential-delay' }>,
  attempt: number,
  random: number,
): number {
  // Java's (long) cast: truncated, saturated (here at the largest exact integer).
  const base = Math.min(
    Math.trunc(strategy.initialBackoffMs * strategy.backoffMultiplier ** attempt),
    Number.MAX_SAFE_INTEGER,
  );
  return Math.max(
    strategy.initialBackoffMs,
    Math.min(base + jitter(base, strategy.jitterFactor, random), strategy.maxBackoffMs),
  );
}

/** A whole number of ms in [-offset, offset], offset = base × factor truncated (Flink's calculateJitterBackoffMS). */
function jitter(base: number, factor: number, random: number): number {
  if (factor === 0) return 0;
  const offset = Math.trunc(base * factor);
  const r = Math.min(Math.max(random, 0), 1 - Number.EPSILON);
  return Math.min(Math.floor(r * (2 * offset + 1)) - offset, offset);
}
