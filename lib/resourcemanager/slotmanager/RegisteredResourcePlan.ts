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
import type { ResourceID } from '../../core/ids.js';
import { ResourceProfile } from '../../core/ResourceProfile.js';
import { FreeResourceIndex, type IndexedExecutor } from './FreeResourceIndex.js';
import { candidateOrder, type CandidateOrder } from './SlotMatchingStrategy.js';
import type { PlacementPreference } from './TaskManagerTracker.js';
import type { InsufficientResources, RankedTaskManagers, RegisteredTaskManagerInfo, TaskManagerResourceInfoProvider } from './TaskManagerResourceInfoProvider.js';
import { availableAmounts, coresOf, memoryOf, saturatingSubtract, utilizationOfAmounts, utilizationOfProfiles } from './TaskManagerRegistration.js';
import { shortfallScore, type ExecutorShortfall } from './WaitReason.js';

/** How many executors each list of an explanation names (as explainShortage). */
const EXPLAIN_LIMIT = 3;

/** An executor the plan put slots on: its capacity as the plan leaves it. */
export class PlannedTaskManager implements IndexedExecutor {
  readonly info: RegisteredTaskManagerInfo;
  readonly host: string;
  readonly seq: number;
  utilization: number;
  /** Raw amounts (ResourceProfile.amounts order) while the total and everything used are specified; null: profiles. */
  #amounts: { used: number[]; usedExtended: Map<string, number>; available: number[]; availableExtended: Map<string, number> } | null;
  #used: ResourceProfile;
  #available: ResourceProfile | undefined;

