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
 *
 * A hash edge's producers wrote as many subpartitions as the consumer may have subtasks (its max parallelism), and
 * each consumer subtask reads a contiguous range of them from every producer (Flink's
 * DefaultVertexParallelismAndInputInfosDecider):
 * - when every input is a hash or an all-to-all edge, the data is split evenly: the subpartitions' bytes, summed over
 *   the producers, are cut into contiguous ranges of at most the average volume each (a subpartition larger than that
 *   is a range alone), one subtask per range; a count outside the bounds is brought to the nearest legal one by
 *   searching the volume per range that gives it (Flink's adjustToClosestLegalParallelism), and when none does the
 *   subpartitions are split evenly by count instead;
 * - otherwise (a pointwise input beside) the parallelism is decided as above and the subpartitions split evenly by
 *   count: subtask i of p reads [floor(i·S/p), floor((i+1)·S/p)).
 */
import { formatMemorySize } from '../../core/MemorySize.js';
import { evenSubpartitionRanges, type SubpartitionRange } from '../ExecutionGraph.js';
import type { DistributionPattern } from '../JobGraph.js';

/** What one input edge's producers produced, all of them finished. */
export interface ProducedInput {
  readonly from: string;
  readonly pattern: DistributionPattern;
  /** The producer vertex's parallelism. */
  readonly parallelism: number;
  /** Bytes its subtasks produced, together. */
  readonly bytes: number;
  /**
   * A hash edge's: bytes per subpartition, summed over its producers — as many entries as its producers wrote
   * subpartitions (the consumer's max parallelism). Absent: the subpartitions are split by count only.
   */
  readonly subpartitionBytes?: readonly number[];
  /** A hash edge's: how many subpartitions each producer wrote. */
  readonly subpartitions?: number;
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
  /** With hash inputs: the subpartitions each subtask reads of every producer of them, by subtask index. */
  readonly subpartitionRanges?: readonly SubpartitionRange[];
}

/** Flink's CAP_RATIO_OF_BROADCAST: broadcast bytes count at most this share of the average volume per task. */
const CAP_RATIO_OF_BROADCAST = 0.5;
const MAX_PARALLELISM = 32_768;
/** Flink's MAX_NUM_SUBPARTITIONS_PER_TASK_CONSUME: the most subpartitions of one edge a subtask reads. */
const MAX_SUBPARTITIONS_PER_TASK = 32_768;

const size = (bytes: number) => formatMemorySize(Math.round(bytes));

/**
 * The most subtasks a vertex left to the scheduler may be given: its max bound, capped by the slots the cluster may
 * hold. A hash edge's producers write this many subpartitions for such a consumer.
 */
export function maxParallelismOf(bounds: ParallelismBounds): number {
  return Math.min(bounds.maxParallelism, bounds.slotLimit, MAX_PARALLELISM);
}

export function decideParallelism(
  vertexId: string,
  inputs: readonly ProducedInput[],
  bounds: ParallelismBounds,
): ParallelismDecision {
  const hash = inputs.filter((i) => i.pattern === 'hash');
  // A consumer of a hash edge reads at least one subpartition a subtask: never more subtasks than subpartitions.
  const subpartitions = hash.length === 0 ? Infinity : Math.min(...hash.map(subpartitionsOf));
  const max = Math.min(maxParallelismOf(bounds), subpartitions);
  const min = Math.min(bounds.minParallelism, max);
  const capped =
    max >= bounds.maxParallelism
      ? ''
      : max === subpartitions && max < Math.min(bounds.slotLimit, MAX_PARALLELISM)
        ? ` (max capped at ${max} by the subpartitions its producers wrote)`
        : ` (max capped at ${max} by the slots the cluster may hold)`;
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
  const limit = bounds.avgDataVolumePerTask - broadcastCounted;
  const read =
    broadcast === 0
      ? `its inputs produced ${size(bytes)}`
      : `its inputs produced ${size(bytes)} plus ${size(broadcast)} every subtask reads whole ` +
        `(all-to-all, counted as ${size(broadcastCounted)} of each subtask's volume)`;
  const perSubtask = size(bounds.avgDataVolumePerTask);
  // Flink splits the data itself evenly only when every input is hash or all-to-all (no pointwise one).
  const noPointwise = hash.length > 0 && inputs.every((i) => i.pattern !== 'pointwise');
  if (noPointwise) {
    const even = splitDataEvenly(hash, limit, min, max);
    if (even !== null) {
      const { ranges, wanted } = even;
      const adjusted = wanted === ranges.length ? '' : ` (${wanted} at ${perSubtask} a range)`;
      return {
        vertexId,
        parallelism: ranges.length,
        bytes: bytes + broadcast,
        reason:
          `${read}; its producers' ${subpartitions} subpartitions in contiguous ranges of about ${perSubtask} ` +
          `make ${ranges.length}${adjusted}, ${within}: ${ranges.length}`,
        subpartitionRanges: ranges,
      };
    }
  }
  const wanted = Math.ceil(bytes / limit);
  const clamped = Math.min(Math.max(wanted, min), max);
  let reason = `${read}; at ${perSubtask} per subtask that is ${wanted}, ${within}: ${clamped}`;
  const pointwise = [...new Set(inputs.filter((i) => i.pattern === 'pointwise').map((i) => i.parallelism))];
  const fits = (p: number) => pointwise.every((up) => Math.max(up, p) % Math.min(up, p) === 0);
  let parallelism = clamped;
  if (!fits(clamped)) {
    // 1 divides every parallelism: a search up to the subpartitions (or the most there may be) always finds one.
    parallelism =
      nearestFitting(clamped, min, max, fits) ??
      nearestFitting(clamped, 1, Math.min(subpartitions, MAX_PARALLELISM), fits)!;
    const kept = parallelism >= min && parallelism <= max ? '' : ` (none within [${min}, ${max}] does)`;
    const edges = `the pointwise edge${pointwise.length > 1 ? 's' : ''} from parallelism ${pointwise.join(', ')}`;
    reason += `; ${parallelism} keeps ${edges} divisible${kept}`;
  }
  if (hash.length === 0) return { vertexId, parallelism, bytes: bytes + broadcast, reason };
  if (noPointwise)
    reason += `; no split of the subpartitions by bytes gives a parallelism ${within}, so they are split by count`;
  return {
    vertexId,
    parallelism,
    bytes: bytes + broadcast,
    reason,
    subpartitionRanges: evenSubpartitionRanges(subpartitions, parallelism),
  };
}

function subpartitionsOf(input: ProducedInput): number {
  return input.subpartitions ?? input.subpartitionBytes?.length ?? input.parallelism;
}

/**
 * Flink's decideParallelismAndEvenlyDistributeData: the hash inputs' subpartitions, their bytes summed over every
 * producer, cut into contiguous ranges of at most `limit` bytes; a count outside [min, max] searched for the nearest
 * legal one. Null when the inputs do not say their subpartitions' bytes, or no count within the bounds can be had.
 */
function splitDataEvenly(
  hash: readonly ProducedInput[],
  limit: number,
  min: number,
  max: number,
): { ranges: SubpartitionRange[]; wanted: number } | null {
  const count = subpartitionsOf(hash[0]!);
  if (hash.some((input) => input.subpartitionBytes?.length !== count)) return null;
  const bytes = new Array<number>(count).fill(0);
  for (const input of hash) input.subpartitionBytes!.forEach((b, i) => (bytes[i]! += b));
  // The most subpartitions of one edge a subtask may read: every producer's range counts.
  const maxRangeSize = Math.max(
    1,
    Math.floor(MAX_SUBPARTITIONS_PER_TASK / Math.max(...hash.map((i) => i.parallelism))),
  );
  const countAt = (volume: number) => cut(bytes, volume, maxRangeSize).length;
  const wanted = countAt(limit);
  let volume = limit;
  if (wanted < min) {
    // More ranges: the largest volume that still gives at least min of them, then the smallest giving as many (the
    // smaller the volume, the more even the ranges).
    const floor = Math.min(...bytes);
    volume = largestWhere((v) => countAt(v) >= min, floor, limit);
    if (volume < 0) return null;
    const least = countAt(volume);
    volume = smallestWhere((v) => countAt(v) === least, floor, volume);
  } else if (wanted > max) {
    volume = smallestWhere(
      (v) => countAt(v) <= max,
      limit,
      bytes.reduce((a, b) => a + b, 0),
    );
    if (volume < 0) return null;
  }
  const ranges = cut(bytes, volume, maxRangeSize);
  return ranges.length >= min && ranges.length <= max ? { ranges, wanted } : null;
}

/** Contiguous ranges of at most `volume` bytes (a subpartition larger than that alone) and `maxSize` subpartitions. */
function cut(bytes: readonly number[], volume: number, maxSize: number): SubpartitionRange[] {
  const ranges: SubpartitionRange[] = [];
  let start = 0;
  let sum = 0;
  for (let i = 0; i < bytes.length; i++) {
    if (i === start || (sum + bytes[i]! <= volume && i - start + 1 <= maxSize)) sum += bytes[i]!;
    else {
      ranges.push([start, i]);
      start = i;
      sum = bytes[i]!;
    }
  }
  ranges.push([start, bytes.length]);
  return ranges;
}

/** The largest integer in [lo, hi] where `holds` (true up to some point, false after), or -1 if not even at lo. */
function largestWhere(holds: (v: number) => boolean, lo: number, hi: number): number {
  if (!holds(lo)) return -1;
  while (lo <= hi) {
    const mid = Math.floor((lo + hi) / 2);
    if (holds(mid)) lo = mid + 1;
    else hi = mid - 1;
  }
  return hi;
}

/** The smallest integer in [lo, hi] where `holds` (false up to some point, true after), or -1 if not even at hi. */
function smallestWhere(holds: (v: number) => boolean, lo: number, hi: number): number {
  if (!holds(hi)) return -1;
  while (lo <= hi) {
    const mid = Math.floor((lo + hi) / 2);
    if (holds(mid)) hi = mid - 1;
    else lo = mid + 1;
  }
  return lo;
}

/** The parallelism in [lo, hi] nearest to `target` that `fits` (a tie: the larger), or null. */
function nearestFitting(target: number, lo: number, hi: number, fits: (p: number) => boolean): number | null {
  for (let distance = 0; target - distance >= lo || target + distance <= hi; distance++) {
    if (target + distance <= hi && target + distance >= lo && fits(target + distance)) return target + distance;
    if (target - distance >= lo && target - distance <= hi && fits(target - distance)) return target - distance;
  }
  return null;
}
