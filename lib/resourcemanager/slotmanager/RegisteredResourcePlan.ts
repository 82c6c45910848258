/**
 * The registered executors as one plan leaves them (Flink's DefaultResourceAllocationStrategy
 * keeps an InternalResourceInfo per executor for this): the strategy sets capacity aside here, never
 * in the tracker, so planning changes nothing and a plan can be dropped.
 *
 * Copying every executor per check would cost O(n) at 100,000 executors, so only the executors the
 * plan puts a slot on are copied (PlannedTaskManager), into an index of their own
 * (FreeResourceIndex over the copies). The next executor for a requirement is the better, under the
 * policy, of the best copy that still fits and the best untouched executor of the view's index,
 * read best first without changing it (untouched ones are exactly as the view shows them).
 */
import { runningAmounts } from '../../core/resourceAmounts.js';
import { IllegalStateError } from '../../core/errors.js';
import type { ResourceID } from '../../core/ids.js';
import { ResourceProfile } from '../../core/ResourceProfile.js';
import { type ResourceShortfall, shortfallOf } from '../../core/ResourceShortfall.js';
import { FreeResourceIndex, type IndexedExecutor } from './FreeResourceIndex.js';
import { type CandidateOrder, candidateOrder, precedes, utilizationSign } from './SlotMatchingStrategy.js';
import type { PlacementPreference } from './TaskManagerTracker.js';
import type {
  InsufficientResources,
  RankedTaskManagers,
  RegisteredTaskManagerInfo,
  TaskManagerResourceInfoProvider,
} from './TaskManagerResourceInfoProvider.js';
import {
  type CapacityAmounts,
  coresOf,
  memoryOf,
  saturatingSubtract,
  utilizationOfAmounts,
  utilizationOfProfiles,
} from './TaskManagerRegistration.js';
import { shortfallScore, type ExecutorShortfall } from './WaitReason.js';

/** How many executors each list of an explanation names (as explainShortage). */
const EXPLAIN_LIMIT = 3;

