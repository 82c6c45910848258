/**
 * How many subtasks a vertex left to the adaptive scheduler gets (Flink's DefaultVertexParallelismDecider, the rule
 * of its AdaptiveBatchScheduler): a pure function of what its producers produced and the bounds.
 *
 * - A source (no inputs) gets the default source parallelism.
 * - Otherwise `ceil(bytes / (avgDataVolumePerTask - broadcastBytes))`, where `bytes` is what its pointwise inputs
 *   produced and `broadcastBytes` what its all-to-all inputs did — every subtask reads each of those whole (Flink's
 *   broadcast), so they do not split with the parallelism; as in Flink they count at most half the average volume
 *   (CAP_RATIO_OF_BROADCAST), so a vertex that only reads broadcasts gets its min parallelism.
 * - Clamped to [min, max]; max is capped by the slots the cluster may ever have (`slotLimit`), and min by that max.
 * - Every pointwise input keeps its divisibility (one parallelism divides the other, as ExecutionGraph needs): the
 *   nearest parallelism within the bounds that divides or is divided by each pointwise producer's (a tie: the larger,
 *   so no subtask reads more than the average volume). When no parallelism within the bounds does, the nearest outside
 *   them does, and the reason says so.
 */
import { formatMemorySize } from '../../core/MemorySize.js';
import type { DistributionPattern } from '../JobGraph.js';

/** What one input edge's producers produced, all of them finished. */
export interface ProducedInput {
  readonly from: string;
  readonly pattern: DistributionPattern;
  /** The producer vertex's parallelism. */
  readonly parallelism: number;
  /** Bytes its subtasks produced, together. */
  readonly bytes: number;
}

export interface ParallelismBounds {
  /** execution.batch.adaptive.auto-parallelism.avg-data-volume-per-task, in bytes. */
  readonly avgDataVolumePerTask: number;
  readonly minParallelism: number;
  readonly maxParallelism: number;
  /** execution.batch.adaptive.auto-parallelism.default-source-parallelism. */
  readonly defaultSourceParallelism: number;
  /** The most slots the cluster may hold (slotmanager.number-of-slots.max; Infinity: unbounded). */
  readonly slotLimit: number;
}

/** A decided parallelism, with the figures it came from and why, in words. */
export interface ParallelismDecision {
  readonly vertexId: string;
  readonly parallelism: number;
  /** Bytes its inputs produced (pointwise and all-to-all together); 0 for a source. */
  readonly bytes: number;
  readonly reason: string;
}

/** Flink's CAP_RATIO_OF_BROADCAST: broadcast bytes count at most this share of the average volume per task. */
const CAP_RATIO_OF_BROADCAST = 0.5;
const MAX_PARALLELISM = 32_768;

const size = (bytes: number) => formatMemorySize(Math.round(bytes));

export function decideParallelism(
  vertexId: string,
  inputs: readonly ProducedInput[],
  bounds: ParallelismBounds,
): ParallelismDecision {
  const max = Math.min(bounds.maxParallelism, bounds.slotLimit, MAX_PARALLELISM);
  const min = Math.min(bounds.minParallelism, max);
  const capped = max < bounds.maxParallelism ? ` (max capped at ${max} by the slots the cluster may hold)` : '';
  const within = `within [${min}, ${max}]${capped}`;
  if (inputs.length === 0) {
    const parallelism = Math.min(Math.max(bounds.defaultSourceParallelism, min), max);
    return {
      vertexId,
      parallelism,
      bytes: 0,
      reason: `a source: the default source parallelism ${bounds.defaultSourceParallelism}, ${within}`,
    };
  }
  let bytes = 0;
  let broadcast = 0;
  for (const input of inputs) {
    if (input.pattern === 'all-to-all') broadcast += input.bytes;
    else bytes += input.bytes;
  }
  const broadcastCounted = Math.min(broadcast, bounds.avgDataVolumePerTask * CAP_RATIO_OF_BROADCAST);
  const wanted = Math.ceil(bytes / (bounds.avgDataVolumePerTask - broadcastCounted));
  const clamped = Math.min(Math.max(wanted, min), max);
  const read =
    broadcast === 0
      ? `its inputs produced ${size(bytes)}`
      : `its inputs produced ${size(bytes)} plus ${size(broadcast)} every subtask reads whole ` +
        `(all-to-all, counted as ${size(broadcastCounted)} of each subtask's volume)`;
  const perSubtask = size(bounds.avgDataVolumePerTask);
  let reason = `${read}; at ${perSubtask} per subtask that is ${wanted}, ${within}: ${clamped}`;
  const pointwise = [...new Set(inputs.filter((i) => i.pattern === 'pointwise').map((i) => i.parallelism))];
  const fits = (p: number) => pointwise.every((up) => Math.max(up, p) % Math.min(up, p) === 0);
  let parallelism = clamped;
  if (!fits(clamped)) {
    parallelism = nearestFitting(clamped, min, max, fits) ?? nearestFitting(clamped, 1, MAX_PARALLELISM, fits)!;
    const kept = parallelism >= min && parallelism <= max ? '' : ` (none within [${min}, ${max}] does)`;
    const edges = `the pointwise edge${pointwise.length > 1 ? 's' : ''} from parallelism ${pointwise.join(', ')}`;
    reason += `; ${parallelism} keeps ${edges} divisible${kept}`;
  }
  return { vertexId, parallelism, bytes: bytes + broadcast, reason };
}

/** The parallelism in [lo, hi] nearest to `target` that `fits` (a tie: the larger), or null. */
function nearestFitting(target: number, lo: number, hi: number, fits: (p: number) => boolean): number | null {
  for (let distance = 0; target - distance >= lo || target + distance <= hi; distance++) {
    if (target + distance <= hi && target + distance >= lo && fits(target + distance)) return target + distance;
    if (target - distance >= lo && target - distance <= hi && fits(target - distance)) return target - distance;
  }
  return null;
}
