/**
 * The result partitions a TaskExecutor holds (Flink's ResultPartitionManager with its
 * TaskExecutorPartitionTracker): a finished producer's output stays on the TaskExecutor that ran it,
 * the JobMaster learns only where it is and how big (ResultPartitionWire), and its consumers read it
 * from here — never through the JobMaster. A partition is kept until its job lets go of it
 * (`releaseJob`: the job ended, or this TaskExecutor closes).
 *
 * A partition is serialized once, on the producer's task thread (`v8.serialize` into a
 * SharedArrayBuffer: taskWorker's encodePart), one part per subpartition; the TaskExecutor's thread
 * and the consumers' TaskExecutors only pass that buffer along (sharing, not copying, within a
 * process) and the consumer's task thread deserializes it. An output v8 cannot serialize (one holding
 * a SharedArrayBuffer: a view of managed memory) is kept as the value itself (`{ raw }`, 0 bytes
 * counted) and crosses as a structured clone.
 *
 * Partitions live in memory up to the TaskExecutor's network memory (`taskmanager.memory.network.size`:
 * Flink's network buffer pool is the TaskManager's too); a partition that would go past it is
 * spilled — written whole to a file of its own in a directory of this TaskExecutor's under the first
 * of `io.tmp.dirs` — and its subpartitions are read back from there when asked for. At most
 * `taskmanager.network.spill.max-size` is spilled at once: a producer whose output would go past it
 * fails with PartitionError('spill-limit'). Files go when their partitions are released, the
 * directory when the TaskExecutor closes. Writes and reads are synchronous on the TaskExecutor's
 * thread (a producer's output is written once, when it finished; a read takes one subpartition).
 *
 * Other TaskExecutors are reached through {@link PartitionPeers}: in a thread-mode MiniCluster every
 * TaskExecutor is a thread of one process and they talk over BroadcastChannels
 * (broadcastPartitionPeers); in a process-mode one they are processes of one host and talk over Unix
 * sockets in the cluster's directory (socketPartitionPeers; both in localPartitionPeers.ts); a session
 * cluster's TaskManagers are on any host and talk over NATS (lib/cluster/natsPartitionPeers.ts).
 */
import { closeSync, mkdirSync, mkdtempSync, openSync, readSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PartitionError } from '../core/errors.js';
import type { ResolvedOptions } from '../core/options.js';
import { totalResourceProfile } from '../core/TaskExecutorResourceUtils.js';
import { ExecutionAttemptID, type JobID, type ResourceID } from '../core/ids.js';
import type { PartitionFiguresWire, PartitionInputWire, ResultPartitionWire } from '../rpc/protocol.js';

/** One subpartition as it is kept and passed along: serialized bytes, or a value v8 could not serialize. */
export type PartitionPart = Uint8Array | { readonly raw: unknown };

/** The bytes a part is counted for. */
export const partBytes = (part: PartitionPart): number => (part instanceof Uint8Array ? part.byteLength : 0);

/** How a TaskExecutor reaches the others' partitions, and serves its own to them. */
export interface PartitionPeers {
  /** Answers the others' reads from `lookup` (undefined: not held here). */
  serve(lookup: (partitionId: string, subpartition: number) => PartitionPart | undefined): void;
  /** Reads a subpartition `resourceId` holds; rejects with PartitionError. */
  fetch(input: PartitionInputWire, timeoutMs: number): Promise<PartitionPart>;
  close(): void;
}

interface Kept {
  readonly jobId: JobID;
  /** In memory; null when spilled. */
  readonly parts: readonly PartitionPart[] | null;
  readonly bytes: number;
  /** Spilled: the file and each subpartition's place in it. */
  readonly spill: {
    readonly file: string;
    readonly offsets: readonly number[];
    readonly sizes: readonly number[];
  } | null;
}

/** Where partitions past memory go (ResultPartitions' module comment); absent: every partition stays in memory. */
export interface SpillOptions {
  /** Bytes of partitions kept in memory (the TaskExecutor's network memory). */
  readonly memoryBytes: number;
  /** The directory the TaskExecutor's own spill directory is made in (the first of `io.tmp.dirs`). */
  readonly directory: string;
  /** The most spilled at once, in bytes (`taskmanager.network.spill.max-size`). */
  readonly maxSpilledBytes: number;
}

/** What it holds and has moved: the figures its TaskExecutor reports (metrics, heartbeats). */
export type ResultPartitionsStats = PartitionFiguresWire;

export class ResultPartitions {
  readonly resourceId: ResourceID;
  readonly #peers: PartitionPeers;
  readonly #timeoutMs: number;
  readonly #kept = new Map<string, Kept>();
  readonly #byJob = new Map<JobID, Set<string>>();
  readonly #spillOptions: SpillOptions | undefined;
  /** This TaskExecutor's own spill directory, made at the first spill. */
  #spillDirectory: string | undefined;
  #bytes = 0;
  #inMemory = 0;
  #spilled = 0;
  #spilledTotal = 0;
  #produced = 0;
  #consumed = 0;
  #readLocally = 0;
  #served = 0;
  #closed = false;

