/**
 * Speculative execution (Flink's SpeculativeScheduler with its SpeculativeExecutionVertex): every
 * `slow-task-detector.check-interval` the slow attempts are looked for (findSlowTasks); the TaskExecutors they run on
 * are blocked for `execution.batch.speculative.block-slow-node-duration` — at the ResourceManager (its SlotManager
 * places no new slot there) and in the job's slot pool (no offer from there, no idle slot there reused) — and each
 * slow subtask gets new attempts, up to `execution.batch.speculative.max-concurrent-executions` at once, each in a
 * slot of its own (never the shared slot its current attempt is in), deployed with the same inputs.
 *
 * The first attempt of a subtask to finish is the subtask's: a speculative one takes over the subtask's record
 * (its attempt, slot, output or partition: `takeOver`), the current one is canceled; outputs and partitions thus come
 * from exactly one attempt. The others are canceled and give their slots back; one that finishes all the same has its
 * partition released and ends `canceled` (as Flink's execution finishing while it is canceled). An attempt that fails
 * while another of its subtask can still finish is a failure of that attempt only (Flink's local failure: kept in the
 * exception history and counted by the restart strategy, no restart — the job fails when the strategy allows no more
 * restarts) — except a partition failure, which its siblings would meet too.
 *
 * What the JobMaster keeps doing as before: a subtask's current attempt is its record (ExecutionAttempts), and every
 * state of it flows through the JobMaster's usual paths; this class owns only the attempts beside it.
 */
import type { Clock, TimerHandle } from '../../core/clock.js';
import type { ExecutionAttemptID, ResourceID } from '../../core/ids.js';
import type { ResolvedOptions } from '../../core/options.js';
import type { ResourceManagerGateway } from '../../rpc/gateways.js';
import type { ExecutionState, SerializedError, TaskExecutionStateWire } from '../../rpc/protocol.js';
import {
  type AttemptSummary,
  attemptId,
  attemptOf,
  type ExecutionRecord,
  TERMINAL_STATES,
} from '../ExecutionAttempts.js';
import type { DeployerHost } from '../ExecutionDeployer.js';
import type { ExecutionGraph } from '../ExecutionGraph.js';
import type { JobEvents } from '../JobEvents.js';
import { fieldsOf, type JobFailures, type SlotLocation } from '../JobFailures.js';
import type { JobMasterOptions } from '../JobMasterOptions.js';
import type { JobSlotPool } from '../JobSlotPool.js';
import { jobErrorOf } from '../JobResult.js';
import type { LogicalSlot } from '../slotsharing/SharedSlot.js';
import {
  findSlowTasks,
  type SlowTaskDetectorOptions,
  type SubtaskAttempts,
} from './ExecutionTimeBasedSlowTaskDetector.js';

/** An attempt of a subtask running beside its current one. */
export interface SpeculativeAttempt {
  readonly record: ExecutionRecord;
  readonly vertex: ExecutionRecord['vertex'];
  readonly attemptNumber: number;
  readonly executionAttemptId: ExecutionAttemptID;
  state: 'scheduled' | ExecutionState;
  slot: LogicalSlot | null;
  startTime: number;
  endTime: number;
  location: SlotLocation;
}

/**
 * What speculation needs of its JobMaster: what its ExecutionDeployer has (speculative attempts are deployed alike),
 * and a few collaborators more.
 */
export interface SpeculationHost
  extends Pick<
    DeployerHost,
    'mailbox' | 'clock' | 'allocator' | 'executions' | 'deployments' | 'status' | 'taskExecutor' | 'log'
  > {
  /** The JobMaster's mailbox clock: the check's timer fires into the mailbox. */
  readonly timers: Clock;
  readonly graph: ExecutionGraph;
  /** The job's slot pool: its idle slots on a TaskExecutor just blocked go back. */
  readonly pool: Pick<JobSlotPool, 'releaseIdleSlotsOf'>;
  /** Task events: the current attempt's (its state set before), a speculative attempt's. */
  readonly events: Pick<JobEvents, 'task' | 'speculativeTask'>;
  /** A failure of one attempt only: the exception history and the log, no restart. */
  readonly failures: Pick<JobFailures, 'attemptFailed'>;
  /**
   * A failure of one attempt only, for the restart strategy to count (Flink's handleLocalExecutionAttemptFailure):
   * no restart follows, but the job fails when the strategy allows none any more.
   */
  countFailure(cause: string, error: SerializedError): void;
  releasePartition(resourceId: ResourceID, id: ExecutionAttemptID): void;
}

