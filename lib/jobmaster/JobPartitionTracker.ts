/**
 * Where a job's result partitions are (Flink's JobMasterPartitionTracker): the TaskExecutors that kept some, to be
 * told to let go of them at the job's end, and — when a TaskExecutor is lost — which finished producers lost their
 * partition while a consumer still needs it (they run again: Flink's region failover for a blocking edge) and which
 * consumers were still reading one (they run again too).
 */
import type { ExecutionAttemptID, ResourceID } from '../core/ids.js';
import type { ResultPartitionWire, SerializedError } from '../rpc/protocol.js';
import type { ExecutionAttempts, ExecutionRecord } from './ExecutionAttempts.js';
import type { ExecutionGraph, ExecutionVertex } from './ExecutionGraph.js';

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

  /**
   * A producer finished with its output kept where it ran (or, null, sent to the JobMaster). A consumer vertex the
   * adaptive scheduler has not initialized yet holds the partition as one reader until it is (consumersAdded).
   */
  kept(producer: ExecutionRecord, partition: ResultPartitionWire | null): void {
    if (partition === null) return;
    this.#holders.add(partition.resourceId);
    let unread = this.#undecidedConsumers(producer);
    for (const c of this.#graph.consumersOf(producer.vertex)) if (this.#executions.of(c).state !== 'finished') unread++;
    this.#unread.set(partition.partitionId, unread);
  }

  /**
   * The adaptive scheduler initialized a vertex: each partition it reads that is kept now has its new subtasks as
   * readers instead of the one place the vertex held.
   */
  consumersAdded(subtasks: readonly ExecutionVertex[]): void {
    const readers = new Map<ExecutionAttemptID, number>();
    for (const consumer of subtasks)
      for (const producer of this.#graph.producersOf(consumer)) {
        const partition = this.#executions.of(producer).partition;
        if (partition !== null && this.#unread.has(partition.partitionId))
          readers.set(partition.partitionId, (readers.get(partition.partitionId) ?? 0) + 1);
      }
    for (const [id, count] of readers) this.#unread.set(id, this.#unread.get(id)! + count - 1);
  }

  /** How many of the producer's consumer vertices wait for the adaptive scheduler to decide their parallelism. */
  #undecidedConsumers(producer: ExecutionRecord): number {
    let count = 0;
    for (const edge of this.#graph.jobGraph.outputsOf(producer.vertex.jobVertex.id))
      if (!this.#graph.isInitialized(edge.to)) count++;
    return count;
  }

  /**
   * A TaskExecutor is gone with its partitions: the finished producers whose partition was there and that a consumer
   * not finished still needs, the finished producers upstream of those whose partitions are gone too (see #upstream),
   * and the consumers still reading one (deployed, not running yet: a consumer reads its inputs before it runs). It
   * holds nothing to release any more.
   */
  #lostWith(resourceId: ResourceID): {
    producers: ExecutionRecord[];
    upstream: ExecutionRecord[];
    readers: ExecutionRecord[];
  } {
    this.#holders.delete(resourceId);
    const producers: ExecutionRecord[] = [];
    const readers = new Set<ExecutionRecord>();
    for (const record of this.#executions.values()) {
      if (record.state !== 'finished' || record.partition?.resourceId !== resourceId) continue;
      const consumers = this.#graph.consumersOf(record.vertex).map((c) => this.#executions.of(c));
      if (consumers.every((c) => c.state === 'finished') && this.#undecidedConsumers(record) === 0) continue;
      producers.push(record);
      for (const c of consumers) if (c.state === 'deploying' || c.state === 'initializing') readers.add(c);
    }
    return { producers, upstream: this.#upstream(producers, resourceId), readers: [...readers] };
  }

  /**
   * A producer that runs again reads its inputs again: each finished producer it reads whose partition is gone —
   * released once every consumer had read it, or kept on the TaskExecutor just lost — runs again too, and so on
   * upstream (Flink's RestartPipelinedRegionFailoverStrategy restarts the producer regions of partitions no longer
   * available). An output the JobMaster holds (no partition) is always there.
   */
  #upstream(rerun: readonly ExecutionRecord[], lostOn: ResourceID): ExecutionRecord[] {
    const seen = new Set(rerun);
    const upstream: ExecutionRecord[] = [];
    const walk = [...rerun];
    for (let record = walk.pop(); record !== undefined; record = walk.pop()) {
      for (const vertex of this.#graph.producersOf(record.vertex)) {
        const producer = this.#executions.of(vertex);
        const partition = producer.partition;
        if (seen.has(producer) || producer.state !== 'finished' || partition === null) continue;
        if (this.#unread.has(partition.partitionId) && partition.resourceId !== lostOn) continue;
        seen.add(producer);
        upstream.push(producer);
        walk.push(producer);
      }
    }
    return upstream;
  }

  /**
   * The TaskExecutor is lost with its partitions (see #lostWith): each producer that must run again has its output
   * forgotten and is `failed` (PartitionLost), each consumer still reading one is `canceled` where it runs and
   * `failed`. The failure to report for the loss, with the finished producers it undid (those upstream whose
   * partitions a re-run needs too); null if none.
   */
  lose(
    resourceId: ResourceID,
    cause: string,
    on: { failed(record: ExecutionRecord, error: SerializedError): void; cancel(record: ExecutionRecord): void },
  ): { error: SerializedError; message: string; producers: readonly ExecutionRecord[] } | null {
    const { producers, upstream, readers } = this.#lostWith(resourceId);
    if (producers.length === 0) return null;
    const error = { name: 'PartitionLost', message: `its result partition on ${resourceId} is lost (${cause})` };
    const released = {
      name: 'PartitionLost',
      message: 'its result partition was released once read: a reader runs again',
    };
    for (const record of producers) this.#undo(record, error, on);
    for (const record of upstream)
      this.#undo(record, record.partition!.resourceId === resourceId ? error : released, on);
    for (const record of readers) {
      on.cancel(record);
      on.failed(record, { name: 'PartitionLost', message: `an input partition on ${resourceId} is lost (${cause})` });
    }
    const lost = producers.map((r) => r.vertex.key).join(', ');
    const again =
      upstream.length === 0 ? '' : `; their inputs run again: ${upstream.map((r) => r.vertex.key).join(', ')}`;
    return {
      error,
      message: `${producers.length} result partition(s) on ${resourceId} lost: ${lost}${again}`,
      producers: [...producers, ...upstream],
    };
  }

  /** A finished producer runs again: its output is forgotten and it is `failed`. */
  #undo(record: ExecutionRecord, error: SerializedError, on: { failed(r: ExecutionRecord, e: SerializedError): void }) {
    this.#unread.delete(record.partition!.partitionId);
    record.output = undefined;
    record.partition = null;
    record.hasOutput = false;
    on.failed(record, error);
  }

  /**
   * A consumer finished: the partitions of its producers that every consumer has now read, by the TaskExecutor that
   * holds them, to be released before the job's end (a finished consumer runs again only when its own output is lost,
   * and then lose() runs the producers of what was released again too).
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
