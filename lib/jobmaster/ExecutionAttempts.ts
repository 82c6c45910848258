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
 *
 * Each subtask also keeps what a person asks of it later (Flink's Execution state timestamps and
 * ExecutionVertex's prior executions): when its attempt started and ended, the TaskExecutor and slot
 * it ran in — kept after the slot went back — and its ended attempts, at most
 * `jobmanager.execution.attempts-history-size` of them.
 */
import { type AllocationID, ExecutionAttemptID, type ResourceID } from '../core/ids.js';
import type { ExecutionState, ResultPartitionWire, SerializedError } from '../rpc/protocol.js';
import type { FinishedSubtask } from './JobMasterOptions.js';
import type { JobEvent, TaskWait } from './JobResult.js';
import { createExecution, type ExecutionGraph, type ExecutionVertex } from './ExecutionGraph.js';
import type { LogicalSlot } from './slotsharing/SharedSlot.js';
import type { Mutable } from '../core/Mutable.js';

/** What a subtask without ended attempts has of them: one shared empty list, not one each (100,000 in a large job). */
export const NO_ATTEMPTS: readonly AttemptSummary[] = Object.freeze([]);

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
  slotRequest: SlotRequest | null;
  /** Its finished attempt's output, when it came to the JobMaster (a sink's, or where no partitions are kept). */
  output: unknown;
  /** Where its finished attempt's output stays instead (its TaskExecutor's result partition). */
  partition: ResultPartitionWire | null;
  hasOutput: boolean;
  /**
   * Epoch ms (the JobMaster's clock) its attempt started deploying, null before (-1 in its AttemptSummary). Null, not
   * -1: once a timestamp was stored, V8 would box a -1 in a heap number for every new record (100,000 in a large job).
   */
  startTime: number | null;
  /** Epoch ms its attempt ended, null while it has not (as startTime). */
  endTime: number | null;
  /** The TaskExecutor and slot its attempt holds or last held (kept once it ended), or null: none yet. */
  location: { readonly resourceId: ResourceID; readonly allocationId: AllocationID } | null;
  /** Its ended attempts, oldest first, at most the history size (replaced, not changed: keepEnded). */
  priorAttempts: readonly AttemptSummary[];
  /** The number its next attempt gets (a restart's, or a speculative one's): attempt numbers are never reused. */
  nextAttemptNumber: number;
}

/** A record's slot request while it is out (ExecutionDeployer): the token its slot comes back with. */
export interface SlotRequest {
  readonly record: ExecutionRecord;
  /** The attempt it was asked for: a slot that comes for an older attempt is not this one's. */
  readonly attempt: ExecutionAttemptID;
  /**
   * When it was asked for, for the slot assignment's latency: ms after the deployer started (on the JobMaster's clock),
   * a small integer kept in the token itself, where a timestamp would be a heap number per request.
   */
  readonly requestedAfter: number;
}

/** The JobEvent telling the attempt's state now, where it runs (if it has a slot) and its error. */
export function taskEventOf(
  record: Pick<ExecutionRecord, 'vertex' | 'attemptNumber' | 'executionAttemptId' | 'state' | 'slot'>,
  error: SerializedError | null,
  timestamp: number,
  waitingFor?: TaskWait,
): TaskEvent {
  const { vertex, attemptNumber, executionAttemptId, state, slot } = record;
  const { vertexId, subtaskIndex } = vertex.id;
  const event: Mutable<TaskEvent> = {
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
  };
  // Added, not a copy of the event with it: every subtask of a large job is told scheduled, waiting for its slot, as
  // the job starts.
  if (waitingFor !== undefined) event.waitingFor = waitingFor;
  return event;
}

type TaskEvent = Extract<JobEvent, { readonly type: 'task' }>;

/** One attempt of a subtask: its number, state, where it ran and when. */
export interface AttemptSummary {
  readonly attemptNumber: number;
  readonly state: string;
  /** The TaskExecutor it runs or ran on (kept after it ended), null when it had none. */
  readonly resourceId: ResourceID | null;
  /** Its slot, as `resourceId`. */
  readonly allocationId: AllocationID | null;
  /** Epoch ms it started deploying (Flink's start-time), -1 before. */
  readonly startTime: number;
  /** Epoch ms it ended, -1 while it has not. */
  readonly endTime: number;
  /** A speculative attempt (execution.batch.speculative.*): one run beside the subtask's current attempt. */
  readonly speculative?: true;
}

