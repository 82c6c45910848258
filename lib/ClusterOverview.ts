/**
 * `MiniCluster.overview()`: the cluster now, for people and for tools. Every amount comes as numbers
 * (cores, bytes, the slot's index) with the display string beside it, so a dashboard or a test reads
 * the numbers and a terminal prints the strings.
 */
import type { PartitionFiguresWire } from './rpc/protocol.js';
import { IllegalStateError } from './core/errors.js';
import type { AllocationID, JobID, ResourceID } from './core/ids.js';
import { ResourceProfile } from './core/ResourceProfile.js';
import type { JobLookup, JobSummary } from './dispatcher/Dispatcher.js';
import { ArchivedJob } from './jobmaster/ArchivedJob.js';
import type { FineGrainedSlotManager } from './resourcemanager/slotmanager/FineGrainedSlotManager.js';
import type { WaitReason } from './resourcemanager/slotmanager/WaitReason.js';

/** A profile's amounts as numbers: CPU in cores, memory in bytes, extended resources by name. */
export interface ResourceAmounts {
  readonly cpuCores: number;
  readonly taskHeapMemory: number;
  readonly taskOffHeapMemory: number;
  readonly managedMemory: number;
  readonly networkMemory: number;
  readonly extendedResources: Readonly<Record<string, number>>;
}

/** One slot of a TaskExecutor as the SlotManager sees it. */
export interface SlotOverview {
  /** The static slot's index (0 … slots − 1), or null for a dynamic slot (the TaskExecutor picks its index). */
  readonly index: number | null;
  /** Display form of the index: `'0'`, `'1'`, … or `'dynamic'`. */
  readonly slot: string;
  /** 'unavailable': a free static slot whose resources dynamic slots have taken. */
  readonly state: 'free' | 'unavailable' | 'pending' | 'allocated';
  readonly jobId: JobID | null;
  /** The allocation holding it (pending or allocated), else null: a job's subtasks name it too. */
  readonly allocationId: AllocationID | null;
  /** What the slot holds (a static slot: the default slot profile). */
  readonly resources: ResourceAmounts;
  /** Display form of `resources`: `ResourceProfile{cpuCores=1, taskHeapMemory=256 mb, …}`. */
  readonly resourceProfile: string;
  /** `vertex#subtask (state)` of the subtasks running or deployed in it. */
  readonly tasks: readonly string[];
}

export interface TaskExecutorOverview {
  readonly resourceId: ResourceID;
  readonly mode: 'thread' | 'process';
  /** max over CPU and memory of used / total, 0–1 (Flink's utilisation score). */
  readonly utilization: number;
  /** What the TaskExecutor offers in all. */
  readonly totalResources: ResourceAmounts;
  /** What no slot holds yet: the budget that free static slots and new dynamic slots draw on. */
  readonly availableResources: ResourceAmounts;
  /** Display form of `availableResources`. */
  readonly available: string;
  readonly slots: readonly SlotOverview[];
  /**
   * Its result partitions as its last heartbeat told (heartbeat.interval): held now, bytes in memory and spilled,
   * bytes produced, consumed and spilled since it started; null when it keeps none or has not answered one yet.
   */
  readonly partitions: PartitionFiguresWire | null;
}

/** A slot request of a job that waits, and why. */
export interface PendingRequestOverview {
  readonly jobId: JobID;
  readonly missing: number;
  /** What each missing slot must hold, or null for a default slot (any TaskExecutor's default slot profile). */
  readonly resources: ResourceAmounts | null;
  /** Display form: `'default slot'` or the profile. */
  readonly profile: string;
  /** Why it waits (the SlotManager's reason, in words). */
  readonly why: string;
  /**
   * The reason's kind (a WaitReason's `kind`), or `'allocating'` while the TaskExecutor is asked,
   * `'unchecked'` before the first requirement check looked at it.
   */
  readonly reason: WaitReason['kind'] | 'allocating' | 'unchecked';
}

