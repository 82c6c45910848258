/**
 * Which subtasks of a job get their slots asked for, and when (Flink's SchedulingStrategy). A strategy decides only:
 * it returns the `created` subtasks to schedule, the JobMaster schedules them (ExecutionDeployer: slots asked for,
 * each deployed once its slot is there) and its slot pool declares what is scheduled to the ResourceManager.
 *
 * - `region` (PipelinedRegionSchedulingStrategy, the default): a subtask is scheduled once every producer it reads
 *   has finished. Every edge here is blocking — a consumer reads its producers' finished outputs, never a stream —
 *   so each subtask is a pipelined region of its own (co-located subtasks excepted: they make one region), and this
 *   is what Flink's VertexwiseSchedulingStrategy does for an ALL_EDGES_BLOCKING job: sources at the start, a
 *   consumer when its last input finishes, a restarted subtask when its inputs are there. A consumer holds no slot
 *   while it waits, so a job whose producers and consumers do not fit the cluster together runs in waves (a 64 × 64
 *   hash shuffle finishes on 2 slots).
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

/**
 * A region once every producer its subtasks read from outside it has finished. A region is one subtask (every edge
 * is blocking), or subtask i of every vertex of a co-location group: those must share a slot, so they are scheduled
 * together (into one SharedSlot) — one of them reading another waits for it there, slot held.
 */
export class PipelinedRegionSchedulingStrategy implements SchedulingStrategy {
  readonly name = 'region';
  readonly #graph: ExecutionGraph;
  readonly #executions: ExecutionAttempts;
  /** The co-located regions looked at so far, by `<co-location group>#<subtask index>`. */
  readonly #coLocated = new Map<string, readonly ExecutionRecord[]>();

  constructor(graph: ExecutionGraph, executions: ExecutionAttempts) {
    this.#graph = graph;
    this.#executions = executions;
  }

  startScheduling(): Iterable<ExecutionRecord> {
    const { jobGraph } = this.#graph;
    // No edges: every subtask is a source, taken as it is (no per-subtask look-up).
    if (jobGraph.edges.length === 0) return this.#executions.values();
    const ready = new Set<ExecutionRecord>();
    const blocks = new Map<readonly ExecutionVertex[], boolean>();
    for (const vertex of jobGraph.vertices) {
      if (jobGraph.inputsOf(vertex.id).length > 0) continue;
      for (const subtask of this.#graph.subtasksOf(vertex.id))
        this.#maybeSchedule(this.#executions.of(subtask), blocks, ready);
    }
    return ready;
  }

  restartTasks(restarted: readonly ExecutionRecord[]): ExecutionRecord[] {
    const ready = new Set<ExecutionRecord>();
    const blocks = new Map<readonly ExecutionVertex[], boolean>();
    for (const record of restarted) this.#maybeSchedule(record, blocks, ready);
    return [...ready];
  }

  onFinished(finished: ExecutionRecord): ExecutionRecord[] {
    const consumers = this.#graph.consumersOf(finished.vertex);
    if (consumers.length === 0) return NOTHING;
    // Consumers of one edge read the same producer blocks (all-to-all: one for all): each block is looked at once
    // (Flink's consumableStatusCache), so a finish costs O(consumers + producers), not their product.
    const blocks = new Map<readonly ExecutionVertex[], boolean>();
    const ready = new Set<ExecutionRecord>();
    for (const consumer of consumers) this.#maybeSchedule(this.#executions.of(consumer), blocks, ready);
    return [...ready];
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

  /** Adds the `created` subtasks of the record's region to `ready` if the region can be scheduled now. */
  #maybeSchedule(
    record: ExecutionRecord,
    blocks: Map<readonly ExecutionVertex[], boolean>,
    ready: Set<ExecutionRecord>,
  ): void {
    if (record.state !== 'created' || ready.has(record)) return;
    const coLocationGroup = record.vertex.jobVertex.coLocationGroup;
    if (coLocationGroup === null) {
      if (this.#inputsFinished(record, blocks)) ready.add(record);
      return;
    }
    const region = this.#coLocatedRegion(coLocationGroup, record.vertex.id.subtaskIndex);
    const waiting = region.filter((member) => member.state === 'created');
    if (waiting.every((member) => this.#inputsFinished(member, null, region)))
      for (const member of waiting) ready.add(member);
  }

  /**
   * Whether every producer the subtask reads from outside `region` has finished (its output, or partition, is there).
   * `blocks` caches a producer block's answer for a subtask alone (null: a region, where the answer is its own).
   */
  #inputsFinished(
    record: ExecutionRecord,
    blocks: Map<readonly ExecutionVertex[], boolean> | null,
    region: readonly ExecutionRecord[] = NOTHING,
  ): boolean {
    for (const input of this.#graph.inputsOf(record.vertex)) {
      let finished = blocks?.get(input.producers);
      if (finished === undefined) {
        finished = input.producers.every((vertex) => {
          const producer = this.#executions.of(vertex);
          return producer.hasOutput || region.includes(producer);
        });
        blocks?.set(input.producers, finished);
      }
      if (!finished) return false;
    }
    return true;
  }

  /** Subtask `index` of every vertex of the co-location group (co-located vertices have equal parallelism). */
  #coLocatedRegion(group: string, index: number): readonly ExecutionRecord[] {
    const key = `${group}#${index}`;
    let region = this.#coLocated.get(key);
    if (region === undefined) {
      region = this.#graph.jobGraph.vertices
        .filter((vertex) => vertex.coLocationGroup === group)
        .map((vertex) => this.#executions.of(this.#graph.subtasksOf(vertex.id)[index]!));
      this.#coLocated.set(key, region);
    }
    return region;
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
