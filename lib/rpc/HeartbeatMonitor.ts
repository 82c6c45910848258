/**
 * HeartbeatMonitor (Flink's HeartbeatManagerImpl and its HeartbeatMonitors, for one endpoint): when
 * each target was last heard from, and which one has been silent for `heartbeat.timeout`. The
 * ResourceManager monitors its TaskExecutors (and asks them for heartbeats each round); a
 * TaskExecutor monitors its ResourceManager (whose requests are its heartbeats).
 *
 * Beyond Flink: a target is lost when it was silent, not when the monitor could not look.
 * - Rounds run every `heartbeat.interval` on the endpoint's mailbox (and at the moment a target's
 *   silence would reach the timeout, if that comes first). A wake-up more than half of
 *   (`heartbeat.timeout` − `heartbeat.interval`) late proves the monitor was blind meanwhile — its event loop or its
 * mailbox was blocked (a long synchronous computation in the
 *   embedding application) — so it neither asked nor listened: every target gets a fresh
 *   heartbeat.timeout from then. Up to that lateness, a target that answers every round still
 *   stays under the timeout with the other half to spare for its answer.
 * - A target found silent is declared lost only once what had already arrived has been handled:
 *   the verdict waits for one turn of the event loop (messages received while the round ran) and
 *   then queues behind the mailbox's waiting tasks (answers queued behind the round).
 * The price: a monitor blocked for that long in every round never declares anyone lost. A worker
 * that exits is still seen at once, through its exit.
 */
import { IllegalArgumentError } from '../core/errors.js';
import type { TimerHandle } from '../core/clock.js';
import type { MainThreadExecutor } from './MainThreadExecutor.js';

export interface HeartbeatMonitorOptions<Target> {
  /** The monitoring endpoint's mailbox: rounds and verdicts run there. */
  readonly mailbox: MainThreadExecutor;
  /** `heartbeat.interval`: how often the monitor looks (and, as a sender, asks). */
  readonly intervalMs: number;
  /** `heartbeat.timeout`: how long a target may be silent while the monitor looks; more than the interval. */
  readonly timeoutMs: number;
  /** A target was silent for timeoutMs or longer (`silentMs`): it is no longer monitored. Runs in the mailbox. */
  readonly onTimeout: (target: Target, silentMs: number) => void;
  /** Each round, after picking out the silent targets: ask every monitored target for a heartbeat (a sender). */
  readonly onRound?: (targets: readonly Target[]) => void;
  readonly log?: (message: string) => void;
  /** Runs `fn` once the event loop has delivered what already arrived (default: setImmediate). */
  readonly afterArrivals?: (fn: () => void) => void;
}

export class HeartbeatMonitor<Target> {
  readonly #o: HeartbeatMonitorOptions<Target>;
  readonly #mailbox: MainThreadExecutor;
  /** The lateness beyond which a round proves the monitor was blind. */
  readonly #stallToleranceMs: number;
  readonly #afterArrivals: (fn: () => void) => void;
  /** Monitored targets → when each was last heard from (clock ms). */
  readonly #lastHeartbeat = new Map<Target, number>();
  #timer: TimerHandle | null = null;
  #nextRoundDue = 0;
  #running = false;

  constructor(options: HeartbeatMonitorOptions<Target>) {
    const { intervalMs, timeoutMs } = options;
    if (!Number.isFinite(intervalMs) || intervalMs <= 0) {
      throw new IllegalArgumentError(
        'out-of-range',
        `HeartbeatMonitor: intervalMs must be a finite number of ms > 0, got ${intervalMs}`,
        { argument: 'intervalMs', value: intervalMs },
      );
    }
    if (!Number.isFinite(timeoutMs) || timeoutMs <= intervalMs) {
      throw new IllegalArgumentError(
        'out-of-range',
        `HeartbeatMonitor: timeoutMs must be a finite number of ms > intervalMs (${intervalMs}), got ${timeoutMs}`,
        { argument: 'timeoutMs', value: timeoutMs },
      );
    }
    this.#o = options;
    this.#mailbox = options.mailbox;
    this.#stallToleranceMs = (timeoutMs - intervalMs) / 2;
    this.#afterArrivals = options.afterArrivals ?? ((fn) => void setImmediate(fn));
  }

