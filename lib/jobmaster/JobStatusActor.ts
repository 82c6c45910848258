/**
 * A JobMaster's status actor: jobStatus.machine, provided once for every JobMaster, started on the
 * JobMaster's mailbox clock (the restart delay fires into its mailbox), its status changes told as
 * they settle, and the failures reported to it. The machine decides whether and when a failed job
 * restarts; restartTasks, its effect, runs the JobMaster's restart.
 */
import { createActor, type Actor, type InspectionEvent, type Snapshot } from 'xstate';
import type { Clock } from '../core/clock.js';
import {
  jobStatusMachine,
  type JobStatus,
  type JobStatusEvent,
  type RestartBackoffTimeStrategy,
} from '../../machines/jobStatus.machine.js';

/** What restartTasks does for each JobMaster's status actor (the machine is provided once, not per job). */
const restartsOf = new WeakMap<object, () => void>();
/**
 * The status machine with its effect: one for every JobMaster, since `provide` makes a whole new
 * machine (its state nodes built again), which cost a small job more than its status changes.
 */
const JOB_STATUS = jobStatusMachine.provide({
  actions: { restartTasks: ({ self }) => restartsOf.get(self)?.() },
});

/**
 * Every job's status actor starts in `created` with the same context but its restart strategy: that first snapshot is
 * computed once and each actor starts from a copy of it with its own strategy (XState working out an initial snapshot
 * was ~10 KB of allocation and ~4 µs per job; `created` has no entry action or timer, so nothing is skipped).
 */
let createdSnapshot: Snapshot<unknown> | undefined;
function startingSnapshot(restartStrategy: RestartBackoffTimeStrategy): Snapshot<unknown> {
  createdSnapshot ??= createActor(JOB_STATUS, { input: { restartStrategy } }).getPersistedSnapshot();
  const first = createdSnapshot as unknown as { readonly context: object };
  return { ...first, context: { ...first.context, restartStrategy } } as unknown as Snapshot<unknown>;
}

export interface JobStatusActorOptions {
  /** The JobMaster's mailbox clock: the machine's delays fire into its mailbox. */
  readonly clock: Clock;
  readonly restartStrategy: RestartBackoffTimeStrategy;
  /** A number in [0, 1) per failure: the exponential delay's jitter (Math.random, or a test's own source). */
  readonly random: () => number;
  readonly inspect?: (event: InspectionEvent) => void;
  /** The status changed; `cause` is the failure cause for failing, restarting, failed, canceling, canceled. */
  readonly onStatus: (status: JobStatus, cause: string | null) => void;
  /** The machine's restartTasks: give the failed subtasks their next attempt. */
  readonly restart: () => void;
}

export class JobStatusActor {
  readonly actor: Actor<typeof jobStatusMachine>;
  readonly #clock: Clock;
  readonly #random: () => number;
  /** Effects that read the job's status, run once the status machine's snapshot is settled. */
  #whenSettled: Array<() => void> = [];
  /** When the job was created (its first status) and ended (its final one): epoch ms, -1 before. */
  #startTime = -1;
  #endTime = -1;

  constructor(options: JobStatusActorOptions) {
    this.#clock = options.clock;
    this.#random = options.random;
    this.actor = createActor(JOB_STATUS, {
      clock: options.clock,
      // The snapshot is what it starts from; the input only satisfies the type (XState reads it when there is none).
      snapshot: startingSnapshot(options.restartStrategy),
      input: { restartStrategy: options.restartStrategy },
      ...(options.inspect ? { inspect: options.inspect } : {}),
    });
    // XState runs an action before the snapshot it leads to is set, and the restart reads the status
    // (running again): it runs once the status event is out, as the subscriber below settles.
    restartsOf.set(this.actor, () => void this.#whenSettled.push(options.restart));
    let last: JobStatus | null = null;
    this.actor.subscribe((snapshot) => {
      const status = snapshot.value as JobStatus;
      if (status !== last) {
        last = status;
        if (this.#startTime < 0) this.#startTime = this.#clock.now();
        if (status === 'finished' || status === 'failed' || status === 'canceled') this.#endTime = this.#clock.now();
        const cause =
          status === 'created' || status === 'running' || status === 'finished' ? null : snapshot.context.failureCause;
        options.onStatus(status, cause);
      }
      for (const effect of this.#whenSettled.splice(0)) effect();
    });
    this.actor.start();
  }

  get status(): JobStatus {
    return this.actor.getSnapshot().value as JobStatus;
  }

  /** When the job was created and ended (Flink's job start-time and end-time): epoch ms, -1 before. */
  get times(): { readonly startTime: number; readonly endTime: number } {
    return { startTime: this.#startTime, endTime: this.#endTime };
  }

  /** Restarts made so far (Flink's numberOfRestarts). */
  get restarts(): number {
    return this.actor.getSnapshot().context.restarts;
  }

  /** The restart the machine has pending (while `restarting`): when it is due and after what delay; else null. */
  get pendingRestart(): { readonly restartAt: number; readonly delayMs: number } | null {
    const snapshot = this.actor.getSnapshot();
    if (snapshot.value !== 'restarting' || snapshot.context.restartAt === null) return null;
    return { restartAt: snapshot.context.restartAt, delayMs: snapshot.context.restartDelayMs };
  }

  send(event: JobStatusEvent): void {
    this.actor.send(event);
  }

  /**
   * An attempt failed: running → failing (which inspectors and the job's events show), then the
   * machine's strategy decides — restarting (its delay, then the restart) or failed. While
   * restarting, the failure is handled there. The failure goes in with its time and a draw of the
   * random source: the machine reads no clock and no randomness of its own.
   */
  reportFailure(cause: string): void {
    this.actor.send({ type: 'TASK_FAILED', cause });
    this.actor.send({ type: 'HANDLE_FAILURE', at: this.#clock.now(), random: this.#random() });
  }

  /**
   * One attempt failed while another of its subtask can still finish (speculative execution): the strategy counts it
   * and nothing restarts — unless no restart is left, and then the job is `failed` (Flink's
   * handleLocalExecutionAttemptFailure).
   */
  reportLocalFailure(cause: string): void {
    this.actor.send({ type: 'LOCAL_FAILURE', cause, at: this.#clock.now(), random: this.#random() });
  }
}
