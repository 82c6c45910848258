/**
 * The job graph unfolded into subtasks: one ExecutionVertex per (vertex, subtask index), with the
 * producer / consumer relations of its edges. Pure topology: what each subtask consumes and who
 * consumes it. The attempts that run a subtask are records (`Execution`) the JobMaster keeps.
 *
 * Edges connect subtasks the way Flink's EdgeManagerBuildUtil does:
 * - all-to-all: every downstream subtask consumes every upstream subtask;
 * - pointwise, p_up >= p_down: downstream i consumes the contiguous block
 *   [i * p_up / p_down, (i + 1) * p_up / p_down) of upstream subtasks;
 * - pointwise, p_up < p_down: upstream j feeds the contiguous block of downstream subtasks
 *   [ceil(j * p_down / p_up), ceil((j + 1) * p_down / p_up)).
 * JobGraph only admits pointwise edges whose parallelisms divide, so the blocks are equal (the adaptive
 * scheduler decides a parallelism that keeps it so).
 *
 * A vertex that leaves its parallelism to the adaptive scheduler is not initialized (Flink's
 * ExecutionJobVertex.isInitialized): it has no subtasks, and its producers no consumers through its
 * edges, until `initialize` gives it its decided parallelism — once, for the job's life.
 */
import { IllegalArgumentError } from '../core/errors.js';
import { ExecutionAttemptID } from '../core/ids.js';
import type { JobEdge, JobGraph, JobVertex } from './JobGraph.js';

/** One subtask of a job vertex; its string form (`key`) is `<vertexId>#<subtaskIndex>`, e.g. `tokenize#3`. */
export interface ExecutionVertexID {
  readonly vertexId: string;
  readonly subtaskIndex: number;
}

export const ExecutionVertexID = {
  of(vertexId: string, subtaskIndex: number): ExecutionVertexID {
    return Object.freeze({ vertexId, subtaskIndex });
  },
  /** `tokenize#3`: a Map key and a readable name. Vertex ids cannot contain `#`, so it parses back. */
  key(id: ExecutionVertexID): string {
    // A subtask of a graph is its own ID and has its key made already.
    return id instanceof Subtask ? id.key : `${id.vertexId}#${id.subtaskIndex}`;
  },
  /** Whether two IDs name the same subtask (a subtask of a graph, or a plain ID of the same fields). */
  equals(a: ExecutionVertexID, b: ExecutionVertexID): boolean {
    return a === b || (a.subtaskIndex === b.subtaskIndex && a.vertexId === b.vertexId);
  },
  /** Its fields alone, a plain object (a subtask of a graph is its own ID, with more fields). */
  fieldsOf(id: ExecutionVertexID): ExecutionVertexID {
    return { vertexId: id.vertexId, subtaskIndex: id.subtaskIndex };
  },
  parse(key: string): ExecutionVertexID {
    const at = key.lastIndexOf('#');
    const index = Number(key.slice(at + 1));
    if (at <= 0 || !Number.isSafeInteger(index) || index < 0 || key.slice(at + 1) === '') {
      throw new IllegalArgumentError(
        'invalid-value',
        `an ExecutionVertexID reads <vertexId>#<subtaskIndex>, got ${JSON.stringify(key)}`,
        { argument: 'key', value: key },
      );
    }
    return ExecutionVertexID.of(key.slice(0, at), index);
  },
};

export interface ExecutionVertex {
  readonly id: ExecutionVertexID;
  /** `ExecutionVertexID.key(id)`. */
  readonly key: string;
  readonly jobVertex: JobVertex;
  /** Its vertex's parallelism: the graph's, or the one the adaptive scheduler decided. */
  readonly parallelism: number;
}

/**
 * A subtask of a graph, its own ExecutionVertexID (`id` is itself, on the prototype: JSON and deep equality see the
 * fields alone): no ID object beside each subtask, 100,000 in a large job.
 */
class Subtask implements ExecutionVertex, ExecutionVertexID {
  readonly vertexId: string;
  readonly subtaskIndex: number;
  readonly key: string;
  readonly jobVertex: JobVertex;
  readonly parallelism: number;