export interface ClusterOverview {
  readonly taskExecutors: readonly TaskExecutorOverview[];
  /** Workers asked for and not registered yet. */
  readonly pendingWorkers: number;
  readonly pendingRequests: readonly PendingRequestOverview[];
  readonly jobs: readonly JobSummary[];
}

const ENDED = ['finished', 'failed', 'canceled'];

/** The overview of a MiniCluster's SlotManager (read through its overview()) and Dispatcher. */
export function describeCluster(
  slotManager: FineGrainedSlotManager,
  dispatcher: Pick<JobLookup, 'listJobs' | 'getJobView'>,
  /** How each TaskExecutor runs, as its registration told. */
  modeOf: (resourceId: ResourceID) => 'thread' | 'process',
  /** Each TaskExecutor's result partitions, as its last heartbeat told. */
  partitionsOf: (resourceId: ResourceID) => PartitionFiguresWire | null = () => null,
): ClusterOverview {
  const seen = slotManager.overview();
  const tasksBySlot = new Map<string, string[]>();
  for (const job of dispatcher.listJobs()) {
    const view = dispatcher.getJobView(job.jobId);
    // An archived job runs nothing (and its archive makes its summaries anew when asked).
    if (view === undefined || view instanceof ArchivedJob) continue;
    for (const e of view.executions()) {
      if (e.allocationId !== null && !ENDED.includes(e.state))
        tasksBySlot.set(e.allocationId, [...(tasksBySlot.get(e.allocationId) ?? []), `${e.key} (${e.state})`]);
    }
  }
  const taskExecutors = seen.taskManagers.map((tm): TaskExecutorOverview => {
    const available = ResourceProfile.fromJSON(tm.available);
    // Dynamic slots take from the same budget: a free static slot is usable only while what is
    // left still covers it (taken in index order, as the SlotManager would).
    let left = available;
    const usable = (profile: ResourceProfile) => {
      if (!left.allFieldsNoLessThan(profile)) return false;
      left = left.subtract(profile);
      return true;
    };
    const slots = tm.records.map((slot): SlotOverview => {
      const profile = ResourceProfile.fromJSON(slot.profile);
      return {
        index: slot.index >= 0 ? slot.index : null,
        slot: slot.index >= 0 ? `${slot.index}` : 'dynamic',
        state: slot.state === 'free' && !usable(profile) ? 'unavailable' : slot.state,
        jobId: slot.jobId,
        allocationId: slot.allocationId,
        resources: amounts(profile),
        resourceProfile: profile.toString(),
        tasks: slot.allocationId === null ? [] : (tasksBySlot.get(slot.allocationId) ?? []),
      };
    });
    return {
      resourceId: tm.resourceId,
      mode: modeOf(tm.resourceId),
      utilization: tm.utilization,
      totalResources: amounts(ResourceProfile.fromJSON(tm.total)),
      availableResources: amounts(available),
      available: available.toString(),
      slots,
      partitions: partitionsOf(tm.resourceId),
    };
  });
  const pendingRequests = slotManager.getPendingRequests().map(
    (r): PendingRequestOverview => ({
      jobId: r.jobId,
      missing: r.kind === 'requirement' ? r.missing : 1,
      resources: r.resourceProfile.isUnknown() ? null : amounts(r.resourceProfile),
      profile: r.resourceProfile.isUnknown() ? 'default slot' : r.resourceProfile.toString(),
      why: r.description,
      reason:
        r.kind === 'requirement'
          ? r.reason.kind
          : r.state === 'allocating'
            ? 'allocating'
            : (r.reason?.kind ?? 'unchecked'),
    }),
  );
  return { taskExecutors, pendingWorkers: seen.pendingWorkers.length, pendingRequests, jobs: dispatcher.listJobs() };
}

/** A specified profile's amounts (a TaskExecutor's and its slots' profiles are always specified). */
function amounts(profile: ResourceProfile): ResourceAmounts {
  const json = profile.toJSON();
  if (typeof json === 'string')
    throw new IllegalStateError(`a slot profile is ${json}; the overview shows specified profiles only`, {
      component: 'MiniCluster',
      operation: 'overview',
      state: json,
      allowed: ['specified'],
    });
  return json;
}
