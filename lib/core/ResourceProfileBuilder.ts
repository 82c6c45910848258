/** ResourceProfile's builder (Flink's ResourceProfile.Builder): a specified profile field by field. */
import { describeValue, ResourceProfileError } from './errors.js';
import { MiB, type MemorySizeInput } from './MemorySize.js';
import type { ResourceProfile, ResourceSpec } from './ResourceProfile.js';
import { checkName, STANDARD, toBytes, toUnits, type Amounts } from './resourceAmounts.js';

/** Makes the specified profile of these amounts (ResourceProfile's private constructor, handed over by newBuilder). */
export type ProfileFactory = (amounts: Amounts, extended: ReadonlyMap<string, number>) => ResourceProfile;

/** Builds a specified profile field by field; every setter checks its value at once. */
export class ResourceProfileBuilder {
  readonly #create: ProfileFactory;
  readonly #amounts = [0, 0, 0, 0, 0];
  readonly #extended = new Map<string, number>();

  /** Use {@link ResourceProfile.newBuilder}; `create` makes the specified profile `build()` returns. */
  constructor(create: ProfileFactory) {
    this.#create = create;
  }

  /** CPU cores, fractions allowed, kept to 8 decimal places (rounded down: 0.123456789 is kept as 0.12345678). */
  setCpuCores(cores: number): this {
    this.#amounts[0] = toUnits('cpuCores', cores);
    return this;
  }
  /** Task heap memory (Flink: taskmanager.memory.task.heap.size share of the slot). */
  setTaskHeapMemory(size: MemorySizeInput): this {
    return this.#memory(1, size);
  }
  /** Task heap memory in whole mebibytes. */
  setTaskHeapMemoryMB(mb: number): this {
    return this.#memoryMB(1, mb);
  }
  /** Task off-heap memory (direct / native memory used by user code). */
  setTaskOffHeapMemory(size: MemorySizeInput): this {
    return this.#memory(2, size);
  }
  /** Task off-heap memory in whole mebibytes. */
  setTaskOffHeapMemoryMB(mb: number): this {
    return this.#memoryMB(2, mb);
  }
  /** Managed memory (Flink's MemoryManager: sorting, hash tables, RocksDB). */
  setManagedMemory(size: MemorySizeInput): this {
    return this.#memory(3, size);
  }
  /** Managed memory in whole mebibytes. */
  setManagedMemoryMB(mb: number): this {
    return this.#memoryMB(3, mb);
  }
  /** Network memory (buffers for shuffles between tasks). */
  setNetworkMemory(size: MemorySizeInput): this {
    return this.#memory(4, size);
  }
  /** Network memory in whole mebibytes. */
  setNetworkMemoryMB(mb: number): this {
    return this.#memoryMB(4, mb);
  }
  /**
   * An extended resource (e.g. `gpu`), fractions allowed and kept to 8 decimal places (rounded down); amount 0 removes
   * it.
   */
  setExtendedResource(name: string, amount: number): this {
    const units = toUnits(checkName(name), amount);
    if (units === 0) this.#extended.delete(name);
    else this.#extended.set(name, units);
    return this;
  }
  /** Sets every extended resource in the record (others already set are kept, like Flink's putAll). */
  setExtendedResources(resources: Record<string, number>): this {
    if (typeof resources !== 'object' || resources === null || Array.isArray(resources)) {
      const message = `extendedResources must be an object of name → amount, got ${describeValue(resources)}`;
      throw new ResourceProfileError('not-finite', message, {
        field: 'extendedResources',
        value: describeValue(resources),
      });
    }
    for (const [name, amount] of Object.entries(resources)) this.setExtendedResource(name, amount);
    return this;
  }
  /** Sets the fields of a plain spec object (missing fields untouched, unknown keys refused). */
  setSpec(spec: ResourceSpec): this {
    const allowed = [...STANDARD, 'extendedResources'];
    if (typeof spec !== 'object' || spec === null || Array.isArray(spec)) {
      const message =
        `a resource spec must be a ResourceProfile, 'UNKNOWN', 'ANY' or an ` +
        `object with fields ${allowed.join(', ')}; got ${describeValue(spec)}`;
      throw new ResourceProfileError('unknown-field', message, { field: 'spec', value: describeValue(spec) });
    }
    const unknown = Object.keys(spec).find((k) => !allowed.includes(k));
    if (unknown !== undefined) {
      const message = `unknown resource field ${JSON.stringify(unknown)}; allowed fields are ${allowed.join(', ')}`;
      throw new ResourceProfileError('unknown-field', message, { field: unknown, allowed });
    }
    if (spec.cpuCores !== undefined) this.setCpuCores(spec.cpuCores);
    if (spec.taskHeapMemory !== undefined) this.setTaskHeapMemory(spec.taskHeapMemory);
    if (spec.taskOffHeapMemory !== undefined) this.setTaskOffHeapMemory(spec.taskOffHeapMemory);
    if (spec.managedMemory !== undefined) this.setManagedMemory(spec.managedMemory);
    if (spec.networkMemory !== undefined) this.setNetworkMemory(spec.networkMemory);
    if (spec.extendedResources !== undefined) this.setExtendedResources(spec.extendedResources);
    return this;
  }
  /** The profile built so far. */
  build(): ResourceProfile {
    return this.#create([...this.#amounts] as unknown as Amounts, this.#extended);
  }

  #memory(index: 1 | 2 | 3 | 4, size: unknown): this {
    this.#amounts[index] = toBytes(STANDARD[index], size);
    return this;
  }
  #memoryMB(index: 1 | 2 | 3 | 4, mb: number): this {
    const field = STANDARD[index];
    if (typeof mb === 'number' && Number.isFinite(mb) && mb >= 0 && !Number.isInteger(mb)) {
      throw new ResourceProfileError(
        'not-integer',
        `${field} in MB must be a whole number of mebibytes, got ${mb}; pass a size string like '${mb}m' for fractions`,
        { field, value: mb },
      );
    }
    return this.#memory(index, typeof mb === 'number' && Number.isInteger(mb) ? mb * MiB : mb);
  }
}
