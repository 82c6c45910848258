/**
 * SlotStatusSyncer (Flink's DefaultSlotStatusSyncer): the only component that talks to
 * TaskExecutors about slots, and the one that keeps the slot records, the ResourceTracker and the
 * executors' own tables in agreement.
 *
 * - allocateSlot (Flink's DefaultSlotStatusSyncer.allocateSlot): the reservation becomes a pending
 *   slot and the job counts it as acquired at once; the TaskExecutor is asked; its acknowledgement
 *   marks the slot allocated; a refusal or no answer (see "Deadlines") frees it and reports the
 *   failure, after which the SlotManager re-plans with a new AllocationID — elsewhere, since the
 *   executor is blocked until its next slot report. An answer for an attempt already given up is
 *   ignored.
 * - freeSlot: free it here (no call: the TaskExecutor or the job freed it already).
 * - reportSlotStatus: reconcile a slot report (see the method).
 * - freeInactiveSlots: ask every executor holding slots of a finished job to free the inactive ones.
 *
 * Deadlines measure a silent executor, not our own queue. A gateway whose calls carry the rpc
 * layer's deadline (`deadline: 'transport'`: its clock starts when the call's frame has left, and
 * anything the peer sends extends it) gets none of ours: its RpcTimeoutError is the answer. Any other
 * (an in-process double) gets one here, judged by the same rule (rpc/callDeadline.ts): the request
 * fails once the executor has been heard from (an answer to any request, a slot report) not at all
 * for `rpc.ask.timeout` since it was asked, or 3× that after it was asked in any case.
 */
import type { Clock, TimerHandle } from '../../core/clock.js';
import { judgeCallDeadline } from '../../rpc/callDeadline.js';
import { DEFAULT_MAX_WAIT_FACTOR } from '../../rpc/connect.js';
import { describeError, RpcTimeoutError, SlotAllocationError } from '../../core/errors.js';
import { AllocationID, type JobID, type ResourceID } from '../../core/ids.js';
import type { ResourceProfile } from '../../core/ResourceProfile.js';
import type { SlotReport } from '../../core/SlotReport.js';
import type { ResourceTracker } from './ResourceTracker.js';
import { describeSlot } from './slotRecords.js';
import type { SlotReservation } from './SlotReservation.js';
import type { ResourceSlotRecord, TaskManagerRegistration } from './TaskManagerRegistration.js';
import type { TaskManagerTracker } from './TaskManagerTracker.js';

export type AllocationOutcome =
  | { readonly ok: true; readonly slot: ResourceSlotRecord }
  | {
      readonly ok: false;
      readonly allocationId: AllocationID;
      readonly jobId: JobID;
      readonly resourceId: ResourceID;
      readonly error: unknown;
      readonly tracked: boolean;
      /** The executor's slot report showed another allocation in the slot: no reason to doubt the executor. */
      readonly superseded: boolean;
    };

export interface ReconcileResult {
  /** Pending slots the report confirmed. */
  readonly completed: readonly ResourceSlotRecord[];
  /** Allocations the SlotManager did not know of and now does. */
  readonly adopted: readonly ResourceSlotRecord[];
  /** Allocated slots the report no longer shows, now free. */
  readonly freed: readonly ResourceSlotRecord[];
  /** Allocations reported here that the SlotManager holds on another executor (left to the executor's slot timeout). */
  readonly conflicts: readonly AllocationID[];
}

export interface SlotStatusSyncerOptions {
  readonly tracker: TaskManagerTracker;
  readonly resourceTracker: ResourceTracker;
  readonly clock: Clock;
  /** Deadline of a slot request (`rpc.ask.timeout`). */
  readonly rpcTimeout: number;
  /** Runs every RPC completion: the ResourceManager's mailbox (default: as it arrives). */
  readonly execute?: (task: () => void) => void;
  /** Told when an allocation settles (acknowledged, refused, or no answer), on `execute`. */
  readonly onAllocationSettled: (outcome: AllocationOutcome) => void;
  /**
   * Whether an AllocationID belongs to an imperative slot request (Flink's SlotRequest): such an
   * allocation, found in a report (its answer came late, or never), answers the request and is not
   * counted in the job's ResourceTracker.
   */
  readonly isRequested?: (allocationId: AllocationID, jobId: JobID) => boolean;
  readonly log?: (message: string) => void;
}