/** A speculative attempt as overviews show attempts: marked `speculative`. */
function summaryOf(attempt: SpeculativeAttempt): AttemptSummary {
  return { ...attemptOf(attempt), speculative: true };
}

const FINISHED_FIRST = Object.freeze(new Error('another attempt of its subtask finished first'));

export class SpeculativeExecutions {
  /**
   * The speculation of the JobMaster's job: null unless execution.batch.speculative.enabled and the job runs under
   * the adaptive scheduler (a job whose graph chose the default scheduler never speculates).
   */
  static of(o: Pick<JobMasterOptions, 'options' | 'jobGraph' | 'resourceManager'>, host: SpeculationHost) {
    const enabled = o.options['execution.batch.speculative.enabled'] && o.jobGraph.scheduler === 'adaptive';
    return enabled ? new SpeculativeExecutions(host, o.options, o.resourceManager) : null;
  }

  readonly #h: SpeculationHost;
  readonly #resourceManager: Pick<ResourceManagerGateway, 'notifyNewBlockedNodes'>;
  readonly #detector: SlowTaskDetectorOptions;
  readonly #maxConcurrent: number;
  readonly #blockMs: number;
  readonly #intervalMs: number;
  /** Live speculative attempts by ID; an ended one leaves at once. */
  readonly #byId = new Map<ExecutionAttemptID, SpeculativeAttempt>();
  /** Live speculative attempts by subtask key. */
  readonly #bySubtask = new Map<string, SpeculativeAttempt[]>();
  /** Losers canceled on their TaskExecutor whose end has not come: a late `finished` has its partition released. */
  readonly #ending = new Set<ExecutionAttemptID>();
  /** TaskExecutors found slow, each blocked until then (epoch ms). */
  readonly #blockedUntil = new Map<ResourceID, number>();
  #timer: TimerHandle | null = null;

