/**
 * The restart strategies alone (machines/restartBackoff.ts), against the assertions of Flink's own
 * tests: each `it` names the Flink test it ports. Flink's strategies read a ManualClock and
 * ThreadLocalRandom; ours take the failure's time and a random draw, so a test moves `now` by hand and
 * gets a jitter range by trying draws across [0, 1) instead of 1,000 random ones.
 */
import { expect } from 'chai';
import {
  backoffTime,
  canRestart,
  INITIAL_BACKOFF_STATE,
  notifyFailure,
  type RestartBackoffState,
  type RestartBackoffTimeStrategy,
} from '../../machines/restartBackoff.js';

/** A strategy with its state and a clock moved by hand (Flink's strategy object with a ManualClock). */
function strategyOf(strategy: RestartBackoffTimeStrategy) {
  let state: RestartBackoffState = INITIAL_BACKOFF_STATE;
  let now = 0;
  return {
    notifyFailure(random = 0.5): boolean {
      const result = notifyFailure(strategy, state, now, random);
      state = result.state;
      return result.newAttempt;
    },
    canRestart: () => canRestart(strategy, state, now),
    getBackoffTime: () => backoffTime(strategy, state, now),
    advanceTime(ms: number) {
      now += ms;
    },
  };
}

const fixedDelay = (attempts: number, delayMs: number): RestartBackoffTimeStrategy => ({
  type: 'fixed-delay',
  attempts,
  delayMs,
});
const failureRate = (maxFailuresPerInterval: number, failureRateIntervalMs: number, delayMs: number) =>
  strategyOf({ type: 'failure-rate', maxFailuresPerInterval, failureRateIntervalMs, delayMs });
const exponentialDelay = (
  initialBackoffMs: number,
  maxBackoffMs: number,
  backoffMultiplier: number,
  resetBackoffThresholdMs: number,
  jitterFactor: number,
  attemptsBeforeResetBackoff: number,
) =>
  strategyOf({
    type: 'exponential-delay',
    initialBackoffMs,
    maxBackoffMs,
    backoffMultiplier,
    resetBackoffThresholdMs,
    jitterFactor,
    attemptsBeforeResetBackoff,
  });

/** Draws spread over [0, 1), both ends included: every jitter a strategy can pick. */
const DRAWS = [...Array.from({ length: 1_000 }, (_, i) => i / 1_000), 1 - 1e-12];
const MAX_INT = 2 ** 31 - 1;

