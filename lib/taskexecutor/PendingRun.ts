/**
 * A run of a slot's pool not settled yet, and the batch (one pool call) it rides in: the state the
 * RunBatcher keeps per run. A class, so every run has one shape (it is hot on the TaskExecutor's
 * thread).
 */
import type { TimerHandle } from '../core/clock.js';
import { isCanceled, type RunFlag } from './runFlags.js';
import type { RunStartListener, TaskInvocation } from './TaskInvocation.js';
import type { StoppedBy } from './taskFailure.js';
import type { TaskInvocationContext } from './taskThreadProtocol.js';

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

  /** Tells its listener, once, that it started (never after it settled); a listener that throws is `onError`'s to report. */
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
  /**
   * Aborting it terminates the thread running the batch (piscina's abort), when the pool has more
   * than one thread (which one runs the batch is piscina's to know); with one thread, null: that
   * thread is terminated directly, and no signal (and its listeners) is paid for every call.
   */
  readonly forced: AbortController | null;
  /** The run whose cancel forced that stop. */
  forcedRun: PendingRun | null;
}

/** The first run of `batch` from `position` on that will still run (not settled, not canceled before it started): the one starting. */
export function nextToStart(batch: Batch, position: number): PendingRun | undefined {
  for (let i = position; i < batch.runs.length; i++) {
    const run = batch.runs[i]!;
    if (!run.settled && run.batch === batch && !isCanceled(run)) return run;
  }
  return undefined;
}
