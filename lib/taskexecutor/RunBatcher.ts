/**
 * The runs of a slot's pool between their submit and their end: the queue, the batches sent to the
 * threads, re-queueing after a lost thread, cancels, and the start notices inferred from the order
 * things happen in. It makes no thread and knows no piscina: a batch goes out by the injected
 * `send`, aborts and the runs' messages by the injected `postAbort` / `readPosted`, a thread's
 * termination by the injected `terminateThread` (SlotTaskPool wires them to its thread's port and
 * piscina; tests to a fake).
 * How each run ends (its outcome or error, its start told once, the counts) is PendingRuns'
 * (PendingRun.ts); how the waiting runs are cut into batches is RunQueue's.
 *
 * Batches: runs waiting for the pool's thread go to it several per call (up to 16; two calls are kept
 * out, so the thread finds the next as it ends one, and the waiting runs are split over the free places,
 * so a run submitted to an idle pool goes alone at once: RunQueue.ts cuts them). A call costs the
 * TaskExecutor's thread more than a trivial task: a batch pays it once. The thread runs a batch's
 * runs one after another and posts
 * each outcome as it ends (the last comes back as the call's result), so a run settles when it
 * ends, not when its batch does. A run still queued in a batch is canceled by claiming its flag
 * first (the thread then skips it). When a batch's thread is lost (a forced cancel, the run out of
 * heap or exiting), the run that was running gets the error and the batch's other unsettled runs
 * are re-queued (each at most 3 times; after that it fails with the error that lost the thread). A
 * batch that cannot be cloned is re-sent one run per call, so only the run whose invocation cannot
 * be sent is refused. A slot's pool has one thread (SlotTaskPool).
 *
 * Cancel: the run's task is asked to stop first (`postAbort`: its context.signal); if it has not
 * ended after the grace period, its thread is terminated (`terminateThread`). Either way the run
 * rejects `canceled`.
 */
import { systemClock, type Clock } from '../core/clock.js';
import { PendingRun, PendingRuns, type Batch, type PendingRunsCounts, type TaskResult } from './PendingRun.js';
import { cancelQueued, isStarted, type RunFlags } from './runFlags.js';
import { RunQueue } from './RunQueue.js';
import type { RunStartListener, TaskInvocation } from './TaskInvocation.js';
import { classifyPoolFailure, isDataCloneError, label, taskError, type FailureScope } from './taskFailure.js';
import type {
  TaskInvocationContext,
  TaskWorkerBatch,
  TaskWorkerBatchItem,
  TaskWorkerBatchResult,
  TaskWorkerOutcome,
} from './taskThreadProtocol.js';

/** A run is re-queued at most this often after its batch's thread was lost (then it fails with that error). */
const MAX_REQUEUES = 3;
/** Batches out on the thread at once: as it ends one, the next is there. */
const MAX_BATCHES_IN_FLIGHT = 2;

export interface RunBatcherOptions {
  readonly scope: FailureScope;
  /** The pool's name, which every batch carries (its runs' messages name it). */
  readonly pool: string;
  readonly flags: RunFlags;
  /**
   * The pool call: resolves with the batch's last outcome; rejects when the call failed (its thread lost, the batch not
   * sendable).
   */
  readonly send: (batch: TaskWorkerBatch) => Promise<TaskWorkerBatchResult>;
  /** Reads what the runs posted and is still waiting: their outcomes come to {@link RunBatcher.outcome} first. */
  readonly readPosted: () => void;
  /** Fires a running run's context.signal. */
  readonly postAbort: (run: number, reason: string) => void;
  /** Terminates the pool's thread (a forced stop). */
  readonly terminateThread: () => void;
  /** The exit code of a thread that ended just now (its 'exit' event), or null. */
  readonly threadExitCode: () => number | null;
  /** The pool's warnings about a run. */
  readonly log: (level: 'warn' | 'error', message: string, ctx: TaskInvocationContext) => void;
  /** Times the cancel grace periods; default the system clock. */
  readonly clock?: Pick<Clock, 'setTimeout' | 'clearTimeout'>;
}

