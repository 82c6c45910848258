/**
 * A session cluster's jobs in its JetStream (Flink's JobGraphStore and JobResultStore, with
 * `high-availability.type: nats`): what a new leader needs to go on where the last one stopped.
 * - `slotwise-<clusterId>-jobs`: one entry per job the cluster accepted and that has not ended —
 *   its graph as submitted, task modules named by the hash of their stored code (never a path on the
 *   leader's disk), written before its JobMaster starts and removed once its result is stored;
 * - `slotwise-<clusterId>-results`: one entry per ended job — its JobResult — kept for
 *   `jobstore.expiration-time` (the bucket's TTL), so a client that asks after a failover still gets it.
 * - `slotwise-<clusterId>-progress`, a stream with a subject per job: the subtasks that finished (a sink's
 *   output, a producer's partition), appended in batches as they finish (Flink 1.20's JobEventStore for
 *   batch job recovery), so a new leader runs again only what had not finished; purged at the job's end.
 * Entries are `v8.serialize`d (what a job's spec and outputs may hold crosses as it would to a thread).
 *
 * Each of the two buckets is a KV bucket and an object store of the same name (JobBucket, below): an entry that
 * fits one NATS message — nearly every job's graph and result — is one KV entry, stored with one acknowledged
 * publish and forgotten with one purge; one that does not goes to the object store, whose put and delete are three
 * requests each (its metadata read, its chunks, its metadata written). A job on a session cluster costs its
 * JobManager these writes whatever its size: with the object store alone ten JetStream requests per job, 16.9 NATS
 * messages per job of one subtask against 9.8 now (docs/benchmarks.md, sessionJobs).
 */
import { deserialize, serialize } from 'node:v8';
import {
  DeliverPolicy,
  jetstream,
  jetstreamManager,
  type JetStreamClient,
  type JetStreamManager,
} from '@nats-io/jetstream';
import { Kvm, type KV } from '@nats-io/kv';
import { Objm, type ObjectStore } from '@nats-io/obj';
import type { NatsConnection } from '@nats-io/transport-node';
import { describeError, IllegalArgumentError } from '../core/errors.js';
import { JobID } from '../core/ids.js';
import type { JobGraphSpec } from '../jobmaster/JobGraph.js';
import type { JobResult } from '../jobmaster/JobResult.js';
import type { FinishedSubtask } from '../jobmaster/JobMasterOptions.js';
import { openedDespiteRace, retriedWhileElecting, unlessStreamNotFound } from './jetStreamErrors.js';

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

/** A result as its KV entry holds it (an object store entry holds the result alone, its summary as description). */
interface StoredResult {
  readonly result: JobResult;
  readonly endedAt: number;
}

/** The largest payload one NATS message to `connection` takes less `headroom` (its subject and headers). */
const payloadLimit = (connection: NatsConnection, headroom: number) =>
  (connection.info?.max_payload ?? 1024 * 1024) - headroom;

export class JobStore {
  readonly #jobs: JobBucket;
  readonly #results: JobBucket;
  readonly #js: JetStreamClient;
  readonly #jsm: JetStreamManager;
  readonly #clusterId: string;
  readonly #connection: NatsConnection;
  /** Jobs whose progress this store appended or read: only theirs is purged at their end. */
  readonly #progressed = new Set<JobID>();
  /** Jobs whose graph is in the jobs' object store (stored there, or found there): only theirs cost its delete. */
  readonly #largeJobs = new Set<string>();

  private constructor(
    jobs: JobBucket,
    results: JobBucket,
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
    const kvm = new Kvm(connection);
    const ttlMs = Number.isFinite(resultTtlMs) ? resultTtlMs : 0;
    const jsm = await jetstreamManager(connection);
    const js = jetstream(connection);
    // Room for an entry's subject and headers.
    const limit = () => payloadLimit(connection, 4096);
    const [jobs, results] = await Promise.all(
      [
        { name: `slotwise-${clusterId}-jobs`, ttlMs: 0 },
        { name: `slotwise-${clusterId}-results`, ttlMs },
      ].map(
        async ({ name, ttlMs }) =>
          new JobBucket(
            name,
            await openedDespiteRace(() => kvm.create(name, { replicas, history: 1, ttl: ttlMs })),
            await openedDespiteRace(() => objm.create(name, { ttl: ttlMs * 1_000_000, replicas })),
            jsm,
            limit,
          ),
      ),
    );
    const stream = progressStream(clusterId);
    await openedDespiteRace(async () => {
      if ((await unlessStreamNotFound(jsm.streams.info(stream))) === null)
        await jsm.streams.add({ name: stream, subjects: [`slotwise.${clusterId}.progress.*`], num_replicas: replicas });
    });
    return new JobStore(jobs!, results!, js, jsm, clusterId, connection);
  }

