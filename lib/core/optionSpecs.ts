/**
 * The rules option values are read by, one builder per kind of value (durations, integers, bounded
 * numbers, sizes, choices, extended resources, the restart strategy's type): each gives an option its
 * default, its documentation, how it parses (a value, or the problem with it) and how it prints.
 * options.ts builds its table from them.
 */
import { formatDuration, parseDuration, type DurationInput } from './Duration.js';
import { describeValue } from './errors.js';
import { formatMemorySize, parseMemorySize, type MemorySizeInput } from './MemorySize.js';

export type Parsed<T> = { ok: true; value: T } | { ok: false; problem: string };

export interface OptionSpec<In, Out> {
  readonly default: Out;
  readonly doc: string;
  readonly parse: (input: unknown) => Parsed<Out>;
  readonly format: (value: Out) => string;
  /** Present only so TypeScript can infer the accepted input type. */
  readonly _input?: In;
}

export function duration(defaultMs: number, doc: string, min = 1): OptionSpec<DurationInput, number> {
  return {
    default: defaultMs,
    doc,
    format: formatDuration,
    parse: (input) => {
      const parsed = parseDuration(input);
      if (!parsed.ok) return parsed;
      if (parsed.ms < min)
        return { ok: false, problem: `must be at least ${formatDuration(min)}, got ${formatDuration(parsed.ms)}` };
      return { ok: true, value: parsed.ms };
    },
  };
}

export function integer(
  defaultValue: number,
  doc: string,
  min: number,
  allowUnbounded = false,
): OptionSpec<number, number> {
  return {
    default: defaultValue,
    doc,
    format: (v) => (v === Infinity ? 'unbounded' : String(v)),
    parse: (input) => {
      if (allowUnbounded && input === Infinity) return { ok: true, value: Infinity };
      if (typeof input !== 'number' || !Number.isSafeInteger(input) || input < min) {
        return {
          ok: false,
          problem: `must be an integer >= ${min}${allowUnbounded ? ' or Infinity' : ''}, got ${describeValue(input)}`,
        };
      }
      return { ok: true, value: input };
    },
  };
}

export function positiveNumber(defaultValue: number, doc: string, allowUnbounded = false): OptionSpec<number, number> {
  return {
    default: defaultValue,
    doc,
    format: (v) => (v === Infinity ? 'unbounded' : String(v)),
    parse: (input) => {
      if (allowUnbounded && input === Infinity) return { ok: true, value: Infinity };
      if (typeof input !== 'number' || !Number.isFinite(input) || input <= 0) {
        return {
          ok: false,
          problem: `must be a finite number > 0${allowUnbounded ? ' or Infinity' : ''}, got ${describeValue(input)}`,
        };
      }
      return { ok: true, value: input };
    },
  };
}

/** A number that, when not set, is derived from other options (`derivedDoc` says how). */
export function derivedNumber(derivedDoc: string, doc: string): OptionSpec<number, number | undefined> {
  const inner = positiveNumber(1, doc);
  return { default: undefined, doc, format: (v) => (v === undefined ? derivedDoc : String(v)), parse: inner.parse };
}

/** An integer >= `min` that, when not set, is derived from other options (`derivedDoc` says how). */
export function derivedInteger(derivedDoc: string, doc: string, min: number): OptionSpec<number, number | undefined> {
  const inner = integer(min, doc, min);
  return { default: undefined, doc, format: (v) => (v === undefined ? derivedDoc : String(v)), parse: inner.parse };
}

/** One of `values`, or unset: then derived from other options (`derivedDoc` says how). */
export function derivedChoice<const T extends string>(
  values: readonly T[],
  derivedDoc: string,
  doc: string,
): OptionSpec<T, T | undefined> {
  const inner = oneOf(values, values[0]!, doc);
  return { default: undefined, doc, format: (v) => (v === undefined ? derivedDoc : v), parse: inner.parse };
}

/** A finite number within bounds (`above`, `below`: strictly; `atLeast`, `atMost`: inclusive). */
export function boundedNumber(
  defaultValue: number,
  doc: string,
  bounds: { readonly above?: number; readonly below?: number; readonly atLeast?: number; readonly atMost?: number },
): OptionSpec<number, number> {
  const rule = [
    bounds.above === undefined ? '' : `> ${bounds.above}`,
    bounds.atLeast === undefined ? '' : `>= ${bounds.atLeast}`,
    bounds.atMost === undefined ? '' : `<= ${bounds.atMost}`,
    bounds.below === undefined ? '' : `< ${bounds.below}`,
  ]
    .filter((part) => part !== '')
    .join(' and ');
  return {
    default: defaultValue,
    doc,
    format: String,
    parse: (input) =>
      typeof input === 'number' &&
      Number.isFinite(input) &&
      (bounds.above === undefined || input > bounds.above) &&
      (bounds.atLeast === undefined || input >= bounds.atLeast) &&
      (bounds.atMost === undefined || input <= bounds.atMost) &&
      (bounds.below === undefined || input < bounds.below)
        ? { ok: true, value: input }
        : { ok: false, problem: `must be a finite number ${rule}, got ${describeValue(input)}` },
  };
}

/** true or false (`'true'` and `'false'` too, as `-D key=value` passes them). */
export function boolean(defaultValue: boolean, doc: string): OptionSpec<boolean | 'true' | 'false', boolean> {
  return {
    default: defaultValue,
    doc,
    format: String,
    parse: (input) =>
      input === true || input === 'true'
        ? { ok: true, value: true }
        : input === false || input === 'false'
          ? { ok: true, value: false }
          : { ok: false, problem: `must be true or false, got ${describeValue(input)}` },
  };
}

