/**
 * When the SlotManager runs a requirement check: as `slotManager.machine` decides, for every delay.
 * A change is REQUIREMENTS_CHANGED to the statechart; with requirement-check.delay > 0 a change
 * after a quiet period is checked on the clock's next turn (leading edge), and the changes within
 * the delay after that check are coalesced into one trailing check; with a delay of 0
 * (`isImmediate`) it runs the check at once, inside the change's own call (unless many jobs wait:
 * `coalesce`, below). The statechart is asked once which of the two it does for this delay (a probe
 * actor, at construction); then, unless an
 * inspector watches, a delay-0 change runs its check without an XState event (~5–15 µs each, more
 * than a check that places one slot): the live statechart would only pass through checkSoon back
 * to idle, where it stays.
 *
 * Checks never nest: a change during a check, or while `defer` holds checks back (a slot report
 * being applied), runs one more check once that is over. A check costs in proportion to the demands
 * it weighs (every job waiting for slots): while the last one weighed more than `coalesce.above`, a
 * delay-0 change queues one check for later (`coalesce.execute`: the clock's next turn) instead, so
 * the changes of one event-loop turn (a thousand jobs submitted at once, the frees the TaskExecutors'
 * batches bring) are checked together — without that, n waiting jobs cost n checks of n demands
 * each. Each check is reported to the statechart
 * (CHECKED, with a summary); for delay-0 checks that nobody inspects, counted and reported in one
 * CHECKED when the statechart is read (`actor`) or suspended.
 */
import { createActor, type Actor, type InspectionEvent } from 'xstate';
import { SimulatedClock, type Clock } from '../../core/clock.js';
import { IllegalStateError } from '../../core/errors.js';
import { slotManagerMachine, type RequirementCheckSummary } from '../../../machines/slotManager.machine.js';

export interface RequirementCheckSchedulerOptions<T> {
  /** slotmanager.requirement-check.delay (ms). */
  readonly requirementCheckDelay: number;
  readonly clock: Clock;
  readonly inspect?: (event: InspectionEvent) => void;
  /** Runs one check; what it returns is summarised only when reported. */
  readonly runCheck: () => T;
  readonly summarize: (check: T) => RequirementCheckSummary;
  /** After every run of checks, a throw included. */
  readonly afterChecks: () => void;
  /** The statechart's clearState (SUSPEND). */
  readonly clearState: () => void;
  /**
   * Delay-0 checks while many demands wait: queued with `execute` (later, into the owner's mailbox) when the last check
   * weighed more than `above` demands (`demands` reads how many a check weighed). Without it every change is checked
   * at once.
   */
  readonly coalesce?: {
    readonly execute: (task: () => void) => void;
    readonly demands: (check: T) => number;
    readonly above: number;
  };
}

const immediateByDelay = new Map<number, boolean>();

/**
 * Whether slotManager.machine runs a check inside the REQUIREMENTS_CHANGED step itself for this delay (asked once per
 * delay).
 */
export function checksAtOnce(requirementCheckDelay: number): boolean {
  let known = immediateByDelay.get(requirementCheckDelay);
  if (known === undefined) {
    let ran = false;
    const probe = createActor(
      slotManagerMachine.provide({
        actions: { checkResourceRequirements: () => void (ran = true), clearState: () => {} },
      }),
      {
        clock: new SimulatedClock(),
        input: { requirementCheckDelay },
      },
    ).start();
    probe.send({ type: 'START' });
    probe.send({ type: 'REQUIREMENTS_CHANGED' });
    probe.stop();
    immediateByDelay.set(requirementCheckDelay, (known = ran));
  }
  return known;
}

export class RequirementCheckScheduler<T> {
  readonly #o: RequirementCheckSchedulerOptions<T>;
  readonly #actor: Actor<typeof slotManagerMachine>;
  readonly #immediate: boolean;
  /** An inspector watches the statechart: every event it would see is sent as it happens. */
  readonly #inspected: boolean;
  /** The statechart's started / suspended, read on every call (only START and SUSPEND change it). */
  #started = false;
  #checking = false;
  #recheck = false;
  #deferring = 0;
  /** Checks run and not reported to the statechart yet, and the last one. */
  #unreported = 0;
  #last: T | undefined;
  /** The last check weighed more than coalesce.above demands: changes are checked together (coalesce.execute). */
  #crowded = false;
  /** A coalesced check is queued. */
  #queued = false;