  constructor(jobVertex: JobVertex, subtaskIndex: number, parallelism: number) {
    this.vertexId = jobVertex.id;
    this.subtaskIndex = subtaskIndex;
    this.key = `${jobVertex.id}#${subtaskIndex}`;
    this.jobVertex = jobVertex;
    this.parallelism = parallelism;
    Object.freeze(this);
  }

  get id(): ExecutionVertexID {
    return this;
  }
}

/** Subpartitions [start, end) a consumer subtask reads of each producer (Flink's IndexRange, end exclusive here). */
export type SubpartitionRange = readonly [start: number, end: number];

/** The producers one subtask consumes through one input edge (Flink's ConsumedPartitionGroup). */
export interface ExecutionInput {
  readonly edge: JobEdge;
  /** Upstream subtasks in subtask order. Consumers that read the same producers share this array. */
  readonly producers: readonly ExecutionVertex[];
  /**
   * Which subpartitions of each producer it reads (Flink's ExecutionVertexInputInfo): a hash edge's contiguous range;
   * [0, 1) — the one output a producer writes — for the others.
   */
  readonly subpartitions: SubpartitionRange;
}

/** Subpartitions split evenly by count: subtask i of `parallelism` reads [floor(i·S/p), floor((i+1)·S/p)). */
export function evenSubpartitionRanges(subpartitions: number, parallelism: number): SubpartitionRange[] {
  return Array.from({ length: parallelism }, (_, i) => [
    Math.floor((i * subpartitions) / parallelism),
    Math.floor(((i + 1) * subpartitions) / parallelism),
  ]);
}

/** What a producer of a pointwise or all-to-all edge writes: one output every consumer reads whole. */
const WHOLE: SubpartitionRange = Object.freeze([0, 1] as const);

export interface ExecutionGraphOptions {
  /**
   * The most subtasks the adaptive scheduler may give a vertex that left its parallelism unset: the subpartitions a
   * hash edge's producers write for it (Flink: the consumer's max parallelism). Needed when a hash edge has such a
   * consumer.
   */
  readonly maxParallelismOf?: (vertexId: string) => number;
}

/** Upstream subtask range [start, end) consumed by downstream subtask `down` of a pointwise edge. */
export function pointwiseProducerRange(upstream: number, downstream: number, down: number): [number, number] {
  if (upstream >= downstream)
    return [Math.floor((down * upstream) / downstream), Math.floor(((down + 1) * upstream) / downstream)];
  // Flink: upstream j feeds [ceil(j * down / up), ceil((j + 1) * down / up)); invert that.
  const up = Math.floor((down * upstream) / downstream);
  return [up, up + 1];
}

/** What a subtask without inputs or consumers has of them: one shared empty list, not one each. */
const NONE: readonly never[] = Object.freeze([]);

export class ExecutionGraph {
  readonly jobGraph: JobGraph;
  /** Subtasks in all (each found through its job vertex's list: no Map entry per subtask, 100,000 in a large job). */
  #size = 0;
  readonly #byJobVertex = new Map<string, readonly ExecutionVertex[]>();
  /** Only subtasks that have inputs, or consumers, are in these (the others have NONE). */
  readonly #inputs = new Map<string, readonly ExecutionInput[]>();
  readonly #consumers = new Map<string, ExecutionVertex[]>();
  /** Job vertices not initialized yet (their parallelism left to the adaptive scheduler), in topological order. */
  readonly #uninitialized: string[] = [];
  /** By producer vertex: the subpartitions its hash edge's producers write (fixed for the job's life). */
  readonly #subpartitions = new Map<string, number>();

  constructor(jobGraph: JobGraph, options: ExecutionGraphOptions = {}) {
    this.jobGraph = jobGraph;
    for (const edge of jobGraph.edges) {
      if (edge.pattern !== 'hash') continue;
      const consumer = jobGraph.vertex(edge.to);
      let subpartitions = consumer.parallelism;
      if (subpartitions === null) {
        if (options.maxParallelismOf === undefined)
          throw new IllegalArgumentError(
            'invalid-value',
            `the hash edge ${edge.from} -> ${edge.to} has a consumer left to the adaptive scheduler, and no ` +
              `maxParallelismOf was given to tell how many subpartitions its producers write`,
            { argument: 'options.maxParallelismOf', value: undefined },
          );
        subpartitions = options.maxParallelismOf(edge.to);
      }
      this.#subpartitions.set(edge.from, subpartitions);
    }
    // Topological order of job vertices makes every producer known before its consumers.
    for (const jobVertex of jobGraph.vertices) {
      if (jobVertex.parallelism === null) this.#uninitialized.push(jobVertex.id);
      else this.#initialize(jobVertex, jobVertex.parallelism);
    }
  }

