/** Where a profile falls short of a requirement, field by field, and how it prints. */
import { formatMemorySize } from './MemorySize.js';
import { IS_MEMORY } from './resourceAmounts.js';

/** One field where a profile has less than a requirement needs. */
export interface ResourceShortfall {
  readonly field: string;
  readonly available: number;
  readonly required: number;
}

/** Prints shortfalls as `cpuCores available 1, required 2; managedMemory available 64 mb, required 128 mb`. */
export function formatShortfall(
  shortfall: readonly ResourceShortfall[],
  [have, need] = ['available', 'required'],
): string {
  const show = (field: string, n: number) =>
    IS_MEMORY.has(field) ? formatMemorySize(n) : n === Infinity ? '∞' : String(n);
  return shortfall
    .map((s) => `${s.field} ${have} ${show(s.field, s.available)}, ${need} ${show(s.field, s.required)}`)
    .join('; ');
}
