/**
 * One JobManager per cluster id, until leadership exists (see docs/cluster.md, One JobManager per
 * cluster): a JobManager holds its cluster's lease while it runs, and one that finds the lease held
 * refuses to start with ClusterError('jobmanager-running') naming the holder. Two JobManagers on one
 * cluster id would both answer `slotwise.<clusterId>.rm`: each TaskManager would register with
 * both, be let go by one, start afresh, and both would fill with TaskManagers that are not there.
 *
 * The lease is the one message on `slotwise.<clusterId>.jobmanager` in a JetStream stream of its own,
 * `slotwise-<clusterId>-jobmanager`:
 * - taken by a publish that expects no message on the subject (Nats-Expected-Last-Subject-Sequence
 *   0): atomic at the server, so of two JobManagers started at the same moment exactly one gets it
 *   (a request to a running JobManager before subscribing could not tell them apart: both would hear
 *   nobody and both would start);
 * - renewed every `renewMs` by a publish expecting our own last message, which replaces it
 *   (max_msgs_per_subject 1);
 * - expiring with the stream's `max_age` (`ttlMs`) when not renewed: a JobManager that died without
 *   letting go holds its cluster id for at most `ttlMs`. nats-server 2.9 has no per-message TTL, so
 *   the TTL is that of a stream that holds nothing else;
 * - let go at close by deleting our message (only ours: by its sequence).
 */
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import {
  JetStreamApiCodes,
  JetStreamApiError,
  jetstream,
  jetstreamManager,
  type JetStreamClient,
  type JetStreamManager,
} from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { ClusterError, IllegalArgumentError } from '../core/errors.js';
import { checkClusterId } from './clusterSubjects.js';

/** Who holds a cluster's lease: the JobManager's own id, its host and pid, and when it started (ISO 8601). */
export interface LeaseHolder {
  readonly id: string;
  readonly host: string;
  readonly pid: number;
  readonly startedAt: string;
}

export interface JobManagerLeaseOptions {
  /** How long the lease lasts unrenewed (the stream's max_age), in ms: heartbeat.timeout for a JobManager. */
  readonly ttlMs: number;
  /** How often it is renewed, in ms (< ttlMs). */
  readonly renewMs: number;
  /** Renewal trouble and a lost lease are told here. */
  readonly log: (level: 'warn' | 'error', message: string) => void;
}

/** Taking the lease races a holder's expiry at most this many times before it gives up. */
const CLAIM_ATTEMPTS = 3;
const MAX_DUPLICATE_WINDOW_MS = 120_000;

export class JobManagerLease {
  readonly clusterId: string;
  readonly holder: LeaseHolder;
  readonly #js: JetStreamClient;
  readonly #jsm: JetStreamManager;
  readonly #o: JobManagerLeaseOptions;
  readonly #stream: string;
  /** The sequence of our message: what a renewal expects to replace. */
  #sequence: number;
  #timer: ReturnType<typeof setInterval> | undefined;
  #renewing: Promise<void> | null = null;
  #troubled = false;
  #lost = false;

  private constructor(
    clusterId: string,
    holder: LeaseHolder,
    js: JetStreamClient,
    jsm: JetStreamManager,
    o: JobManagerLeaseOptions,
    sequence: number,
  ) {
    this.clusterId = clusterId;
    this.holder = holder;
    this.#js = js;
    this.#jsm = jsm;
    this.#o = o;
    this.#stream = leaseStream(clusterId);
    this.#sequence = sequence;
    this.#timer = setInterval(() => void this.#renew(), o.renewMs);
    this.#timer.unref();
  }