  constructor(
    host: SpeculationHost,
    o: ResolvedOptions,
    resourceManager: Pick<ResourceManagerGateway, 'notifyNewBlockedNodes'>,
  ) {
    this.#h = host;
    this.#resourceManager = resourceManager;
    this.#detector = {
      lowerBoundMs: o['slow-task-detector.execution-time.baseline-lower-bound'],
      ratio: o['slow-task-detector.execution-time.baseline-ratio'],
      multiplier: o['slow-task-detector.execution-time.baseline-multiplier'],
    };
    this.#maxConcurrent = o['execution.batch.speculative.max-concurrent-executions'];
    this.#blockMs = o['execution.batch.speculative.block-slow-node-duration'];
    this.#intervalMs = o['slow-task-detector.check-interval'];
  }

  /** Starts looking for slow subtasks, every check interval. */
  start(): void {
    this.#timer = this.#h.timers.setTimeout(() => this.#check(), this.#intervalMs);
  }

  /** Whether the TaskExecutor is blocked now (the job's slot pool asks). */
  isBlocked(resourceId: ResourceID): boolean {
    return (this.#blockedUntil.get(resourceId) ?? -1) > this.#h.clock.now();
  }

  /** The speculative attempts of the subtask that have not ended. */
  attemptsOf(record: ExecutionRecord): readonly SpeculativeAttempt[] {
    return this.#bySubtask.get(record.vertex.key) ?? [];
  }

  /** Those, as overviews show attempts. */
  summariesOf(record: ExecutionRecord): AttemptSummary[] {
    return this.attemptsOf(record).map(summaryOf);
  }

  /** One look for slow subtasks (Flink's notifySlowTasks), then the next is armed. */
  #check(): void {
    this.#timer = null;
    const status = this.#h.status();
    if (TERMINAL_STATES.has(status) || status === 'canceling') return;
    if (status === 'running') this.#speculate();
    this.#timer = this.#h.timers.setTimeout(() => this.#check(), this.#intervalMs);
  }

  #speculate(): void {
    const { graph, executions } = this.#h;
    const now = this.#h.clock.now();
    const vertices: SubtaskAttempts[][] = [];
    for (const jobVertex of graph.jobGraph.vertices) {
      const subtasks = graph.subtasksOf(jobVertex.id);
      if (subtasks.length === 0) continue;
      vertices.push(
        subtasks.map((vertex) => {
          const record = executions.of(vertex);
          return {
            key: vertex.key,
            finished: record.state === 'finished',
            attempts: [record, ...this.attemptsOf(record)],
          };
        }),
      );
    }
    const slow = findSlowTasks(vertices, now, this.#detector);
    if (slow.size === 0) return;
    // The slow TaskExecutors are blocked before the new attempts ask for slots (Flink's order).
    this.#block(slow, now);
    for (const [key, slowAttempts] of slow) {
      const record = executions.of(graph.vertex(key));
      const live = (TERMINAL_STATES.has(record.state) ? 0 : 1) + this.attemptsOf(record).length;
      const count = this.#maxConcurrent - live;
      if (count <= 0) continue;
      this.#h.log(
        `${key} is slow (${slowAttempts.length} attempt(s) past the baseline): ${count} speculative attempt(s)`,
        fieldsOf(record, record.slot),
      );
      for (let i = 0; i < count; i++) this.#launch(record);
    }
  }

  #block(slow: ReadonlyMap<string, readonly ExecutionAttemptID[]>, now: number): void {
    if (this.#blockMs === 0) return;
    const slowNodes = new Set<ResourceID>();
    for (const ids of slow.values())
      for (const id of ids) {
        const attempt = this.#h.executions.current(id) ?? this.#byId.get(id);
        if (attempt?.slot != null) slowNodes.add(attempt.slot.resourceId);
      }
    if (slowNodes.size === 0) return;
    for (const resourceId of slowNodes) {
      this.#blockedUntil.set(resourceId, now + this.#blockMs);
      this.#h.pool.releaseIdleSlotsOf(resourceId, new Error('its TaskExecutor was found slow'));
    }
    const blocked = [...slowNodes].map((resourceId) => ({
      resourceId,
      cause: 'a subtask ran slowly there (speculative execution)',
      durationMs: this.#blockMs,
    }));
    this.#h.mailbox.whenComplete(this.#resourceManager.notifyNewBlockedNodes(blocked), (_, error) => {
      if (error !== undefined)
        this.#h.log(`could not block slow TaskExecutors: ${jobErrorOf(error).message}`, {}, 'warn');
    });
  }

  /** A new speculative attempt of the subtask: its own slot asked for, deployed when it comes. */
  #launch(record: ExecutionRecord): void {
    const attemptNumber = record.nextAttemptNumber++;
    const attempt: SpeculativeAttempt = {
      record,
      vertex: record.vertex,
      attemptNumber,
      executionAttemptId: attemptId(record.vertex, attemptNumber),
      state: 'scheduled',
      slot: null,
      startTime: -1,
      endTime: -1,
      location: null,
    };
    this.#byId.set(attempt.executionAttemptId, attempt);
    const siblings = this.#bySubtask.get(record.vertex.key);
    if (siblings === undefined) this.#bySubtask.set(record.vertex.key, [attempt]);
    else siblings.push(attempt);
    this.#h.events.speculativeTask(attempt, null);
    const request = this.#h.allocator.allocateSpeculativeSlot(record.vertex.id, attempt.executionAttemptId);
    this.#h.mailbox.whenComplete(request, (slot, error) => {
      if (!this.#byId.has(attempt.executionAttemptId)) return; // ended meanwhile; its slot went back with it
      if (error !== undefined) return this.#failed(attempt, jobErrorOf(error));
      attempt.slot = slot!;
      attempt.location = { resourceId: slot!.resourceId, allocationId: slot!.allocationId };
      // Its slot released while it lives (not by its own end) is a slot lost: the attempt fails with it.
      this.#h.mailbox.whenComplete(slot!.released, (cause) => {
        if (this.#byId.get(attempt.executionAttemptId)?.slot === slot)
          this.#failed(attempt, { name: 'SlotLost', message: `its slot was freed: ${cause?.message}` });
      });
      this.#deploy(attempt);
    });
  }

  #deploy(attempt: SpeculativeAttempt): void {
    const { record } = attempt;
    const slot = attempt.slot!;
    const gateway = this.#h.taskExecutor(slot.resourceId);
    // Its subtask must still run as it did (its inputs there), and the job too.
    if (
      this.#h.status() !== 'running' ||
      TERMINAL_STATES.has(record.state) ||
      !this.#h.executions.inputsReady(record) ||
      gateway === undefined
    )
      return this.#end(attempt, 'canceled', null);
    const descriptor = this.#h.deployments.createDeploymentDescriptor(record, slot.allocationId, attempt);
    attempt.state = 'deploying';
    attempt.startTime = this.#h.clock.now();
    this.#h.events.speculativeTask(attempt, null);
    this.#h.mailbox.whenComplete(gateway.submitTask(descriptor), (_, error) => {
      if (error !== undefined && this.#byId.has(attempt.executionAttemptId)) this.#failed(attempt, jobErrorOf(error));
    });
  }

  /**
   * A state update of an attempt: `unknown` when it is none of the speculative ones, `handled` when it was (its event
   * emitted), `tookOver` when it finished first and is now its subtask's current attempt — the JobMaster applies the
   * `finished` then as it does for any current attempt.
   */
  stateUpdate(update: TaskExecutionStateWire): 'unknown' | 'handled' | 'tookOver' {
    const id = update.executionAttemptId;
    if (this.#ending.has(id)) {
      if (TERMINAL_STATES.has(update.state)) this.#ended(update);
      return 'handled';
    }
    const attempt = this.#byId.get(id);
    if (attempt === undefined) {
      // The subtask's current attempt finished: its other attempts are canceled (Flink's cancelPendingExecutions).
      const record = update.state === 'finished' ? this.#h.executions.current(id) : undefined;
      if (record !== undefined && !TERMINAL_STATES.has(record.state)) this.subtaskFinished(record);
      return 'unknown';
    }
    if (update.state === attempt.state) return 'handled';
    switch (update.state) {
      case 'finished':
        // It takes over in the state it was in: the JobMaster then applies `finished` to its subtask.
        this.#takeOver(attempt, attempt.state as ExecutionState);
        this.subtaskFinished(attempt.record);
        return 'tookOver';
      case 'failed':
        this.#failed(attempt, update.error ?? { name: 'Error', message: 'the task failed' });
        return 'handled';
      case 'canceled':
        this.#end(attempt, 'canceled', update.error ?? null);
        return 'handled';
      default:
        attempt.state = update.state;
        this.#h.events.speculativeTask(attempt, null);
        return 'handled';
    }
  }

  /** A losing attempt's end came: the partition of one that finished all the same goes. */
  #ended(update: TaskExecutionStateWire): void {
    this.#ending.delete(update.executionAttemptId);
    if (update.state === 'finished' && update.partition != null)
      this.#h.releasePartition(update.partition.resourceId, update.executionAttemptId);
  }

  /**
   * The subtask's current attempt finished (the original, or one that took over): every other attempt is canceled
   * and gives its slot back (Flink's cancelPendingExecutions).
   */
  subtaskFinished(record: ExecutionRecord): void {
    for (const attempt of [...this.attemptsOf(record)]) this.#cancel(attempt, FINISHED_FIRST.message);
  }

  /**
   * The subtask's current attempt failed (its `failed` event told): when a speculative attempt of it on a TaskExecutor
   * can still finish (and the failure is no partition's), that one takes over and the failure is of the failed attempt
   * only (true returned); otherwise false, and the subtask fails as it would without speculation, its speculative
   * attempts canceled.
   */
  currentFailed(record: ExecutionRecord, error: SerializedError, where: SlotLocation): boolean {
    const attempts = this.attemptsOf(record);
    const successor = attempts.find(
      (a) => a.state === 'running' || a.state === 'initializing' || a.state === 'deploying',
    );
    if (successor === undefined || error._tag === 'PartitionError' || this.#h.status() !== 'running') {
      for (const attempt of [...attempts]) this.#cancel(attempt, `attempt ${record.attemptNumber} failed`);
      return false;
    }
    this.#h.failures.attemptFailed(record, error, where, false);
    this.#takeOver(successor, successor.state as ExecutionState);
    this.#h.countFailure(`${record.vertex.key} (attempt ${record.attemptNumber}) failed: ${error.message}`, error);
    return true;
  }

  /** The job ends or is canceled: every speculative attempt is canceled, no more checks. */
  close(cause: string): void {
    if (this.#timer !== null) this.#h.timers.clearTimeout(this.#timer);
    this.#timer = null;
    for (const attempt of [...this.#byId.values()]) this.#cancel(attempt, cause);
  }

  /**
   * The attempt becomes its subtask's current one (in `state`): the current attempt, if still on a TaskExecutor, is
   * canceled there and ends `canceled`; its share of its slot goes back and the attempt's slot is the subtask's.
   */
  #takeOver(attempt: SpeculativeAttempt, state: ExecutionState): void {
    const { record } = attempt;
    this.#forget(attempt);
    if (!TERMINAL_STATES.has(record.state)) {
      this.#cancelOn(record.slot?.resourceId, record.executionAttemptId);
      this.#ending.add(record.executionAttemptId);
      record.state = 'canceled';
      this.#h.events.task(record, null);
    }
    this.#h.allocator.adoptSpeculativeSlot(record.vertex.id, attempt.executionAttemptId, FINISHED_FIRST);
    this.#h.executions.replaceAttempt(record, {
      attemptNumber: attempt.attemptNumber,
      executionAttemptId: attempt.executionAttemptId,
      state,
      slot: attempt.slot,
      startTime: attempt.startTime < 0 ? null : attempt.startTime,
      location: attempt.location,
    });
    this.#h.log(
      `attempt ${attempt.attemptNumber} (speculative) took over ${record.vertex.key}`,
      fieldsOf(record, attempt.location),
    );
  }

  /** Cancels a speculative attempt: on its TaskExecutor if it is deployed there (its end is awaited), its slot goes. */
  #cancel(attempt: SpeculativeAttempt, cause: string): void {
    const deployed = attempt.state !== 'scheduled';
    if (deployed) {
      this.#cancelOn(attempt.slot?.resourceId, attempt.executionAttemptId);
      this.#ending.add(attempt.executionAttemptId);
      this.#h.log(
        `canceling speculative attempt ${attempt.attemptNumber}: ${cause}`,
        fieldsOf(attempt, attempt.location),
      );
    }
    this.#end(attempt, 'canceled', null);
  }

  #failed(attempt: SpeculativeAttempt, error: SerializedError): void {
    this.#h.failures.attemptFailed(attempt, error, attempt.location, false);
    this.#end(attempt, 'failed', error);
    const name = `${attempt.vertex.key} (speculative attempt ${attempt.attemptNumber})`;
    this.#h.countFailure(`${name} failed: ${error.message}`, error);
  }

  /** The attempt ends in `state`: its event, its slot back, kept among its subtask's ended attempts. */
  #end(attempt: SpeculativeAttempt, state: 'canceled' | 'failed', error: SerializedError | null): void {
    this.#forget(attempt);
    attempt.state = state;
    attempt.endTime = this.#h.clock.now();
    this.#h.events.speculativeTask(attempt, error);
    this.#h.allocator.releaseSpeculativeSlot(
      attempt.vertex.id,
      attempt.executionAttemptId,
      new Error(`speculative attempt ${state}`),
    );
    attempt.slot = null;
    this.#h.executions.keepEnded(attempt.record, summaryOf(attempt));
  }

  #forget(attempt: SpeculativeAttempt): void {
    this.#byId.delete(attempt.executionAttemptId);
    const siblings = this.#bySubtask.get(attempt.vertex.key);
    if (siblings === undefined) return;
    siblings.splice(siblings.indexOf(attempt), 1);
    if (siblings.length === 0) this.#bySubtask.delete(attempt.vertex.key);
  }

  #cancelOn(resourceId: ResourceID | undefined, id: ExecutionAttemptID): void {
    const gateway = resourceId === undefined ? undefined : this.#h.taskExecutor(resourceId);
    if (gateway !== undefined) this.#h.mailbox.whenComplete(gateway.cancelTask(id), () => {});
  }
}
