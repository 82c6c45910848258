/**
 * Which subtasks of a job get their slots asked for, and when (Flink's SchedulingStrategy). A strategy decides only:
 * it returns the `created` subtasks to schedule, the JobMaster schedules them (ExecutionDeployer: slots asked for,
 * each deployed once its slot is there) and its slot pool declares what is scheduled to the ResourceManager.
 *
 * - `region` (PipelinedRegionSchedulingStrategy, the default): a subtask is scheduled once every producer it reads
 *   has finished. Every edge here is blocking — a consumer reads its producers' finished outputs, never a stream —
 *   so each subtask is a pipelined region of its own, and this is what Flink's VertexwiseSchedulingStrategy does for
 *   an ALL_EDGES_BLOCKING job: sources at the start, a consumer when its last input finishes, a restarted subtask
 *   when its inputs are there. A consumer holds no slot while it waits, so a job whose producers and consumers do not
 *   fit the cluster together runs in waves (a 64 × 64 hash shuffle finishes on 2 slots).
 * - `eager` (Flink's EagerSchedulingStrategy, and `legacy` of Flink 1.12's jobmanager.scheduler.scheduling-strategy):
 *   every subtask is scheduled at the start and at a restart; a consumer holds its slot while it waits for its inputs.
 *
 * A job without edges is scheduled whole at its start either way, with no per-subtask check.
 */
import type { ExecutionAttempts, ExecutionRecord } from './ExecutionAttempts.js';
import type { ExecutionGraph, ExecutionVertex } from './ExecutionGraph.js';

export type SchedulingStrategyName = 'region' | 'eager';

export interface SchedulingStrategy {
  readonly name: SchedulingStrategyName;
  /** The subtasks to schedule as the job starts, in topological order. */
  startScheduling(): Iterable<ExecutionRecord>;
  /** Of subtasks given their next attempt (`created`), those to schedule now. */
  restartTasks(restarted: readonly ExecutionRecord[]): ExecutionRecord[];
  /** A subtask finished: the subtasks to schedule now (its `created` consumers whose inputs are all there). */
  onFinished(finished: ExecutionRecord): ExecutionRecord[];
  /**
   * Finished producers lost their outputs (they run again): the subtasks scheduled and not deployed yet to send back
   * to wait, `created` and without a slot, until their inputs are there again.
   */
  onInputsLost(producers: readonly ExecutionRecord[]): ExecutionRecord[];
}

const NOTHING: ExecutionRecord[] = [];

/** Every subtask at the start and at a restart. */
export class EagerSchedulingStrategy implements SchedulingStrategy {
  readonly name = 'eager';
  readonly #executions: ExecutionAttempts;

  constructor(executions: ExecutionAttempts) {
    this.#executions = executions;
  }

  startScheduling(): Iterable<ExecutionRecord> {
    return this.#executions.values();
  }

  restartTasks(restarted: readonly ExecutionRecord[]): ExecutionRecord[] {
    return [...restarted];
  }

  onFinished(): ExecutionRecord[] {
    return NOTHING;
  }

  /** A consumer keeps its slot while it waits. */
  onInputsLost(): ExecutionRecord[] {
    return NOTHING;
  }
}

/** A subtask once every producer it reads has finished (one subtask per region: every edge is blocking). */
export class PipelinedRegionSchedulingStrategy implements SchedulingStrategy {
  readonly name = 'region';
  readonly #graph: ExecutionGraph;
  readonly #executions: ExecutionAttempts;

  constructor(graph: ExecutionGraph, executions: ExecutionAttempts) {
    this.#graph = graph;
    this.#executions = executions;
  }

  startScheduling(): Iterable<ExecutionRecord> {
    const { jobGraph } = this.#graph;
    // No edges: every subtask is a source, taken as it is (no per-subtask look-up).
    if (jobGraph.edges.length === 0) return this.#executions.values();
    const sources: ExecutionRecord[] = [];
    for (const vertex of jobGraph.vertices) {
      if (jobGraph.inputsOf(vertex.id).length > 0) continue;
      for (const subtask of this.#graph.subtasksOf(vertex.id)) sources.push(this.#executions.of(subtask));
    }
    return sources;
  }

  restartTasks(restarted: readonly ExecutionRecord[]): ExecutionRecord[] {
    const finished = new Map<readonly ExecutionVertex[], boolean>();
    return restarted.filter((record) => this.#inputsFinished(record, finished));
  }

  onFinished(finished: ExecutionRecord): ExecutionRecord[] {
    const consumers = this.#graph.consumersOf(finished.vertex);
    if (consumers.length === 0) return NOTHING;
    // Consumers of one edge read the same producer blocks (all-to-all: one for all): each block is looked at once
    // (Flink's consumableStatusCache), so a finish costs O(consumers + producers), not their product.
    const blocks = new Map<readonly ExecutionVertex[], boolean>();
    const ready: ExecutionRecord[] = [];
    for (const consumer of consumers) {
      const record = this.#executions.of(consumer);
      if (record.state === 'created' && this.#inputsFinished(record, blocks)) ready.push(record);
    }
    return ready;
  }

  /** Flink's region failover resets the consumer regions of a lost partition: a waiting consumer holds no slot. */
  onInputsLost(producers: readonly ExecutionRecord[]): ExecutionRecord[] {
    const waiting = new Set<ExecutionRecord>();
    for (const producer of producers)
      for (const consumer of this.#graph.consumersOf(producer.vertex)) {
        const record = this.#executions.of(consumer);
        if (record.state === 'scheduled') waiting.add(record);
      }
    return [...waiting];
  }

  /** Whether every producer the subtask reads has finished (its output, or partition, is there). */
  #inputsFinished(record: ExecutionRecord, blocks: Map<readonly ExecutionVertex[], boolean>): boolean {
    for (const input of this.#graph.inputsOf(record.vertex)) {
      let finished = blocks.get(input.producers);
      if (finished === undefined) {
        finished = input.producers.every((producer) => this.#executions.of(producer).hasOutput);
        blocks.set(input.producers, finished);
      }
      if (!finished) return false;
    }
    return true;
  }
}

/** The strategy of jobmanager.scheduler.scheduling-strategy. */
export function schedulingStrategyOf(
  name: SchedulingStrategyName,
  graph: ExecutionGraph,
  executions: ExecutionAttempts,
): SchedulingStrategy {
  return name === 'eager'
    ? new EagerSchedulingStrategy(executions)
    : new PipelinedRegionSchedulingStrategy(graph, executions);
}