  /** The vertex's parallelism: set, or decided by the adaptive scheduler; null while it is not decided. */
  parallelismOf(vertexId: string): number | null {
    const jobVertex = this.jobGraph.vertex(vertexId);
    return jobVertex.parallelism ?? this.#byJobVertex.get(jobVertex.id)?.length ?? null;
  }

  /**
   * How many subpartitions each subtask of a hash edge's producer writes: its consumer's parallelism, or — the consumer
   * left to the adaptive scheduler — the most it may be given. Null for a vertex that feeds no hash edge.
   */
  subpartitionsOf(vertexId: string): number | null {
    return this.#subpartitions.get(this.jobGraph.vertex(vertexId).id) ?? null;
  }

  /** Whether the vertex has its subtasks (its parallelism was set, or has been decided). */
  isInitialized(vertexId: string): boolean {
    return this.#byJobVertex.has(this.jobGraph.vertex(vertexId).id);
  }

  /** The job vertices still waiting for their parallelism, in topological order. */
  uninitialized(): readonly string[] {
    return this.#uninitialized;
  }

  /**
   * Gives a vertex left to the adaptive scheduler its parallelism: its subtasks, wired to its producers' (which must
   * all be initialized), each reading of its hash edges' producers the subpartitions `subpartitionRanges` gives by
   * subtask index (default: split evenly by count). Returns its new subtasks. Throws IllegalArgumentError, changing
   * nothing, for a vertex initialized already, one whose producers are not, a parallelism that is no integer from 1
   * to 32768 or breaks a pointwise edge's divisibility, or ranges that do not cover the subpartitions in order.
   */
  initialize(
    vertexId: string,
    parallelism: number,
    subpartitionRanges?: readonly SubpartitionRange[],
  ): readonly ExecutionVertex[] {
    const jobVertex = this.jobGraph.vertex(vertexId);
    const refuse = (why: string): never => {
      throw new IllegalArgumentError('invalid-value', `cannot initialize vertex '${vertexId}': ${why}`, {
        argument: 'vertexId',
        value: vertexId,
      });
    };
    if (this.isInitialized(vertexId)) refuse(`it has its parallelism (${this.parallelismOf(vertexId)}) already`);
    if (!Number.isSafeInteger(parallelism) || parallelism < 1 || parallelism > 32_768)
      refuse(`parallelism must be an integer from 1 to 32768, got ${parallelism}`);
    for (const edge of this.jobGraph.inputsOf(vertexId)) {
      const up = this.parallelismOf(edge.from);
      if (up === null) refuse(`its producer '${edge.from}' is not initialized`);
      else if (edge.pattern === 'pointwise' && Math.max(up, parallelism) % Math.min(up, parallelism) !== 0)
        refuse(`parallelism ${parallelism} does not divide, nor is divided by, ${edge.from}'s ${up} (pointwise)`);
    }
    const hashFrom = this.jobGraph.inputsOf(vertexId).find((edge) => edge.pattern === 'hash')?.from;
    const subpartitions = hashFrom === undefined ? null : this.#subpartitions.get(hashFrom)!;
    if (subpartitions !== null && parallelism > subpartitions)
      refuse(`parallelism ${parallelism} is above the ${subpartitions} subpartitions its hash edges' producers write`);
    if (subpartitionRanges !== undefined) {
      if (subpartitions === null) refuse('it reads no hash edge, so it takes no subpartition ranges');
      else if (!coversInOrder(subpartitionRanges, subpartitions, parallelism))
        refuse(
          `its subpartition ranges must be ${parallelism} non-empty contiguous ranges covering [0, ${subpartitions}) ` +
            `in order, got ${JSON.stringify(subpartitionRanges)}`,
        );
    }
    const subtasks = this.#initialize(jobVertex, parallelism, subpartitionRanges);
    this.#uninitialized.splice(this.#uninitialized.indexOf(jobVertex.id), 1);
    return subtasks;
  }