  /**
   * Appends subtasks of `jobId` that finished: one message, or halves of the batch until each fits the server's
   * max_payload; a single subtask too large for one message is refused (IllegalArgumentError: it runs again on a
   * recovery).
   */
  async appendProgress(jobId: JobID, finished: readonly FinishedSubtask[]): Promise<void> {
    this.#progressed.add(jobId);
    const bytes = serialize(finished);
    const limit = payloadLimit(this.#connection, 1024);
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
    this.#progressed.add(jobId);
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

  /** Forgets the progress of `jobId` if this store appended or read any: a job that ended without any costs nothing. */
  async removeProgress(jobId: JobID): Promise<void> {
    if (!this.#progressed.delete(jobId)) return;
    await this.#jsm.streams.purge(progressStream(this.#clusterId), {
      filter: progressSubject(this.#clusterId, jobId),
    });
  }

  async putJob(job: StoredJob): Promise<void> {
    if (await this.#jobs.put(job.jobId, serialize(job))) this.#largeJobs.add(job.jobId);
  }

  /**
   * Every job accepted and not ended. Throws when the store cannot be read (the caller tries again); one whose bytes
   * cannot be decoded is reported through `skipped` and left out.
   */
  async jobs(skipped: (jobId: string, why: string) => void): Promise<StoredJob[]> {
    const found: StoredJob[] = [];
    for (const entry of await this.#jobs.entries()) {
      if (entry.bytes === undefined) this.#largeJobs.add(entry.key);
      const bytes = entry.bytes ?? (await this.#jobs.getObject(entry.key));
      if (bytes === null) continue;
      try {
        found.push(deserialize(bytes) as StoredJob);
      } catch (error) {
        skipped(entry.key, describeError(error));
      }
    }
    return found.sort((a, b) => a.submittedAt - b.submittedAt);
  }

  async removeJob(jobId: JobID): Promise<void> {
    await this.#jobs.remove(jobId, this.#largeJobs.delete(jobId));
  }

  /** Stores an ended job's result, then forgets its graph. */
  async putResult(result: JobResult, endedAt: number): Promise<void> {
    const summary: StoredResultSummary = {
      jobId: result.jobId,
      name: result.jobName,
      status: result.status,
      endedAt,
    };
    const stored: StoredResult = { result, endedAt };
    await this.#results.put(result.jobId, serialize(stored), () => ({
      bytes: serialize(result),
      description: JSON.stringify(summary),
    }));
    await this.removeJob(result.jobId).catch(() => {});
  }

  /** The ended jobs whose results are kept. */
  async results(): Promise<StoredResultSummary[]> {
    const summaries: StoredResultSummary[] = [];
    for (const entry of await this.#results.entries()) {
      try {
        if (entry.bytes === undefined) {
          const summary = JSON.parse(entry.description ?? '') as StoredResultSummary;
          if (JobID.is(summary.jobId)) summaries.push(summary);
          continue;
        }
        const { result, endedAt } = deserialize(entry.bytes) as StoredResult;
        summaries.push({ jobId: result.jobId, name: result.jobName, status: result.status, endedAt });
      } catch {
        // Not one of ours: left alone.
      }
    }
    return summaries.sort((a, b) => a.endedAt - b.endedAt);
  }

  /** An ended job's result, or null when it is not (or no longer) kept. */
  async result(jobId: JobID): Promise<JobResult | null> {
    const { bytes, inKv } = await this.#results.get(jobId);
    if (bytes === null) return null;
    return inKv ? (deserialize(bytes) as StoredResult).result : (deserialize(bytes) as JobResult);
  }
}

/** An entry of a JobBucket as listed: a KV entry with its bytes, or an object store entry with its description. */
interface BucketEntry {
  readonly key: string;
  readonly bytes?: Uint8Array;
  readonly description?: string;
}

/**
 * Entries by job: in a KV bucket when they fit one NATS message (`limit()` bytes), in an object store of the same
 * name when they do not. The KV bucket keeps one message per key (history 1); an entry is forgotten by purging its
 * subject from the bucket's stream, which leaves no delete marker behind (a KV delete would leave one per job for
 * good: the bucket's TTL does not remove markers).
 */
class JobBucket {
  readonly #name: string;
  readonly #kv: KV;
  readonly #objects: ObjectStore;
  readonly #jsm: JetStreamManager;
  readonly #limit: () => number;

