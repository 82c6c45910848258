/**
 * The job a user writes (Flink's JobGraph of JobVertices; docs/jobs.md): vertices naming a task
 * module, a parallelism, resources, a slot sharing group and an optional co-location group; edges
 * `pointwise` or `all-to-all`; a restart strategy. `JobGraph.create` validates everything that can
 * be checked without touching the disk, synchronously, and refuses with a JobGraphError naming what
 * is wrong and what is allowed; `validateTaskModules` then has each task module loaded and checked
 * off the main thread (TaskModuleChecker).
 */
import { describeValue } from '../core/errors.js';
import { DEFAULTS, type ResolvedOptions } from '../core/options.js';
import { type SchedulerType, schedulerTypeOf } from '../core/optionSpecs.js';
import type { ResourceProfile, ResourceSpec } from '../core/ResourceProfile.js';
import {
  checkCoLocation,
  checkFields,
  GRAPH_FIELDS,
  isRecord,
  refuse,
  resolveEdge,
  resolveProfile,
  resolveVertex,
} from './jobGraphRules.js';
import { resolveRestartStrategy } from './restartStrategyRules.js';
import { DefaultTaskModuleChecker, type TaskModuleChecker } from './TaskModuleChecker.js';
import { findCycle, topologicalOrder } from './topology.js';
import type { RestartBackoffTimeStrategy } from '../../machines/jobStatus.machine.js';

/**
 * How a producer's subtasks feed a consumer's (Flink's DistributionPattern and its partitioners):
 * `pointwise` — each consumer subtask reads the whole output of its block of producers;
 * `all-to-all` — each reads the whole output of every producer (a broadcast);
 * `hash` — each producer returns its output split in `context.subpartitions` parts (an array that long: the
 * consumer's parallelism, or, when the adaptive scheduler decides the consumer's, the most it may decide), and each
 * consumer subtask reads a contiguous range of parts of every producer — part i alone when the consumer's parallelism
 * is set — listed producer by producer (a keyed shuffle; Flink's subpartitions and their consumed ranges).
 */
export type DistributionPattern = 'pointwise' | 'all-to-all' | 'hash';

export interface JobVertexSpec {
  /** Letters, digits, `_ . : -`, starting with a letter or digit (it labels ExecutionAttemptIDs). */
  id: string;
  /** An absolute path or a `file:` URL, e.g. `new URL('./tasks/tokenize.ts', import.meta.url)`. */
  taskModule: string | URL;
  /**
   * Subtasks, an integer from 1 to 32768. Under the adaptive scheduler it may be left unset: it is then decided
   * when the vertex's producers have finished, from the bytes they produced (a source: the default source
   * parallelism), within `minParallelism` and `maxParallelism` (default: the
   * `execution.batch.adaptive.auto-parallelism.*` options').
   */
  parallelism?: number;
  /** Adaptive scheduler only, with `parallelism` unset: the least parallelism it may decide (1 to 32768). */
  minParallelism?: number;
  /** Adaptive scheduler only, with `parallelism` unset: the most parallelism it may decide (1 to 32768). */
  maxParallelism?: number;
  /** Per subtask; default UNKNOWN (any slot will do). */
  resources?: ResourceSpec | ResourceProfile | 'UNKNOWN';
  /** Default `'default'`. */
  slotSharingGroup?: string;
  /** Subtask i of every vertex in the group runs in the same slot as subtask i of the others. */
  coLocationGroup?: string;
  /** Handed to every subtask as `context.config`; must survive a structured clone. */
  config?: unknown;
}

export interface JobEdgeSpec {
  from: string;
  to: string;
  pattern: DistributionPattern;
}

/**
 * A job's restart strategy (Flink's): each field stands for the `restart-strategy.<type>.*` option of
 * the same name and follows its rule; one left out is that option's value. Durations take ms or a
 * string with a unit ('10 s').
 */
