/**
 * Durations as users write them in options: a number of milliseconds, or a string with a unit the
 * way Flink's configuration reads them (`500 ms`, `10 s`, `5 min`, `1 h`). Resolved to milliseconds.
 */
export type DurationInput = number | string;

const UNITS: Record<string, number> = {
  ms: 1,
  milli: 1,
  millis: 1,
  millisecond: 1,
  milliseconds: 1,
  s: 1000,
  sec: 1000,
  secs: 1000,
  second: 1000,
  seconds: 1000,
  m: 60_000,
  min: 60_000,
  mins: 60_000,
  minute: 60_000,
  minutes: 60_000,
  h: 3_600_000,
  hour: 3_600_000,
  hours: 3_600_000,
  d: 86_400_000,
  day: 86_400_000,
  days: 86_400_000,
};

const PATTERN = /^\s*(\d+(?:\.\d+)?)\s*([a-z]*)\s*$/i;

/** Never throws: callers wrap `problem` in their own typed error (it names what is allowed). */
export function parseDuration(input: unknown): { ok: true; ms: number } | { ok: false; problem: string } {
  const allowed = `a number of milliseconds or a duration like '500 ms', '10 s', '5 min', '1 h'`;
  if (typeof input === 'number') {
    if (!Number.isFinite(input) || input < 0)
      return { ok: false, problem: `must be ${allowed} (finite, >= 0), got ${input}` };
    return { ok: true, ms: input };
  }
  if (typeof input !== 'string') return { ok: false, problem: `must be ${allowed}, got ${typeof input}` };
  const match = PATTERN.exec(input);
  const unit = match?.[2] === '' ? 'ms' : match?.[2]?.toLowerCase();
  const factor = unit === undefined ? undefined : UNITS[unit];
  if (match === null || factor === undefined)
    return { ok: false, problem: `must be ${allowed}, got ${JSON.stringify(input)}` };
  return { ok: true, ms: Math.round(Number(match[1]) * factor) };
}

/**
 * `90000` → `1.5 min`, `10000` → `10 s`, `250` → `250 ms`: the largest unit that states the duration
 * exactly with at most two decimals (`1001` → `1001 ms`), so `parseDuration` reads it back unchanged.
 */
export function formatDuration(ms: number): string {
  if (!Number.isFinite(ms)) return '∞';
  const units: Array<[string, number]> = [
    ['h', 3_600_000],
    ['min', 60_000],
    ['s', 1000],
  ];
  for (const [name, size] of units) {
    if (ms >= size) {
      const value = Number((ms / size).toFixed(2));
      // Only a unit that states the duration exactly: 1001 ms is not '1 s', 100 s is not '1.67 min'
      // (a rounded text would make "timeout (1 s) must be longer than interval (1 s)" messages).
      if (Math.abs(value * size - ms) < 1e-6) return `${value} ${name}`;
    }
  }
  return `${ms} ms`;
}
