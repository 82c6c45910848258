/**
 * Sends a job's resource requirements to the ResourceManager (what Flink's slot pool service does through its
 * DeclareResourceRequirementServiceConnectionManager): the latest requirements after the changes of a mailbox turn,
 * at once when the last declaration went out at least slotmanager.requirement-check.delay ago, else once that delay
 * has passed since it. The SlotManager coalesces changes over that window anyway, and a job reusing its slots changes
 * them at every finished subtask. Where Flink's retries a failed declaration with backoff, a refusal here goes to
 * `onRefused` (the JobMaster fails the job).
 */
import type { Clock } from '../core/clock.js';
import type { ResourceManagerGateway } from '../rpc/gateways.js';
import type { MainThreadExecutor } from '../rpc/MainThreadExecutor.js';
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

export class ResourceRequirementsDeclarer {
  readonly #o: ResourceRequirementsDeclarerOptions;
  #scheduled = false;
  /** When the last declaration went out. */
  #lastDeclaredAt = -Infinity;
  #closed = false;

  constructor(options: ResourceRequirementsDeclarerOptions) {
    this.#o = options;
  }

  /** Declares the requirements after the changes of this mailbox turn, or once the delay since the last has passed. */
  declareSoon(): void {
    if (this.#scheduled || this.#closed) return;
    this.#scheduled = true;
    const wait = this.#lastDeclaredAt + this.#o.delayMs - this.#o.clock.now();
    if (wait > 0) this.#o.mailbox.schedule(() => this.#declare(), wait);
    else this.#o.mailbox.execute(() => this.#declare());
  }

  /** No declaration goes out any more (the job ended); one already sent still reports a refusal. */
  close(): void {
    this.#closed = true;
  }

  #declare(): void {
    this.#scheduled = false;
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