  #initialize(
    jobVertex: JobVertex,
    parallelism: number,
    subpartitionRanges?: readonly SubpartitionRange[],
  ): readonly ExecutionVertex[] {
    const consumers = Object.freeze(
      Array.from(
        { length: parallelism },
        (_, subtaskIndex): ExecutionVertex => new Subtask(jobVertex, subtaskIndex, parallelism),
      ),
    );
    this.#byJobVertex.set(jobVertex.id, consumers);
    this.#size += parallelism;
    const edges = this.jobGraph.inputsOf(jobVertex.id);
    if (edges.length === 0) return consumers;
    const inputs = consumers.map(() => [] as ExecutionInput[]);
    let ranges: readonly SubpartitionRange[] | undefined;
    for (const edge of edges) {
      const producers = this.#byJobVertex.get(edge.from)!;
      if (edge.pattern === 'hash')
        ranges ??= (subpartitionRanges ?? evenSubpartitionRanges(this.#subpartitions.get(edge.from)!, parallelism)).map(
          (range) => Object.freeze([range[0], range[1]] as const),
        );
      // One shared array per distinct producer block (all-to-all: one for the whole edge).
      const blocks = new Map<number, readonly ExecutionVertex[]>();
      consumers.forEach((consumer, i) => {
        const [start, end] =
          edge.pattern !== 'pointwise'
            ? [0, producers.length]
            : pointwiseProducerRange(producers.length, consumers.length, i);
        let block = blocks.get(start);
        if (block === undefined) blocks.set(start, (block = Object.freeze(producers.slice(start, end))));
        const subpartitions = edge.pattern === 'hash' ? ranges![i]! : WHOLE;
        inputs[i]!.push(Object.freeze({ edge, producers: block, subpartitions }));
        for (const producer of block) {
          const list = this.#consumers.get(producer.key);
          if (list === undefined) this.#consumers.set(producer.key, [consumer]);
          else list.push(consumer);
        }
      });
    }
    consumers.forEach((consumer, i) => this.#inputs.set(consumer.key, Object.freeze(inputs[i]!)));
    return consumers;
  }

  /** The subtasks of the job vertices initialized that `keep` keeps, job vertices in topological order. */
  #subtasksOf(keep: (vertex: JobVertex) => boolean): readonly ExecutionVertex[] {
    const vertices = this.jobGraph.vertices.filter((v) => this.#byJobVertex.has(v.id) && keep(v));
    return Object.freeze(vertices.flatMap((v) => this.#byJobVertex.get(v.id)!));
  }

  /** Number of subtasks. */
  get size(): number {
    return this.#size;
  }

  /** The subtask with this id or key; throws IllegalArgumentError if the graph has none. */
  vertex(id: ExecutionVertexID | string): ExecutionVertex {
    const vertex = this.#find(id);
    if (vertex === undefined) {
      const key = typeof id === 'string' ? id : ExecutionVertexID.key(id);
      throw new IllegalArgumentError(
        'invalid-value',
        `no subtask ${key} in job '${this.jobGraph.name}' ` +
          `(vertices: ${this.jobGraph.vertices.map((v) => `${v.id} x${this.parallelismOf(v.id) ?? '?'}`).join(', ')})`,
        {
          argument: 'executionVertexId',
          value: key,
        },
      );
    }
    return vertex;
  }

  /** The subtasks of one job vertex, by subtask index; none while it is not initialized. */
  subtasksOf(vertexId: string): readonly ExecutionVertex[] {
    return this.#byJobVertex.get(this.jobGraph.vertex(vertexId).id) ?? NONE;
  }

  /** What `ev` consumes, one entry per input edge (declaration order). */
  inputsOf(ev: ExecutionVertex | ExecutionVertexID | string): readonly ExecutionInput[] {
    return this.#inputs.get(this.#resolve(ev).key) ?? NONE;
  }

  /** Every upstream subtask `ev` consumes: input edges in declaration order, subtasks ascending. */
  producersOf(ev: ExecutionVertex | ExecutionVertexID | string): readonly ExecutionVertex[] {
    const inputs = this.inputsOf(ev);
    // One input edge (or none): its producers as they are, no copy.
    if (inputs.length <= 1) return inputs[0]?.producers ?? NONE;
    return inputs.flatMap((input) => input.producers);
  }

  /**
   * Every downstream subtask that consumes `ev`: output edges in declaration order (an edge to a vertex initialized
   * later: its subtasks come after the others'), subtasks ascending.
   */
  consumersOf(ev: ExecutionVertex | ExecutionVertexID | string): readonly ExecutionVertex[] {
    return this.#consumers.get(this.#resolve(ev).key) ?? NONE;
  }

  /**
   * Every subtask: job vertices in topological order, each one's subtasks by index. A new list each call (asked for
   * once, by the ExecutionAttempts), not one kept for the job's life beside the job vertices' own.
   */
  verticesInTopologicalOrder(): readonly ExecutionVertex[] {
    return this.#subtasksOf(() => true);
  }

  /** The subtasks of the vertices without outputs: their outputs are the job's result. A new list each call, too. */
  sinks(): readonly ExecutionVertex[] {
    return this.#subtasksOf((v) => this.jobGraph.outputsOf(v.id).length === 0);
  }

  /** The subtask with this id or key (a look-up by its key's exact text, as a Map by key did), or undefined. */
  #find(id: ExecutionVertexID | string): ExecutionVertex | undefined {
    if (typeof id === 'string') return this.#byKey(id);
    const { vertexId, subtaskIndex } = id;
    if (typeof vertexId === 'string' && typeof subtaskIndex === 'number')
      return this.#byJobVertex.get(vertexId)?.[subtaskIndex];
    return this.#byKey(ExecutionVertexID.key(id));
  }

  /** The subtask whose key is exactly `key` (`<vertexId>#<subtaskIndex>`, the index as String(index) writes it). */
  #byKey(key: string): ExecutionVertex | undefined {
    const at = key.lastIndexOf('#');
    if (at < 0) return undefined;
    const index = Number(key.slice(at + 1));
    if (String(index) !== key.slice(at + 1)) return undefined;
    return this.#byJobVertex.get(key.slice(0, at))?.[index];
  }

  #resolve(ev: ExecutionVertex | ExecutionVertexID | string): ExecutionVertex {
    return typeof ev === 'object' && 'key' in ev ? this.vertex(ev.key) : this.vertex(ev);
  }
}

