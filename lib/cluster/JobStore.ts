/**
 * A session cluster's jobs in its JetStream (Flink's JobGraphStore and JobResultStore, with
 * `high-availability.type: nats`): what a new leader needs to go on where the last one stopped.
 * - `slotwise-<clusterId>-jobs`: one object per job the cluster accepted and that has not ended —
 *   its graph as submitted, task modules named by the hash of their stored code (never a path on the
 *   leader's disk), written before its JobMaster starts and removed once its result is stored;
 * - `slotwise-<clusterId>-results`: one object per ended job — its JobResult — kept for
 *   `jobstore.expiration-time` (the bucket's TTL), so a client that asks after a failover still gets it.
 * - `slotwise-<clusterId>-progress`, a stream with a subject per job: the subtasks that finished (a sink's
 *   output, a producer's partition), appended in batches as they finish (Flink 1.20's JobEventStore for
 *   batch job recovery), so a new leader runs again only what had not finished; purged at the job's end.
 * Objects are `v8.serialize`d (what a job's spec and outputs may hold crosses as it would to a thread).
 */
import { deserialize, serialize } from 'node:v8';
import { jetstream, jetstreamManager, type JetStreamClient, type JetStreamManager } from '@nats-io/jetstream';
import { Objm, type ObjectStore } from '@nats-io/obj';
import type { NatsConnection } from '@nats-io/transport-node';
import { describeError, IllegalArgumentError } from '../core/errors.js';
import { JobID } from '../core/ids.js';
import type { JobGraphSpec } from '../jobmaster/JobGraph.js';
import type { JobResult } from '../jobmaster/JobResult.js';
import type { FinishedSubtask } from '../jobmaster/JobMasterOptions.js';
import { retriedWhileElecting, unlessStreamNotFound } from './jetStreamErrors.js';

/** A job as the store keeps it until it ends. */
export interface StoredJob {
  readonly jobId: JobID;
  readonly spec: JobGraphSpec;
  readonly submittedAt: number;
}

/** An ended job as listed, its result read on demand. */
export interface StoredResultSummary {
  readonly jobId: JobID;
  readonly name: string;
  readonly status: JobResult['status'];
  readonly endedAt: number;
}

export class JobStore {
  readonly #jobs: ObjectStore;
  readonly #results: ObjectStore;

  readonly #js: JetStreamClient;
  readonly #jsm: JetStreamManager;
  readonly #clusterId: string;
  readonly #connection: NatsConnection;

  private constructor(
    jobs: ObjectStore,
    results: ObjectStore,
    js: JetStreamClient,
    jsm: JetStreamManager,
    clusterId: string,
    connection: NatsConnection,
  ) {
    this.#connection = connection;
    this.#jobs = jobs;
    this.#results = results;
    this.#js = js;
    this.#jsm = jsm;
    this.#clusterId = clusterId;
  }

  /**
   * Opens (creating if need be, with `replicas`) the cluster's job and result buckets; results expire after
   * `resultTtlMs`.
   */
  static async open(
    connection: NatsConnection,
    clusterId: string,
    resultTtlMs: number,
    replicas = 1,
  ): Promise<JobStore> {
    const objm = new Objm(connection);
    const ttl = Number.isFinite(resultTtlMs) ? resultTtlMs * 1_000_000 : 0;
    const [jobs, results] = await Promise.all([
      objm.create(`slotwise-${clusterId}-jobs`, { replicas }),
      objm.create(`slotwise-${clusterId}-results`, { ttl, replicas }),
    ]);
    const jsm = await jetstreamManager(connection);
    const stream = progressStream(clusterId);
    if ((await unlessStreamNotFound(jsm.streams.info(stream))) === null)
      await jsm.streams.add({ name: stream, subjects: [`slotwise.${clusterId}.progress.*`], num_replicas: replicas });
    return new JobStore(jobs, results, jetstream(connection), jsm, clusterId, connection);
  }