const SETTLED = Promise.resolve();

interface Attempt {
  readonly allocationId: AllocationID;
  readonly slot: ResourceSlotRecord;
  /** The executor answered or the deadline passed, whichever came first (the other is ignored). */
  answered: boolean;
  /** When it was asked; our deadline for it, unless the gateway's transport keeps its own (undefined then). */
  readonly sentAt: number;
  deadline: DeadlineBatch | undefined;
}

/**
 * The slot requests sent at one clock time: they share their deadline and one clock timer (a check
 * sends thousands at once, and a timer per request was a good part of sending one). The timer is
 * cleared once every request of the batch is answered, as each request's own timer was.
 */
interface DeadlineBatch {
  readonly at: number;
  readonly attempts: Attempt[];
  unanswered: number;
  timer: TimerHandle | undefined;
}

export class SlotStatusSyncer {
  readonly #o: SlotStatusSyncerOptions;
  readonly #execute: (task: () => void) => void;
  /**
   * Allocations asked of an executor and not answered yet: each pending slot record holds the
   * attempt that asked (`inFlight`; no Map from AllocationID, which every slot a check places
   * would grow by one), and this counts them.
   */
  #inFlight = 0;
  /** When each executor was last heard from (an answer, a slot report): our deadlines wait while it is. */
  readonly #lastHeard = new WeakMap<TaskManagerRegistration, number>();
  /** The batch new requests join while the clock stays at its time. */
  #batch: DeadlineBatch | undefined;
  /**
   * Between beginAllocations and endAllocations: tracked slots not counted in the ResourceTracker yet, a run of one job
   * and profile.
   */
  #deferring = false;
  #uncounted: { readonly jobId: JobID; readonly profile: ResourceProfile; count: number } | undefined;

  constructor(options: SlotStatusSyncerOptions) {
    this.#o = options;
    this.#execute = options.execute ?? ((task) => task());
  }

  /** Allocations asked of executors and not answered yet. */
  get inFlight(): number {
    return this.#inFlight;
  }

  /**
   * Turns a planned reservation into a pending slot and asks its executor for it. `tracked`: count
   * it in the job's ResourceTracker (false for an imperative request, which is tracked by its own
   * AllocationID). Returns the slot record, pending.
   */
  allocateSlot(
    reservation: SlotReservation,
    request: { allocationId?: AllocationID; targetAddress: string; tracked: boolean },
  ): ResourceSlotRecord {
    const allocationId = request.allocationId ?? AllocationID.generate();
    const slot = this.#o.tracker.assignPending(reservation, allocationId, request.tracked);
    if (request.tracked) this.#acquired(reservation.jobId, slot.profile);
    // What #withDeadline does, without its promise, closures and timer per call (this runs once per
    // slot a check places): the first of the answer and the deadline settles the attempt, one
    // microtask later, as the deadline promise's own continuation did.
    const { taskManager } = reservation;
    const attempt: Attempt = {
      allocationId,
      slot,
      answered: false,
      sentAt: this.#o.clock.now(),
      deadline: taskManager.gateway.deadline === 'transport' ? undefined : this.#deadlineBatch(),
    };
    if (attempt.deadline !== undefined) {
      attempt.deadline.attempts.push(attempt);
      attempt.deadline.unanswered++;
    }
    this.#setInFlight(slot, attempt);
    let call: Promise<void>;
    try {
      call = taskManager.gateway.requestSlot({
        index: slot.index,
        jobId: reservation.jobId,
        allocationId,
        resourceProfile: slot.profile,
        targetAddress: request.targetAddress,
      });
    } catch (error) {
      call = Promise.reject(error);
    }
    call.then(
      () => this.#heardFrom(taskManager, attempt, undefined),
      (error: unknown) => this.#heardFrom(taskManager, attempt, error ?? new Error('slot request failed')),
    );
    return slot;
  }

