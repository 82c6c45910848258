/**
 * The current attempt of every subtask of a job (Flink's ExecutionVertex with its current
 * Execution): its state, slot and output, found by subtask or by ExecutionAttemptID, and the
 * failover step that gives failed subtasks their next attempt.
 *
 * An attempt is `created` until the job's SchedulingStrategy schedules it (its slot asked for:
 * `scheduled`), as Flink's Execution is CREATED until its region is scheduled.
 *
 * Each subtask is its own failover region (Flink restarts a pipelined region; here every edge is
 * blocking — a consumer reads its producers' finished outputs — so producers whose outputs are kept
 * need not run again and consumers still wait for their inputs): a restart resets exactly the
 * failed and canceled subtasks. The JobMaster decides nothing here — the job's status machine
 * decides whether and when to restart — and applies what this returns (slots released and asked
 * for again).
 */
import type { AllocationID, ExecutionAttemptID, ResourceID } from '../core/ids.js';
import type { ExecutionState, ResultPartitionWire, SerializedError } from '../rpc/protocol.js';
import type { FinishedSubtask } from './JobMasterOptions.js';
import type { JobEvent, TaskWait } from './JobResult.js';
import { createExecution, type ExecutionGraph, type ExecutionVertex } from './ExecutionGraph.js';
import type { LogicalSlot } from './slotsharing/SharedSlot.js';

/** Terminal states, of an attempt as of a job. */
export const TERMINAL_STATES: ReadonlySet<string> = new Set(['finished', 'failed', 'canceled']);

/** One subtask and its current attempt. */
export interface ExecutionRecord {
  readonly vertex: ExecutionVertex;
  attemptNumber: number;
  executionAttemptId: ExecutionAttemptID;
  /**
   * `created`: waiting to be scheduled (for its inputs, under region scheduling), no slot asked for; `scheduled`: its
   * slot asked for or held, not deployed yet; then what its TaskExecutor reports.
   */
  state: ExecutionState | 'created' | 'scheduled';
  slot: LogicalSlot | null;
  /** The slot asked for that has not come (nor failed) yet; null when none is out. */
  slotRequest: Promise<LogicalSlot> | null;
  /** Its finished attempt's output, when it came to the JobMaster (a sink's, or where no partitions are kept). */
  output: unknown;
  /** Where its finished attempt's output stays instead (its TaskExecutor's result partition). */
  partition: ResultPartitionWire | null;
  hasOutput: boolean;
}

/** The JobEvent telling the attempt's state now, where it runs (if it has a slot) and its error. */
export function taskEventOf(
  record: ExecutionRecord,
  error: SerializedError | null,
  timestamp: number,
  waitingFor?: TaskWait,
): Extract<JobEvent, { readonly type: 'task' }> {
  const { vertex, attemptNumber, executionAttemptId, state, slot } = record;
  const { vertexId, subtaskIndex } = vertex.id;
  const event = {
    type: 'task',
    vertexId,
    subtaskIndex,
    attemptNumber,
    executionAttemptId,
    state,
    resourceId: slot?.resourceId ?? null,
    allocationId: slot?.allocationId ?? null,
    error,
    timestamp,
  } as const;
  return waitingFor === undefined ? event : { ...event, waitingFor };
}

/** A subtask's attempt as overviews show it. */
export interface ExecutionSummary {
  readonly key: string;
  readonly vertexId: string;
  readonly subtaskIndex: number;
  readonly attemptNumber: number;
  readonly state: string;
  readonly resourceId: ResourceID | null;
  readonly allocationId: AllocationID | null;
}

export class ExecutionAttempts {
  readonly #byKey = new Map<string, ExecutionRecord>();
  /** Current attempts only: an older attempt's ID is not found. */
  readonly #byAttempt = new Map<ExecutionAttemptID, ExecutionRecord>();

  /** Attempt 0 of every subtask of the graph, created, in topological order. */
  readonly #graph: ExecutionGraph;

  constructor(graph: ExecutionGraph) {
    this.#graph = graph;
    for (const vertex of graph.verticesInTopologicalOrder()) {
      const record: ExecutionRecord = {
        vertex,
        attemptNumber: 0,
        executionAttemptId: attemptId(vertex, 0),
        state: 'created',
        slot: null,
        slotRequest: null,
        output: undefined,
        partition: null,
        hasOutput: false,
      };
      this.#byKey.set(vertex.key, record);
      this.#byAttempt.set(record.executionAttemptId, record);
    }
  }

  get size(): number {
    return this.#byKey.size;
  }

  values(): IterableIterator<ExecutionRecord> {
    return this.#byKey.values();
  }

