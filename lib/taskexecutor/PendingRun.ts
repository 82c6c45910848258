/**
 * The runs of a slot's pool not settled yet: a run (PendingRun) and the batch (one pool call) it
 * rides in, the state the RunBatcher keeps per run (a class, so every run has one shape: it is hot
 * on the TaskExecutor's thread); and PendingRuns, the runs by number and how each one ends — its
 * outcome or its error, its start told once — with the counts of what ended how.
 */
import type { Clock, TimerHandle } from '../core/clock.js';
import { isCanceled, isStarted, type RunFlag, type RunFlags } from './runFlags.js';
import type { RunStartListener, TaskInvocation } from './TaskInvocation.js';
import {
  canceledAfterOutcome,
  isCanceledError,
  outcomeFailure,
  type FailureScope,
  type StoppedBy,
} from './taskFailure.js';
import type { TaskInvocationContext, TaskWorkerOutcome } from './taskThreadProtocol.js';

export interface TaskResult {
  /** What the task returned (a structured clone of it). */
  readonly output: unknown;
  /** Pages the task still held when it returned, released for it: "task left N pages". */
  readonly leakedPagesReleased: number;
}

/** A run not settled yet: queued in the batcher, or in a batch sent to a thread. */
export class PendingRun implements RunFlag {
  readonly ctx: TaskInvocationContext;
  onAbort: (() => void) | undefined = undefined;
  /** The batch it is in, or null while queued. */
  batch: Batch | null = null;
  /** Its place in that batch (the thread runs a batch's runs in this order). */
  position = 0;
  /** Told once that it started (see {@link RunStartListener}). */
  startNoticed = false;
  settled = false;
  cancelReason: string | null = null;
  stoppedBy: StoppedBy | null = null;
  graceTimer: TimerHandle | undefined = undefined;
  /** Sent alone: its batch could not be sent to a thread (one of its invocations cannot be cloned). */
  solo = false;
  requeues = 0;

  constructor(
    /** Its started flag; a run re-queued after its thread was lost gets a new one. */
    public flags: Int32Array,
    public index: number,
    /** Its number in its pool: messages about it carry it. */
    readonly number: number,
    readonly invocation: TaskInvocation,
    readonly signal: AbortSignal | undefined,
    readonly listener: RunStartListener | undefined,
    readonly resolve: (result: TaskResult) => void,
    readonly reject: (error: unknown) => void,
  ) {
    this.ctx = invocation.context;
  }

  /**
   * Tells its listener, once, that it started (never after it settled); a listener that throws is `onError`'s to
   * report.
   */
  noticeStart(onError: (run: PendingRun, error: unknown) => void): void {
    if (this.startNoticed || this.settled) return;
    this.startNoticed = true;
    if (this.listener === undefined) return;
    try {
      this.listener.started();
    } catch (error) {
      onError(this, error);
    }
  }
}

/** Runs sent to a thread in one pool call. */
export interface Batch {
  readonly runs: readonly PendingRun[];
  /** The run whose cancel terminated the batch's thread. */
  forcedRun: PendingRun | null;
}

/**
 * The first run of `batch` from `position` on that will still run (not settled, not canceled before it started): the
 * one starting.
 */
export function nextToStart(batch: Batch, position: number): PendingRun | undefined {
  for (let i = position; i < batch.runs.length; i++) {
    const run = batch.runs[i]!;
    if (!run.settled && run.batch === batch && !isCanceled(run)) return run;
  }
  return undefined;
}

export interface PendingRunsCounts {
  /** Runs that returned an output. */
  readonly completed: number;
  /** Runs that rejected (canceled ones included). */
  readonly failed: number;
  /** Of `failed`, the canceled ones. */
  readonly canceled: number;
  /** Runs started on a thread and not yet settled. */
  readonly running: number;
  /** Runs submitted and not yet started. */
  readonly queued: number;
}

