/**
 * Memory sizes, Flink-style: a whole number of bytes, read from and printed as binary units
 * (`k` = 1024, as Flink's MemorySize does — there are no decimal kilobytes here).
 *
 * Parsing never throws: it returns a `problem` fragment that the caller wraps in its own typed
 * error (ConfigurationError for an option, ResourceProfileError for a profile field), so the
 * message can name the option or field it came from.
 */
import { describeValue } from './errors.js';

/** A memory size as a caller may write it: bytes as a number, or a string like `'256m'`, `'1 gb'`. */
export type MemorySizeInput = number | string;

/** 1024 bytes. */
export const KiB = 1024;
/** 1024 KiB. */
export const MiB = 1024 * KiB;
/** 1024 MiB. */
export const GiB = 1024 * MiB;
const TiB = 1024 * GiB;

const UNITS: Readonly<Record<string, number>> = {
  '': 1,
  b: 1,
  bytes: 1,
  k: KiB,
  kb: KiB,
  kib: KiB,
  m: MiB,
  mb: MiB,
  mib: MiB,
  g: GiB,
  gb: GiB,
  gib: GiB,
  t: TiB,
  tb: TiB,
  tib: TiB,
};

const SIZE = /^(\d+(?:\.\d*)?|\.\d+)\s*([a-z]*)$/i;
const ALLOWED = `a non-negative whole number of bytes or a size like '256m' or '1 gb'`;

/**
 * Reads a memory size. A number must be a non-negative safe integer (bytes). A string is
 * `<number><optional spaces><unit>`, the unit one of b, bytes, k, kb, kib, m, mb, mib, g, gb, gib,
 * t, tb, tib (any case, all binary) or none (bytes); a fraction (`'1.5g'`) is rounded to the
 * nearest byte. The result must not exceed Number.MAX_SAFE_INTEGER bytes.
 */
export function parseMemorySize(input: unknown): { ok: true; bytes: number } | { ok: false; problem: string } {
  if (typeof input === 'number') {
    if (Number.isSafeInteger(input) && input >= 0) return { ok: true, bytes: input + 0 }; // -0 → 0
    if (Number.isInteger(input) && input > 0) return tooLarge(input);
    return { ok: false, problem: `must be ${ALLOWED}, got ${describeValue(input)}` };
  }
  if (typeof input !== 'string') return { ok: false, problem: `must be ${ALLOWED}, got ${describeValue(input)}` };
  const match = SIZE.exec(input.trim());
  if (match === null) return { ok: false, problem: `must be ${ALLOWED}, got ${describeValue(input)}` };
  const unit = UNITS[match[2]!.toLowerCase()];
  if (unit === undefined) {
    return {
      ok: false,
      problem:
        `has unknown unit ${JSON.stringify(match[2])} in ${describeValue(input)}; allowed units are b, ` +
        `bytes, k, kb, kib, m, mb, mib, g, gb, gib, t, tb, tib (binary, any case) or none for bytes`,
    };
  }
  const bytes = Math.round(Number(match[1]) * unit);
  return Number.isSafeInteger(bytes) ? { ok: true, bytes } : tooLarge(input);
}

function tooLarge(input: unknown): { ok: false; problem: string } {
  return {
    ok: false,
    problem: `must be at most ${Number.MAX_SAFE_INTEGER} bytes (about 8 pb), got ${describeValue(input)}`,
  };
}

const PRINTED: ReadonlyArray<readonly [string, number]> = [
  ['tb', TiB],
  ['gb', GiB],
  ['mb', MiB],
  ['kb', KiB],
];

/**
 * Prints a byte count readably: in the largest binary unit that holds it as a whole number
 * (`256 mb`, `1 gb`, `32 kb`, `100 b`, `0 b`); failing that, with two decimals of the largest unit
 * not above it (`1.50 kb`). `Infinity` (the budget of ResourceProfile.ANY) prints `∞`.
 */
export function formatMemorySize(bytes: number): string {
  if (bytes === Infinity) return '∞';
  if (!Number.isFinite(bytes)) return String(bytes);
  const size = Math.abs(bytes);
  for (const [name, unit] of PRINTED) {
    if (size >= unit && size % unit === 0) return `${bytes / unit} ${name}`;
  }
  for (const [name, unit] of PRINTED) {
    if (size >= unit) return `${(bytes / unit).toFixed(2)} ${name}`;
  }
  return `${bytes} b`;
}
