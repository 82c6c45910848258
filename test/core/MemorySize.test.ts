import { expect } from 'chai';
import { formatMemorySize, GiB, KiB, MiB, parseMemorySize } from '../../lib/core/MemorySize.js';

function bytes(input: unknown): number {
  const parsed = parseMemorySize(input);
  if (!parsed.ok) throw new Error(`expected ${String(input)} to parse, got problem: ${parsed.problem}`);
  return parsed.bytes;
}

function problem(input: unknown): string {
  const parsed = parseMemorySize(input);
  if (parsed.ok) throw new Error(`expected ${String(input)} to be refused, got ${parsed.bytes} bytes`);
  return parsed.problem;
}

describe('MemorySize', () => {
  it('defines binary units: KiB = 1024, MiB = 1024 KiB, GiB = 1024 MiB', () => {
    expect([KiB, MiB, GiB]).to.deep.equal([1024, 1024 ** 2, 1024 ** 3]);
  });

  it('reads a non-negative safe integer as bytes', () => {
    expect(bytes(0)).to.equal(0);
    expect(bytes(1234)).to.equal(1234);
    expect(bytes(Number.MAX_SAFE_INTEGER)).to.equal(Number.MAX_SAFE_INTEGER);
  });

  it('reads every unit spelling, in any case, with or without spaces, all binary', () => {
    for (const unit of ['b', 'bytes', 'B', 'BYTES']) expect(bytes(`7${unit}`)).to.equal(7);
    for (const unit of ['k', 'kb', 'kib', 'K', 'KB', 'KiB']) expect(bytes(`3 ${unit}`)).to.equal(3 * KiB);
    for (const unit of ['m', 'mb', 'mib', 'M', 'MB', 'MiB']) expect(bytes(`256${unit}`)).to.equal(256 * MiB);
    for (const unit of ['g', 'gb', 'gib', 'G', 'GB', 'GiB']) expect(bytes(`1  ${unit}`)).to.equal(GiB);
    for (const unit of ['t', 'tb', 'tib', 'T', 'TB', 'TiB']) expect(bytes(`2${unit}`)).to.equal(2 * 1024 * GiB);
  });

  it('reads a string without a unit as bytes, ignoring surrounding spaces', () => {
    expect(bytes('4096')).to.equal(4096);
    expect(bytes('  64 mb ')).to.equal(64 * MiB);
  });

  it('reads fractions and rounds to the nearest byte', () => {
    expect(bytes('1.5g')).to.equal(1.5 * GiB);
    expect(bytes('.5k')).to.equal(512);
    expect(bytes('0.3b')).to.equal(0);
    expect(bytes('1.0001k')).to.equal(1024);
  });

  it('refuses negative, fractional and non-finite numbers, saying what is allowed', () => {
    expect(problem(-1)).to.equal(
      `must be a non-negative whole number of bytes or a size like '256m' or '1 gb', got -1`,
    );
    expect(problem(1.5)).to.match(/whole number of bytes.*got 1\.5$/);
    expect(problem(NaN)).to.match(/got NaN$/);
    expect(problem(Infinity)).to.match(/got Infinity$/);
  });

  it('refuses malformed strings and other types, quoting what it got', () => {
    expect(problem('abc')).to.equal(
      `must be a non-negative whole number of bytes or a size like '256m' or '1 gb', got "abc"`,
    );
    for (const bad of ['', '-1g', '1 g b', '1e3', 'g', '1,5g']) expect(problem(bad)).to.contain(JSON.stringify(bad));
    expect(problem(true)).to.match(/got boolean true$/);
    expect(problem(null)).to.match(/got null$/);
    expect(problem({})).to.match(/got \[object Object\]$/);
  });

  it('refuses an unknown unit and lists the allowed ones', () => {
    expect(problem('10 pb')).to.match(/unknown unit "pb".*allowed units are b, bytes, k, kb, kib/);
    expect(problem('10 kilobytes')).to.match(/unknown unit "kilobytes"/);
  });

  it('refuses a size beyond Number.MAX_SAFE_INTEGER bytes', () => {
    expect(problem('8192t')).to.match(/at most 9007199254740991 bytes/);
    expect(problem(Number.MAX_SAFE_INTEGER + 1)).to.match(/at most 9007199254740991 bytes/);
    expect(problem('99999999999999999999')).to.match(/at most/);
  });

  it('prints the largest binary unit that holds the value as a whole number', () => {
    expect(formatMemorySize(0)).to.equal('0 b');
    expect(formatMemorySize(100)).to.equal('100 b');
    expect(formatMemorySize(32 * KiB)).to.equal('32 kb');
    expect(formatMemorySize(256 * MiB)).to.equal('256 mb');
    expect(formatMemorySize(GiB)).to.equal('1 gb');
    expect(formatMemorySize(1.5 * GiB)).to.equal('1536 mb');
    expect(formatMemorySize(3 * 1024 * GiB)).to.equal('3 tb');
  });

  it('prints two decimals of the largest unit not above the value when no unit divides it', () => {
    expect(formatMemorySize(1536)).to.equal('1.50 kb');
    expect(formatMemorySize(1.5 * GiB + 1)).to.equal('1.50 gb');
    expect(formatMemorySize(1023)).to.equal('1023 b');
  });

  it('prints Infinity as ∞', () => {
    expect(formatMemorySize(Infinity)).to.equal('∞');
  });

  it('round-trips what it prints for whole units', () => {
    for (const n of [0, 100, 32 * KiB, 256 * MiB, 5 * GiB]) expect(bytes(formatMemorySize(n))).to.equal(n);
  });
});