  #setInFlight(slot: ResourceSlotRecord, attempt: Attempt | null): void {
    if (slot.inFlight !== null) this.#inFlight--;
    if (attempt !== null) this.#inFlight++;
    slot.inFlight = attempt;
  }

  /** The batch a request sent now joins (a new one, with its timer, when the clock has moved). */
  #deadlineBatch(): DeadlineBatch {
    const { clock, rpcTimeout } = this.#o;
    const at = clock.now() + rpcTimeout;
    if (this.#batch?.at === at && this.#batch.timer !== undefined) return this.#batch;
    const batch: DeadlineBatch = { at, attempts: [], unanswered: 0, timer: undefined };
    batch.timer = clock.setTimeout(() => this.#deadlinePassed(batch), rpcTimeout);
    this.#batch = batch;
    return batch;
  }

  /** The executor answered a request (its own answer, not our deadline, or its transport's): it is alive. */
  #heardFrom(taskManager: TaskManagerRegistration, attempt: Attempt, error: unknown): void {
    if (!(error instanceof RpcTimeoutError)) this.#lastHeard.set(taskManager, this.#o.clock.now());
    this.#answered(attempt, error);
  }

  /**
   * A batch's deadline: each request still unanswered fails if its executor stayed silent, else waits on in a later
   * batch.
   */
  #deadlinePassed(batch: DeadlineBatch): void {
    batch.timer = undefined;
    if (this.#batch === batch) this.#batch = undefined;
    const { rpcTimeout, clock } = this.#o;
    const now = clock.now();
    const later: Array<{ attempt: Attempt; until: number }> = [];
    for (const attempt of batch.attempts) {
      if (attempt.answered) continue;
      const { taskManager } = attempt.slot;
      const lastHeardAt = this.#lastHeard.get(taskManager) ?? -Infinity;
      const verdict = judgeCallDeadline({
        sentAt: attempt.sentAt,
        lastHeardAt,
        now,
        timeoutMs: rpcTimeout,
        maxWaitMs: DEFAULT_MAX_WAIT_FACTOR * rpcTimeout,
      });
      if (verdict.kind === 'wait') {
        later.push({ attempt, until: verdict.until });
        continue;
      }
      const { resourceId } = taskManager;
      const waitedMs = now - attempt.sentAt;
      const why =
        verdict.kind === 'max-wait'
          ? `within ${waitedMs} ms, the most a request waits (${resourceId} kept answering others)`
          : verdict.heardSinceSent
            ? `within ${waitedMs} ms: ${resourceId} was silent for the last ${rpcTimeout} ms`
            : `within ${rpcTimeout} ms`;
      this.#answered(
        attempt,
        new RpcTimeoutError(`TaskExecutorGateway.requestSlot on ${resourceId} got no answer ${why}`, {
          gateway: 'TaskExecutorGateway',
          method: 'requestSlot',
          timeoutMs: rpcTimeout,
          resourceId,
          waitedMs,
          expired: verdict.kind,
        }),
      );
    }
    if (later.length === 0) return;
    const at = Math.min(...later.map((l) => l.until));
    const next: DeadlineBatch = {
      at,
      attempts: later.map((l) => l.attempt),
      unanswered: later.length,
      timer: undefined,
    };
    for (const attempt of next.attempts) attempt.deadline = next;
    next.timer = clock.setTimeout(() => this.#deadlinePassed(next), at - now);
  }

  /**
   * The executor answered (`error` undefined: acknowledged) or the deadline passed: settle the attempt in the next
   * microtask.
   */
  #answered(attempt: Attempt, error: unknown): void {
    if (attempt.answered) return;
    attempt.answered = true;
    const batch = attempt.deadline;
    if (batch !== undefined && --batch.unanswered === 0 && batch.timer !== undefined) {
      this.#o.clock.clearTimeout(batch.timer);
      batch.timer = undefined;
      if (this.#batch === batch) this.#batch = undefined;
    }
    // A resolved promise's continuation: the same microtask turn as queueMicrotask, without the
    // AsyncResource Node makes for each queueMicrotask. A throw still surfaces as an uncaught exception.
    void SETTLED.then(() => {
      try {
        this.#execute(() => this.#settle(attempt, attempt.slot, error));
      } catch (thrown) {
        queueMicrotask(() => {
          throw thrown;
        });
      }
    });
  }

  /**
   * From here to endAllocations, the tracked slots allocateSlot allocates are counted in the
   * ResourceTracker a run of the same job and profile at a time (notifyAcquiredResources), when
   * the run ends: a check places thousands of slots of a few profiles, and counting each on its
   * own was a good part of placing it. Nothing may read the ResourceTracker in between.
   */
  beginAllocations(): void {
    this.endAllocations();
    this.#deferring = true;
  }

  /** Counts what beginAllocations deferred; harmless when nothing is deferred. */
  endAllocations(): void {
    this.#deferring = false;
    const run = this.#uncounted;
    if (run === undefined) return;
    this.#uncounted = undefined;
    this.#o.resourceTracker.notifyAcquiredResources(run.jobId, run.profile, run.count);
  }

  #acquired(jobId: JobID, profile: ResourceProfile): void {
    if (!this.#deferring) {
      this.#o.resourceTracker.notifyAcquiredResource(jobId, profile);
      return;
    }
    const run = this.#uncounted;
    if (run !== undefined && run.jobId === jobId && (run.profile === profile || run.profile.equals(profile))) {
      run.count++;
      return;
    }
    this.endAllocations();
    this.#deferring = true;
    this.#uncounted = { jobId, profile, count: 1 };
  }

  /** The slot is free (released by its job, or by its executor): free it here too. */
  freeSlot(allocationId: AllocationID): ResourceSlotRecord | undefined {
    const slot = this.#o.tracker.getSlot(allocationId);
    if (slot === undefined) return undefined;
    this.#setInFlight(slot, null);
    if (slot.tracked) this.#o.resourceTracker.notifyLostResource(slot.jobId!, slot.profile);
    return this.#o.tracker.free(allocationId, 'FREE', slot);
  }

  /**
   * Frees every slot of an executor that is gone; returns, by job, the slots lost, leaving out
   * those `isRequested` claims (a request that will be placed again).
   */
  freeSlotsOf(
    taskManager: TaskManagerRegistration,
    isRequested: (allocationId: AllocationID) => boolean,
  ): Map<JobID, AllocationID[]> {
    const lost = new Map<JobID, AllocationID[]>();
    for (const slot of this.#o.tracker.slotsOf(taskManager)) {
      const allocationId = slot.allocationId!;
      if (!isRequested(allocationId)) lost.set(slot.jobId!, [...(lost.get(slot.jobId!) ?? []), allocationId]);
      this.freeSlot(allocationId);
    }
    return lost;
  }

  /**
   * Reconciles an executor's slot report with the records (Flink's reportSlotStatus):
   * an allocated slot the report does not show is freed; a pending slot the report shows is
   * complete (its answer may still be on its way, and will be ignored); a pending slot the report
   * does not show stays pending (the request may not have arrived yet); an allocation the report
   * shows and nobody knew of is adopted and counted for its job; one held on another executor is a
   * conflict, left alone (the executor's slot timeout frees it, as no JobMaster will activate it).
   */
  reportSlotStatus(taskManager: TaskManagerRegistration, report: SlotReport): ReconcileResult {
    this.#lastHeard.set(taskManager, this.#o.clock.now());
    const reported = new Map(report.slots.filter((s) => s.allocationId !== null).map((s) => [s.allocationId!, s]));
    const freed: ResourceSlotRecord[] = [];
    for (const slot of this.#o.tracker.slotsOf(taskManager)) {
      if (slot.state === 'allocated' && !reported.has(slot.allocationId!))
        freed.push(this.freeSlot(slot.allocationId!)!);
    }
    const completed: ResourceSlotRecord[] = [];
    const adopted: ResourceSlotRecord[] = [];
    const conflicts: AllocationID[] = [];
    for (const [allocationId, status] of reported) {
      const known = this.#o.tracker.getSlot(allocationId);
      if (known !== undefined && known.taskManager !== taskManager) {
        conflicts.push(allocationId);
        this.#o.log?.(
          `slot report of ${taskManager.resourceId} shows ` +
            `allocation ${allocationId}, held on ${known.taskManager.resourceId}: ignored`,
        );
      } else if (known?.state === 'pending') {
        this.#setInFlight(known, null);
        completed.push(this.#o.tracker.completeAllocation(allocationId));
      } else if (known === undefined) {
        // The executor holds that static index: a request still pending for it there cannot succeed.
        const occupant = taskManager.staticSlots[status.slotId.slotNumber];
        if (occupant?.state === 'pending' && occupant.allocationId !== null) {
          const attempt = occupant.inFlight as Attempt | null;
          const error = new SlotAllocationError(
            'index-taken',
            `${describeSlot(occupant)} is held by allocation ${allocationId}, as its slot report shows`,
            { index: occupant.index, holder: allocationId },
          );
          if (attempt !== null) this.#settle(attempt, occupant, error, true);
        }
        const tracked = !(this.#o.isRequested?.(allocationId, status.jobId!) ?? false);
        const slot = this.#o.tracker.adopt(
          taskManager,
          { index: status.slotId.slotNumber, allocationId, jobId: status.jobId!, profile: status.resourceProfile },
          tracked,
        );
        if (tracked) this.#o.resourceTracker.notifyAcquiredResource(status.jobId!, slot.profile);
        adopted.push(slot);
      }
    }
    return { completed, adopted, freed, conflicts };
  }

  /** Asks each executor holding slots of the job to free those that are allocated but inactive (fire and forget). */
  freeInactiveSlots(jobId: JobID): void {
    const executors = new Set<TaskManagerRegistration>();
    for (const slot of this.#o.tracker.slots) if (slot.jobId === jobId) executors.add(slot.taskManager);
    for (const taskManager of executors) {
      this.#withDeadline(taskManager, () => taskManager.gateway.freeInactiveSlots(jobId), 'freeInactiveSlots').catch(
        (error: unknown) =>
          this.#o.log?.(`freeInactiveSlots(${jobId}) on ${taskManager.resourceId} failed: ${describeError(error)}`),
      );
    }
  }

  /** Forgets every attempt in flight: their answers will be ignored. */
  close(): void {
    for (const slot of this.#o.tracker.slots) this.#setInFlight(slot, null);
    this.#inFlight = 0;
  }

  /** `superseded`: the executor's own report overtook the answer (no reason to doubt the executor). */
  #settle(attempt: Attempt, slot: ResourceSlotRecord, error: unknown, superseded = false): void {
    // Given up already (freed, reported, superseded by a new attempt, or the syncer closed): ignore.
    if (slot.inFlight !== attempt) return;
    this.#setInFlight(slot, null);
    if (error === undefined) {
      this.#o.onAllocationSettled({ ok: true, slot: this.#o.tracker.completeAllocation(attempt.allocationId, slot) });
      return;
    }
    const { jobId, tracked, taskManager } = slot;
    this.#o.log?.(`slot request ${describeSlot(slot)} for ${attempt.allocationId} failed: ${describeError(error)}`);
    if (tracked) this.#o.resourceTracker.notifyLostResource(jobId!, slot.profile);
    this.#o.tracker.free(attempt.allocationId, 'FAIL_ALLOCATION', slot);
    this.#o.onAllocationSettled({
      ok: false,
      allocationId: attempt.allocationId,
      jobId: jobId!,
      resourceId: taskManager.resourceId,
      error,
      tracked,
      superseded,
    });
  }

  #withDeadline<T>(taskManager: TaskManagerRegistration, call: () => Promise<T>, method = 'requestSlot'): Promise<T> {
    const { clock, rpcTimeout } = this.#o;
    if (taskManager.gateway.deadline === 'transport') return call();
    return new Promise<T>((resolve, reject) => {
      const timer = clock.setTimeout(
        () =>
          reject(
            new RpcTimeoutError(
              `TaskExecutorGateway.${method} on ${taskManager.resourceId} got no answer within ${rpcTimeout} ms`,
              { gateway: 'TaskExecutorGateway', method, timeoutMs: rpcTimeout, resourceId: taskManager.resourceId },
            ),
          ),
        rpcTimeout,
      );
      let pending: Promise<T>;
      try {
        pending = call();
      } catch (error) {
        pending = Promise.reject(error);
      }
      pending.then(
        (value) => {
          clock.clearTimeout(timer);
          resolve(value);
        },
        (error: unknown) => {
          clock.clearTimeout(timer);
          reject(error);
        },
      );
    });
  }
}
