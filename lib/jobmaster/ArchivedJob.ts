/**
 * What stays of an ended job (Flink's ArchivedExecutionGraph inside an ExecutionGraphInfo): the Dispatcher keeps
 * this, not the JobMaster, for as long as `jobstore.expiration-time` and `jobstore.max-capacity` say. Overviews, the
 * REST API and the dashboard read a running job's JobMaster and an ended job's archive through the same
 * {@link JobView}.
 *
 * Why: a JobMaster holds its slot pool, its statecharts, its mailbox, its scheduling and every closure between them —
 * ~20 KB for a job of one subtask, ~1.4 MB for one of 1,000 (`bench/endedJobMemory.ts`, the main heap after gc per
 * ended job). The archive holds the job's graph and the figures taken as it ended (its subtasks' attempts, times,
 * failures, parallelism decisions): ~5 KB and ~300 KB with the job's result and client.
 *
 * An archive keeps its subtasks' attempts in columns ({@link ArchivedExecutions}) and makes the summaries when asked:
 * an object, a key, two boxed timestamps and two lists per subtask were ~250 bytes of each subtask of the up to
 * `jobstore.max-capacity` jobs kept (280 KB per ended job of 1,000 subtasks, ~40 KB now).
 */
import type { AllocationID, ResourceID } from '../core/ids.js';
import type { JobExceptionHistory } from './ExceptionHistory.js';
import { type ExecutionSummary, NO_ATTEMPTS } from './ExecutionAttempts.js';
import type { JobGraph } from './JobGraph.js';
import type { JobMaster } from './JobMaster.js';
import type { ParallelismDecision } from './adaptivebatch/VertexParallelismDecider.js';

/** A job as overviews read it: its JobMaster while it runs, its {@link ArchivedJob} once it ended. */
export interface JobView {
  readonly jobGraph: JobGraph;
  /** A vertex's parallelism: null while the adaptive scheduler has not decided it (and for no such vertex). */
  parallelismOf(vertexId: string): number | null;
  /** Per subtask: its current (last) attempt, its ended ones and its speculative ones. */
  executions(): readonly ExecutionSummary[];
  /** When the job was created and when it ended: epoch ms, -1 before. */
  times(): { readonly startTime: number; readonly endTime: number };
  parallelismDecisions(): readonly ParallelismDecision[];
  /** The job's failures, newest first. */
  exceptionHistory(): JobExceptionHistory;
  /** How many times the job restarted. */
  readonly restarts: number;
  /** The session ID of the job's status statechart (the inspector's and the dashboard's name for it). */
  readonly statusActorId: string;
}

/** A running job's {@link JobView}: what its JobMaster says now. */
export function liveJobView(master: JobMaster): JobView {
  return {
    jobGraph: master.jobGraph,
    parallelismOf: (vertexId) => master.graph.parallelismOf(vertexId),
    executions: () => master.executions(),
    times: () => master.times(),
    parallelismDecisions: () => master.parallelismDecisions(),
    exceptionHistory: () => master.exceptionHistory(),
    get restarts() {
      return master.statusActor.getSnapshot().context.restarts;
    },
    statusActorId: master.statusActor.sessionId,
  };
}

/** An ended job's {@link JobView}: figures taken once, when it ended. */
export class ArchivedJob implements JobView {
  readonly jobGraph: JobGraph;
  readonly restarts: number;
  readonly statusActorId: string;
  readonly #parallelism: ReadonlyMap<string, number | null>;
  readonly #executions: ArchivedExecutions;
  readonly #times: { readonly startTime: number; readonly endTime: number };
  readonly #decisions: readonly ParallelismDecision[];
  readonly #exceptions: JobExceptionHistory;

  constructor(job: JobView) {
    this.jobGraph = job.jobGraph;
    this.restarts = job.restarts;
    this.statusActorId = job.statusActorId;
    this.#parallelism = new Map(job.jobGraph.vertices.map((v) => [v.id, job.parallelismOf(v.id)]));
    this.#executions = new ArchivedExecutions(job.executions());
    this.#times = Object.freeze({ ...job.times() });
    this.#decisions = Object.freeze([...job.parallelismDecisions()]);
    this.#exceptions = job.exceptionHistory();
  }

  parallelismOf(vertexId: string): number | null {
    return this.#parallelism.get(vertexId) ?? null;
  }

  /** Made anew at each call, from the columns: a caller may keep it or change it. */
  executions(): readonly ExecutionSummary[] {
    return this.#executions.summaries();
  }

