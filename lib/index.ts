/**
 * The public API of slotwise. Every export is listed by name; types in their own block.
 */
export { systemClock, SimulatedClock } from './core/clock.js';
export { formatDuration, parseDuration } from './core/Duration.js';
export {
  ConfigurationError,
  DuplicateTaskError,
  ERROR_CLASSES,
  IllegalArgumentError,
  IllegalStateError,
  isSlotwiseError,
  MemoryAllocationError,
  ResourceBudgetError,
  ResourceProfileError,
  reviveError,
  SlotAllocationError,
  SlotNotActiveError,
  SlotNotFoundError,
  SlotOwnerMismatchError,
  SlotwiseError,
  TaskNotFoundError,
  TimeoutError,
} from './core/errors.js';
export { AllocationID, ExecutionAttemptID, JobID, ResourceID, SlotID } from './core/ids.js';
export { formatMemorySize, GiB, KiB, MiB, parseMemorySize } from './core/MemorySize.js';
export { DEFAULTS, describeOptions, OPTIONS, resolveOptions } from './core/options.js';
export { ResourceBudgetManager } from './core/ResourceBudgetManager.js';
export { formatShortfall, ResourceProfile, ResourceProfileBuilder } from './core/ResourceProfile.js';
export { DEFAULT_PAGE_SIZE, MemoryManager } from './taskexecutor/MemoryManager.js';
export { defaultSlotResourceProfile, totalResourceProfile } from './core/TaskExecutorResourceUtils.js';
export { TaskSlotTable } from './taskexecutor/TaskSlotTable.js';
export { machines, taskSlotMachine, taskSlotTableMachine } from '../machines/index.js';

export type { Clock, TimerHandle } from './core/clock.js';
export type { DurationInput } from './core/Duration.js';
export type { AnySlotwiseError, SerializedSlotwiseError, SlotwiseErrorTag } from './core/errors.js';
export type { MemorySizeInput } from './core/MemorySize.js';
export type { OptionName, ResolvedOptions, SlotwiseOptions } from './core/options.js';
export type { ResourceProfileJSON, ResourceShortfall, ResourceSpec } from './core/ResourceProfile.js';
export type { MemoryLeakReport, MemorySegment, SharedMemoryHandle } from './taskexecutor/MemoryManager.js';
export type { SlotReport, SlotStatus, SlotStatusState } from './core/SlotReport.js';
export type { FreeSlotResult, SlotActions, SlotAllocationRequest, TaskSlotInfo, TaskSlotOutput, TaskSlotPayload, TaskSlotTableOptions } from './taskexecutor/TaskSlotTable.js';