export type RestartStrategySpec =
  | { type: 'fixed-delay'; attempts?: number; delay?: number | string }
  | {
      type: 'exponential-delay';
      initialBackoff?: number | string;
      maxBackoff?: number | string;
      backoffMultiplier?: number;
      resetBackoffThreshold?: number | string;
      jitterFactor?: number;
      attemptsBeforeResetBackoff?: number;
    }
  | {
      type: 'failure-rate';
      maxFailuresPerInterval?: number;
      failureRateInterval?: number | string;
      delay?: number | string;
    }
  | { type: 'none' };
/** The resolved strategy: what the job's status machine decides restarts with. */
export type RestartStrategy = RestartBackoffTimeStrategy;

export interface JobGraphSpec {
  name: string;
  vertices: JobVertexSpec[];
  edges?: JobEdgeSpec[];
  /** Default: the `restart-strategy.*` options' (fixed-delay, 3 attempts, 10 s after each failure). */
  restartStrategy?: RestartStrategySpec;
  /** The profile of one slot of each named slot sharing group; unset: the sum of what shares it. */
  slotSharingGroups?: Record<string, ResourceSpec | ResourceProfile | 'UNKNOWN'>;
  /**
   * This job's scheduler (default: the option jobmanager.scheduler, 'default'): 'adaptive' (Flink's
   * 'AdaptiveBatch' and 'adaptive-batch' too) lets vertices leave their parallelism unset (docs/jobs.md).
   */
  scheduler?: 'default' | 'adaptive' | 'AdaptiveBatch' | 'adaptive-batch';
}

export interface JobVertex {
  readonly id: string;
  /** Absolute path of the task module. */
  readonly taskModule: string;
  /** Null: decided at run time by the adaptive scheduler (ExecutionGraph.parallelismOf has it then). */
  readonly parallelism: number | null;
  /** The bounds of a parallelism left to the adaptive scheduler; null: the option's. */
  readonly minParallelism: number | null;
  readonly maxParallelism: number | null;
  readonly resourceProfile: ResourceProfile;
  readonly slotSharingGroup: string;
  readonly coLocationGroup: string | null;
  readonly config: unknown;
}

export interface JobEdge {
  readonly from: string;
  readonly to: string;
  readonly pattern: DistributionPattern;
}

/**
 * The options to check a graph with before it reaches a cluster whose options are not known here (the CLI, the REST
 * API): any scheduler's graph passes — a parallelism left unset too; the submit checks it against the cluster's.
 */
export const PRECHECK_OPTIONS: ResolvedOptions = Object.freeze({ ...DEFAULTS, 'jobmanager.scheduler': 'adaptive' });

/** A validated, immutable job graph; vertices in topological order (ties in declaration order). */
export class JobGraph {
  readonly name: string;
  readonly vertices: readonly JobVertex[];
  /** In declaration order. */
  readonly edges: readonly JobEdge[];
  readonly restartStrategy: RestartStrategy;
  /** The configured profile of each slot sharing group that has one (UNKNOWN entries are left out). */
  readonly slotSharingGroups: ReadonlyMap<string, ResourceProfile>;
  /** Its scheduler: `adaptive` decides the parallelism of the vertices that leave it unset. */
  readonly scheduler: SchedulerType;
  readonly #byId: ReadonlyMap<string, JobVertex>;
  readonly #inputs = new Map<string, JobEdge[]>();
  readonly #outputs = new Map<string, JobEdge[]>();

