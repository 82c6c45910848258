/**
 * The jobs a TaskExecutor serves and the connection to each one's JobMaster (Flink's JobTable and
 * its JobManager connections): the gateway of the address a slot request named, and the task state
 * updates for it. Connecting registers this TaskExecutor at the JobMaster (Flink's
 * JobLeaderService: registerTaskManager), which takes slots only from TaskExecutors registered with
 * it; the offer that follows goes on the same ordered link, so the JobMaster has the registration
 * when it judges the offer (Flink awaits the registration before offering: the same outcome, one
 * round trip more). A refused registration drops the connection (the next slot request of the job
 * connects again); letting go of a job tells its JobMaster (disconnectTaskManager).
 *
 * Updates go out in order, as one updateTaskExecutionStates call per job once the event loop has
 * handled every message waiting for it (setImmediate), and before anything else the TaskExecutor
 * sends that JobMaster (a slot offer, a freed slot: it flushes first) or its link closes. Updates
 * that end no attempt (initializing, running) wait up to {@link INTERMEDIATE_STATES_DELAY_MS} for one
 * that does, so that a short task's states go in one call.
 *
 * It runs on the TaskExecutor's mailbox.
 */
import { describeError } from '../core/errors.js';
import { ExecutionAttemptID, JobID, type ResourceID } from '../core/ids.js';
import type { JobMasterGateway } from '../rpc/gateways.js';
import type { MainThreadExecutor, ScheduledTask } from '../rpc/MainThreadExecutor.js';
import type { TaskExecutionStateWire } from '../rpc/protocol.js';

/**
 * How long an update that ends no attempt (initializing, running) may wait for one that does before it goes out alone.
 * A short task's initializing and running went in one call and its end in a second, a cross-thread post and a JobMaster
 * turn each (1.6–1.8 calls per p = 1 job); waiting, its three states go in one. A JobMaster sees a longer task start
 * this much later; an attempt's end is never held (it goes out once the event loop has handled what waits, as before).
 */
export const INTERMEDIATE_STATES_DELAY_MS = 2;

export interface JobTableOptions {
  /** This TaskExecutor, as it registers at JobMasters. */
  readonly resourceId: ResourceID;
  /** Runs everything here; its clock times the flush of updates that end no attempt (INTERMEDIATE_STATES_DELAY_MS). */
  readonly mailbox: MainThreadExecutor;
  /** A JobMaster by its address, connected. */
  readonly connect: (address: string) => JobMasterGateway;
  /** Lets go of a JobMaster's connection once the job is let go of (its channels on the Link). */
  readonly disconnect?: (address: string) => void;
  readonly log: (message: string) => void;
}

interface Connection {
  readonly address: string;
  readonly gateway: JobMasterGateway;
}

export class JobTable {
  readonly #o: JobTableOptions;
  readonly #jobs = new Map<JobID, Connection>();
  /** State updates not sent yet, per job: what a turn of the event loop produced goes out as one call. */
  readonly #pending = new Map<JobID, { gateway: JobMasterGateway; updates: TaskExecutionStateWire[] }>();
  /** A flush is queued for the end of this poll phase (an update that ends an attempt is waiting). */
  #flushScheduled = false;
  /** The flush of updates that end no attempt, INTERMEDIATE_STATES_DELAY_MS after the first; null when none waits. */
  #delayedFlush: ScheduledTask | null = null;

  constructor(options: JobTableOptions) {
    this.#o = options;
  }