  times(): { readonly startTime: number; readonly endTime: number } {
    return this.#times;
  }

  parallelismDecisions(): readonly ParallelismDecision[] {
    return this.#decisions;
  }

  exceptionHistory(): JobExceptionHistory {
    return this.#exceptions;
  }
}

/** Where an attempt ran (or none). */
interface Place {
  readonly resourceId: ResourceID | null;
  readonly allocationId: AllocationID | null;
}

/**
 * Ended subtasks' attempts in columns: per subtask its job vertex, index, attempt number, state and place (the first
 * and the last two as indices into the few distinct ones) and its two times; the rare ended or speculative attempts
 * of a subtask kept as they were. Plain arrays of small integers and of doubles (V8 keeps both unboxed, 8 bytes an
 * element, in the heap): ~56 bytes a subtask where its summary was ~250.
 */
export class ArchivedExecutions {
  readonly size: number;
  readonly #vertexIds: readonly string[];
  readonly #states: readonly string[];
  readonly #places: readonly Place[];
  /** Per subtask: job vertex, state and place indices, then subtask index and attempt number. */
  readonly #columns: number[];
  /** Per subtask: its start and end time (epoch ms, -1 when none). */
  readonly #times: number[];
  /** Subtasks with ended or speculative attempts (few or none): their lists, by position. */
  #attempts: Map<number, Pick<ExecutionSummary, 'priorAttempts' | 'concurrentAttempts'>> | null = null;

  constructor(executions: readonly ExecutionSummary[]) {
    const size = executions.length;
    this.size = size;
    const columns = new Array<number>(size * 5);
    const times = new Array<number>(size * 2);
    // The distinct ones, each with its index (its place in the map): lists of their size made from them at the end.
    const vertices = new Map<string, number>();
    const states = new Map<string, number>();
    const places = new Map<string, { index: number; place: Place }>();
    const indexIn = (map: Map<string, number>, key: string): number => {
      let index = map.get(key);
      if (index === undefined) map.set(key, (index = map.size));
      return index;
    };
    for (let i = 0; i < size; i++) {
      const e = executions[i]!;
      const { resourceId, allocationId } = e;
      const c = i * 5;
      columns[c] = indexIn(vertices, e.vertexId);
      columns[c + 1] = indexIn(states, e.state);
      const placeKey = `${resourceId} ${allocationId}`;
      let place = places.get(placeKey);
      if (place === undefined)
        places.set(placeKey, (place = { index: places.size, place: { resourceId, allocationId } }));
      columns[c + 2] = place.index;
      columns[c + 3] = e.subtaskIndex;
      columns[c + 4] = e.attemptNumber;
      times[i * 2] = e.startTime;
      times[i * 2 + 1] = e.endTime;
      if (e.priorAttempts.length > 0 || e.concurrentAttempts.length > 0)
        (this.#attempts ??= new Map()).set(i, {
          priorAttempts: Object.freeze([...e.priorAttempts]),
          concurrentAttempts: Object.freeze([...e.concurrentAttempts]),
        });
    }
    this.#columns = columns;
    this.#times = times;
    this.#vertexIds = [...vertices.keys()];
    this.#states = [...states.keys()];
    this.#places = Array.from(places.values(), (p) => p.place);
  }

  /** The summaries as the JobMaster made them when the job ended. */
  summaries(): ExecutionSummary[] {
    const columns = this.#columns;
    const times = this.#times;
    const out: ExecutionSummary[] = new Array(this.size);
    for (let i = 0; i < this.size; i++) {
      const c = i * 5;
      const vertexId = this.#vertexIds[columns[c]!]!;
      const subtaskIndex = columns[c + 3]!;
      const { resourceId, allocationId } = this.#places[columns[c + 2]!]!;
      const attempts = this.#attempts?.get(i);
      out[i] = {
        key: `${vertexId}#${subtaskIndex}`,
        vertexId,
        subtaskIndex,
        attemptNumber: columns[c + 4]!,
        state: this.#states[columns[c + 1]!]!,
        resourceId,
        allocationId,
        startTime: times[i * 2]!,
        endTime: times[i * 2 + 1]!,
        priorAttempts: [...(attempts?.priorAttempts ?? NO_ATTEMPTS)],
        concurrentAttempts: [...(attempts?.concurrentAttempts ?? NO_ATTEMPTS)],
      };
    }
    return out;
  }
}