  /**
   * Appends subtasks of `jobId` that finished: one message, or halves of the batch until each fits the server's
   * max_payload; a single subtask too large for one message is refused (IllegalArgumentError: it runs again on a
   * recovery).
   */
  async appendProgress(jobId: JobID, finished: readonly FinishedSubtask[]): Promise<void> {
    const bytes = serialize(finished);
    const limit = (this.#connection.info?.max_payload ?? 1024 * 1024) - 1024;
    if (bytes.length <= limit) {
      await this.#js.publish(progressSubject(this.#clusterId, jobId), bytes);
      return;
    }
    if (finished.length === 1)
      throw new IllegalArgumentError(
        'out-of-range',
        `subtask ${finished[0]!.vertexId}#${finished[0]!.subtaskIndex} of job ${jobId} produced ` +
          `${bytes.length} bytes, more than one NATS message takes (${limit})`,
        { argument: 'finished', bytes: bytes.length, limit },
      );
    const half = Math.ceil(finished.length / 2);
    await this.appendProgress(jobId, finished.slice(0, half));
    await this.appendProgress(jobId, finished.slice(half));
  }

  /** Every subtask of `jobId` recorded as finished, oldest first. */
  async progress(jobId: JobID): Promise<FinishedSubtask[]> {
    const subject = progressSubject(this.#clusterId, jobId);
    const found: FinishedSubtask[] = [];
    for (let seq = 1; ; ) {
      // The stream's next message on the job's subject from `seq` on (the server's msg get takes next_by_subj).
      const request = { seq, next_by_subj: subject } as unknown as { seq: number };
      const message = await this.#jsm.streams.getMessage(progressStream(this.#clusterId), request);
      if (message === null) return found;
      found.push(...(deserialize(message.data) as FinishedSubtask[]));
      seq = message.seq + 1;
    }
  }

  async removeProgress(jobId: JobID): Promise<void> {
    await this.#jsm.streams.purge(progressStream(this.#clusterId), {
      filter: progressSubject(this.#clusterId, jobId),
    });
  }

  async putJob(job: StoredJob): Promise<void> {
    const bytes = serialize(job);
    await retriedWhileElecting(() => this.#jobs.putBlob({ name: job.jobId }, bytes));
  }

  /**
   * Every job accepted and not ended. Throws when the store cannot be read (the caller tries again); one whose bytes
   * cannot be decoded is reported through `skipped` and left out.
   */
  async jobs(skipped: (jobId: string, why: string) => void): Promise<StoredJob[]> {
    const found: StoredJob[] = [];
    for (const info of await this.#jobs.list()) {
      const bytes = await this.#jobs.getBlob(info.name);
      if (bytes === null) continue;
      try {
        found.push(deserialize(bytes) as StoredJob);
      } catch (error) {
        skipped(info.name, describeError(error));
      }
    }
    return found.sort((a, b) => a.submittedAt - b.submittedAt);
  }

  async removeJob(jobId: JobID): Promise<void> {
    await this.#jobs.delete(jobId);
  }

  /** Stores an ended job's result, then forgets its graph. */
  async putResult(result: JobResult, endedAt: number): Promise<void> {
    const summary: StoredResultSummary = {
      jobId: result.jobId,
      name: result.jobName,
      status: result.status,
      endedAt,
    };
    const bytes = serialize(result);
    await retriedWhileElecting(() =>
      this.#results.putBlob({ name: result.jobId, description: JSON.stringify(summary) }, bytes),
    );
    await this.#jobs.delete(result.jobId).catch(() => false);
  }

  /** The ended jobs whose results are kept. */
  async results(): Promise<StoredResultSummary[]> {
    const summaries: StoredResultSummary[] = [];
    for (const info of await this.#results.list()) {
      try {
        const summary = JSON.parse(info.description ?? '') as StoredResultSummary;
        if (JobID.is(summary.jobId)) summaries.push(summary);
      } catch {
        // Not one of ours: left alone.
      }
    }
    return summaries.sort((a, b) => a.endedAt - b.endedAt);
  }

  /** An ended job's result, or null when it is not (or no longer) kept. */
  async result(jobId: JobID): Promise<JobResult | null> {
    const bytes = await this.#results.getBlob(jobId);
    return bytes === null ? null : (deserialize(bytes) as JobResult);
  }
}

const progressStream = (clusterId: string) => `slotwise-${clusterId}-progress`;
const progressSubject = (clusterId: string, jobId: JobID) => `slotwise.${clusterId}.progress.${jobId}`;