  private constructor(
    name: string,
    vertices: JobVertex[],
    edges: JobEdge[],
    restartStrategy: RestartStrategy,
    groups: Map<string, ResourceProfile>,
    scheduler: SchedulerType,
  ) {
    this.name = name;
    this.scheduler = scheduler;
    this.vertices = Object.freeze(vertices);
    this.edges = Object.freeze(edges);
    this.restartStrategy = restartStrategy;
    this.slotSharingGroups = groups;
    this.#byId = new Map(vertices.map((v) => [v.id, v]));
    for (const v of vertices) [this.#inputs, this.#outputs].forEach((m) => m.set(v.id, []));
    for (const e of edges) {
      this.#inputs.get(e.to)!.push(e);
      this.#outputs.get(e.from)!.push(e);
    }
    for (const list of [...this.#inputs.values(), ...this.#outputs.values()]) Object.freeze(list);
  }

  /**
   * Validates `spec` and builds the graph; throws JobGraphError (see its reasons) on the first rule
   * broken. `options` supply the default restart strategy (`restart-strategy.*`).
   */
  static create(spec: JobGraphSpec, options: ResolvedOptions = DEFAULTS): JobGraph {
    if (!isRecord(spec))
      return refuse(
        'no-vertices',
        `a job graph must be an object { name, vertices, edges?, ` +
          `restartStrategy?, slotSharingGroups? }, got ${describeValue(spec)}`,
      );
    checkFields('the job graph', spec, GRAPH_FIELDS);
    if (typeof spec.name !== 'string' || spec.name.trim() === '')
      refuse('invalid-name', `the job name must be a non-empty string, got ${describeValue(spec.name)}`);
    if (!Array.isArray(spec.vertices) || spec.vertices.length === 0) {
      refuse('no-vertices', `a job needs at least one vertex in 'vertices', got ${describeValue(spec.vertices)}`);
    }
    const scheduler = spec.scheduler === undefined ? options['jobmanager.scheduler'] : schedulerTypeOf(spec.scheduler);
    if (scheduler === null)
      refuse(
        'invalid-scheduler',
        `scheduler must be 'default' or 'adaptive' (Flink's 'AdaptiveBatch' and 'adaptive-batch' too), ` +
          `got ${describeValue(spec.scheduler)}`,
      );
    const byId = new Map<string, JobVertex>();
    spec.vertices.forEach((vertexSpec, index) => {
      const vertex = resolveVertex(vertexSpec, index, scheduler === 'adaptive');
      if (byId.has(vertex.id))
        refuse(
          'duplicate-vertex',
          `vertex id '${vertex.id}' is declared twice (vertices[${index}]); vertex ids must be unique`,
          { vertex: vertex.id },
        );
      byId.set(vertex.id, vertex);
    });
    const declared = [...byId.values()];

    if (spec.edges !== undefined && !Array.isArray(spec.edges))
      refuse('invalid-edge', `edges must be an array of { from, to, pattern }, got ${describeValue(spec.edges)}`);
    const edges = (spec.edges ?? []).map((edgeSpec, index) => resolveEdge(edgeSpec, index, byId));
    const seen = new Set<string>();
    for (const e of edges) {
      const key = `${e.from}\u0000${e.to}`;
      if (seen.has(key))
        refuse(
          'invalid-edge',
          `the edge ${e.from} -> ${e.to} is declared twice; a vertex consumes another's output through one edge`,
          { from: e.from, to: e.to },
        );
      seen.add(key);
    }

    const order = topologicalOrder(
      declared.map((v) => v.id),
      edges,
    );
    if (order.length < declared.length) {
      const cycle = findCycle(
        declared.map((v) => v.id).filter((id) => !order.includes(id)),
        edges,
      );
      refuse('cycle', `the edges form a cycle: ${cycle.join(' -> ')}; a job graph must be acyclic`, {
        vertices: cycle,
      });
    }

    for (const e of edges) {
      const [up, down] = [byId.get(e.from)!.parallelism, byId.get(e.to)!.parallelism];
      // An adaptive end is decided to keep the divisibility (AdaptiveParallelism).
      if (up === null || down === null) continue;
      if (e.pattern === 'pointwise' && Math.max(up, down) % Math.min(up, down) !== 0) {
        refuse(
          'incompatible-parallelism',
          `the pointwise edge ${e.from} (parallelism ${up}) -> ${e.to} (parallelism ${down}) ` +
            `needs one parallelism to divide the other; change one, or use 'all-to-all'`,
          { from: e.from, to: e.to, parallelisms: [up, down] },
        );
      }
    }
    // A producer with a hash edge returns its output split for that edge's consumer: it can feed no other edge.
    for (const e of edges) {
      if (e.pattern !== 'hash') continue;
      const others = edges.filter((o) => o.from === e.from && o !== e);
      if (others.length > 0)
        refuse(
          'invalid-edge',
          `${e.from} feeds ${e.to} through a hash edge and also ${others.map((o) => o.to).join(', ')}: ` +
            `a producer of a hash edge returns one part per consumer subtask of that edge, so it can have no other ` +
            `output edge; give the other consumers a vertex of their own`,
          { from: e.from, to: e.to },
        );
    }
    checkCoLocation(declared);

    const groups = new Map<string, ResourceProfile>();
    if (spec.slotSharingGroups !== undefined) {
      if (!isRecord(spec.slotSharingGroups))
        refuse(
          'invalid-resources',
          `slotSharingGroups must be an object of group name -> resources, ` +
            `got ${describeValue(spec.slotSharingGroups)}`,
        );
      const used = new Set(declared.map((v) => v.slotSharingGroup));
      for (const [group, resources] of Object.entries(spec.slotSharingGroups)) {
        if (!used.has(group))
          refuse(
            'invalid-resources',
            `slotSharingGroups names '${group}', which no vertex is in; groups in use: ${[...used].join(', ')}`,
            { group },
          );
        const profile = resolveProfile(`slot sharing group '${group}'`, resources);
        if (!profile.isUnknown()) groups.set(group, profile);
      }
    }
    const restartStrategy = resolveRestartStrategy(spec.restartStrategy, options);
    return new JobGraph(
      spec.name,
      order.map((id) => byId.get(id)!),
      edges,
      restartStrategy,
      groups,
      scheduler,
    );
  }

  /** The vertex with this id; throws JobGraphError('unknown-vertex') if there is none. */
  vertex(id: string): JobVertex {
    return (
      this.#byId.get(id) ??
      refuse(
        'unknown-vertex',
        `no vertex '${id}' in job '${this.name}'; vertices are ${[...this.#byId.keys()].join(', ')}`,
        { vertex: id },
      )
    );
  }

  /** The edges into `vertexId`, in declaration order. */
  inputsOf(vertexId: string): readonly JobEdge[] {
    return this.#inputs.get(this.vertex(vertexId).id)!;
  }

  /** The edges out of `vertexId`, in declaration order. */
  outputsOf(vertexId: string): readonly JobEdge[] {
    return this.#outputs.get(this.vertex(vertexId).id)!;
  }

  /**
   * Checks every task module: that it loads, within the checker's timeout, and default-exports a
   * function. The modules are loaded by `checker` off this thread (see TaskModuleChecker), never
   * here; without one, a checker of default options is started for this call and closed after.
   * Rejects with JobGraphError('invalid-task-module') naming the vertex and the module, with
   * `details.problem` saying what happened: `not-found`, `timed-out`, `exited`, `threw`,
   * `no-default-export` or `checker-failed`.
   */
  async validateTaskModules(checker?: TaskModuleChecker): Promise<void> {
    const own = checker ?? new DefaultTaskModuleChecker();
    try {
      const verdicts = await own.check(this.vertices.map((v) => v.taskModule));
      this.vertices.forEach((vertex, i) => {
        const verdict = verdicts[i]!;
        if (verdict.status !== 'invalid') return;
        refuse('invalid-task-module', `vertex '${vertex.id}': task module ${vertex.taskModule} ${verdict.message}`, {
          vertex: vertex.id,
          taskModule: vertex.taskModule,
          problem: verdict.problem,
        });
      });
    } finally {
      if (checker === undefined) await own.close();
    }
  }
}
