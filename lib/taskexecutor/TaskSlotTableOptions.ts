/**
 * What a TaskSlotTable is made from (TaskSlotTableOptions, with its defaults from the Flink-named
 * options and its checks), what it tells its TaskExecutor (SlotActions, Flink's name), and what
 * freeSlot answers (FreeSlotResult).
 */
import type { InspectionEvent } from 'xstate';
import type { Clock } from '../core/clock.js';
import type { DurationInput } from '../core/Duration.js';
import type { AllocationID, ExecutionAttemptID, JobID } from '../core/ids.js';
import { parseMemorySize, type MemorySizeInput } from '../core/MemorySize.js';
import { DEFAULTS } from '../core/options.js';
import { ResourceProfile } from '../core/ResourceProfile.js';
import { defaultSlotResourceProfile } from '../core/TaskExecutorResourceUtils.js';
import type { TaskSlotOutput } from '../../machines/taskSlot.machine.js';
import { MemoryManager } from './MemoryManager.js';
import { duration, illegal } from './taskSlotTableChecks.js';

/** What the table tells its TaskExecutor (Flink's SlotActions, plus two notices of ours). */
export interface SlotActions {
  /** A slot stayed allocated past its timeout. Free it only if `isValidTimeout(allocationId, ticket)` still holds. */
  timeoutSlot(allocationId: AllocationID, ticket: string): void;
  /** A slot left the table and its resources returned (freed empty, or its last task was removed while releasing). */
  slotFreed?(allocationId: AllocationID, jobId: JobID, index: number): void;
  /** A releasing slot's tasks did not terminate within the release timeout (task.cancellation.timeout). */
  releaseTimedOut?(allocationId: AllocationID, executionAttemptIds: readonly ExecutionAttemptID[]): void;
  /** A slot finished closing; `leaks` lists the managed memory its tasks never released. */
  slotClosed?(output: TaskSlotOutput): void;
}

export interface TaskSlotTableOptions {
  /** The TaskExecutor's total resources. */
  readonly totalResourceProfile: ResourceProfile;
  /** Static slots; default `taskmanager.numberOfTaskSlots` (1). */
  readonly numberSlots?: number;
  /** Default: the total divided by the number of static slots. */
  readonly defaultSlotResourceProfile?: ResourceProfile;
  /** Default `taskmanager.slot.timeout` (10 s). */
  readonly slotTimeout?: DurationInput;
  /** Default `task.cancellation.timeout` (180 s). */
  readonly releaseTimeout?: DurationInput;
  /** Page size of each slot's MemoryManager; default `taskmanager.memory.segment-size` (32 kb). */
  readonly pageSize?: MemorySizeInput;
  /** Default: notifications are dropped. */
  readonly slotActions?: SlotActions;
  /** Default: the system clock. Drives slot and release timeouts. */
  readonly clock?: Clock;
  /** Where notifications run; default `queueMicrotask`. */
  readonly executor?: (task: () => void) => void;
  /** Receives every XState inspection event of the table and its slots. */
  readonly inspect?: (event: InspectionEvent) => void;
}

/** The result of freeSlot: whether the slot left at once, and its closing, shared by every caller. */
export interface FreeSlotResult {
  readonly index: number;
  /** `freed`: it was empty and left the table; `releasing`: its tasks were failed and it leaves with the last one. */
  readonly state: 'freed' | 'releasing';
  readonly closed: Promise<TaskSlotOutput>;
}

/** The table's sizes and timeouts, checked, with their defaults filled in (timeouts in ms, the page size in bytes). */
export interface ResolvedTaskSlotTableOptions {
  readonly numberSlots: number;
  readonly defaultSlotResourceProfile: ResourceProfile;
  readonly slotTimeout: number;
  readonly releaseTimeout: number;
  readonly pageSize: number;
}

/** Checks the options (an IllegalArgumentError naming the first one refused) and fills in the defaults. */
export function resolveTaskSlotTableOptions(options: TaskSlotTableOptions): ResolvedTaskSlotTableOptions {
  if (typeof options !== 'object' || options === null) throw illegal('options', 'invalid-type', 'must be an object');
  if (!(options.totalResourceProfile instanceof ResourceProfile) || options.totalResourceProfile.isUnknown()) {
    throw illegal('totalResourceProfile', 'invalid-value', 'must be a known ResourceProfile (specified or ANY)');
  }
  const numberSlots = options.numberSlots ?? DEFAULTS['taskmanager.numberOfTaskSlots'];
  if (!Number.isSafeInteger(numberSlots) || numberSlots < 0)
    throw illegal('numberSlots', 'out-of-range', `must be an integer >= 0, got ${numberSlots}`);
  const defaultSlot =
    options.defaultSlotResourceProfile ??
    defaultSlotResourceProfile(options.totalResourceProfile, Math.max(numberSlots, 1));
  if (!(defaultSlot instanceof ResourceProfile) || defaultSlot.isUnknown()) {
    throw illegal('defaultSlotResourceProfile', 'invalid-value', 'must be a known ResourceProfile');
  }
  const slotTimeout = duration('slotTimeout', options.slotTimeout, DEFAULTS['taskmanager.slot.timeout']);
  const releaseTimeout = duration('releaseTimeout', options.releaseTimeout, DEFAULTS['task.cancellation.timeout']);
  const pageSize = parseMemorySize(options.pageSize ?? DEFAULTS['taskmanager.memory.segment-size']);
  if (!pageSize.ok) throw illegal('pageSize', 'invalid-value', pageSize.problem);
  MemoryManager.create(0, pageSize.bytes); // checks the page size rule once, here, instead of at the first allocation
  return {
    numberSlots,
    defaultSlotResourceProfile: defaultSlot,
    slotTimeout,
    releaseTimeout,
    pageSize: pageSize.bytes,
  };
}