/** A subtask's current attempt as overviews show it, with its ended attempts. */
export interface ExecutionSummary extends AttemptSummary {
  readonly key: string;
  readonly vertexId: string;
  readonly subtaskIndex: number;
  /** Its ended attempts, oldest first, at most `jobmanager.execution.attempts-history-size`. */
  readonly priorAttempts: readonly AttemptSummary[];
  /** Its speculative attempts running beside the current one (Flink's other concurrent attempts), oldest first. */
  readonly concurrentAttempts: readonly AttemptSummary[];
}

export class ExecutionAttempts {
  /** Every record, in the order added: topological, each vertex's subtasks by index. */
  readonly #all: ExecutionRecord[] = [];
  /** Per job vertex, its records by subtask index: no Map entry per subtask (100,000 in a large job). */
  readonly #byVertex = new Map<string, ExecutionRecord[]>();

  /** Attempt 0 of every subtask of the graph, created, in topological order. */
  readonly #graph: ExecutionGraph;
  readonly #historySize: number;

  /** `historySize`: the ended attempts kept per subtask (`jobmanager.execution.attempts-history-size`). */
  constructor(graph: ExecutionGraph, historySize: number) {
    this.#graph = graph;
    this.#historySize = historySize;
    this.add(graph.verticesInTopologicalOrder());
  }