  constructor(name: string, kv: KV, objects: ObjectStore, jsm: JetStreamManager, limit: () => number) {
    this.#name = name;
    this.#kv = kv;
    this.#objects = objects;
    this.#jsm = jsm;
    this.#limit = limit;
  }

  /**
   * Stores `bytes` under `key`: in the KV bucket if they fit, else what `large()` makes of the entry (default: the same
   * bytes) in the object store. Resolves with whether it went to the object store.
   */
  async put(
    key: string,
    bytes: Uint8Array,
    large: () => { bytes: Uint8Array; description?: string } = () => ({ bytes }),
  ): Promise<boolean> {
    if (bytes.length <= this.#limit()) {
      await retriedWhileElecting(() => this.#kv.put(key, bytes));
      return false;
    }
    const object = large();
    const meta = object.description === undefined ? { name: key } : { name: key, description: object.description };
    await retriedWhileElecting(() => this.#objects.putBlob(meta, object.bytes));
    return true;
  }

  /** The entry's bytes, and whether they came from the KV bucket. */
  async get(key: string): Promise<{ bytes: Uint8Array | null; inKv: boolean }> {
    const entry = await this.#kv.get(key);
    if (entry !== null && entry.operation === 'PUT') return { bytes: entry.value, inKv: true };
    return { bytes: await this.getObject(key), inKv: false };
  }

  /** An entry the object store holds (one `entries` listed without its bytes). */
  getObject(key: string): Promise<Uint8Array | null> {
    return this.#objects.getBlob(key);
  }

  /** Forgets `key`'s entry: its KV entry, and its object too when `inObjects` (what put or entries said). */
  async remove(key: string, inObjects: boolean): Promise<void> {
    await this.#jsm.streams.purge(`KV_${this.#name}`, { filter: `$KV.${this.#name}.${key}` });
    if (inObjects) await this.#objects.delete(key);
  }

  /**
   * Every entry: the KV bucket's with their bytes (one ordered consumer), the object store's without (`getObject`
   * reads them), with their description.
   */
  async entries(): Promise<BucketEntry[]> {
    const found: BucketEntry[] = [];
    const stream = `KV_${this.#name}`;
    const prefix = `$KV.${this.#name}.`;
    const info = await this.#jsm.streams.info(stream);
    if (info.state.messages > 0) {
      const consumer = await this.#jsm.jetstream().consumers.get(stream, {
        filter_subjects: `${prefix}>`,
        deliver_policy: DeliverPolicy.LastPerSubject,
      });
      // In batches until the last message says none is pending (or a batch finds none: purged meanwhile).
      for (let pending = Number.POSITIVE_INFINITY; pending > 0; ) {
        const batch = await consumer.fetch({ max_messages: 256, expires: 2_000 });
        let got = 0;
        for await (const message of batch) {
          got++;
          pending = message.info.pending;
          // A KV delete or purge (not ours: we purge the subject) leaves an operation header and no value.
          if (!message.headers?.has('KV-Operation'))
            found.push({ key: message.subject.slice(prefix.length), bytes: message.data });
          // The batch would wait for its max_messages until it expires.
          if (pending === 0) break;
        }
        if (got === 0) break;
      }
    }
    for (const info of await this.#objects.list()) {
      found.push({ key: info.name, ...(info.description === undefined ? {} : { description: info.description }) });
    }
    return found;
  }
}

const progressStream = (clusterId: string) => `slotwise-${clusterId}-progress`;
const progressSubject = (clusterId: string, jobId: JobID) => `slotwise.${clusterId}.progress.${jobId}`;
