/**
 * What a JobMaster tells its listeners (JobMasterOptions.onEvent, onSlotAssigned) as it happens: a change of the job's
 * status, of an attempt's state, an adaptive parallelism decision, a slot assignment — each stamped with the
 * JobMaster's clock. A listener that throws is logged, never the JobMaster's failure.
 */
import type { Clock } from '../core/clock.js';
import type { RuntimeLog } from '../core/Logger.js';
import type { SerializedError } from '../rpc/protocol.js';
import type { JobStatus } from '../../machines/jobStatus.machine.js';
import type { ParallelismDecision } from './adaptivebatch/VertexParallelismDecider.js';
import { type ExecutionAttempts, type ExecutionRecord, taskEventOf } from './ExecutionAttempts.js';
import { callListener } from './JobFailures.js';
import type { JobMasterOptions } from './JobMasterOptions.js';
import type { JobEvent, TaskWait } from './JobResult.js';
import { slotAssignmentOf } from './SlotAssignment.js';
import type { SpeculativeAttempt } from './speculative/SpeculativeExecutions.js';

export class JobEvents {
  readonly #o: Pick<JobMasterOptions, 'onEvent' | 'onSlotAssigned'>;
  readonly #clock: Clock;
  readonly #log: RuntimeLog;
  readonly #executions: ExecutionAttempts;
  /** A slot was assigned to the record's attempt, asked for `requestedAt`; undefined when nobody listens. */
  readonly slotAssigned: ((record: ExecutionRecord, requestedAt: number) => void) | undefined;

  constructor(
    listeners: Pick<JobMasterOptions, 'onEvent' | 'onSlotAssigned'>,
    clock: Clock,
    log: RuntimeLog,
    executions: ExecutionAttempts,
  ) {
    this.#o = listeners;
    this.#clock = clock;
    this.#log = log;
    this.#executions = executions;
    const onSlotAssigned = listeners.onSlotAssigned;
    this.slotAssigned =
      onSlotAssigned === undefined
        ? undefined
        : (record, requestedAt) => {
            const assignment = slotAssignmentOf(record, requestedAt, this.#clock.now());
            callListener(this.#log, 'a slot assignment listener', onSlotAssigned, assignment);
          };
  }

  status(status: JobStatus, cause: string | null): void {
    this.#emit({ type: 'status', status, cause, timestamp: this.#clock.now() });
  }

  /** The attempt's state now (its times and place noted first: ExecutionAttempts.taskEvent). */
  task(record: ExecutionRecord, error: SerializedError | null, waitingFor?: TaskWait): void {
    this.#emit(this.#executions.taskEvent(record, error, this.#clock.now(), waitingFor));
  }

  /** A speculative attempt's state now (SpeculativeExecutions), marked `speculative`. */
  speculativeTask(attempt: SpeculativeAttempt, error: SerializedError | null): void {
    this.#emit({ ...taskEventOf(attempt, error, this.#clock.now()), speculative: true });
  }

  /** The adaptive scheduler gave a vertex its parallelism: an event, and a line in the log saying why. */
  parallelism({ vertexId, parallelism, bytes, reason }: ParallelismDecision): void {
    this.#log(`${vertexId}: parallelism ${parallelism} (${reason})`, { vertexId });
    this.#emit({ type: 'parallelism', vertexId, parallelism, bytes, reason, timestamp: this.#clock.now() });
  }

  #emit(event: JobEvent): void {
    const onEvent = this.#o.onEvent;
    if (onEvent !== undefined) callListener(this.#log, 'a job event listener', onEvent, event);
  }
}