  constructor(resourceId: ResourceID, peers: PartitionPeers, timeoutMs: number, spill?: SpillOptions) {
    this.resourceId = resourceId;
    this.#peers = peers;
    this.#timeoutMs = timeoutMs;
    this.#spillOptions = spill;
    peers.serve((partitionId, subpartition) => {
      let part: PartitionPart | undefined;
      try {
        part = this.#part(partitionId, subpartition);
      } catch {
        // A spill file that cannot be read back: the reader is told the partition is not here.
        return undefined;
      }
      if (part !== undefined) this.#served++;
      return part;
    });
  }

  get stats(): ResultPartitionsStats {
    return {
      partitions: this.#kept.size,
      bytes: this.#bytes,
      spilledBytes: this.#spilled,
      spilledTotal: this.#spilledTotal,
      producedBytes: this.#produced,
      consumedBytes: this.#consumed,
      readLocally: this.#readLocally,
      served: this.#served,
    };
  }

  /**
   * Keeps a finished attempt's output, in memory or spilled past the network memory; what the
   * JobMaster is told of it. Throws PartitionError('spill-limit') when it would take the spilled
   * bytes past their bound, 'spill-failed' when the file could not be written (nothing kept).
   */
  keep(jobId: JobID, partitionId: ExecutionAttemptID, parts: readonly PartitionPart[]): ResultPartitionWire {
    const bytes = parts.map(partBytes);
    if (!this.#closed) {
      const total = bytes.reduce((a, b) => a + b, 0);
      const spill = this.#spillOptions;
      const spilled =
        spill !== undefined && total > 0 && this.#inMemory + total > spill.memoryBytes
          ? this.#spill(partitionId, parts, bytes, total, spill)
          : null;
      this.#kept.set(partitionId, { jobId, parts: spilled === null ? parts : null, bytes: total, spill: spilled });
      this.#bytes += total;
      this.#produced += total;
      if (spilled === null) this.#inMemory += total;
      let ids = this.#byJob.get(jobId);
      if (ids === undefined) this.#byJob.set(jobId, (ids = new Set()));
      ids.add(partitionId);
    }
    return { partitionId, resourceId: this.resourceId, bytes };
  }