/** An executor the plan put slots on: its capacity as the plan leaves it. */
export class PlannedTaskManager<T extends RegisteredTaskManagerInfo = RegisteredTaskManagerInfo>
  implements IndexedExecutor
{
  readonly info: T;
  readonly host: string;
  readonly seq: number;
  /** Running totals while the total and everything used are specified; null: profiles. */
  #amounts: CapacityAmounts | null;
  #used: ResourceProfile | undefined;
  #available: ResourceProfile | undefined;
  /**
   * As TaskManagerRegistration scores it, from what the plan leaves used. A field like the
   * registration's, not a getter: FreeResourceIndex reads both kinds, and a getter beside a field
   * makes every read of it there slower.
   */
  utilization: number;

  constructor(info: T) {
    this.info = info;
    this.host = info.host;
    this.seq = info.seq;
    this.utilization = info.utilization;
    this.#amounts = info.copyAmounts?.() ?? null;
    if (this.#amounts === null) {
      const { used, available } = info;
      const exact =
        info.totalResourceProfile.kind === 'specified' && used.kind === 'specified' && available.kind === 'specified';
      this.#amounts = exact
        ? {
            used: runningAmounts(used.amounts),
            usedExtended: new Map(used.extended),
            available: runningAmounts(available.amounts),
            availableExtended: new Map(available.extended),
          }
        : null;
      this.#used = used;
      this.#available = available;
    }
  }

  get resourceId(): ResourceID {
    return this.info.resourceId;
  }

  /** What is left for the plan's next slots. */
  get available(): ResourceProfile {
    if (this.#available !== undefined) return this.#available;
    const a = this.#amounts!;
    return (this.#available = ResourceProfile.fromAmounts(a.available, a.availableExtended));
  }

  /** The profile a requirement takes here: UNKNOWN means this executor's default slot. */
  effectiveProfile(requirement: ResourceProfile): ResourceProfile {
    return requirement.isUnknown() ? this.info.defaultSlotResourceProfile : requirement;
  }

  /** What `effective` lacks here as the plan leaves it: `available.shortfall(effective)` without making `available`. */
  shortfall(effective: ResourceProfile): ResourceShortfall[] {
    const a = this.#amounts;
    if (a === null || effective.kind !== 'specified') return this.available.shortfall(effective);
    return shortfallOf(effective.amounts, effective.extended, a.available, a.availableExtended);
  }

  canFit(requirement: ResourceProfile): boolean {
    const effective = this.effectiveProfile(requirement);
    const a = this.#amounts;
    if (a === null || effective.kind !== 'specified') return this.available.allFieldsNoLessThan(effective);
    return effective.fitsWithin(a.available, a.availableExtended);
  }

  /** Sets one slot of `effective` aside if it fits; false, changing nothing, if it does not. */
  tryClaim(effective: ResourceProfile): boolean {
    const a = this.#amounts;
    if (a !== null && effective.kind === 'specified') {
      // What fits comes off what is available exactly (a field short of room is never taken), as total − used gives it.
      if (!effective.subtractFrom(a.available, a.availableExtended)) return false;
      this.#available = undefined;
      this.#used = undefined;
      if (effective.addTo(a.used, a.usedExtended)) {
        const total = this.info.totalResourceProfile.amounts;
        this.utilization = utilizationOfAmounts(a.used, coresOf(total), memoryOf(total));
        return true;
      }
      effective.addTo(a.available, a.availableExtended); // past the safe integers: undone, and done with profiles below
    } else if (!this.available.allFieldsNoLessThan(effective)) {
      return false;
    }
    // Outside the raw amounts: as TaskManagerRegistration's profile arithmetic does it.
    const total = this.info.totalResourceProfile;
    const used = this.#used ?? ResourceProfile.fromAmounts(a!.used, a!.usedExtended);
    this.#amounts = null;
    this.#used = used.merge(effective);
    this.#available = saturatingSubtract(total, this.#used);
    this.utilization = utilizationOfProfiles(this.#used, total);
    return true;
  }
}

export class RegisteredResourcePlan<T extends RegisteredTaskManagerInfo = RegisteredTaskManagerInfo> {
  readonly #view: TaskManagerResourceInfoProvider<T>;
  readonly #order: CandidateOrder;
  /** The order as the index compares it (precedes). */
  readonly #sign: number;
  readonly #spread: boolean;
  readonly #plannedList: PlannedTaskManager<T>[] = [];
  /** The copies by executor, once there are two (a check that places a slot or a few touches one). */
  #planned: Map<T, PlannedTaskManager<T>> | undefined;
  /** Made when a second executor is touched (a check that places a slot or a few touches one). */
  #index: FreeResourceIndex<PlannedTaskManager<T>> | undefined;
  /**
   * The executor claimed on last, not told to #index yet (claims on it in a row are told once, when the plan looks
   * again).
   */
  #unsynced: PlannedTaskManager<T> | undefined;
  /** The view's executors best first, per requirement (and per host), read as the plan goes. */
  #ranked: Map<ResourceProfile, RankedTaskManagers<T>> | undefined;
  #rankedOnHost: Map<string, Map<ResourceProfile, RankedTaskManagers<T>>> | undefined;
  /** The last requirement looked up anywhere, and its reading (a demand asks slot after slot). */
  #lastRequirement: ResourceProfile | undefined;
  #lastRanked: RankedTaskManagers<T> | undefined;
  /** Slots claimed per effective profile; the last profile's claims are counted in #lastClaims first. */
  readonly #claimed = new Map<ResourceProfile, number>();
  #lastClaimed: ResourceProfile | undefined;
  #lastClaims = 0;
  #claims = 0;

  constructor(view: TaskManagerResourceInfoProvider<T>) {
    this.#view = view;
    this.#order = candidateOrder(view.policy);
    this.#sign = utilizationSign(this.#order);
    this.#spread = view.policy === 'spread';
  }

  /** What the unblocked registered executors can still take once the plan's slots are on them, summed. */
  get freeRegisteredResource(): ResourceProfile {
    this.#countClaims();
    let free = this.#view.freeRegisteredResource;
    // What each touched executor has less is what the plan claimed on it: subtracted per profile
    // claimed, not per executor touched (a profile per executor was a good part of a large plan).
    for (const [profile, count] of this.#claimed) free = free.subtract(profile.multiply(count));
    return free;
  }

  /** Executors the plan put slots on. */
  get touched(): number {
    return this.#plannedList.length;
  }

  /**
   * The executor the next slot of `requirement` goes to, as the view's findTaskManager would answer
   * with what the plan set aside taken: the preferred executor if it fits, else the best on the
   * preferred host, else the best anywhere.
   */
  find(requirement: ResourceProfile, preference?: PlacementPreference): PlannedTaskManager<T> | undefined {
    this.#sync();
    if (preference?.resourceId !== undefined) {
      const info = this.#view.getTaskManager(preference.resourceId);
      if (info !== undefined && !info.blocked) {
        const planned = this.#plannedOf(info);
        if (planned === undefined ? info.canFit(requirement) : planned.canFit(requirement))
          return planned ?? this.#touch(info);
      }
    }
    if (preference?.host !== undefined) {
      const onHost = this.#best(requirement, preference.host);
      if (onHost !== undefined) return onHost;
    }
    return this.#best(requirement, undefined);
  }

  /**
   * One more slot of `requirement` on `planned`, just found for it (with any preference) and claimed
   * on, if it is still what find would answer: under first fit and pack, when it still has room (a
   * claim changes no other executor; first fit orders by registration, pack by utilisation, which
   * a claim only raises). Under spread it may no longer be the least utilised: undefined, as when it
   * is full. Saves a lookup per slot. Returns the effective profile claimed.
   */
  claimAgain(planned: PlannedTaskManager<T>, requirement: ResourceProfile): ResourceProfile | undefined {
    if (this.#spread) return undefined;
    const effective = planned.effectiveProfile(requirement);
    if (!planned.tryClaim(effective)) return undefined;
    this.#claimedOne(effective);
    return effective;
  }

  /** Sets one slot of `requirement` aside on `planned`, just found for it; returns its effective profile. */
  claim(planned: PlannedTaskManager<T>, requirement: ResourceProfile): ResourceProfile {
    const effective = planned.effectiveProfile(requirement);
    if (!planned.tryClaim(effective)) {
      throw new IllegalStateError(
        `TaskExecutor ${planned.resourceId} cannot fit ${requirement} in this plan (available ${planned.available})`,
        {
          component: 'RegisteredResourcePlan',
          operation: 'claim',
          state: 'insufficient',
          allowed: ['fits'],
        },
      );
    }
    this.#claimedOne(effective);
    if (this.#unsynced !== planned) {
      this.#sync();
      this.#unsynced = planned;
    }
    return effective;
  }

  /** Slots claimed so far in this plan: what a claim changes moves it (an explanation made before may be stale). */
  get claims(): number {
    return this.#claims;
  }

  #claimedOne(effective: ResourceProfile): void {
    this.#claims++;
    if (effective !== this.#lastClaimed) {
      this.#countClaims();
      this.#lastClaimed = effective;
    }
    this.#lastClaims++;
  }

  #countClaims(): void {
    if (this.#lastClaims === 0) return;
    const profile = this.#lastClaimed!;
    this.#claimed.set(profile, (this.#claimed.get(profile) ?? 0) + this.#lastClaims);
    this.#lastClaims = 0;
  }

  /**
   * Why no executor takes `requirement` with the plan's claims: the view's answer, with the executors
   * the plan touched scored as the plan leaves them (they are never blocked: the plan skips those).
   */
  explainShortage(requirement: ResourceProfile): InsufficientResources {
    this.#sync();
    if (this.#plannedList.length === 0) return this.#view.explainShortage(requirement);
    const touched = this.#plannedList;
    const base = this.#view.explainShortage(requirement, EXPLAIN_LIMIT + touched.length);
    // The view's lists less the touched executors (they hold at most EXPLAIN_LIMIT untouched ones
    // each), then each touched one where the plan leaves it, in the same orders as explainShortage.
    const closest: Array<ExecutorShortfall & { score: number; seq: number }> = [];
    for (const c of base.closest)
      if (!this.#isTouched(c.resourceId))
        closest.push({ resourceId: c.resourceId, shortfall: c.shortfall, score: shortfallScore(c.shortfall), seq: -1 });
    const couldFitWhenFree: Array<{ id: ResourceID; seq: number }> = [];
    for (const id of base.couldFitWhenFree) if (!this.#isTouched(id)) couldFitWhenFree.push({ id, seq: -1 });
    let resorted = false;
    for (const planned of touched) {
      const effective = planned.effectiveProfile(requirement);
      const shortfall = planned.shortfall(effective);
      if (shortfall.length === 0) continue;
      closest.push({ resourceId: planned.resourceId, shortfall, score: shortfallScore(shortfall), seq: planned.seq });
      if (planned.info.totalResourceProfile.allFieldsNoLessThan(effective))
        couldFitWhenFree.push({ id: planned.resourceId, seq: planned.seq });
      resorted = true;
    }
    if (resorted) {
      // Registration order breaks ties: looked up only for the view's entries (their seq unknown here).
      for (const c of closest) if (c.seq < 0) c.seq = this.#view.getTaskManager(c.resourceId)?.seq ?? Infinity;
      for (const c of couldFitWhenFree) if (c.seq < 0) c.seq = this.#view.getTaskManager(c.id)?.seq ?? Infinity;
      closest.sort(byScoreThenSeq);
      couldFitWhenFree.sort(bySeq);
    }
    const out: InsufficientResources = {
      kind: 'insufficient-resources',
      closest: [],
      couldFitWhenFree: [],
      passedOver: base.passedOver.length > EXPLAIN_LIMIT ? base.passedOver.slice(0, EXPLAIN_LIMIT) : base.passedOver,
    };
    for (let i = 0; i < closest.length && i < EXPLAIN_LIMIT; i++)
      (out.closest as ExecutorShortfall[]).push({
        resourceId: closest[i]!.resourceId,
        shortfall: closest[i]!.shortfall,
      });
    for (let i = 0; i < couldFitWhenFree.length && i < EXPLAIN_LIMIT; i++)
      (out.couldFitWhenFree as ResourceID[]).push(couldFitWhenFree[i]!.id);
    return out;
  }

  #isTouched(resourceId: ResourceID): boolean {
    const list = this.#plannedList;
    if (list.length <= 8) {
      for (const planned of list) if (planned.resourceId === resourceId) return true;
      return false;
    }
    const info = this.#view.getTaskManager(resourceId);
    return info !== undefined && this.#planned!.has(info);
  }

  #plannedOf(info: T): PlannedTaskManager<T> | undefined {
    const list = this.#plannedList;
    if (list.length === 0) return undefined;
    if (list.length === 1) return list[0]!.info === info ? list[0] : undefined;
    return this.#planned!.get(info);
  }

  #sync(): void {
    if (this.#unsynced === undefined) return;
    this.#index?.taskManagerChanged(this.#unsynced);
    this.#unsynced = undefined;
  }

  /** The best copy that fits, under the policy: the one copy itself while there is one. */
  #bestPlanned(requirement: ResourceProfile, host: string | undefined): PlannedTaskManager<T> | undefined {
    const list = this.#plannedList;
    if (list.length === 0) return undefined;
    if (list.length === 1) {
      const only = list[0]!;
      return (host === undefined || only.host === host) && only.canFit(requirement) ? only : undefined;
    }
    this.#index ??= new FreeResourceIndex(this.#order, () => this.#plannedList);
    return this.#index.best(requirement, host ?? null);
  }

  #best(requirement: ResourceProfile, host: string | undefined): PlannedTaskManager<T> | undefined {
    const ranked = this.#rankedFor(requirement, host);
    let head = ranked.current;
    while (head !== undefined && this.#plannedOf(head) !== undefined) {
      ranked.advance();
      head = ranked.current;
    }
    const planned = this.#bestPlanned(requirement, host);
    if (head === undefined) return planned;
    return planned !== undefined && !precedes(head, planned, this.#sign) ? planned : this.#touch(head);
  }

  #rankedFor(requirement: ResourceProfile, host: string | undefined): RankedTaskManagers<T> {
    if (host === undefined && requirement === this.#lastRequirement) return this.#lastRanked!;
    let byProfile: Map<ResourceProfile, RankedTaskManagers<T>>;
    if (host === undefined) {
      if (this.#lastRequirement === undefined) {
        // The first requirement (a check placing one demand asks no other): no table for it yet.
        this.#lastRequirement = requirement;
        return (this.#lastRanked = this.#view.rankedTaskManagers(requirement));
      }
      byProfile = this.#ranked ??= new Map([[this.#lastRequirement, this.#lastRanked!]]);
    } else {
      this.#rankedOnHost ??= new Map();
      byProfile = this.#rankedOnHost.get(host) ?? new Map();
      this.#rankedOnHost.set(host, byProfile);
    }
    let ranked = byProfile.get(requirement);
    if (ranked === undefined) {
      ranked = this.#view.rankedTaskManagers(requirement, host);
      byProfile.set(requirement, ranked);
    }
    if (host === undefined) {
      this.#lastRequirement = requirement;
      this.#lastRanked = ranked;
    }
    return ranked;
  }

  #touch(info: T): PlannedTaskManager<T> {
    let planned = this.#plannedOf(info);
    if (planned === undefined) {
      planned = new PlannedTaskManager<T>(info);
      const list = this.#plannedList;
      list.push(planned);
      if (list.length === 2) this.#planned = new Map(list.map((p) => [p.info, p]));
      else this.#planned?.set(info, planned);
      this.#index?.taskManagerChanged(planned);
    }
    return planned;
  }
}

function byScoreThenSeq(a: { score: number; seq: number }, b: { score: number; seq: number }): number {
  return a.score - b.score || a.seq - b.seq;
}

function bySeq(a: { seq: number }, b: { seq: number }): number {
  return a.seq - b.seq;
}