describe('restart strategies (Flink: the RestartBackoffTimeStrategy tests)', () => {
  describe('fixed-delay', () => {
    it('FixedDelayRestartBackoffTimeStrategyTest.testNumberOfRestarts', () => {
      const numberOfRestarts = 3;
      const strategy = strategyOf(fixedDelay(numberOfRestarts, 0));
      for (let restartsLeft = numberOfRestarts; restartsLeft > 0; --restartsLeft) {
        strategy.notifyFailure();
        // Twice: canRestart keeps no count of its own.
        expect(strategy.canRestart()).to.equal(true);
        expect(strategy.canRestart()).to.equal(true);
      }
      strategy.notifyFailure();
      expect(strategy.canRestart()).to.equal(false);
    });

    it('FixedDelayRestartBackoffTimeStrategyTest.testBackoffTime', () => {
      expect(strategyOf(fixedDelay(1, 10_000)).getBackoffTime()).to.equal(10_000);
    });

    // FixedDelayRestartBackoffTimeStrategy.notifyFailure counts every failure.
    it('counts failures that come at the same moment, each a new attempt', () => {
      const strategy = strategyOf(fixedDelay(1, 1_000));
      expect(strategy.notifyFailure()).to.equal(true);
      expect(strategy.canRestart()).to.equal(true);
      expect(strategy.notifyFailure()).to.equal(true);
      expect(strategy.canRestart()).to.equal(false);
    });
  });

  describe('failure-rate', () => {
    it('FailureRateRestartBackoffTimeStrategyTest.testManyFailuresWithinRate', () => {
      const intervalMs = 1;
      const strategy = failureRate(1, intervalMs, 0);
      for (let failuresLeft = 3; failuresLeft > 0; failuresLeft--) {
        strategy.notifyFailure();
        expect(strategy.canRestart()).to.equal(true);
        strategy.advanceTime(intervalMs + 1);
      }
      expect(strategy.canRestart()).to.equal(true);
    });

    it('FailureRateRestartBackoffTimeStrategyTest.testFailuresExceedingRate', () => {
      const numFailures = 3;
      const strategy = failureRate(numFailures, 10_000, 0);
      for (let failuresLeft = numFailures; failuresLeft > 0; failuresLeft--) {
        strategy.notifyFailure();
        expect(strategy.canRestart()).to.equal(true);
      }
      strategy.notifyFailure();
      expect(strategy.canRestart()).to.equal(false);
    });

    it('FailureRateRestartBackoffTimeStrategyTest.testBackoffTime', () => {
      expect(failureRate(1, 1, 10_000).getBackoffTime()).to.equal(10_000);
    });
  });

  describe('exponential-delay', () => {
    it('ExponentialDelayRestartBackoffTimeStrategyTest.testMaxAttempts', () => {
      const maxAttempts = 13;
      const maxBackoffMs = 3;
      const strategy = exponentialDelay(1, maxBackoffMs, 1.2, 10, 0.25, maxAttempts);
      for (let i = 0; i <= maxAttempts; i++) {
        expect(strategy.canRestart()).to.equal(true);
        expect(strategy.notifyFailure()).to.equal(true);
        strategy.advanceTime(maxBackoffMs + 1);
      }
      expect(strategy.canRestart()).to.equal(false);
    });

    // ExponentialDelayRestartBackoffTimeStrategyTest.testNotCallNotifyFailure: before a failure, no restart is due.
    it('ExponentialDelayRestartBackoffTimeStrategyTest.testNotCallNotifyFailure', () => {
      // Flink throws "Please call notifyFailure first."; here nothing is due, and the machine never asks.
      expect(exponentialDelay(42, 45, 2, 8, 0, 10).getBackoffTime()).to.equal(0);
    });

    it('ExponentialDelayRestartBackoffTimeStrategyTest.testInitialBackoff', () => {
      const strategy = exponentialDelay(42, 45, 2, 8, 0, MAX_INT);
      strategy.notifyFailure();
      expect(strategy.getBackoffTime()).to.equal(42);
    });

    it('ExponentialDelayRestartBackoffTimeStrategyTest.testMaxBackoff', () => {
      const maxBackoffMs = 6;
      const strategy = exponentialDelay(1, maxBackoffMs, 2, 8, 0.25, MAX_INT);
      for (let i = 0; i < 10; i++) {
        strategy.notifyFailure(DRAWS[(i * 97) % DRAWS.length]);
        expect(strategy.getBackoffTime()).to.be.at.most(maxBackoffMs);
      }
    });

    it('ExponentialDelayRestartBackoffTimeStrategyTest.testResetBackoff', () => {
      const initialBackoffMs = 1;
      const resetBackoffThresholdMs = 8;
      const strategy = exponentialDelay(initialBackoffMs, 5, 2, resetBackoffThresholdMs, 0.25, MAX_INT);
      expect(strategy.notifyFailure()).to.equal(true);
      strategy.advanceTime(resetBackoffThresholdMs + strategy.getBackoffTime() - 1);
      expect(strategy.notifyFailure()).to.equal(true);
      expect(strategy.getBackoffTime(), 'backoff should be increased').to.equal(2);
      strategy.advanceTime(resetBackoffThresholdMs + strategy.getBackoffTime());
      expect(strategy.notifyFailure()).to.equal(true);
      expect(strategy.getBackoffTime(), 'backoff should be reset').to.equal(initialBackoffMs);
    });

    it('ExponentialDelayRestartBackoffTimeStrategyTest.testBackoffMultiplier', () => {
      const maxBackoffMs = 300;
      const strategy = exponentialDelay(4, maxBackoffMs, 2.3, MAX_INT, 0, 10);
      for (const expected of [4, 9, 21]) {
        // 4, 4 × 2.3, 4 × 2.3 × 2.3 (truncated)
        expect(strategy.notifyFailure()).to.equal(true);
        expect(strategy.getBackoffTime()).to.equal(expected);
        strategy.advanceTime(maxBackoffMs + 1);
      }
    });

    /** Every backoff the `failureCount`-th failure can get, each failure `advanceMs` after the last. */
    const backoffsAfter = (make: () => ReturnType<typeof strategyOf>, advanceMs: number, failureCount: number) =>
      new Set(
        DRAWS.map((draw) => {
          const strategy = make();
          for (let i = 0; i < failureCount; i++) {
            strategy.advanceTime(advanceMs);
            expect(strategy.notifyFailure(draw)).to.equal(true);
          }
          return strategy.getBackoffTime();
        }),
      );

    it('ExponentialDelayRestartBackoffTimeStrategyTest.testJitter', () => {
      const maxBackoffMs = 7;
      const make = () => exponentialDelay(2, maxBackoffMs, 2, MAX_INT, 0.25, MAX_INT);
      expect(backoffsAfter(make, maxBackoffMs + 1, 2)).to.deep.equal(new Set([3, 4, 5]));
      expect(backoffsAfter(make, maxBackoffMs + 1, 3)).to.deep.equal(new Set([6, 7]));
      expect(backoffsAfter(make, maxBackoffMs + 1, 4)).to.deep.equal(new Set([7]));
    });

    it('ExponentialDelayRestartBackoffTimeStrategyTest.testJitterNoHigherThanMax', () => {
      const maxBackoffMs = 7;
      const make = () => exponentialDelay(1, maxBackoffMs, 2, MAX_INT, 1, MAX_INT);
      expect(backoffsAfter(make, maxBackoffMs + 1, 1)).to.deep.equal(new Set([1, 2]));
      expect(backoffsAfter(make, maxBackoffMs + 1, 2)).to.deep.equal(new Set([1, 2, 3, 4]));
      expect(backoffsAfter(make, maxBackoffMs + 1, 3)).to.deep.equal(new Set([1, 2, 3, 4, 5, 6, 7]));
    });

    it('ExponentialDelayRestartBackoffTimeStrategyTest.testMultipleSettings', () => {
      const initialBackoffMs = 1;
      const maxBackoffMs = 9;
      const resetBackoffThresholdMs = 80;
      const strategy = exponentialDelay(initialBackoffMs, maxBackoffMs, 2, resetBackoffThresholdMs, 0.25, MAX_INT);
      const step = (expectedBackoff: number) => {
        expect(strategy.notifyFailure()).to.equal(true);
        expect(strategy.canRestart()).to.equal(true);
        expect(strategy.getBackoffTime()).to.equal(expectedBackoff);
      };
      // ensure initial data
      step(initialBackoffMs);
      // ensure backoff time is initial after the first failure
      strategy.advanceTime(resetBackoffThresholdMs + 1);
      step(initialBackoffMs);
      // ensure backoff increases until threshold is reached
      strategy.advanceTime(4);
      step(2);
      // ensure backoff is reset after threshold is reached
      strategy.advanceTime(resetBackoffThresholdMs + 9 + 1);
      step(1);
      strategy.advanceTime(maxBackoffMs + 1);
      // ensure backoff still increases
      step(2);
    });

    /** Flink's checkMultipleExceptionsAreMerged: within the backoff, only the first failure is a new attempt. */
    function checkMultipleExceptionsAreMerged(strategy: ReturnType<typeof strategyOf>, expectedBackoffMs: number) {
      let expectedNewAttempt = true;
      for (let advanceMs = 0; advanceMs < expectedBackoffMs; advanceMs++) {
        for (let i = 0; i < 10; i++) {
          expect(strategy.notifyFailure()).to.equal(expectedNewAttempt);
          expectedNewAttempt = false;
          expect(strategy.canRestart()).to.equal(true);
          expect(strategy.getBackoffTime()).to.equal(expectedBackoffMs - advanceMs);
        }
        strategy.advanceTime(1);
      }
    }

    it('ExponentialDelayRestartBackoffTimeStrategyTest.testMergeMultipleExceptionsIntoOneAttempt', () => {
      const initialBackoffMs = 2;
      const maxBackoffMs = 6;
      const strategy = exponentialDelay(initialBackoffMs, maxBackoffMs, 2, 80, 0, 3);
      // All failures at one time are merged into one attempt.
      checkMultipleExceptionsAreMerged(strategy, initialBackoffMs);
      // After the backoff, a new round: the next failure is a new attempt.
      strategy.advanceTime(1);
      checkMultipleExceptionsAreMerged(strategy, initialBackoffMs * 2);
      strategy.advanceTime(1);
      checkMultipleExceptionsAreMerged(strategy, maxBackoffMs);
      // A new round past the max attempts.
      strategy.advanceTime(1);
      expect(strategy.notifyFailure()).to.equal(true);
      expect(strategy.canRestart()).to.equal(false);
    });

    it('ExponentialDelayRestartBackoffTimeStrategyTest.testMergingExceptionsWorksWithResetting', () => {
      const initialBackoffMs = 2;
      const maxBackoffMs = 6;
      const resetBackoffThresholdMs = 80;
      const strategy = exponentialDelay(initialBackoffMs, maxBackoffMs, 2, resetBackoffThresholdMs, 0, 3);
      for (let i = 0; i < 10; i++) {
        checkMultipleExceptionsAreMerged(strategy, initialBackoffMs);
        strategy.advanceTime(1);
        checkMultipleExceptionsAreMerged(strategy, initialBackoffMs * 2);
        strategy.advanceTime(1);
        checkMultipleExceptionsAreMerged(strategy, maxBackoffMs);
        // After resetBackoffThresholdMs the strategy starts over.
        strategy.advanceTime(resetBackoffThresholdMs);
      }
    });
  });

  it("'none' never restarts", () => {
    const strategy = strategyOf({ type: 'none' });
    expect(strategy.notifyFailure()).to.equal(true);
    expect(strategy.canRestart()).to.equal(false);
    expect(strategy.getBackoffTime()).to.equal(0);
  });
});