/** The restart strategies by Flink's main names; Flink's other spellings of each are accepted too. */
export const RESTART_STRATEGY_TYPES = {
  'fixed-delay': ['fixeddelay'],
  'exponential-delay': ['exponentialdelay'],
  'failure-rate': ['failurerate'],
  none: ['off', 'disable'],
} as const;
export type RestartStrategyType = keyof typeof RESTART_STRATEGY_TYPES;

export function restartStrategyType(doc: string): OptionSpec<string, RestartStrategyType> {
  const names = Object.keys(RESTART_STRATEGY_TYPES) as RestartStrategyType[];
  return {
    default: 'fixed-delay',
    doc,
    format: (v) => v,
    parse: (input) => {
      const type = names.find(
        (name) => input === name || (RESTART_STRATEGY_TYPES[name] as readonly unknown[]).includes(input),
      );
      if (type !== undefined) return { ok: true, value: type };
      const allowed = names.map((name) => [name, ...RESTART_STRATEGY_TYPES[name]].map((n) => `'${n}'`).join(' or '));
      return { ok: false, problem: `must be one of ${allowed.join(', ')}, got ${describeValue(input)}` };
    },
  };
}

export function memory(
  defaultBytes: number,
  doc: string,
  rule?: (bytes: number) => string | undefined,
  allowUnbounded = false,
): OptionSpec<MemorySizeInput, number> {
  return {
    default: defaultBytes,
    doc,
    format: (v) => (v === Infinity ? 'unbounded' : formatMemorySize(v)),
    parse: (input) => {
      if (allowUnbounded && input === Infinity) return { ok: true, value: Infinity };
      const parsed = parseMemorySize(input);
      if (!parsed.ok) return { ok: false, problem: parsed.problem };
      const broken = rule?.(parsed.bytes);
      return broken === undefined ? { ok: true, value: parsed.bytes } : { ok: false, problem: broken };
    },
  };
}

/**
 * Directories, as Flink's `io.tmp.dirs`: absolute paths separated by ',' or ':' (or an array of
 * them); empty means the operating system's temporary directory.
 */
export function directories(doc: string): OptionSpec<string | readonly string[], readonly string[]> {
  return {
    default: [],
    doc,
    format: (v) => (v.length === 0 ? "the OS's temporary directory" : v.join(',')),
    parse: (input) => {
      const listed = Array.isArray(input) && input.every((path) => typeof path === 'string');
      if (typeof input !== 'string' && !listed)
        return { ok: false, problem: `must be a string of absolute paths, got ${describeValue(input)}` };
      const paths = (listed ? (input as string[]) : (input as string).split(/[,:]/))
        .map((path) => path.trim())
        .filter((path) => path !== '');
      const relative = paths.find((path) => !path.startsWith('/'));
      return relative === undefined
        ? { ok: true, value: Object.freeze(paths) }
        : { ok: false, problem: `must name absolute paths, got ${describeValue(relative)}` };
    },
  };
}

export function oneOf<const T extends string>(values: readonly T[], defaultValue: T, doc: string): OptionSpec<T, T> {
  return {
    default: defaultValue,
    doc,
    format: (v) => v,
    parse: (input) =>
      values.includes(input as T)
        ? { ok: true, value: input as T }
        : {
            ok: false,
            problem: `must be one of ${values.map((v) => `'${v}'`).join(', ')}, got ${describeValue(input)}`,
          },
  };
}

/** The schedulers by slotwise's names; Flink's spellings of each are accepted too, in any case. */
export const SCHEDULER_TYPES = {
  default: ['default'],
  adaptive: ['adaptive', 'adaptivebatch', 'adaptive-batch'],
} as const;
export type SchedulerType = keyof typeof SCHEDULER_TYPES;

/** `value` as a scheduler name (Flink's spellings, any case), or null when it names none. */
export function schedulerTypeOf(value: unknown): SchedulerType | null {
  if (typeof value !== 'string') return null;
  const lower = value.toLowerCase();
  for (const [name, spellings] of Object.entries(SCHEDULER_TYPES))
    if ((spellings as readonly string[]).includes(lower)) return name as SchedulerType;
  return null;
}

export function schedulerType(doc: string): OptionSpec<string, SchedulerType> {
  return {
    default: 'default',
    doc,
    format: (v) => v,
    parse: (input) => {
      const type = schedulerTypeOf(input);
      return type !== null
        ? { ok: true, value: type }
        : {
            ok: false,
            problem:
              `must be 'default' or 'adaptive' (Flink's 'AdaptiveBatch' and 'adaptive-batch' too), ` +
              `got ${describeValue(input)}`,
          };
    },
  };
}

export function resources(doc: string): OptionSpec<Record<string, number>, Readonly<Record<string, number>>> {
  return {
    default: Object.freeze({}),
    doc,
    format: (v) =>
      Object.keys(v).length === 0
        ? 'none'
        : Object.entries(v)
            .map(([k, n]) => `${k}=${n}`)
            .join(', '),
    parse: (input) => {
      if (typeof input !== 'object' || input === null || Array.isArray(input)) {
        return {
          ok: false,
          problem: `must be an object of resource name -> amount, e.g. { gpu: 2 }, got ${describeValue(input)}`,
        };
      }
      for (const [name, amount] of Object.entries(input)) {
        if (!/^[A-Za-z][A-Za-z0-9_.-]*$/.test(name))
          return {
            ok: false,
            problem:
              `resource name ${JSON.stringify(name)} must start ` +
              `with a letter and use letters, digits, '_', '.', '-'`,
          };
        if (typeof amount !== 'number' || !Number.isFinite(amount) || amount < 0)
          return {
            ok: false,
            problem: `amount of '${name}' must be a finite number >= 0, got ${describeValue(amount)}`,
          };
      }
      return { ok: true, value: Object.freeze({ ...(input as Record<string, number>) }) };
    },
  };
}
