/**
 * Where a job's result partitions are (Flink's JobMasterPartitionTracker): the TaskExecutors that kept some, to be
 * told to let go of them at the job's end, and — when a TaskExecutor is lost — which finished producers lost their
 * partition while a consumer still needs it (they run again: Flink's region failover for a blocking edge) and which
 * consumers were still reading one (they run again too).
 */
import type { ExecutionAttemptID, ResourceID } from '../core/ids.js';
import type { ResultPartitionWire, SerializedError } from '../rpc/protocol.js';
import type { ExecutionAttempts, ExecutionRecord } from './ExecutionAttempts.js';
import type { ExecutionGraph } from './ExecutionGraph.js';

export class JobPartitionTracker {
  readonly #graph: ExecutionGraph;
  readonly #executions: ExecutionAttempts;
  readonly #holders = new Set<ResourceID>();
  /** Per partition kept and not released yet: how many of its consumers have not finished. */
  readonly #unread = new Map<ExecutionAttemptID, number>();

  constructor(graph: ExecutionGraph, executions: ExecutionAttempts) {
    this.#graph = graph;
    this.#executions = executions;
  }

  /** A producer finished with its output kept where it ran (or, null, sent to the JobMaster). */
  kept(producer: ExecutionRecord, partition: ResultPartitionWire | null): void {
    if (partition === null) return;
    this.#holders.add(partition.resourceId);
    let unread = 0;
    for (const c of this.#graph.consumersOf(producer.vertex)) if (this.#executions.of(c).state !== 'finished') unread++;
    this.#unread.set(partition.partitionId, unread);
  }

  /**
   * A TaskExecutor is gone with its partitions: the finished producers whose partition was there and that a consumer
   * not finished still needs, and the consumers still reading one (deployed, not running yet: a consumer reads its
   * inputs before it runs). It holds nothing to release any more.
   */
  #lostWith(resourceId: ResourceID): { producers: ExecutionRecord[]; readers: ExecutionRecord[] } {
    this.#holders.delete(resourceId);
    const producers: ExecutionRecord[] = [];
    const readers = new Set<ExecutionRecord>();
    for (const record of this.#executions.values()) {
      if (record.state !== 'finished' || record.partition?.resourceId !== resourceId) continue;
      const consumers = this.#graph.consumersOf(record.vertex).map((c) => this.#executions.of(c));
      if (consumers.every((c) => c.state === 'finished')) continue;
      producers.push(record);
      for (const c of consumers) if (c.state === 'deploying' || c.state === 'initializing') readers.add(c);
    }
    return { producers, readers: [...readers] };
  }

  /**
   * The TaskExecutor is lost with its partitions (see #lostWith): each producer that must run again has its output
   * forgotten and is `failed` (PartitionLost), each consumer still reading one is `canceled` where it runs and
   * `failed`. The failure to report for the loss, with the finished producers it undid; null if none.
   */
  lose(
    resourceId: ResourceID,
    cause: string,
    on: { failed(record: ExecutionRecord, error: SerializedError): void; cancel(record: ExecutionRecord): void },
  ): { error: SerializedError; message: string; producers: readonly ExecutionRecord[] } | null {
    const { producers, readers } = this.#lostWith(resourceId);
    if (producers.length === 0) return null;
    const error = { name: 'PartitionLost', message: `its result partition on ${resourceId} is lost (${cause})` };
    for (const record of producers) {
      this.#unread.delete(record.partition!.partitionId);
      record.output = undefined;
      record.partition = null;
      record.hasOutput = false;
      on.failed(record, error);
    }
    for (const record of readers) {
      on.cancel(record);
      on.failed(record, { name: 'PartitionLost', message: `an input partition on ${resourceId} is lost (${cause})` });
    }
    const lost = producers.map((r) => r.vertex.key).join(', ');
    return {
      error,
      message: `${producers.length} result partition(s) on ${resourceId} lost: ${lost}`,
      producers,
    };
  }

  /**
   * A consumer finished: the partitions of its producers that every consumer has now read, by the TaskExecutor that
   * holds them, to be released before the job's end (a finished consumer never runs again, so none is needed more).
   */
  consumed(consumer: ExecutionRecord): Map<ResourceID, ExecutionAttemptID[]> {
    const done = new Map<ResourceID, ExecutionAttemptID[]>();
    for (const producerVertex of this.#graph.producersOf(consumer.vertex)) {
      const partition = this.#executions.of(producerVertex).partition;
      const unread = partition === null ? undefined : this.#unread.get(partition.partitionId);
      if (unread === undefined) continue;
      if (unread > 1) {
        this.#unread.set(partition!.partitionId, unread - 1);
        continue;
      }
      this.#unread.delete(partition!.partitionId);
      const ids = done.get(partition!.resourceId);
      if (ids === undefined) done.set(partition!.resourceId, [partition!.partitionId]);
      else ids.push(partition!.partitionId);
    }
    return done;
  }

  /** The job ended: the TaskExecutors that kept partitions of it, each to release them; it tracks nothing more. */
  releaseAll(): ResourceID[] {
    const holders = [...this.#holders];
    this.#holders.clear();
    this.#unread.clear();
    return holders;
  }
}
