import { expect } from 'chai';
import fc from 'fast-check';
import { formatDuration, parseDuration } from '../../lib/core/Duration.js';

function ms(input: unknown): number {
  const parsed = parseDuration(input);
  if (!parsed.ok) throw new Error(`expected ${String(input)} to parse, got problem: ${parsed.problem}`);
  return parsed.ms;
}

function problem(input: unknown): string {
  const parsed = parseDuration(input);
  if (parsed.ok) throw new Error(`expected ${String(input)} to be refused, got ${parsed.ms} ms`);
  return parsed.problem;
}

const ALLOWED = `a number of milliseconds or a duration like '500 ms', '10 s', '5 min', '1 h'`;
const DAY = 86_400_000;

describe('Duration', () => {
  describe('parseDuration', () => {
    it('reads a finite non-negative number as milliseconds', () => {
      expect(ms(0)).to.equal(0);
      expect(ms(50)).to.equal(50);
      expect(ms(300_000)).to.equal(300_000);
    });

    it('reads every unit spelling, in any case, with or without a space', () => {
      for (const unit of ['ms', 'milli', 'millis', 'millisecond', 'milliseconds', 'MS'])
        expect(ms(`500${unit}`), unit).to.equal(500);
      for (const unit of ['s', 'sec', 'secs', 'second', 'seconds', 'S'])
        expect(ms(`10 ${unit}`), unit).to.equal(10_000);
      for (const unit of ['m', 'min', 'mins', 'minute', 'minutes', 'Min'])
        expect(ms(`5 ${unit}`), unit).to.equal(300_000);
      for (const unit of ['h', 'hour', 'hours', 'H']) expect(ms(`2${unit}`), unit).to.equal(7_200_000);
      for (const unit of ['d', 'day', 'days']) expect(ms(`1 ${unit}`), unit).to.equal(DAY);
    });

    it('reads a string without a unit as milliseconds, ignoring surrounding spaces', () => {
      expect(ms('250')).to.equal(250);
      expect(ms('  30 s  ')).to.equal(30_000);
    });

    it('reads fractions and rounds to the nearest millisecond', () => {
      expect(ms('1.5 h')).to.equal(5_400_000);
      expect(ms('0.25 s')).to.equal(250);
      expect(ms('1.0004 s')).to.equal(1000);
      expect(ms('1.0006 s')).to.equal(1001);
    });

    it('refuses negative, non-finite and NaN numbers, saying what is allowed', () => {
      expect(problem(-1)).to.equal(`must be ${ALLOWED} (finite, >= 0), got -1`);
      expect(problem(Infinity)).to.equal(`must be ${ALLOWED} (finite, >= 0), got Infinity`);
      expect(problem(NaN)).to.equal(`must be ${ALLOWED} (finite, >= 0), got NaN`);
    });

    it('refuses malformed strings, quoting what it got', () => {
      for (const bad of ['', '   ', '-5 s', '10 parsecs', 's', '1e3', '1 s 500 ms', '1,5 s', '.5 s', 'ten seconds']) {
        expect(problem(bad), bad).to.equal(`must be ${ALLOWED}, got ${JSON.stringify(bad)}`);
      }
    });

    it('refuses other types, naming the type', () => {
      expect(problem(true)).to.equal(`must be ${ALLOWED}, got boolean`);
      expect(problem(null)).to.equal(`must be ${ALLOWED}, got object`);
      expect(problem(10n)).to.equal(`must be ${ALLOWED}, got bigint`);
      expect(problem(undefined)).to.equal(`must be ${ALLOWED}, got undefined`);
    });
  });

  describe('formatDuration', () => {
    it('prints in the largest unit that states the duration exactly', () => {
      expect(formatDuration(0)).to.equal('0 ms');
      expect(formatDuration(250)).to.equal('250 ms');
      expect(formatDuration(1000)).to.equal('1 s');
      expect(formatDuration(10_000)).to.equal('10 s');
      expect(formatDuration(300_000)).to.equal('5 min');
      expect(formatDuration(3_600_000)).to.equal('1 h');
      expect(formatDuration(DAY)).to.equal('24 h');
    });

    it('prints up to two decimals of a larger unit when they are exact', () => {
      expect(formatDuration(1500)).to.equal('1.5 s');
      expect(formatDuration(90_000)).to.equal('1.5 min');
      expect(formatDuration(5_400_000)).to.equal('1.5 h');
      expect(formatDuration(1070)).to.equal('1.07 s');
    });

    it('never rounds: a duration a larger unit cannot state exactly stays in a smaller one', () => {
      expect(formatDuration(1001)).to.equal('1001 ms');
      expect(formatDuration(59_999)).to.equal('59999 ms');
      expect(formatDuration(100_000)).to.equal('100 s');
      expect(formatDuration(3_599_999)).to.equal('3599999 ms');
      expect(formatDuration(3_601_000)).to.equal('3601 s');
    });

    it('prints an unbounded duration as ∞', () => {
      expect(formatDuration(Infinity)).to.equal('∞');
    });
  });

  describe('round trips', () => {
    it('reads back what it prints, for every whole number of milliseconds', () => {
      fc.assert(
        fc.property(fc.integer({ min: 0, max: 30 * DAY }), (duration) => {
          expect(ms(formatDuration(duration))).to.equal(duration);
        }),
        { numRuns: 2000 },
      );
    });

    it('reads back the printed form of the durations options use', () => {
      for (const duration of [
        50,
        500,
        1001,
        10_000,
        30_000,
        30_001,
        90_000,
        100_000,
        180_000,
        300_000,
        5_400_000,
        DAY,
      ]) {
        expect(ms(formatDuration(duration)), String(duration)).to.equal(duration);
      }
    });

    it('prints what it reads in canonical form', () => {
      for (const [written, printed] of [
        ['10 seconds', '10 s'],
        ['5 minutes', '5 min'],
        ['500ms', '500 ms'],
        ['1.5 hours', '1.5 h'],
        ['2 d', '48 h'],
        ['60 s', '1 min'],
      ]) {
        expect(formatDuration(ms(written)), written).to.equal(printed);
      }
    });
  });
});