  /**
   * Takes `clusterId`'s lease; ClusterError('jobmanager-running') when another JobManager holds it,
   * IllegalArgumentError for bad options or a server without JetStream.
   */
  static async acquire(
    connection: NatsConnection,
    clusterId: string,
    options: JobManagerLeaseOptions,
  ): Promise<JobManagerLease> {
    checkClusterId(clusterId);
    const { ttlMs, renewMs } = options;
    if (!Number.isInteger(ttlMs) || ttlMs < 1_000 || !Number.isInteger(renewMs) || renewMs <= 0 || renewMs >= ttlMs)
      throw new IllegalArgumentError(
        'out-of-range',
        `a JobManager lease needs a whole ttlMs ≥ 1000 and 0 < renewMs < ttlMs, got ttlMs ${ttlMs}, renewMs ${renewMs}`,
        { argument: 'options.ttlMs', value: ttlMs },
      );
    const holder: LeaseHolder = {
      id: randomUUID(),
      host: hostname(),
      pid: process.pid,
      startedAt: new Date().toISOString(),
    };
    let taken: Awaited<ReturnType<typeof take>>;
    try {
      taken = await take(connection, clusterId, holder, ttlMs);
    } catch (error) {
      throw new IllegalArgumentError(
        'invalid-value',
        `cannot take the JobManager lease of cluster '${clusterId}' (is JetStream enabled on the NATS server? ` +
          `start it with -js): ${error instanceof Error ? error.message : String(error)}`,
        { argument: 'nats', clusterId },
      );
    }
    const { jsm, sequence, current } = taken;
    if (sequence !== null) return new JobManagerLease(clusterId, holder, jetstream(connection), jsm, options, sequence);
    const other = current?.holder;
    const expiresInMs = current === null ? ttlMs : Math.max(0, ttlMs - (Date.now() - current.time.getTime()));
    throw new ClusterError(
      'jobmanager-running',
      `cluster '${clusterId}' already has a JobManager` +
        (other === undefined ? '' : ` (on ${other.host}, pid ${other.pid}, since ${other.startedAt})`) +
        `: a second one would take the TaskManagers' registrations from it; stop that one first. ` +
        `One that died without stopping lets go of the cluster within ${Math.ceil(expiresInMs / 1000)} s`,
      { clusterId, holder: other ?? null, expiresInMs },
    );
  }

