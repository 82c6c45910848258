/**
 * The amounts a ResourceProfile is made of: the five standard fields in their order, their units
 * (CPU and extended resources in 1e-8 units, memory in bytes), and the checks that turn one input
 * value into an amount, each failing with a ResourceProfileError naming the field.
 */
import { describeValue, ResourceProfileError } from './errors.js';
import { parseMemorySize } from './MemorySize.js';

export const SCALE = 1e8;
/** CPU and extended-resource amounts are held in units of 1 / UNITS_PER_CORE (see {@link ResourceProfile.amounts}). */
export const UNITS_PER_CORE = SCALE;
export const STANDARD = ['cpuCores', 'taskHeapMemory', 'taskOffHeapMemory', 'managedMemory', 'networkMemory'] as const;
export const MEMORY = STANDARD.slice(1) as readonly MemoryField[];
export const IS_MEMORY = new Set<string>(MEMORY);
const NAME = /^[A-Za-z][A-Za-z0-9_.-]*$/;

export type StandardField = (typeof STANDARD)[number];
export type MemoryField = Exclude<StandardField, 'cpuCores'>;
/** The five standard amounts, in STANDARD order: CPU in 1e-8 units, memory in bytes. */
export type Amounts = readonly [number, number, number, number, number];

/**
 * A running total of the five amounts, a copy of `from` (zeros without it), kept as an array of
 * doubles. Amounts pass the small integers (memory in bytes, CPU in 1e-8 units), and an array of
 * tagged values — what spreading a profile's frozen `amounts` gives — boxes every sum stored into
 * it: a new heap number per field per slot placed, a good part of a large placement's garbage.
 */
export function runningAmounts(from?: ArrayLike<number>): number[] {
  const out = [0.5, 0.5, 0.5, 0.5, 0.5]; // a literal of doubles: the array keeps double elements
  for (let i = 0; i < 5; i++) out[i] = from === undefined ? 0 : from[i]!;
  return out;
}

/** Checks a cores/extended amount and converts it to 1e-8 units. */
export function toUnits(field: string, value: unknown): number {
  const rule = `${field} must be a finite non-negative number`;
  if (typeof value !== 'number' || !Number.isFinite(value))
    throw new ResourceProfileError('not-finite', `${rule}, got ${describeValue(value)}`, {
      field,
      value: describeValue(value),
    });
  if (value < 0) throw new ResourceProfileError('negative-amount', `${rule}, got ${value}`, { field, value });
  // Rounded down at the kept precision, never up (Flink's resources round down): the amount kept is
  // never more than was asked. `value * SCALE` carries binary noise (0.29 * 1e8 = 28999999.999999996),
  // so take the nearest unit and step down only when that unit reads back above `value`.
  let units = Math.round(value * SCALE) + 0;
  if (units / SCALE > value) units -= 1;
  if (!Number.isSafeInteger(units)) {
    throw new ResourceProfileError(
      'invalid-size',
      `${rule} of at most ${Number.MAX_SAFE_INTEGER / SCALE}, got ${value}`,
      { field, value },
    );
  }
  return units;
}

/** Checks a memory size (bytes or a size string) and returns bytes. */
export function toBytes(field: string, value: unknown): number {
  const parsed = parseMemorySize(value);
  if (parsed.ok) return parsed.bytes;
  const message = `${field} ${parsed.problem}`;
  const details = { field, value: describeValue(value) };
  if (typeof value === 'string') throw new ResourceProfileError('invalid-size', message, details);
  if (typeof value !== 'number' || !Number.isFinite(value))
    throw new ResourceProfileError('not-finite', message, details);
  if (value < 0) throw new ResourceProfileError('negative-amount', message, details);
  if (!Number.isInteger(value)) throw new ResourceProfileError('not-integer', message, details);
  throw new ResourceProfileError('invalid-size', message, details);
}

export function checkName(name: unknown): string {
  if (typeof name !== 'string' || !NAME.test(name) || (STANDARD as readonly string[]).includes(name)) {
    const message =
      `extended resource name must match ${NAME} and not be a standard ` +
      `field (${STANDARD.join(', ')}), got ${describeValue(name)}`;
    throw new ResourceProfileError('invalid-name', message, { field: 'extendedResources', value: describeValue(name) });
  }
  return name;
}

/** Refuses a merged or multiplied amount that no longer fits a safe integer. */
export function checked(field: string, amount: number): number {
  if (!Number.isSafeInteger(amount)) {
    const limit = IS_MEMORY.has(field) ? `${Number.MAX_SAFE_INTEGER} bytes` : `${Number.MAX_SAFE_INTEGER / SCALE}`;
    throw new ResourceProfileError('invalid-size', `${field} would exceed the largest representable amount, ${limit}`, {
      field,
      limit,
    });
  }
  return amount;
}