  /** The job's JobMaster is at `address`: connected and registered at once per address. */
  connect(jobId: JobID, address: string): void {
    if (this.#jobs.get(jobId)?.address === address) return;
    const connection: Connection = { address, gateway: this.#o.connect(address) };
    this.#jobs.set(jobId, connection);
    const registration = connection.gateway.registerTaskManager(jobId, this.#o.resourceId);
    this.#o.mailbox.whenComplete(registration, (response, error) => {
      if (error !== undefined) {
        this.#o.log(`registering at the JobMaster of job ${JobID.short(jobId)} failed: ${describeError(error)}`);
      } else if (response?.kind === 'refused') {
        this.#o.log(`the JobMaster of job ${JobID.short(jobId)} refused our registration: ${response.reason}`);
        if (this.#jobs.get(jobId) === connection) this.#jobs.delete(jobId);
      }
    });
  }

  /** The job's JobMaster, if it is known. */
  gateway(jobId: JobID): JobMasterGateway | undefined {
    return this.#jobs.get(jobId)?.gateway;
  }

  /**
   * The job no longer has slots here: its last task states go out, then its JobMaster is told we let
   * go of the job (Flink's disconnectTaskManager) and forgotten.
   */
  release(jobId: JobID, cause: string): void {
    const connection = this.#jobs.get(jobId);
    if (connection === undefined) return;
    this.flush(jobId);
    this.#jobs.delete(jobId);
    this.#o.mailbox.whenComplete(connection.gateway.disconnectTaskManager(this.#o.resourceId, cause), () => {
      // Connected again meanwhile (the same JobMaster, a slot of the job again): its channels stay.
      if (this.#jobs.get(jobId)?.address !== connection.address) this.#o.disconnect?.(connection.address);
    });
  }

  /**
   * The JobManager's leader changed (Flink's JobLeaderListener.jobManagerLostLeadership): every job's JobMaster is
   * forgotten without a word (the deposed one would not be heard), its queued updates dropped and its channels
   * closed. Returns each job and the address its JobMaster had: the new leader's JobMaster of a recovered job serves
   * the same address.
   */
  forgetAll(): Array<[JobID, string]> {
    const forgotten: Array<[JobID, string]> = [...this.#jobs].map(([jobId, { address }]) => [jobId, address]);
    this.#jobs.clear();
    this.#pending.clear();
    this.#cancelDelayedFlush();
    for (const [, address] of forgotten) this.#o.disconnect?.(address);
    return forgotten;
  }

  /** Queues a task state update for its job's JobMaster (dropped when none is known). */
  report(update: TaskExecutionStateWire): void {
    const { jobId } = update;
    const connection = this.#jobs.get(jobId);
    if (connection === undefined) return;
    let pending = this.#pending.get(jobId);
    if (pending === undefined || pending.gateway !== connection.gateway) {
      if (pending !== undefined) this.flush(jobId);
      pending = { gateway: connection.gateway, updates: [] };
      this.#pending.set(jobId, pending);
    }
    pending.updates.push(update);
    if (this.#flushScheduled) return;
    const { state } = update;
    if (state === 'finished' || state === 'failed' || state === 'canceled') {
      this.#flushScheduled = true;
      // After the event loop's poll phase: every task result that arrived in it (each a message
      // of its own, each followed by its own ticks) shares one call, hence one cross-thread hop.
      setImmediate(() => this.#o.mailbox.execute(() => this.flushAll()));
    } else {
      this.#delayedFlush ??= this.#o.mailbox.schedule(() => this.flushAll(), INTERMEDIATE_STATES_DELAY_MS);
    }
  }

  /** Sends every job's queued updates now. */
  flushAll(): void {
    this.#flushScheduled = false;
    for (const jobId of [...this.#pending.keys()]) this.flush(jobId);
    this.#cancelDelayedFlush();
  }

  #cancelDelayedFlush(): void {
    this.#delayedFlush?.cancel();
    this.#delayedFlush = null;
  }

  /** Sends the job's queued state updates now (one call), if there are any. */
  flush(jobId: JobID): void {
    const pending = this.#pending.get(jobId);
    if (pending === undefined) return;
    this.#pending.delete(jobId);
    if (this.#pending.size === 0) this.#cancelDelayedFlush();
    const { updates } = pending;
    this.#o.mailbox.whenComplete(pending.gateway.updateTaskExecutionStates(updates), (_, failure) => {
      if (failure !== undefined) {
        const what = updates.map((u) => `${u.state} of ${ExecutionAttemptID.short(u.executionAttemptId)}`);
        const shown = what.length > 4 ? `${what.slice(0, 4).join(', ')} and ${what.length - 4} more` : what.join(', ');
        this.#o.log(`reporting ${shown} failed: ${describeError(failure)}`);
      }
    });
  }
}