  /** Stops renewing and lets go of the lease (our message only); never throws. */
  async release(): Promise<void> {
    clearInterval(this.#timer);
    this.#timer = undefined;
    await this.#renewing;
    if (this.#lost) return;
    await this.#jsm.streams.deleteMessage(this.#stream, this.#sequence, false).catch(() => {});
  }

  async #renew(): Promise<void> {
    if (this.#renewing !== null || this.#lost) return;
    this.#renewing = (async () => {
      try {
        const renewed = await claim(this.#js, this.clusterId, this.holder, this.#sequence);
        if (renewed !== null) {
          this.#sequence = renewed;
        } else {
          // Ours is gone: expired (we could not renew it in time) or taken. Taken is lost.
          const current = await currentHolder(this.#jsm, this.clusterId);
          if (current === null || current.holder?.id === this.holder.id) {
            const again = await claim(this.#js, this.clusterId, this.holder, current?.sequence ?? 0);
            if (again !== null) this.#sequence = again;
          } else {
            this.#lost = true;
            clearInterval(this.#timer);
            const other = current.holder;
            this.#o.log(
              'error',
              `the JobManager lease of cluster '${this.clusterId}' was taken by another JobManager` +
                (other === undefined ? '' : ` (on ${other.host}, pid ${other.pid}, since ${other.startedAt})`) +
                ` after this one could not renew it for ${this.#o.ttlMs} ms: two JobManagers may now serve the ` +
                `cluster; stop one`,
            );
          }
        }
        this.#troubled = false;
      } catch (error) {
        // The server out of reach, for now: the next round tries again (told once per spell).
        if (!this.#troubled)
          this.#o.log(
            'warn',
            `could not renew the JobManager lease of cluster '${this.clusterId}' ` +
              `(it lasts ${this.#o.ttlMs} ms unrenewed): ${error instanceof Error ? error.message : String(error)}`,
          );
        this.#troubled = true;
        if (error instanceof JetStreamApiError && error.code === JetStreamApiCodes.StreamNotFound)
          await ensureStream(this.#jsm, this.clusterId, this.#o.ttlMs).catch(() => {});
      } finally {
        this.#renewing = null;
      }
    })();
    await this.#renewing;
  }
}

/** Claims the lease for `holder`: its sequence, or null with the message that holds it (null if none was found). */
async function take(connection: NatsConnection, clusterId: string, holder: LeaseHolder, ttlMs: number) {
  const jsm = await jetstreamManager(connection);
  const maxAge = await ensureStream(jsm, clusterId, ttlMs);
  const js = jetstream(connection);
  for (let attempt = 1; ; attempt++) {
    const sequence = await claim(js, clusterId, holder, 0);
    if (sequence !== null) {
      // Ours now: the stream's TTL becomes our lease's (a JobManager with another heartbeat.timeout ran before).
      if (maxAge !== ttlMs * 1_000_000) await ensureStream(jsm, clusterId, ttlMs, true);
      return { jsm, sequence, current: null };
    }
    const current = await currentHolder(jsm, clusterId);
    // Gone between our claim and our look (it expired, or its JobManager stopped): claim again.
    if (current !== null || attempt >= CLAIM_ATTEMPTS) return { jsm, sequence: null, current };
  }
}

export const leaseStream = (clusterId: string) => `slotwise-${clusterId}-jobmanager`;
export const leaseSubject = (clusterId: string) => `slotwise.${clusterId}.jobmanager`;

/**
 * The lease's stream, made with `ttlMs` if missing (or set to it with `update`, by the holder only);
 * resolves with its max_age in ns.
 */
async function ensureStream(jsm: JetStreamManager, clusterId: string, ttlMs: number, update = false): Promise<number> {
  const config = {
    subjects: [leaseSubject(clusterId)],
    max_age: ttlMs * 1_000_000,
    duplicate_window: Math.min(ttlMs, MAX_DUPLICATE_WINDOW_MS) * 1_000_000,
    max_msgs_per_subject: 1,
  };
  const info = await jsm.streams.info(leaseStream(clusterId)).catch((error: unknown) => {
    if (error instanceof JetStreamApiError && error.code === JetStreamApiCodes.StreamNotFound) return null;
    throw error;
  });
  if (info === null) return (await jsm.streams.add({ name: leaseStream(clusterId), ...config })).config.max_age;
  if (update && info.config.max_age !== config.max_age)
    return (await jsm.streams.update(leaseStream(clusterId), config)).config.max_age;
  return info.config.max_age;
}

/** Publishes `holder` as the lease if the subject's last message is `expected` (0: none); its sequence, or null. */
async function claim(
  js: JetStreamClient,
  clusterId: string,
  holder: LeaseHolder,
  expected: number,
): Promise<number | null> {
  try {
    const ack = await js.publish(leaseSubject(clusterId), JSON.stringify(holder), {
      expect: { lastSubjectSequence: expected },
    });
    return ack.seq;
  } catch (error) {
    if (error instanceof JetStreamApiError && error.code === JetStreamApiCodes.StreamWrongLastSequence) return null;
    throw error;
  }
}

/** The lease's message now: its holder (undefined if unreadable), when it was written and its sequence. */
async function currentHolder(
  jsm: JetStreamManager,
  clusterId: string,
): Promise<{ holder: LeaseHolder | undefined; time: Date; sequence: number } | null> {
  const message = await jsm.streams.getMessage(leaseStream(clusterId), { last_by_subj: leaseSubject(clusterId) });
  if (message === null) return null;
  let holder: LeaseHolder | undefined;
  try {
    holder = JSON.parse(new TextDecoder().decode(message.data)) as LeaseHolder;
  } catch {
    holder = undefined;
  }
  return { holder, time: message.time, sequence: message.seq };
}