  /** Attempt 0 of each subtask, created (the subtasks of a vertex the adaptive scheduler initialized later). */
  add(vertices: readonly ExecutionVertex[]): ExecutionRecord[] {
    return vertices.map((vertex) => {
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
        startTime: null,
        endTime: null,
        location: null,
        priorAttempts: NO_ATTEMPTS,
        nextAttemptNumber: 1,
      };
      const { vertexId, subtaskIndex } = vertex.id;
      let records = this.#byVertex.get(vertexId);
      if (records === undefined) this.#byVertex.set(vertexId, (records = []));
      // A subtask added again takes its own place back (as a Map by key would keep it).
      const earlier = records[subtaskIndex];
      if (earlier === undefined) this.#all.push(record);
      else this.#all[this.#all.indexOf(earlier)] = record;
      records[subtaskIndex] = record;
      return record;
    });
  }

  get size(): number {
    return this.#all.length;
  }

  values(): IterableIterator<ExecutionRecord> {
    return this.#all.values();
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
      const record = vertex === undefined ? undefined : this.#recordOf(vertex);
      if (record === undefined || record.state === 'finished') continue;
      Object.assign(record, { state: 'finished', output, partition, hasOutput: true });
      restored.push(record);
    }
    return restored;
  }

  /**
   * Notes what the record's state now means for its times and place (with every task event the JobMaster emits):
   * deploying starts the attempt, a final state ends it, a slot it holds is where it runs — kept after the slot went
   * back — and sent back to wait for its inputs, it holds none.
   */
  observe(record: ExecutionRecord, timestamp: number): void {
    if (record.state === 'deploying' && record.startTime === null) record.startTime = timestamp;
    if (TERMINAL_STATES.has(record.state) && record.endTime === null) record.endTime = timestamp;
    // The physical slot itself: one object per slot the job held, not one per subtask that ran in it.
    if (record.slot !== null) record.location = record.slot.physicalSlot;
    else if (record.state === 'created') record.location = null;
  }

  /** The task event telling the record's state now (taskEventOf), its times and place noted first (observe). */
  taskEvent(
    record: ExecutionRecord,
    error: SerializedError | null,
    timestamp: number,
    waitingFor?: TaskWait,
  ): Extract<JobEvent, { readonly type: 'task' }> {
    this.observe(record, timestamp);
    return taskEventOf(record, error, timestamp, waitingFor);
  }

  /** The record of a subtask of the graph. */
  of(vertex: ExecutionVertex): ExecutionRecord {
    return this.#recordOf(vertex)!;
  }

  #recordOf(vertex: ExecutionVertex): ExecutionRecord | undefined {
    return this.#byVertex.get(vertex.id.vertexId)?.[vertex.id.subtaskIndex];
  }

  /**
   * The subtask whose current attempt this is, or undefined (an older attempt, or none of this job). Found through the
   * subtask the ID's label names — every attempt of a subtask is labelled (attemptId) — and checked against the
   * subtask's current attempt: no Map of every attempt ID (100,000 in a large job).
   */
  current(executionAttemptId: ExecutionAttemptID): ExecutionRecord | undefined {
    const label = ExecutionAttemptID.subtaskOf(executionAttemptId);
    const record = label === undefined ? undefined : this.#byVertex.get(label.vertex)?.[label.subtask];
    return record?.executionAttemptId === executionAttemptId ? record : undefined;
  }

  /** The subtasks whose current attempt holds that slot and has not ended. */
  inSlot(allocationId: AllocationID): ExecutionRecord[] {
    return this.#all.filter((r) => r.slot?.allocationId === allocationId && !TERMINAL_STATES.has(r.state));
  }

  /** Whether an attempt is on a TaskExecutor (deploying, initializing or running). */
  anyDeployed(): boolean {
    return this.#all.some((r) => r.state === 'deploying' || r.state === 'initializing' || r.state === 'running');
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
    for (const r of this.#all) {
      if (r.state === 'failed' || r.state === 'canceled') restarted.push(r);
      else if (r.state !== 'scheduled') continue;
      else if (r.slot !== null) slotted.push(r);
      else if (r.slotRequest === null) reslot.push(r);
    }
    for (const record of restarted) {
      const attemptNumber = record.nextAttemptNumber++;
      this.replaceAttempt(record, {
        attemptNumber,
        executionAttemptId: attemptId(record.vertex, attemptNumber),
        state: 'created',
        slot: null,
        startTime: null,
        location: null,
      });
      record.slotRequest = null;
    }
    return { restarted, reslot, slotted };
  }

  /**
   * The subtask's current attempt ends (kept among its ended attempts) and `next` becomes its current one: a restart's
   * new attempt, or a speculative attempt that took over (SpeculativeExecutions). The old attempt's ID is forgotten.
   */
  replaceAttempt(
    record: ExecutionRecord,
    next: Pick<ExecutionRecord, 'attemptNumber' | 'executionAttemptId' | 'state' | 'slot' | 'startTime' | 'location'>,
  ): void {
    this.keepEnded(record, attemptOf(record));
    Object.assign(record, next, { endTime: null });
  }

  /** Adds an ended attempt to a subtask's, the oldest going past the history size. */
  keepEnded(record: Pick<ExecutionRecord, 'priorAttempts'>, ended: AttemptSummary): void {
    if (this.#historySize === 0) return;
    const kept = [...record.priorAttempts, ended];
    record.priorAttempts = kept.length > this.#historySize ? kept.slice(1) : kept;
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

  /**
   * Per subtask: its current attempt (state, where it runs or ran, when), its ended attempts, and the attempts
   * `concurrent` says run beside it (speculative ones).
   */
  summaries(concurrent: (record: ExecutionRecord) => readonly AttemptSummary[] = () => []): ExecutionSummary[] {
    return this.#all.map((r) => ({
      key: r.vertex.key,
      vertexId: r.vertex.id.vertexId,
      subtaskIndex: r.vertex.id.subtaskIndex,
      ...attemptOf(r),
      priorAttempts: [...r.priorAttempts],
      concurrentAttempts: concurrent(r),
    }));
  }
}

export function attemptOf(
  r: Pick<ExecutionRecord, 'attemptNumber' | 'state' | 'slot' | 'location' | 'startTime' | 'endTime'>,
): AttemptSummary {
  const where = r.slot ?? r.location;
  return {
    attemptNumber: r.attemptNumber,
    state: r.state,
    resourceId: where?.resourceId ?? null,
    allocationId: where?.allocationId ?? null,
    startTime: r.startTime ?? -1,
    endTime: r.endTime ?? -1,
  };
}

export function attemptId(vertex: ExecutionVertex, attempt: number): ExecutionAttemptID {
  return createExecution(vertex.id, attempt).attemptId;
}