  constructor(info: RegisteredTaskManagerInfo) {
    this.info = info;
    this.host = info.host;
    this.seq = info.seq;
    this.utilization = info.utilization;
    const { used, available } = info;
    const exact = info.totalResourceProfile.kind === 'specified' && used.kind === 'specified' && available.kind === 'specified';
    this.#amounts = exact ? { used: [...used.amounts], usedExtended: new Map(used.extended), available: [...available.amounts], availableExtended: new Map(available.extended) } : null;
    this.#used = used;
    this.#available = available;
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

  canFit(requirement: ResourceProfile): boolean {
    const effective = this.effectiveProfile(requirement);
    const a = this.#amounts;
    if (a === null || effective.kind !== 'specified') return this.available.allFieldsNoLessThan(effective);
    return effective.fitsWithin(a.available, a.availableExtended);
  }

  /** Sets one slot of `effective` aside (the caller checked that it fits). */
  claim(effective: ResourceProfile): void {
    const a = this.#amounts;
    const total = this.info.totalResourceProfile;
    if (a !== null && effective.kind === 'specified' && effective.addTo(a.used, a.usedExtended)) {
      availableAmounts(total.amounts, total.extended, a.used, a.usedExtended, a.available, a.availableExtended);
      this.#available = undefined;
      this.utilization = utilizationOfAmounts(a.used, coresOf(total.amounts), memoryOf(total.amounts));
      return;
    }
    // Outside the raw amounts: as TaskManagerRegistration's profile arithmetic does it.
    this.#used = (a === null ? this.#used : ResourceProfile.fromAmounts(a.used, a.usedExtended)).merge(effective);
    this.#available = saturatingSubtract(total, this.#used);
    this.#amounts = null;
    this.utilization = utilizationOfProfiles(this.#used, total);
  }
}

export class RegisteredResourcePlan {
  readonly #view: TaskManagerResourceInfoProvider;
  readonly #order: CandidateOrder;
  readonly #spread: boolean;
  readonly #planned = new Map<RegisteredTaskManagerInfo, PlannedTaskManager>();
  readonly #plannedList: PlannedTaskManager[] = [];
  readonly #index: FreeResourceIndex<PlannedTaskManager>;
  /** The view's executors best first, per requirement (and per host), read as the plan goes. */
  readonly #ranked = new Map<ResourceProfile, RankedTaskManagers>();
  readonly #rankedOnHost = new Map<string, Map<ResourceProfile, RankedTaskManagers>>();

  constructor(view: TaskManagerResourceInfoProvider) {
    this.#view = view;
    this.#order = candidateOrder(view.policy);
    this.#spread = view.policy === 'spread';
    this.#index = new FreeResourceIndex(this.#order, () => this.#plannedList, view.policy !== 'first-fit');
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
  find(requirement: ResourceProfile, preference?: PlacementPreference): PlannedTaskManager | undefined {
    if (preference?.resourceId !== undefined) {
      const info = this.#view.getTaskManager(preference.resourceId);
      if (info !== undefined && !info.blocked) {
        const planned = this.#planned.get(info);
        if (planned === undefined ? info.canFit(requirement) : planned.canFit(requirement)) return planned ?? this.#touch(info);
      }
    }
    if (preference?.host !== undefined) {
      const onHost = this.#best(requirement, preference.host);
      if (onHost !== undefined) return onHost;
    }
    return this.#best(requirement, undefined);
  }

  /**
   * Whether `planned`, just found for `requirement` and claimed on, is still what find would answer:
   * under first fit and pack, when it still has room (a claim changes no other executor; first fit
   * orders by registration, pack by utilisation, which a claim only raises). Under spread it may
   * no longer be the least utilised. Saves a lookup per slot.
   */
  remainsBest(planned: PlannedTaskManager, requirement: ResourceProfile): boolean {
    return !this.#spread && planned.canFit(requirement);
  }

  /** Sets one slot of `requirement` aside on `planned`; returns its effective profile. */
  claim(planned: PlannedTaskManager, requirement: ResourceProfile): ResourceProfile {
    const effective = planned.effectiveProfile(requirement);
    planned.claim(effective);
    this.#index.taskManagerChanged(planned);
    return effective;
  }

  /**
   * Why no executor takes `requirement` with the plan's claims: the view's answer, with the executors
   * the plan touched scored as the plan leaves them (they are never blocked: the plan skips those).
   */
  explainShortage(requirement: ResourceProfile): InsufficientResources {
    if (this.#plannedList.length === 0) return this.#view.explainShortage(requirement);
    const base = this.#view.explainShortage(requirement, EXPLAIN_LIMIT + this.#plannedList.length);
    const isPlanned = (resourceId: ResourceID) => {
      const info = this.#view.getTaskManager(resourceId);
      return info !== undefined && this.#planned.has(info);
    };
    const seqOf = (resourceId: ResourceID) => this.#view.getTaskManager(resourceId)?.seq ?? Infinity;
    const closest: Array<ExecutorShortfall & { score: number; seq: number }> = base.closest
      .filter((c) => !isPlanned(c.resourceId))
      .map((c) => ({ ...c, score: shortfallScore(c.shortfall), seq: seqOf(c.resourceId) }));
    const couldFitWhenFree = base.couldFitWhenFree.filter((id) => !isPlanned(id)).map((id) => ({ id, seq: seqOf(id) }));
    for (const planned of this.#plannedList) {
      const effective = planned.effectiveProfile(requirement);
      const shortfall = planned.available.shortfall(effective);
      if (shortfall.length === 0) continue;
      closest.push({ resourceId: planned.resourceId, shortfall, score: shortfallScore(shortfall), seq: planned.seq });
      if (planned.info.totalResourceProfile.allFieldsNoLessThan(effective)) couldFitWhenFree.push({ id: planned.resourceId, seq: planned.seq });
    }
    closest.sort((a, b) => a.score - b.score || a.seq - b.seq);
    couldFitWhenFree.sort((a, b) => a.seq - b.seq);
    return {
      kind: 'insufficient-resources',
      closest: closest.slice(0, EXPLAIN_LIMIT).map(({ resourceId, shortfall }) => ({ resourceId, shortfall })),
      couldFitWhenFree: couldFitWhenFree.slice(0, EXPLAIN_LIMIT).map((c) => c.id),
      passedOver: base.passedOver.slice(0, EXPLAIN_LIMIT),
    };
  }

  #best(requirement: ResourceProfile, host: string | undefined): PlannedTaskManager | undefined {
    const ranked = this.#rankedFor(requirement, host);
    let head = ranked.current;
    while (head !== undefined && this.#planned.has(head)) {
      ranked.advance();
      head = ranked.current;
    }
    const planned = this.#plannedList.length === 0 ? undefined : this.#index.best(requirement, host ?? null);
    if (head === undefined) return planned;
    return planned !== undefined && this.#order(planned, head) <= 0 ? planned : this.#touch(head);
  }

  #rankedFor(requirement: ResourceProfile, host: string | undefined): RankedTaskManagers {
    let byProfile = this.#ranked;
    if (host !== undefined) {
      byProfile = this.#rankedOnHost.get(host) ?? new Map();
      this.#rankedOnHost.set(host, byProfile);
    }
    let ranked = byProfile.get(requirement);
    if (ranked === undefined) {
      ranked = this.#view.rankedTaskManagers(requirement, host);
      byProfile.set(requirement, ranked);
    }
    return ranked;
  }

  #touch(info: RegisteredTaskManagerInfo): PlannedTaskManager {
    let planned = this.#planned.get(info);
    if (planned === undefined) {
      planned = new PlannedTaskManager(info);
      this.#planned.set(info, planned);
      this.#plannedList.push(planned);
      this.#index.taskManagerChanged(planned);
    }
    return planned;
  }
}