  /**
   * Subtasks that finished under an earlier leader (a recovered job's progress) start finished, with their output or
   * partition; an entry naming no subtask of this graph is ignored. Returns the records restored.
   */
  restore(finished: readonly FinishedSubtask[]): ExecutionRecord[] {
    const restored: ExecutionRecord[] = [];
    for (const { vertexId, subtaskIndex, output, partition } of finished) {
      const vertex = this.#graph.jobGraph.vertices.some((v) => v.id === vertexId)
        ? this.#graph.subtasksOf(vertexId)[subtaskIndex]
        : undefined;
      const record = vertex === undefined ? undefined : this.#byKey.get(vertex.key);
      if (record === undefined || record.state === 'finished') continue;
      Object.assign(record, { state: 'finished', output, partition, hasOutput: true });
      restored.push(record);
    }
    return restored;
  }

  /** The record of a subtask of the graph. */
  of(vertex: ExecutionVertex): ExecutionRecord {
    return this.#byKey.get(vertex.key)!;
  }

  /** The subtask whose current attempt this is, or undefined (an older attempt, or none of this job). */
  current(executionAttemptId: ExecutionAttemptID): ExecutionRecord | undefined {
    return this.#byAttempt.get(executionAttemptId);
  }

  /** The subtasks whose current attempt holds that slot and has not ended. */
  inSlot(allocationId: AllocationID): ExecutionRecord[] {
    return [...this.#byKey.values()].filter(
      (r) => r.slot?.allocationId === allocationId && !TERMINAL_STATES.has(r.state),
    );
  }

  /** Whether an attempt is on a TaskExecutor (deploying, initializing or running). */
  anyDeployed(): boolean {
    return [...this.#byKey.values()].some(
      (r) => r.state === 'deploying' || r.state === 'initializing' || r.state === 'running',
    );
  }

  /**
   * The restart of the failed regions: every failed or canceled subtask gets its next attempt,
   * created and without a slot (`restarted`, for the SchedulingStrategy to schedule now or once its
   * inputs are there; its old attempt's ID is forgotten), the subtasks scheduled and not deployed
   * yet whose slot went meanwhile need only a slot again (`reslot`), and those scheduled that hold
   * their slot (it may have come during the restart delay) deploy now if their inputs are ready
   * (`slotted`). Subtasks still `created` wait on as they were.
   */
  restartFailed(): { restarted: ExecutionRecord[]; reslot: ExecutionRecord[]; slotted: ExecutionRecord[] } {
    const restarted: ExecutionRecord[] = [];
    const reslot: ExecutionRecord[] = [];
    const slotted: ExecutionRecord[] = [];
    for (const r of this.#byKey.values()) {
      if (r.state === 'failed' || r.state === 'canceled') restarted.push(r);
      else if (r.state !== 'scheduled') continue;
      else if (r.slot !== null) slotted.push(r);
      else if (r.slotRequest === null) reslot.push(r);
    }
    for (const record of restarted) {
      this.#byAttempt.delete(record.executionAttemptId);
      record.attemptNumber++;
      record.executionAttemptId = attemptId(record.vertex, record.attemptNumber);
      this.#byAttempt.set(record.executionAttemptId, record);
      record.state = 'created';
      record.slot = null;
      record.slotRequest = null;
    }
    return { restarted, reslot, slotted };
  }

  /** Whether every producer of the subtask has finished (its output, or partition, is there). */
  inputsReady(record: ExecutionRecord): boolean {
    return this.#graph.producersOf(record.vertex).every((p) => this.of(p).hasOutput);
  }

  /** The job's result: each sink vertex's outputs by subtask. */
  sinkOutputs(): Record<string, unknown[]> {
    const outputs: Record<string, unknown[]> = {};
    for (const sink of this.#graph.sinks())
      (outputs[sink.id.vertexId] ??= [])[sink.id.subtaskIndex] = this.of(sink).output;
    return outputs;
  }

  /** Per subtask: its attempt, state, executor and slot. */
  summaries(): ExecutionSummary[] {
    return [...this.#byKey.values()].map((r) => ({
      key: r.vertex.key,
      vertexId: r.vertex.id.vertexId,
      subtaskIndex: r.vertex.id.subtaskIndex,
      attemptNumber: r.attemptNumber,
      state: r.state,
      resourceId: r.slot?.resourceId ?? null,
      allocationId: r.slot?.allocationId ?? null,
    }));
  }
}

function attemptId(vertex: ExecutionVertex, attempt: number): ExecutionAttemptID {
  return createExecution(vertex.id, attempt).attemptId;
}
