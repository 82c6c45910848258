/**
 * How a TaskExecutor's options become resource profiles (Flink's TaskExecutorResourceUtils): the
 * total it offers, and the default profile of one static slot (the total divided by the number of
 * slots, rounded down like Flink's: CPU and extended resources to 1e-8, memory to whole bytes, so
 * that every static slot fits; 2 cores over 3 slots are 0.66666666 cores each).
 */
import { IllegalArgumentError } from './errors.js';
import type { ResolvedOptions } from './options.js';
import { ResourceProfile } from './ResourceProfile.js';

/** The total resources a TaskExecutor configured with `options` offers to its slots. */
export function totalResourceProfile(options: ResolvedOptions): ResourceProfile {
  return ResourceProfile.newBuilder()
    .setCpuCores(options['taskmanager.cpu.cores'] ?? options['taskmanager.numberOfTaskSlots'])
    .setTaskHeapMemory(options['taskmanager.memory.task.heap.size'])
    .setTaskOffHeapMemory(options['taskmanager.memory.task.off-heap.size'])
    .setManagedMemory(options['taskmanager.memory.managed.size'])
    .setNetworkMemory(options['taskmanager.memory.network.size'])
    .setExtendedResources({ ...options['taskmanager.extended-resources'] })
    .build();
}

/** One static slot's share of `total` when it is cut into `numberSlots` equal slots (rounded down). */
export function defaultSlotResourceProfile(total: ResourceProfile, numberSlots: number): ResourceProfile {
  if (!Number.isSafeInteger(numberSlots) || numberSlots < 1) {
    throw new IllegalArgumentError('out-of-range', `numberSlots must be an integer >= 1, got ${numberSlots}`, {
      argument: 'numberSlots',
      value: numberSlots,
    });
  }
  return total.divide(numberSlots);
}