  constructor(options: RequirementCheckSchedulerOptions<T>) {
    this.#o = options;
    this.#inspected = options.inspect !== undefined;
    this.#immediate = checksAtOnce(options.requirementCheckDelay);
    this.#actor = createActor(
      slotManagerMachine.provide({
        actions: {
          checkResourceRequirements: () => this.#runChecks(),
          clearState: () => options.clearState(),
        },
      }),
      {
        clock: options.clock,
        input: { requirementCheckDelay: options.requirementCheckDelay },
        ...(options.inspect ? { inspect: options.inspect } : {}),
      },
    ).start();
  }

  /** The running statechart (for inspection; do not send to it), its record of the checks brought up to date first. */
  get actor(): Actor<typeof slotManagerMachine> {
    this.#report();
    return this.#actor;
  }

  get started(): boolean {
    return this.#started;
  }

  /** Refuses a SlotManager call while a check runs (from a listener or allocator callback) or while suspended. */
  requireStarted(operation: string): void {
    if (this.#checking) {
      throw new IllegalStateError(
        `SlotManager.${operation} was called while a requirement check runs ` +
          `(from a listener or allocator callback); hand it to the mailbox instead`,
        {
          component: 'SlotManager',
          operation,
          state: 'checking',
          allowed: ['started'],
        },
      );
    }
    if (!this.#started) throw this.wrongState(operation, ['started']);
  }

  wrongState(operation: string, allowed: string[]): IllegalStateError {
    const state = this.#started ? 'started' : 'suspended';
    return new IllegalStateError(
      `SlotManager.${operation} is not allowed while the SlotManager is ${state} (allowed: ${allowed.join(', ')})`,
      {
        component: 'SlotManager',
        operation,
        state,
        allowed,
      },
    );
  }

  start(): void {
    this.#actor.send({ type: 'START' });
    this.#started = this.#actor.getSnapshot().matches('started');
  }

  suspend(): void {
    this.#report();
    this.#actor.send({ type: 'SUSPEND' });
    this.#started = this.#actor.getSnapshot().matches('started');
    // Its state is cleared: nobody waits any more, and a start's first check runs at once.
    this.#crowded = false;
  }

  stop(): void {
    this.#actor.stop();
  }

  /** Something changed: a check as the statechart schedules it (coalesced with any other change). */
  requirementsChanged(): void {
    if (!this.#started) return;
    if (!this.#immediate) {
      // While a check is scheduled (leading or trailing) the statechart absorbs the event (~5–15 µs
      // of XState for nothing): only an inspector would see it.
      if (this.#inspected || !this.#scheduled()) this.#actor.send({ type: 'REQUIREMENTS_CHANGED' });
    } else if (this.#checking || this.#deferring > 0) {
      this.#recheck = true;
    } else if (this.#crowded) {
      if (this.#queued) return;
      this.#queued = true;
      this.#o.coalesce!.execute(this.#runQueued);
    } else {
      this.#checkNow();
    }
  }

  /** A delay-0 check now: through the statechart when an inspector watches (it runs the check in that step). */
  #checkNow(): void {
    if (this.#inspected) this.#actor.send({ type: 'REQUIREMENTS_CHANGED' });
    else this.#runChecks();
  }

  /** The check the changes since it was queued wait for (none when the SlotManager was suspended meanwhile). */
  readonly #runQueued = (): void => {
    this.#queued = false;
    if (!this.#started) return;
    if (this.#checking || this.#deferring > 0) this.#recheck = true;
    else this.#checkNow();
  };

  /**
   * Runs `change` with immediate checks held back until it is complete (never a check halfway through a slot report).
   */
  defer<R>(change: () => R): R {
    this.#deferring++;
    try {
      return change();
    } finally {
      this.#deferring--;
      if (this.#deferring === 0 && this.#recheck && !this.#checking) {
        this.#recheck = false;
        this.requirementsChanged();
      }
    }
  }

  #scheduled(): boolean {
    const snapshot = this.#actor.getSnapshot();
    return snapshot.matches({ started: 'checkScheduled' }) || snapshot.matches({ started: 'checkSoon' });
  }

  #runChecks(): void {
    if (!this.#started) return;
    this.#checking = true;
    try {
      do {
        this.#recheck = false;
        this.#checked(this.#o.runCheck());
      } while (this.#recheck);
    } finally {
      this.#checking = false;
      this.#o.afterChecks();
    }
  }

  #checked(check: T): void {
    const { coalesce } = this.#o;
    this.#crowded = coalesce !== undefined && coalesce.demands(check) > coalesce.above;
    if (this.#inspected || !this.#immediate) {
      this.#actor.send({ type: 'CHECKED', summary: this.#o.summarize(check) });
      return;
    }
    this.#unreported++;
    this.#last = check;
  }

  #report(): void {
    if (this.#unreported === 0) return;
    const checks = this.#unreported;
    const last = this.#last!;
    this.#unreported = 0;
    this.#last = undefined;
    this.#actor.send({ type: 'CHECKED', summary: this.#o.summarize(last), checks });
  }
}
