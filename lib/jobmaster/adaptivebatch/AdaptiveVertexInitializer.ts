/**
 * The adaptive scheduler's part of a JobMaster (Flink's AdaptiveBatchScheduler.initializeVerticesIfPossible): a vertex
 * that left its parallelism unset is initialized — given its subtasks in the ExecutionGraph, their attempts, their slot
 * sharing groups, and its producers' partitions their readers — as soon as every producer it reads has finished, with
 * the parallelism VertexParallelismDecider decides from the bytes they produced (a source's at the job's start). A
 * decision holds for the job's life: a producer run again later (its partition lost, a restart) changes nothing of it,
 * as in Flink, so its consumers' inputs stay as they were wired.
 */
import { serialize } from 'node:v8';
import type { ResolvedOptions } from '../../core/options.js';
import type { ExecutionAttempts, ExecutionRecord } from '../ExecutionAttempts.js';
import { ExecutionGraph } from '../ExecutionGraph.js';
import type { JobGraph } from '../JobGraph.js';
import type { JobPartitionTracker } from '../JobPartitionTracker.js';
import type { LocalInputPreferredSlotSharingStrategy } from '../slotsharing/SlotSharingStrategy.js';
import {
  decideParallelism,
  maxParallelismOf,
  type ParallelismBounds,
  type ParallelismDecision,
  type ProducedInput,
} from './VertexParallelismDecider.js';

export type { ParallelismDecision } from './VertexParallelismDecider.js';

/** The bounds every vertex starts from: the execution.batch.adaptive.auto-parallelism.* options. */
export function parallelismBoundsOf(options: ResolvedOptions): ParallelismBounds {
  return {
    avgDataVolumePerTask: options['execution.batch.adaptive.auto-parallelism.avg-data-volume-per-task'],
    minParallelism: options['execution.batch.adaptive.auto-parallelism.min-parallelism'],
    maxParallelism: options['execution.batch.adaptive.auto-parallelism.max-parallelism'],
    defaultSourceParallelism: options['execution.batch.adaptive.auto-parallelism.default-source-parallelism'],
    slotLimit: options['slotmanager.number-of-slots.max'],
  };
}

/**
 * The job's ExecutionGraph, told the most subtasks the scheduler may give each vertex that left its parallelism unset:
 * a hash edge's producers write that many subpartitions for it.
 */
export function executionGraphOf(jobGraph: JobGraph, options: ResolvedOptions): ExecutionGraph {
  const bounds = parallelismBoundsOf(options);
  return new ExecutionGraph(jobGraph, {
    maxParallelismOf: (vertexId) => maxParallelismOf(boundsFor(jobGraph, vertexId, bounds)),
  });
}

/**
 * Initializes the sources that left their parallelism unset, before anything else is built on the graph (the
 * ExecutionAttempts and slot sharing groups are then made with their subtasks). Returns the decisions.
 */
export function initializeSources(graph: ExecutionGraph, options: ResolvedOptions): ParallelismDecision[] {
  const decisions: ParallelismDecision[] = [];
  for (const vertexId of [...graph.uninitialized()]) {
    if (graph.jobGraph.inputsOf(vertexId).length > 0) continue;
    const decision = decideParallelism(vertexId, [], boundsFor(graph.jobGraph, vertexId, parallelismBoundsOf(options)));
    graph.initialize(vertexId, decision.parallelism);
    decisions.push(decision);
  }
  return decisions;
}

export interface AdaptiveVertexInitializerOptions {
  readonly graph: ExecutionGraph;
  readonly options: ResolvedOptions;
  readonly executions: ExecutionAttempts;
  readonly partitions: JobPartitionTracker;
  readonly slotSharing: LocalInputPreferredSlotSharingStrategy;
  /** A vertex was given its parallelism (its event: `decision` and why). */
  readonly decided: (decision: ParallelismDecision) => void;
}

export class AdaptiveVertexInitializer {
  readonly #o: AdaptiveVertexInitializerOptions;
  readonly #bounds: ParallelismBounds;
  /** Every decision so far, by vertex: the sources' first. */
  readonly #decisions = new Map<string, ParallelismDecision>();

  constructor(options: AdaptiveVertexInitializerOptions, sources: readonly ParallelismDecision[] = []) {
    this.#o = options;
    this.#bounds = parallelismBoundsOf(options.options);
    for (const decision of sources) this.#decisions.set(decision.vertexId, decision);
  }

