/**
 * When the SlotManager runs a requirement check: as `slotManager.machine` decides, for every delay.
 * A change is REQUIREMENTS_CHANGED to the statechart; with requirement-check.delay > 0 a change
 * after a quiet period is checked on the clock's next turn (leading edge), and the changes within
 * the delay after that check are coalesced into one trailing check; with a delay of 0
 * (`isImmediate`) it runs the check at once, inside the change's own call — unless the statechart
 * is `crowded` (the last check weighed more than `crowdedAbove` demands): then the change waits
 * in checkSoon for the clock's next turn, a 0 ms timer that the ResourceManager's clock runs in its
 * mailbox, and the changes of one event-loop turn (a thousand jobs submitted at once, the frees the
 * TaskExecutors' batches bring) are checked together — without that, n waiting jobs cost n checks of
 * n demands each.
 *
 * The statechart is asked once which it does for this delay when not crowded (a probe actor, at
 * construction); then, unless an inspector watches or the statechart is crowded, a delay-0 change
 * runs its check without an XState event (~5–15 µs each, more than a check that places one slot):
 * the live statechart would only pass through checkSoon back to idle, where it stays. Those checks
 * are counted and reported in one CHECKED when the statechart is read (`actor`) or suspended — or at
 * once when a check makes the statechart crowded or not (`weighsCrowded`), so that it knows before
 * the next change. Every other check (the statechart ran it, or an inspector watches) is reported in
 * its own CHECKED, with a summary.
 *
 * Checks never nest: a change during a check runs one more check right after it; a change while
 * `defer` holds checks back (a slot report being applied) is made once that is over (so, crowded, it
 * waits for the next turn like any other).
 */
import { createActor, type Actor, type InspectionEvent } from 'xstate';
import { SimulatedClock, type Clock } from '../../core/clock.js';
import { IllegalStateError } from '../../core/errors.js';
import {
  slotManagerMachine,
  weighsCrowded,
  type RequirementCheckSummary,
} from '../../../machines/slotManager.machine.js';

export interface RequirementCheckSchedulerOptions<T> {
  /** slotmanager.requirement-check.delay (ms). */
  readonly requirementCheckDelay: number;
  /** The statechart's crowdedAbove: demands a check may weigh before delay-0 changes wait for the next turn. */
  readonly crowdedAbove: number;
  /** Runs the statechart's timers: the owner's clock, whose callbacks run in its mailbox. */
  readonly clock: Clock;
  readonly inspect?: (event: InspectionEvent) => void;
  /** Runs one check; what it returns is summarised only when reported. */
  readonly runCheck: () => T;
  /** How many demands a check weighed (read after every check, so cheap: no summary). */
  readonly demands: (check: T) => number;
  readonly summarize: (check: T) => RequirementCheckSummary;
  /** After every run of checks, a throw included. */
  readonly afterChecks: () => void;
  /** The statechart's clearState (SUSPEND). */
  readonly clearState: () => void;
}

const immediateByDelay = new Map<number, boolean>();

/**
 * Whether slotManager.machine, not crowded, runs a check inside the REQUIREMENTS_CHANGED step itself for this delay
 * (asked once per delay).
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
        input: { requirementCheckDelay, crowdedAbove: Number.POSITIVE_INFINITY },
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
  /** Checks run and not reported to the statechart yet (none changed whether it is crowded), and the last one. */
  #unreported = 0;
  #last: T | undefined;

  constructor(options: RequirementCheckSchedulerOptions<T>) {
    this.#o = options;
    this.#inspected = options.inspect !== undefined;
    this.#immediate = checksAtOnce(options.requirementCheckDelay);
    this.#actor = createActor(
      slotManagerMachine.provide({
        actions: {
          checkResourceRequirements: () => this.#statechartCheck(),
          clearState: () => options.clearState(),
        },
      }),
      {
        clock: options.clock,
        input: { requirementCheckDelay: options.requirementCheckDelay, crowdedAbove: options.crowdedAbove },
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

  /** Suspends the statechart (clearState), which forgets that it was crowded. */
  suspend(): void {
    this.#report();
    this.#actor.send({ type: 'SUSPEND' });
    this.#started = this.#actor.getSnapshot().matches('started');
  }

  stop(): void {
    this.#actor.stop();
  }

  /** Something changed: a check as the statechart schedules it (coalesced with any other change). */
  requirementsChanged(): void {
    if (!this.#started) return;
    if (this.#immediate && (this.#checking || this.#deferring > 0)) {
      this.#recheck = true;
    } else if (!this.#immediate || this.#inspected || this.#statechartCrowded()) {
      // The statechart schedules the check: on a later turn (delay above 0, or crowded), else (inspected) in this
      // step. While one is scheduled it absorbs the event (~5–15 µs of XState for nothing): only an inspector sees it.
      if (this.#inspected || !this.#scheduled()) this.#actor.send({ type: 'REQUIREMENTS_CHANGED' });
    } else {
      this.#runChecks(false);
    }
  }

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

  /** Whether the statechart holds that the last check weighed too many demands for delay-0 checks at once. */
  #statechartCrowded(): boolean {
    return this.#actor.getSnapshot().context.crowded;
  }

  /** The statechart's checkResourceRequirements; never inside another check or a deferred change. */
  #statechartCheck(): void {
    if (this.#checking || this.#deferring > 0) this.#recheck = true;
    else this.#runChecks(true);
  }

  /** `byStatechart`: the statechart runs these checks in a step of its own, so it hears of each one. */
  #runChecks(byStatechart: boolean): void {
    if (!this.#started) return;
    this.#checking = true;
    try {
      do {
        this.#recheck = false;
        this.#checked(this.#o.runCheck(), byStatechart);
      } while (this.#recheck);
    } finally {
      this.#checking = false;
      this.#o.afterChecks();
    }
  }

  #checked(check: T, byStatechart: boolean): void {
    this.#unreported++;
    this.#last = check;
    // A check run without the statechart waits to be reported, unless it makes the statechart crowded or no longer
    // crowded: the next change must find that out.
    if (byStatechart || weighsCrowded(this.#o.demands(check), this.#o.crowdedAbove) !== this.#statechartCrowded()) {
      this.#report();
    }
  }

  #report(): void {
    if (this.#unreported === 0) return;
    const checks = this.#unreported;
    const last = this.#last!;
    this.#unreported = 0;
    this.#last = undefined;
    const summary = this.#o.summarize(last);
    this.#actor.send(checks === 1 ? { type: 'CHECKED', summary } : { type: 'CHECKED', summary, checks });
  }
}