/** The runs not settled, by number, and how each one ends. */
export class PendingRuns {
  readonly #runs = new Map<number, PendingRun>();
  #completed = 0;
  #failed = 0;
  #canceled = 0;
  readonly #listenerFailed = (run: PendingRun, error: unknown): void =>
    this.log(
      'error',
      `a run's start listener threw: ${error instanceof Error ? error.message : String(error)}`,
      run.ctx,
    );

  constructor(
    private readonly scope: FailureScope,
    private readonly flags: RunFlags,
    private readonly clock: Pick<Clock, 'clearTimeout'>,
    private readonly log: (level: 'error', message: string, ctx: TaskInvocationContext) => void,
  ) {}

  get counts(): PendingRunsCounts {
    let running = 0;
    for (const run of this.#runs.values()) if (isStarted(run)) running++;
    return {
      completed: this.#completed,
      failed: this.#failed,
      canceled: this.#canceled,
      running,
      queued: this.#runs.size - running,
    };
  }

  add(run: PendingRun): void {
    this.#runs.set(run.number, run);
  }

  get(runNumber: number): PendingRun | undefined {
    return this.#runs.get(runNumber);
  }

  /** The unsettled runs of an attempt. */
  ofAttempt(executionAttemptId: string): PendingRun[] {
    const found: PendingRun[] = [];
    for (const run of this.#runs.values())
      if (run.ctx.executionAttemptId === executionAttemptId && !run.settled) found.push(run);
    return found;
  }

  /** A run canceled before it was ever added (its signal had fired): counted, nothing else. */
  refusedCanceled(): void {
    this.#failed++;
    this.#canceled++;
  }

  /** A run was heard from (it logs: it runs); its context, when it is still here. */
  heardFrom(runNumber: number): TaskInvocationContext | undefined {
    const run = this.#runs.get(runNumber);
    // Told after what settled before it in this read was heard.
    if (run !== undefined && !run.startNoticed) queueMicrotask(() => run.noticeStart(this.#listenerFailed));
    return run?.ctx;
  }

  /** A run's outcome from its thread: it resolves, or rejects (it failed, or ended after its cancel). */
  settleOutcome(run: PendingRun, outcome: TaskWorkerOutcome): void {
    if (run.settled) return;
    run.noticeStart(this.#listenerFailed);
    const { batch, position } = run;
    if (run.cancelReason !== null) {
      // The task ended on its own after the cancel (on its signal or by finishing): the attempt is canceled either way.
      this.reject(run, canceledAfterOutcome(this.scope, run.ctx, run.cancelReason, outcome));
    } else if (outcome.ok) {
      this.#completed++;
      if (this.#finish(run)) run.resolve({ output: outcome.output, leakedPagesReleased: outcome.leakedPagesReleased });
    } else {
      this.reject(run, outcomeFailure(this.scope, run.ctx, run.invocation.taskModule, outcome));
    }
    if (batch === null) return;
    // The thread went on with the next run of the batch as it posted this outcome. Told after the
    // reactions to this run's settling (queued just now), so a listener hears this run end first.
    queueMicrotask(() => this.noticeNextStart(batch, position + 1));
  }

  /** The run of `batch` from `position` on that will still run is starting: tell it. */
  noticeNextStart(batch: Batch, position: number): void {
    nextToStart(batch, position)?.noticeStart(this.#listenerFailed);
  }

  /** Fails a run (counted failed, and canceled when it was). */
  reject(run: PendingRun, error: Error): void {
    if (!this.#finish(run)) return;
    this.#failed++;
    if (isCanceledError(error)) this.#canceled++;
    run.reject(error);
  }

  /** Marks a run settled and lets go of it; false when it was already. Its flag is freed once no thread can read it. */
  #finish(run: PendingRun): boolean {
    if (run.settled) return false;
    run.settled = true;
    if (run.graceTimer !== undefined) this.clock.clearTimeout(run.graceTimer);
    if (run.onAbort !== undefined) run.signal?.removeEventListener('abort', run.onAbort);
    this.#runs.delete(run.number);
    if (run.batch === null) this.flags.release(run);
    return true;
  }
}