export interface RunBatcherCounts extends PendingRunsCounts {
  /** Pool calls sent so far. */
  readonly batches: number;
}

export class RunBatcher {
  readonly #o: RunBatcherOptions;
  readonly #clock: Pick<Clock, 'setTimeout' | 'clearTimeout'>;
  /** Every run not settled, by number. */
  readonly #runs: PendingRuns;
  /** Runs not yet in a batch. */
  readonly #queue = new RunQueue();
  /** The batches sent and not returned, in the order they were sent. */
  readonly #inFlight: Batch[] = [];
  /** The buffers the pool's thread was last sent (null: it may have none, send them with the next batch). */
  #sent: { readonly started: SharedArrayBuffer; readonly memory: TaskInvocation['memory'] } | null = null;
  #dispatchScheduled = false;
  #open = false;
  #closing = false;
  #nextRun = 1;
  #batches = 0;

  constructor(options: RunBatcherOptions) {
    this.#o = options;
    this.#clock = options.clock ?? systemClock;
    this.#runs = new PendingRuns(options.scope, options.flags, this.#clock, options.log);
  }

  get counts(): RunBatcherCounts {
    return { ...this.#runs.counts, batches: this.#batches };
  }

  /** Whether a batch is out on a thread (its call not returned): the thread is busy, whatever the runs' states. */
  get busy(): boolean {
    return this.#inFlight.length > 0;
  }

  /** The threads are there: queued runs go out. */
  open(): void {
    this.#open = true;
    this.#scheduleDispatch();
  }

  /** A thread was replaced: the next batch brings the buffers again. */
  threadLost(): void {
    this.#sent = null;
  }

  /**
   * Queues one run (see the module comment); its promise settles when it ends. Not async: the caller's reactions hang
   * on the very promise a run settles.
   */
  submit(
    invocation: TaskInvocation,
    signal: AbortSignal | undefined,
    listener: RunStartListener | undefined,
  ): Promise<TaskResult> {
    const ctx = invocation.context;
    if (signal?.aborted) {
      this.#runs.refusedCanceled();
      return Promise.reject(
        taskError(this.#o.scope, 'canceled', ctx, `canceled before it started: ${reasonText(signal.reason)}`, {
          stoppedBy: 'before-start',
        }),
      );
    }
    return new Promise<TaskResult>((resolve, reject) => {
      const { flags, index } = this.#o.flags.claim();
      const run = new PendingRun(flags, index, this.#nextRun++, invocation, signal, listener, resolve, reject);
      this.#runs.add(run);
      if (signal !== undefined) {
        run.onAbort = () => this.#cancel(run, reasonText(signal.reason));
        signal.addEventListener('abort', run.onAbort, { once: true });
      }
      this.#queue.push(run);
      this.#scheduleDispatch();
    });
  }

  /** Cancels every unsettled run of the attempt; false when none is here. */
  cancel(executionAttemptId: string, reason: string): boolean {
    const runs = this.#runs.ofAttempt(executionAttemptId);
    for (const run of runs) this.#cancel(run, reason);
    return runs.length > 0;
  }

  /** A run's outcome, posted by its thread. */
  outcome(runNumber: number, outcome: TaskWorkerOutcome): void {
    const run = this.#runs.get(runNumber);
    if (run !== undefined) this.#runs.settleOutcome(run, outcome);
  }

  /** A run was heard from (it logs: it runs); its context, for the log line, when it is still here. */
  heardFrom(runNumber: number): TaskInvocationContext | undefined {
    return this.#runs.heardFrom(runNumber);
  }

  /** Fails every queued run with `error` (the threads could not be made). */
  failQueued(error: unknown): void {
    for (const run of this.#queue.drain())
      if (!run.settled) this.#runs.reject(run, this.#poolFailure(run, error, false));
  }

  /** No more batches; the runs not sent end as the pool's threads end the ones they hold. */
  close(): void {
    if (this.#closing) return;
    this.#closing = true;
    for (const run of this.#queue.drain())
      if (!run.settled) this.#runs.reject(run, this.#poolFailure(run, new Error('Terminating worker thread'), false));
  }

  /** A run's signal fired, or {@link cancel} named it. */
  #cancel(run: PendingRun, reason: string): void {
    if (run.settled || run.cancelReason !== null) return;
    run.cancelReason = reason;
    const { batch } = run;
    const { scope } = this.#o;
    // Queued here, or in a batch whose thread has not claimed it yet: it never runs (its thread skips it).
    if (batch === null || cancelQueued(run)) {
      run.stoppedBy = 'before-start';
      this.#runs.reject(
        run,
        taskError(scope, 'canceled', run.ctx, `canceled (${reason}); it had not started`, {
          stoppedBy: 'before-start',
          graceMs: scope.cancelGraceMs,
        }),
      );
      return;
    }
    if (scope.cancelGraceMs === 0) {
      this.#force(run, batch);
      return;
    }
    this.#o.postAbort(run.number, reason);
    run.graceTimer = this.#clock.setTimeout(() => {
      run.graceTimer = undefined;
      // Its outcome may be here already: a thread is only terminated for a run still running.
      this.#o.readPosted();
      if (run.settled || run.batch !== batch) return;
      this.#o.log(
        'warn',
        `task ${label(run.ctx)} did not stop within ${scope.cancelGraceMs} ms of its cancel: terminating its thread`,
        run.ctx,
      );
      this.#force(run, batch);
    }, scope.cancelGraceMs);
  }

  /** Terminates the thread running `run` (and its batch): the batch's other unfinished runs are re-queued. */
  #force(run: PendingRun, batch: Batch): void {
    run.stoppedBy = 'forced';
    batch.forcedRun = run;
    // The pool sees the thread exit, fails its call and starts another thread.
    this.#o.terminateThread();
  }

  #scheduleDispatch(): void {
    if (this.#dispatchScheduled) return;
    this.#dispatchScheduled = true;
    // A microtask later: runs submitted in the same turn share batches.
    queueMicrotask(() => this.#dispatch());
  }

  /** Sends queued runs in batches (RunQueue) while fewer than MAX_BATCHES_IN_FLIGHT are out. */
  #dispatch(): void {
    this.#dispatchScheduled = false;
    // No threads yet (piscina still loading): the runs wait; open() dispatches them.
    if (this.#closing || !this.#open) return;
    while (this.#inFlight.length < MAX_BATCHES_IN_FLIGHT) {
      const runs = this.#queue.takeBatch(MAX_BATCHES_IN_FLIGHT - this.#inFlight.length);
      if (runs === null) return;
      this.#startBatch(runs);
    }
  }

  #startBatch(runs: PendingRun[]): void {
    const batch: Batch = { runs, forcedRun: null };
    // The thread is free for it (no batch out): its first run starts now.
    const startsNow = this.#inFlight.length === 0;
    this.#inFlight.push(batch);
    this.#batches++;
    const items: TaskWorkerBatchItem[] = [];
    for (let position = 0; position < runs.length; position++) {
      const run = runs[position]!;
      run.batch = batch;
      run.position = position;
      const { taskModule, context, inputs, encoded, partition, config } = run.invocation;
      // Listed, not spread: one shape for every item.
      items.push({ taskModule, context, inputs, encoded, partition, config, run: run.number, index: run.index });
    }
    if (startsNow) this.#runs.noticeNextStart(batch, 0);
    const first = runs[0]!;
    const started = first.flags.buffer as SharedArrayBuffer;
    const { memory } = first.invocation;
    // The buffers go only when the thread may not have them: it keeps the last ones per pool.
    const { pool } = this.#o;
    const fresh = this.#sent === null || this.#sent.started !== started || this.#sent.memory !== memory;
    if (fresh) this.#sent = { started, memory };
    const payload: TaskWorkerBatch = fresh ? { pool, started, memory, items } : { pool, items };
    this.#o.send(payload).then(
      (result) => this.#batchEnded(batch, true, undefined, result),
      (error: unknown) => this.#batchEnded(batch, false, error, null),
    );
  }

  #batchEnded(batch: Batch, returned: boolean, error: unknown, last: TaskWorkerBatchResult): void {
    const at = this.#inFlight.indexOf(batch);
    if (at < 0) return;
    this.#inFlight.splice(at, 1);
    // The outcomes and logs its runs posted before it ended came before its end: read any still waiting.
    this.#o.readPosted();
    if (last !== null) {
      const run = this.#runs.get(last.run);
      if (run !== undefined && run.batch === batch) this.#runs.settleOutcome(run, last.outcome);
    }
    if (!returned) {
      this.#batchFailed(batch, error);
    } else {
      for (const run of batch.runs) {
        if (run.settled) continue;
        // Defensive: a batch that returned has posted or returned every outcome.
        if (isStarted(run))
          this.#runs.reject(
            run,
            taskError(this.#o.scope, 'thread-exited', run.ctx, 'ended without its outcome reaching the pool', {}),
          );
        else this.#requeue(run, new Error('the batch ended before it started'));
      }
    }
    for (const run of batch.runs) {
      if (run.batch !== batch) continue;
      run.batch = null;
      // After a lost thread its flags are not reused (RunFlags.release).
      if (run.settled && returned) this.#o.flags.release(run);
    }
    // The thread takes the next batch out (told after this batch's last run was heard to end).
    const next = this.#inFlight[0];
    if (next !== undefined) queueMicrotask(() => this.#runs.noticeNextStart(next, 0));
    this.#scheduleDispatch();
  }

  /**
   * The batch's call rejected: its thread was terminated (a forced cancel, the pool closing), ran out
   * of heap or exited, or the batch could not be sent. The run that was running gets the error;
   * the runs that had not started are re-queued (a batch that could not be sent: one by one).
   */
  #batchFailed(batch: Batch, error: unknown): void {
    // The thread may be a new one (a lost one is replaced): it has none of the buffers.
    this.#sent = null;
    const unsendable = isDataCloneError(error);
    if (unsendable && batch.runs.length > 1) {
      for (const run of batch.runs) {
        if (run.settled) continue;
        run.solo = true;
        this.#requeue(run, error, true);
      }
      return;
    }
    for (const run of batch.runs) {
      if (run.settled) continue;
      const own = batch.forcedRun === null ? isStarted(run) || unsendable || this.#closing : run === batch.forcedRun;
      if (own) this.#runs.reject(run, this.#poolFailure(run, error, true));
      else this.#requeue(run, error);
    }
  }

  /** Puts a run of a lost batch back at the head of the queue (at most MAX_REQUEUES times), or fails it. */
  #requeue(run: PendingRun, error: unknown, free = false): void {
    if (run.cancelReason !== null) {
      // Its cancel was on its way to a thread that is gone: the thread's termination stopped it.
      const { scope } = this.#o;
      this.#runs.reject(
        run,
        taskError(scope, 'canceled', run.ctx, `canceled (${run.cancelReason}); its thread was terminated`, {
          stoppedBy: 'forced',
          graceMs: scope.cancelGraceMs,
        }),
      );
      return;
    }
    if (this.#closing || (!free && ++run.requeues > MAX_REQUEUES)) {
      this.#runs.reject(
        run,
        this.#closing
          ? this.#poolFailure(run, new Error('Terminating worker thread'), false)
          : this.#poolFailure(run, error, true),
      );
      return;
    }
    run.batch = null;
    // A new flag: the lost thread's is not reused (see #batchEnded).
    ({ flags: run.flags, index: run.index } = this.#o.flags.claim());
    this.#queue.requeue(run);
  }

  /**
   * The error for a run whose pool call failed with `error` (`lostThread`: the call's own failure, whose thread may
   * have exited just now).
   */
  #poolFailure(run: PendingRun, error: unknown, lostThread: boolean): Error {
    return classifyPoolFailure(this.#o.scope, run.ctx, {
      error,
      cancelReason: lostThread ? run.cancelReason : null,
      stoppedBy: lostThread ? run.stoppedBy : null,
      poolClosing: this.#closing,
      threadExitCode: lostThread ? this.#o.threadExitCode() : null,
    });
  }
}

function reasonText(reason: unknown): string {
  if (reason === undefined) return 'canceled';
  if (typeof reason === 'string') return reason;
  if (reason instanceof Error) return reason.message;
  return String(reason);
}
