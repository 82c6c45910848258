/**
 * The heap limit of a slot's task threads: the one they are given (`heapLimitMbOf` the slot's
 * profile) and the one they really have. Worker `resourceLimits` can be silently replaced by a
 * process-wide `--max-old-space-size` (command line or NODE_OPTIONS), so a pool asks one of its
 * threads (the worker's `heapLimit` probe, taskWorker.ts) and compares.
 */
import type { Piscina } from 'piscina';
import type { ResourceProfile } from '../core/ResourceProfile.js';
import type { HeapLimitProbe } from './taskThreadProtocol.js';

export interface HeapLimitCheck {
  /** The limit asked for (`heapLimitMb`), or null when none was. */
  readonly expectedMb: number | null;
  /** The old-generation limit a thread really has: heap_size_limit minus its young generation. */
  readonly actualMb: number;
  /** `v8.getHeapStatistics().heap_size_limit` in the thread (old + young generation). */
  readonly heapSizeLimitMb: number;
  readonly youngGenerationMb: number;
  /** True when `actualMb` is within 10 % of `expectedMb`, or no limit was asked. */
  readonly enforced: boolean;
}

const MiB = 1024 * 1024;

/** The heap limit (MB) of a slot's task threads: its profile's task heap; undefined when it has none. */
export function heapLimitMbOf(profile: ResourceProfile): number | undefined {
  const heap = profile.taskHeapMemory;
  return heap > 0 ? Math.max(1, Math.floor(heap / MiB)) : undefined;
}

/** V8's default young generation on 64-bit Node 20 (3 × 16 MiB semi-spaces), if the thread does not say. */
const DEFAULT_YOUNG_GENERATION_MB = 48;

/**
 * Asks a thread of `pool` for its heap limit. `heap_size_limit` counts the young generation too,
 * so the old generation is that minus the young generation the thread reports.
 */
export async function probeHeapLimit(pool: Piscina, heapLimitMb: number | undefined): Promise<HeapLimitCheck> {
  const probe = (await pool.run(null, { name: 'heapLimit' })) as HeapLimitProbe;
  const heapSizeLimitMb = probe.heapSizeLimit / MiB;
  const youngGenerationMb = probe.resourceLimits.maxYoungGenerationSizeMb ?? DEFAULT_YOUNG_GENERATION_MB;
  const actualMb = heapSizeLimitMb - youngGenerationMb;
  const expectedMb = heapLimitMb ?? null;
  const enforced = expectedMb === null || Math.abs(actualMb - expectedMb) <= expectedMb * 0.1;
  return { expectedMb, actualMb, heapSizeLimitMb, youngGenerationMb, enforced };
}