  /** The decisions made so far (for overviews), in the order they were made. */
  decisions(): readonly ParallelismDecision[] {
    return [...this.#decisions.values()];
  }

  /**
   * Initializes every vertex left whose producers have all finished, in topological order — of those that read
   * `finished`'s vertex, when given (only they can have become ready) —; returns the attempts created for their
   * subtasks (none when there is nothing to decide: a job of fixed parallelism costs one check).
   */
  initializeReady(finished?: ExecutionRecord): ExecutionRecord[] {
    const { graph, executions } = this.#o;
    if (graph.uninitialized().length === 0) return [];
    const created: ExecutionRecord[] = [];
    const from = finished?.vertex.jobVertex.id;
    for (const vertexId of [...graph.uninitialized()]) {
      if (from !== undefined && !graph.jobGraph.inputsOf(vertexId).some((edge) => edge.from === from)) continue;
      const inputs = this.#producedInputs(vertexId);
      if (inputs === null) continue;
      const decision = decideParallelism(vertexId, inputs, boundsFor(graph.jobGraph, vertexId, this.#bounds));
      const subtasks = graph.initialize(vertexId, decision.parallelism, decision.subpartitionRanges);
      created.push(...executions.add(subtasks));
      this.#o.slotSharing.addJobVertex(vertexId);
      this.#o.partitions.consumersAdded(subtasks);
      this.#decisions.set(vertexId, decision);
      this.#o.decided(decision);
    }
    return created;
  }

  /** What each input edge's producers produced; null while one of them is not initialized or not finished. */
  #producedInputs(vertexId: string): ProducedInput[] | null {
    const { graph, executions } = this.#o;
    const inputs: ProducedInput[] = [];
    for (const edge of graph.jobGraph.inputsOf(vertexId)) {
      const producers = graph.subtasksOf(edge.from);
      if (producers.length === 0) return null;
      // Producers finish roughly in index order: the last is the likeliest still to run, so a check usually stops at
      // once instead of walking every producer at every finish.
      for (let i = producers.length - 1; i >= 0; i--) if (!executions.of(producers[i]!).hasOutput) return null;
      if (edge.pattern !== 'hash') {
        let bytes = 0;
        for (const producer of producers) bytes += bytesOf(executions.of(producer));
        inputs.push({ from: edge.from, pattern: edge.pattern, parallelism: producers.length, bytes });
        continue;
      }
      // A hash edge's bytes by subpartition, summed over its producers: what the even split of data cuts.
      const subpartitions = graph.subpartitionsOf(edge.from)!;
      const subpartitionBytes = new Array<number>(subpartitions).fill(0);
      for (const producer of producers) {
        const produced = subpartitionBytesOf(executions.of(producer), subpartitions);
        for (let i = 0; i < subpartitions; i++) subpartitionBytes[i]! += produced[i] ?? 0;
      }
      const bytes = subpartitionBytes.reduce((sum, b) => sum + b, 0);
      inputs.push({
        from: edge.from,
        pattern: edge.pattern,
        parallelism: producers.length,
        bytes,
        subpartitions,
        subpartitionBytes,
      });
    }
    return inputs;
  }
}

/** The options' bounds, narrowed by the vertex's own. */
function boundsFor(jobGraph: JobGraph, vertexId: string, bounds: ParallelismBounds): ParallelismBounds {
  const vertex = jobGraph.vertex(vertexId);
  const maxParallelism = vertex.maxParallelism ?? bounds.maxParallelism;
  // A vertex's own bound wins over the option's: its min may be above the option's max, and its max below its min.
  const minParallelism = vertex.minParallelism ?? Math.min(bounds.minParallelism, maxParallelism);
  return { ...bounds, minParallelism, maxParallelism: Math.max(maxParallelism, minParallelism) };
}

/**
 * The bytes a finished producer produced: its result partition's subpartitions, or — its output sent to the JobMaster
 * (a session cluster's) — the size of that output serialized as the data plane would (v8.serialize).
 */
function bytesOf(record: ExecutionRecord): number {
  if (record.partition !== null) return record.partition.bytes.reduce((sum, bytes) => sum + bytes, 0);
  if (record.output === undefined) return 0;
  try {
    return serialize(record.output).byteLength;
  } catch {
    return 0;
  }
}

/** A finished hash producer's bytes by subpartition: its result partition's, or each part of its output serialized. */
function subpartitionBytesOf(record: ExecutionRecord, subpartitions: number): readonly number[] {
  if (record.partition !== null) return record.partition.bytes;
  const parts = Array.isArray(record.output) ? record.output : [];
  return Array.from({ length: subpartitions }, (_, i) => {
    try {
      return parts[i] === undefined ? 0 : serialize(parts[i]).byteLength;
    } catch {
      return 0;
    }
  });
}
