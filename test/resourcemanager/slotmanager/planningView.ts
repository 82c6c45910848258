/**
 * A TaskManagerResourceInfoProvider made of plain objects, for strategy tests: executors and
 * pending workers as plain mutable records, the ranking a sort under the policy, the shortage
 * explained by the reference explainShortage. No TaskManagerTracker, no index.
 */
import { ResourceID } from '../../../lib/core/ids.js';
import type { JobID } from '../../../lib/core/ids.js';
import type { ResourceCounter } from '../../../lib/core/ResourceCounter.js';
import { ResourceProfile } from '../../../lib/core/ResourceProfile.js';
import { defaultSlotResourceProfile } from '../../../lib/core/TaskExecutorResourceUtils.js';
import type { PendingTaskManagerID } from '../../../lib/resourcemanager/slotmanager/PendingTaskManager.js';
import {
  candidateOrder,
  type SlotMatchingPolicy,
} from '../../../lib/resourcemanager/slotmanager/SlotMatchingStrategy.js';
import type {
  PendingTaskManagerInfo,
  RankedTaskManagers,
  RegisteredTaskManagerInfo,
  TaskManagerResourceInfoProvider,
} from '../../../lib/resourcemanager/slotmanager/TaskManagerResourceInfoProvider.js';
import {
  saturatingSubtract,
  utilizationOfProfiles,
} from '../../../lib/resourcemanager/slotmanager/TaskManagerRegistration.js';
import { explainShortage } from '../../../lib/resourcemanager/slotmanager/WaitReason.js';
import type { WorkerResourceSpec } from '../../../lib/resourcemanager/slotmanager/WorkerResourceSpec.js';
import type { ExecutorShape } from './support.js';

/** A registered executor as plain data; `use` and `blocked` change it. */
export class PlainExecutor implements RegisteredTaskManagerInfo {
  used = ResourceProfile.ZERO;
  blocked = false;
  idleSince: number | null = 0;

  constructor(
    readonly resourceId: ResourceID,
    readonly seq: number,
    readonly host: string,
    readonly totalResourceProfile: ResourceProfile,
    readonly defaultSlotResourceProfile: ResourceProfile,
    readonly numberOfStaticSlots: number,
  ) {}

  get available(): ResourceProfile {
    return saturatingSubtract(this.totalResourceProfile, this.used);
  }

  get utilization(): number {
    return utilizationOfProfiles(this.used, this.totalResourceProfile);
  }

  effectiveProfile(requirement: ResourceProfile): ResourceProfile {
    return requirement.isUnknown() ? this.defaultSlotResourceProfile : requirement;
  }

  canFit(requirement: ResourceProfile): boolean {
    return !this.blocked && this.available.allFieldsNoLessThan(this.effectiveProfile(requirement));
  }

  /** One more slot of `requirement` held here (as if allocated). */
  use(requirement: ResourceProfile): this {
    this.used = this.used.merge(this.effectiveProfile(requirement));
    this.idleSince = null;
    return this;
  }
}

/** A pending worker as plain data; `plan` sets what it will carry. */
export class PlainPendingWorker implements PendingTaskManagerInfo {
  allocations: ReadonlyMap<JobID, ResourceCounter> = new Map();

  constructor(
    readonly id: PendingTaskManagerID,
    readonly spec: WorkerResourceSpec,
  ) {}

  get totalResourceProfile(): ResourceProfile {
    return this.spec.totalResourceProfile;
  }

  get hasPendingAllocations(): boolean {
    return [...this.allocations.values()].some((c) => !c.isEmpty());
  }

  get unusedResource(): ResourceProfile {
    let used = ResourceProfile.ZERO;
    for (const counter of this.allocations.values()) used = used.merge(counter.getTotalResource());
    return saturatingSubtract(this.spec.totalResourceProfile, used);
  }
}

export class PlainPlanningView implements TaskManagerResourceInfoProvider<PlainExecutor> {
  readonly executors: PlainExecutor[] = [];
  readonly pending: PlainPendingWorker[] = [];

  constructor(readonly policy: SlotMatchingPolicy = 'first-fit') {}

  /** Executor te-<n> of `shape`, registered after the others. */
  add(s: ExecutorShape): PlainExecutor {
    const n = this.executors.length + 1;
    const executor = new PlainExecutor(
      ResourceID.parse(`te-${n}`),
      n,
      s.host ?? 'host-a',
      s.total,
      s.defaultSlot ?? defaultSlotResourceProfile(s.total, s.slots),
      s.slots,
    );
    this.executors.push(executor);
    return executor;
  }

  addPending(spec: WorkerResourceSpec): PlainPendingWorker {
    const worker = new PlainPendingWorker(`pending-plain-${this.pending.length + 1}` as PendingTaskManagerID, spec);
    this.pending.push(worker);
    return worker;
  }

  rankedTaskManagers(requirement: ResourceProfile, host?: string): RankedTaskManagers<PlainExecutor> {
    const order = candidateOrder(this.policy);
    const ranked = this.executors
      .filter((e) => e.canFit(requirement) && (host === undefined || e.host === host))
      .sort(order);
    let at = 0;
    return {
      get current() {
        return ranked[at];
      },
      advance: () => void at++,
    };
  }

  getTaskManager(resourceId: ResourceID): PlainExecutor | undefined {
    return this.executors.find((e) => e.resourceId === resourceId);
  }

  explainShortage(requirement: ResourceProfile, limit = 3) {
    return explainShortage(requirement, this.executors, limit);
  }

  get pendingTaskManagers(): Iterable<PendingTaskManagerInfo> {
    return this.pending;
  }

  get numberOfPendingTaskManagers(): number {
    return this.pending.length;
  }

  get numberOfRegisteredSlots(): number {
    return this.executors.reduce((n, e) => n + e.numberOfStaticSlots, 0);
  }

  get numberOfPendingSlots(): number {
    return this.pending.reduce((n, p) => n + p.spec.numberOfSlots, 0);
  }

  get registeredResource(): ResourceProfile {
    return this.executors.reduce((sum, e) => sum.merge(e.totalResourceProfile), ResourceProfile.ZERO);
  }

  get pendingResource(): ResourceProfile {
    return this.pending.reduce((sum, p) => sum.merge(p.totalResourceProfile), ResourceProfile.ZERO);
  }

  get freeRegisteredResource(): ResourceProfile {
    return this.executors.filter((e) => !e.blocked).reduce((sum, e) => sum.merge(e.available), ResourceProfile.ZERO);
  }
}

/** A plain view (first-fit unless told) with executors te-1, te-2, … of `shapes`. */
export function viewWith(shapes: readonly ExecutorShape[], options: { policy?: SlotMatchingPolicy } = {}) {
  const view = new PlainPlanningView(options.policy);
  const tms = shapes.map((s) => view.add(s));
  return { view, tms };
}
