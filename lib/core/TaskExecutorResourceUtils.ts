/**
 * How a TaskExecutor's options become resource profiles (Flink's TaskExecutorResourceUtils): the
 * total it offers, and the default profile of one static slot (the total divided by the number of
 * slots, memory rounded down to whole bytes).
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

/** One static slot's share of `total` when it is cut into `numberSlots` equal slots. */
export function defaultSlotResourceProfile(total: ResourceProfile, numberSlots: number): ResourceProfile {
  if (!Number.isSafeInteger(numberSlots) || numberSlots < 1) {
    throw new IllegalArgumentError('out-of-range', `numberSlots must be an integer >= 1, got ${numberSlots}`, { argument: 'numberSlots', value: numberSlots });
  }
  if (total.isUnknown() || total.isAny()) return total;
  const share = (n: number) => Math.floor(n / numberSlots);
  const extended: Record<string, number> = {};
  for (const [name, amount] of Object.entries(total.extendedResources)) extended[name] = amount / numberSlots;
  return ResourceProfile.newBuilder()
    .setCpuCores(total.cpuCores / numberSlots)
    .setTaskHeapMemory(share(total.taskHeapMemory))
    .setTaskOffHeapMemory(share(total.taskOffHeapMemory))
    .setManagedMemory(share(total.managedMemory))
    .setNetworkMemory(share(total.networkMemory))
    .setExtendedResources(extended)
    .build();
}
