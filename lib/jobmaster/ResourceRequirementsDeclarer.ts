/**
 * Sends a job's resource requirements to the ResourceManager (what Flink's slot pool service does through its
 * DeclareResourceRequirementServiceConnectionManager): the latest requirements after the changes of a mailbox turn,
 * at once when the last declaration went out at least slotmanager.requirement-check.delay ago, else once that delay
 * has passed since it. The SlotManager coalesces changes over that window anyway, and a job reusing its slots changes
 * them at every finished subtask. A change no ResourceManager can act on — the job needs less but still waits for
 * slots (a pending request served by a slot it holds, as a job reusing its slots has at every finished subtask) — goes
 * out at most once per DECREASE_WINDOW_MS even when that delay is 0: a job of 1,000 subtasks on 32 slots declared
 * ~290 times, each a requirement check on the ResourceManager's side. Where Flink's retries a failed declaration with
 * backoff, a refusal here goes to `onRefused` (the JobMaster fails the job).
 */
import type { Clock } from '../core/clock.js';
import type { ResourceManagerGateway } from '../rpc/gateways.js';
import type { MainThreadExecutor, ScheduledTask } from '../rpc/MainThreadExecutor.js';
import type { ResourceRequirementsWire } from '../rpc/protocol.js';

export interface ResourceRequirementsDeclarerOptions {
  /** The JobMaster's: declarations go out from it, and their answers come back into it. */
  readonly mailbox: MainThreadExecutor;
  readonly clock: Clock;
  /** slotmanager.requirement-check.delay: the least time between two declarations. */
  readonly delayMs: number;
  readonly resourceManager: Pick<ResourceManagerGateway, 'declareRequiredResources'>;
  /** The job's requirements now. */
  readonly requirements: () => ResourceRequirementsWire;
  /** The ResourceManager refused a declaration. */
  readonly onRefused: (error: unknown) => void;
}

/**
 * How long a declaration that only lowers what a job still waiting needs may wait for the next (Flink's default
 * slotmanager.requirement-check.delay: its SlotManager coalesced every change over it).
 */
export const DECREASE_WINDOW_MS = 50;

export class ResourceRequirementsDeclarer {
  readonly #o: ResourceRequirementsDeclarerOptions;
  /** The next declaration, when one is due: when, and its timer (null when it runs on the mailbox's next turn). */
  #next: { readonly at: number; readonly timer: ScheduledTask | null } | null = null;
  /** When the last declaration went out. */
  #lastDeclaredAt = -Infinity;
  #closed = false;

  constructor(options: ResourceRequirementsDeclarerOptions) {
    this.#o = options;
  }

  /**
   * Declares the requirements after the changes of this mailbox turn, or once the delay since the last has passed;
   * not `urgent` (what the job still waiting for slots needs went down), once DECREASE_WINDOW_MS has.
   */
  declareSoon(urgent = true): void {
    if (this.#closed) return;
    const now = this.#o.clock.now();
    const at = Math.max(now, this.#lastDeclaredAt + Math.max(this.#o.delayMs, urgent ? 0 : DECREASE_WINDOW_MS));
    if (this.#next !== null) {
      if (this.#next.at <= at) return;
      this.#next.timer?.cancel();
    }
    const timer = at > now ? this.#o.mailbox.schedule(() => this.#declare(), at - now) : null;
    if (timer === null) this.#o.mailbox.execute(() => this.#declare());
    this.#next = { at, timer };
  }

  /** No declaration goes out any more (the job ended); one already sent still reports a refusal. */
  close(): void {
    this.#closed = true;
    this.#next?.timer?.cancel();
    this.#next = null;
  }

  #declare(): void {
    // A timer that fired just as an urgent change replaced it runs too: the first of the two declares.
    if (this.#next === null) return;
    this.#next = null;
    if (this.#closed) return;
    this.#lastDeclaredAt = this.#o.clock.now();
    this.#o.mailbox.whenComplete(
      this.#o.resourceManager.declareRequiredResources(this.#o.requirements()),
      (_, error) => {
        if (error !== undefined) this.#o.onRefused(error);
      },
    );
  }
}