  get isRunning(): boolean {
    return this.#running;
  }

  /** The monitored targets, in the order they were added. */
  get targets(): readonly Target[] {
    return [...this.#lastHeartbeat.keys()];
  }

  /** Starts the rounds (idempotent). */
  start(): void {
    if (this.#running) return;
    this.#running = true;
    this.#nextRoundDue = this.#mailbox.clock.now() + this.#o.intervalMs;
    this.#arm();
  }

  /** Stops the rounds and forgets every target; a verdict still on its way finds nothing. */
  stop(): void {
    this.#running = false;
    if (this.#timer !== null) this.#mailbox.clock.clearTimeout(this.#timer);
    this.#timer = null;
    this.#lastHeartbeat.clear();
  }

  /** Watches `target`, heard from now (watching it again restarts its silence). */
  monitorTarget(target: Target): void {
    this.#lastHeartbeat.set(target, this.#mailbox.clock.now());
  }

  unmonitorTarget(target: Target): boolean {
    return this.#lastHeartbeat.delete(target);
  }

  isMonitoring(target: Target): boolean {
    return this.#lastHeartbeat.has(target);
  }

  /** `target` was heard from now; ignored for a target not monitored (Flink's reportHeartbeat). */
  reportHeartbeat(target: Target): void {
    if (this.#lastHeartbeat.has(target)) this.#lastHeartbeat.set(target, this.#mailbox.clock.now());
  }

  /** When `target` was last heard from (clock ms), or undefined if it is not monitored. */
  lastHeartbeatFrom(target: Target): number | undefined {
    return this.#lastHeartbeat.get(target);
  }

  /**
   * Arms the one timer for the next round or, if earlier, the moment a target's silence would
   * reach the timeout (as Flink's per-target timeout fires exactly then). Deadlines already passed
   * belong to a verdict on its way.
   */
  #arm(): void {
    const { clock } = this.#mailbox;
    const now = clock.now();
    let at = this.#nextRoundDue;
    for (const last of this.#lastHeartbeat.values()) {
      const deadline = last + this.#o.timeoutMs;
      if (deadline > now && deadline < at) at = deadline;
    }
    // Lateness is read as the timer fires, before the wake-up queues in the mailbox: a timer fires
    // late only when the event loop was blocked (a mailbox drain included), which is what we forgive.
    this.#timer = clock.setTimeout(
      () => {
        this.#timer = null;
        const late = clock.now() - at;
        this.#mailbox.execute(() => this.#wake(late));
      },
      Math.max(0, at - now),
    );
  }

  #wake(late: number): void {
    if (!this.#running || this.#timer !== null) return;
    const now = this.#mailbox.clock.now();
    if (late > this.#stallToleranceMs && this.#lastHeartbeat.size > 0) {
      this.#o.log?.(
        `heartbeat monitor woke ${late} ms late (the event loop or the mailbox was blocked): not counting ` +
          `that against the ${this.#lastHeartbeat.size} monitored peer(s), each gets a fresh heartbeat.timeout`,
      );
      for (const target of this.#lastHeartbeat.keys()) this.#lastHeartbeat.set(target, now);
    }
    const silent = [...this.#lastHeartbeat]
      .filter(([, last]) => now - last >= this.#o.timeoutMs)
      .map(([target]) => target);
    const round = now >= this.#nextRoundDue;
    if (round) this.#nextRoundDue = now + this.#o.intervalMs;
    this.#arm();
    if (round) this.#o.onRound?.(this.targets);
    if (silent.length > 0) this.#afterArrivals(() => this.#mailbox.execute(() => this.#verdict(silent)));
  }

  /** The silent targets, checked again after what had arrived was handled. */
  #verdict(suspects: readonly Target[]): void {
    if (!this.#running) return;
    const now = this.#mailbox.clock.now();
    for (const target of suspects) {
      const last = this.#lastHeartbeat.get(target);
      if (last === undefined || now - last < this.#o.timeoutMs) continue;
      this.#lastHeartbeat.delete(target);
      this.#o.onTimeout(target, now - last);
    }
  }
}