  /** Writes a partition to a file of its own: where each subpartition is in it. */
  #spill(
    partitionId: ExecutionAttemptID,
    parts: readonly PartitionPart[],
    sizes: readonly number[],
    total: number,
    options: SpillOptions,
  ): NonNullable<Kept['spill']> {
    const input = { partitionId, subpartition: -1, resourceId: this.resourceId };
    if (this.#spilled + total > options.maxSpilledBytes)
      throw new PartitionError(
        'spill-limit',
        `TaskExecutor ${this.resourceId} cannot keep result partition ${ExecutionAttemptID.short(partitionId)} ` +
          `(${total} bytes): its network memory (${options.memoryBytes} bytes, taskmanager.memory.network.size) ` +
          `is full and ${this.#spilled} bytes are spilled already, of at most ${options.maxSpilledBytes} ` +
          '(taskmanager.network.spill.max-size)',
        { ...input, bytes: total, spilledBytes: this.#spilled, maxSpilledBytes: options.maxSpilledBytes },
      );
    if (parts.some((part) => !(part instanceof Uint8Array)))
      throw new PartitionError(
        'spill-failed',
        `TaskExecutor ${this.resourceId} cannot spill result partition ${ExecutionAttemptID.short(partitionId)}: ` +
          'it holds a value v8 cannot serialize (a view of managed memory), and its network memory is full',
        { ...input, bytes: total },
      );
    let file: string | undefined;
    let fd: number | undefined;
    try {
      this.#spillDirectory ??= mkdtempSync(join(mkdirOf(options.directory), `slotwise-spill-${this.resourceId}-`));
      file = join(this.#spillDirectory, `${partitionId}.bin`);
      fd = openSync(file, 'w');
      const offsets: number[] = [];
      let offset = 0;
      for (const part of parts as readonly Uint8Array[]) {
        offsets.push(offset);
        for (let written = 0; written < part.byteLength; )
          written += writeSync(fd, part, written, part.byteLength - written, offset + written);
        offset += part.byteLength;
      }
      this.#spilled += total;
      this.#spilledTotal += total;
      return { file, offsets, sizes };
    } catch (error) {
      if (file !== undefined) rmSync(file, { force: true });
      throw new PartitionError(
        'spill-failed',
        `TaskExecutor ${this.resourceId} could not spill result partition ${ExecutionAttemptID.short(partitionId)} ` +
          `(${total} bytes) under ${options.directory} (io.tmp.dirs): ${(error as Error).message}`,
        { ...input, bytes: total },
      );
    } finally {
      if (fd !== undefined) closeSync(fd);
    }
  }

  /** A kept subpartition: from memory, or read back from its spill file into shared memory; undefined if not held. */
  #part(partitionId: string, subpartition: number): PartitionPart | undefined {
    const kept = this.#kept.get(partitionId);
    if (kept === undefined) return undefined;
    if (kept.parts !== null) return kept.parts[subpartition];
    const { file, offsets, sizes } = kept.spill!;
    const size = sizes[subpartition];
    if (size === undefined) return undefined;
    const part = new Uint8Array(new SharedArrayBuffer(size));
    const fd = openSync(file, 'r');
    try {
      for (let read = 0; read < size; ) {
        const n = readSync(fd, part, read, size - read, offsets[subpartition]! + read);
        if (n === 0) throw new Error(`${file} ends early`);
        read += n;
      }
    } finally {
      closeSync(fd);
    }
    return part;
  }

  /** Whether partitions of the job are kept here (its JobMaster connection stays while they are). */
  holds(jobId: JobID): boolean {
    return this.#byJob.has(jobId);
  }

  /** Lets go of the job's partitions named (every one of the job's when none is named); how many went. */
  releaseJob(jobId: JobID, partitionIds?: readonly string[]): number {
    const ids = this.#byJob.get(jobId);
    if (ids === undefined) return 0;
    let released = 0;
    for (const id of partitionIds ?? [...ids]) {
      const kept = this.#kept.get(id);
      if (kept === undefined || kept.jobId !== jobId) continue;
      this.#forget(kept);
      this.#kept.delete(id);
      ids.delete(id);
      released++;
    }
    if (ids.size === 0) this.#byJob.delete(jobId);
    return released;
  }

  /** A subpartition for a consumer here: from this TaskExecutor, or fetched from the one that holds it. */
  read(input: PartitionInputWire): Promise<PartitionPart> {
    if (this.#closed)
      return Promise.reject(partitionError('unreachable', input, `TaskExecutor ${this.resourceId} is closing`));
    const counted = (part: PartitionPart): PartitionPart => {
      this.#consumed += partBytes(part);
      return part;
    };
    if (input.resourceId !== this.resourceId) return this.#peers.fetch(input, this.#timeoutMs).then(counted);
    let part: PartitionPart | undefined;
    try {
      part = this.#part(input.partitionId, input.subpartition);
    } catch (error) {
      return Promise.reject(
        partitionError(
          'spill-failed',
          input,
          `TaskExecutor ${this.resourceId} could not read back its spilled result partition ` +
            `${ExecutionAttemptID.short(input.partitionId)}: ${(error as Error).message}`,
        ),
      );
    }
    if (part === undefined) return Promise.reject(notFound(input));
    this.#readLocally++;
    return Promise.resolve(counted(part));
  }

  /** Lets go of everything, its spill files included, and stops serving. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#kept.clear();
    this.#byJob.clear();
    this.#bytes = 0;
    this.#inMemory = 0;
    this.#spilled = 0;
    if (this.#spillDirectory !== undefined) rmSync(this.#spillDirectory, { recursive: true, force: true });
    this.#peers.close();
  }

  /** A partition's bytes no longer counted, and its spill file gone. */
  #forget(kept: Kept): void {
    this.#bytes -= kept.bytes;
    if (kept.spill === null) this.#inMemory -= kept.bytes;
    else {
      this.#spilled -= kept.bytes;
      rmSync(kept.spill.file, { force: true });
    }
  }
}

/** A TaskExecutor's spill options from its configuration: its network memory, `io.tmp.dirs`, the spill bound. */
export function spillOptionsOf(options: ResolvedOptions): SpillOptions {
  return {
    memoryBytes: totalResourceProfile(options).networkMemory,
    directory: options['io.tmp.dirs'][0] ?? tmpdir(),
    maxSpilledBytes: options['taskmanager.network.spill.max-size'],
  };
}

/** `directory`, made if missing. */
function mkdirOf(directory: string): string {
  mkdirSync(directory, { recursive: true });
  return directory;
}

/** A read of `input` refused: the PartitionError with what was asked in its details. */
export function partitionError(
  reason: 'not-found' | 'timed-out' | 'unreachable' | 'chunk-lost' | 'spill-failed',
  input: PartitionInputWire,
  message: string,
): PartitionError {
  const { partitionId, subpartition, resourceId } = input;
  return new PartitionError(reason, message, { partitionId, subpartition, resourceId });
}

/** `input` is not held where it was asked for. */
export function notFound(input: PartitionInputWire): PartitionError {
  return partitionError(
    'not-found',
    input,
    `TaskExecutor ${input.resourceId} holds no result partition ${ExecutionAttemptID.short(input.partitionId)} ` +
      `(subpartition ${input.subpartition}): it was released, or its TaskExecutor started afresh`,
  );
}

/** Nobody answered a read of `input` within `timeoutMs`. */
export function timedOut(input: PartitionInputWire, timeoutMs: number): PartitionError {
  return partitionError(
    'timed-out',
    input,
    `TaskExecutor ${input.resourceId} did not answer a read of result partition ` +
      `${ExecutionAttemptID.short(input.partitionId)} (subpartition ${input.subpartition}) within ` +
      `${timeoutMs} ms (rpc.ask.timeout): it is gone or stuck`,
  );
}