/** The life of one attempt of a subtask (Flink's ExecutionState, the states slotwise uses). */
export type ExecutionState =
  | 'created'
  | 'scheduled'
  | 'deploying'
  | 'initializing'
  | 'running'
  | 'finished'
  | 'failed'
  | 'canceled';

export const TERMINAL_EXECUTION_STATES: ReadonlySet<ExecutionState> = new Set(['finished', 'failed', 'canceled']);

/** One attempt of one subtask, as plain data; the JobMaster replaces it as the attempt moves on. */
export interface Execution {
  readonly vertexId: ExecutionVertexID;
  readonly attemptNumber: number;
  readonly attemptId: ExecutionAttemptID;
  readonly state: ExecutionState;
}

/** A new attempt (state `created`) with a labelled ExecutionAttemptID (`…_tokenize_3_1`). */
export function createExecution(vertexId: ExecutionVertexID, attemptNumber: number): Execution {
  const attemptId = ExecutionAttemptID.generate({
    vertex: vertexId.vertexId,
    subtask: vertexId.subtaskIndex,
    attempt: attemptNumber,
  });
  return Object.freeze({ vertexId, attemptNumber, attemptId, state: 'created' });
}

/** Whether `ranges` are `count` non-empty ranges, each starting where the one before ended, 0 to `subpartitions`. */
function coversInOrder(ranges: readonly SubpartitionRange[], subpartitions: number, count: number): boolean {
  if (ranges.length !== count) return false;
  let next = 0;
  for (const range of ranges) {
    if (!Array.isArray(range) || range[0] !== next || !Number.isSafeInteger(range[1]) || range[1] <= next) return false;
    next = range[1];
  }
  return next === subpartitions;
}
