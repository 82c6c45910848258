/**
 * The workers a ResourceManager will not let register again (stale: gone for good under their ResourceID — a goodbye,
 * a refusal, a worker that ended or stayed lost past heartbeat.timeout), and why. Only the reason is kept — a
 * worker's lifecycle actor, with the machine provided for it, held ~90 KB — and only the last STALE_KEPT, so a
 * session cluster whose TaskManagers come and go for months keeps a bounded list.
 */
import type { ResourceID } from '../core/ids.js';

/** Stale workers remembered (their ResourceIDs refused if they register again); older ones are forgotten. */
export const STALE_KEPT = 1_000;

export class StaleWorkers {
  /** Reasons by ResourceID, oldest first. */
  readonly #reasons = new Map<ResourceID, string>();

  /** Why `resourceId` may not register again, or null. */
  reasonOf(resourceId: ResourceID): string | null {
    return this.#reasons.get(resourceId) ?? null;
  }

  /** `resourceId` went stale: remembered as the newest, the oldest forgotten past STALE_KEPT. */
  add(resourceId: ResourceID, reason: string): void {
    this.#reasons.delete(resourceId);
    this.#reasons.set(resourceId, reason);
    for (const oldest of this.#reasons.keys()) {
      if (this.#reasons.size <= STALE_KEPT) break;
      this.#reasons.delete(oldest);
    }
  }
}
