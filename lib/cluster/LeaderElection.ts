/**
 * Leadership of a session cluster on NATS JetStream (Flink's leader election for the Dispatcher,
 * ResourceManager and JobMasters, here one lease for the JobManager process): any number of
 * JobManagers run for one cluster id; one leads, the others stand by. The statechart is
 * machines/leaderElection.machine.ts; this module provides its effects on the lease.
 *
 * The lease is the one message on `slotwise.<clusterId>.jobmanager` in a JetStream stream of its own,
 * `slotwise-<clusterId>-jobmanager` (max_msgs_per_subject 1, max_age the lease duration):
 * - claimed by a publish that expects the subject's last message to be the one just read — none, a
 *   release marker, or nothing left once the holder's lapsed: atomic at the server, so of two
 *   contenders exactly one gets it. The claim's sequence is the leadership's fencing token;
 * - renewed every retry period by a publish expecting our own last message, carrying the token
 *   (`term`) and the leader's REST URL: TaskManagers and standbys read who leads from it;
 * - lapsing with the stream's `max_age` when not renewed: a leader that died holds the cluster for
 *   at most the lease duration, and one that cannot renew steps down after the renew deadline, before
 *   its lease could lapse;
 * - released at close by a marker that replaces our message (standbys hear it and claim at once).
 * nats-server 2.9 has no per-message TTL, so the TTL is that of a stream that holds nothing else.
 */
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import {
  JetStreamApiCodes,
  jetstream,
  jetstreamManager,
  type JetStreamClient,
  type JetStreamManager,
} from '@nats-io/jetstream';
import type { NatsConnection, Subscription } from '@nats-io/transport-node';
import { createActor, type Actor } from 'xstate';
import { leaderElectionMachine } from '../../machines/leaderElection.machine.js';
import { systemClock, type Clock } from '../core/clock.js';
import { describeError, IllegalArgumentError } from '../core/errors.js';
import type { ResolvedOptions } from '../core/options.js';
import { checkClusterId } from './clusterSubjects.js';
import { isApiError, openedDespiteRace, unlessStreamNotFound } from './jetStreamErrors.js';

/** A JobManager as its lease names it: its own id, host and pid, when it started (ISO 8601), its REST URL. */
export interface LeaseHolder {
  readonly id: string;
  readonly host: string;
  readonly pid: number;
  readonly startedAt: string;
  readonly restUrl: string | null;
}

/** The lease's message: who holds it and its fencing token (null in the claim itself: its own sequence). */
export interface LeaseRecord {
  readonly holder: LeaseHolder;
  readonly term: number | null;
  /** A holder that let go writes this marker instead. */
  readonly released?: boolean;
}

/** Who leads a cluster now, as read from its lease. */
export interface Leader {
  readonly holder: LeaseHolder;
  /** The leadership's fencing token. */
  readonly token: number;
}

export interface LeaderElectionOptions {
  /** How long the lease lasts unrenewed, in ms (high-availability.leader-election.lease-duration). */
  readonly leaseDurationMs: number;
  /** A leader that could not renew for this long steps down, in ms (< leaseDurationMs). */
  readonly renewDeadlineMs: number;
  /** How often the lease is renewed and claimed, in ms (< renewDeadlineMs). */
  readonly retryPeriodMs: number;
  /** This JobManager's REST URL, written into the lease while it leads (clients follow the leader). */
  readonly restUrl?: () => string | null;
  /** We lead with `token`: the leader's services start (awaited before the next grant or revoke). */
  readonly onGrant: (token: number) => void | Promise<void>;
  /** We no longer lead: the leader's services stop at once. */
  readonly onRevoke: (reason: string) => void | Promise<void>;
  /** Another JobManager leads now (read from the lease), or nobody (null). */
  readonly onLeader?: (leader: Leader | null) => void;
  readonly log: (level: 'info' | 'warn' | 'error', message: string) => void;
  /** The clock of the statechart's delays. Default the system clock. */
  readonly clock?: Clock;
  /** Replicas of the lease's stream (high-availability.nats.replicas). Default 1. */
  readonly replicas?: number;
}

const MAX_DUPLICATE_WINDOW_MS = 120_000;
const decoder = new TextDecoder();

export const leaseStream = (clusterId: string) => `slotwise-${clusterId}-jobmanager`;
export const leaseSubject = (clusterId: string) => `slotwise.${clusterId}.jobmanager`;

/** Throws an IllegalArgumentError unless 0 < retryPeriodMs < renewDeadlineMs < leaseDurationMs, whole ms. */
export function checkLeaseTimes(o: { leaseDurationMs: number; renewDeadlineMs: number; retryPeriodMs: number }): void {
  const { leaseDurationMs: lease, renewDeadlineMs: deadline, retryPeriodMs: retry } = o;
  const whole = [lease, deadline, retry].every((n) => Number.isInteger(n) && n > 0);
  if (!whole || lease < 1_000 || deadline >= lease || retry >= deadline)
    throw new IllegalArgumentError(
      'out-of-range',
      `leader election needs whole ms with retry-period < renew-deadline < lease-duration and lease-duration ≥ 1 s, ` +
        `got lease-duration ${lease}, renew-deadline ${deadline}, retry-period ${retry}`,
      { argument: 'high-availability.leader-election', leaseDurationMs: lease, renewDeadlineMs: deadline },
    );
}

export class LeaderElection {
  readonly clusterId: string;
  readonly holder: Omit<LeaseHolder, 'restUrl'>;
  readonly #o: LeaderElectionOptions;
  readonly #js: JetStreamClient;
  readonly #jsm: JetStreamManager;
  readonly #watch: Subscription;
  readonly #actor: Actor<typeof leaderElectionMachine>;
  /** The sequence of our last lease message while we lead: what a renewal expects to replace. */
  #sequence = 0;
  /** The grants and revocations, one after another. */
  #transitions: Promise<void> = Promise.resolve();
  #troubled = false;
  /** A renewal is on its way (the next round waits for it). */
  #renewing = false;
  /** Our release marker on its way, at close. */
  #releasing: Promise<void> = Promise.resolve();
  #leader: Leader | null = null;
  #firstOutcome: Promise<void>;
  #closed: Promise<void> | null = null;

  private constructor(
    clusterId: string,
    js: JetStreamClient,
    jsm: JetStreamManager,
    connection: NatsConnection,
    o: LeaderElectionOptions,
  ) {
    this.clusterId = clusterId;
    this.#o = o;
    this.#js = js;
    this.#jsm = jsm;
    this.holder = { id: randomUUID(), host: hostname(), pid: process.pid, startedAt: new Date().toISOString() };
    let settle!: () => void;
    this.#firstOutcome = new Promise((resolve) => (settle = resolve));
    this.#watch = connection.subscribe(leaseSubject(clusterId), {
      callback: (error, msg) => {
        if (error === null) this.#heard(parseRecord(msg.data), null);
      },
    });
    const machine = leaderElectionMachine.provide({
      actions: {
        claim: () => void this.#claim().finally(settle),
        renew: () => void this.#renew(),
        grant: ({ context }) => this.#transition(() => o.onGrant(context.token!)),
        revoke: ({ context }) => {
          const reason = context.revokedBecause ?? 'unknown';
          if (reason !== 'the JobManager is closing')
            o.log('warn', `this JobManager no longer leads cluster '${clusterId}': ${reason}`);
          this.#transition(() => o.onRevoke(reason));
        },
        release: () => void this.#release(),
      },
    });
    this.#actor = createActor(machine, {
      input: { leaseDurationMs: o.leaseDurationMs, renewDeadlineMs: o.renewDeadlineMs, retryPeriodMs: o.retryPeriodMs },
      clock: o.clock ?? systemClock,
    });
  }

  /**
   * Joins `clusterId`'s election; resolves once the first claim was decided (`isLeader` says how) and its grant ran.
   * IllegalArgumentError for bad times or a server without JetStream.
   */
  static async start(
    connection: NatsConnection,
    clusterId: string,
    options: LeaderElectionOptions,
  ): Promise<LeaderElection> {
    checkClusterId(clusterId);
    checkLeaseTimes(options);
    let jsm: JetStreamManager;
    try {
      jsm = await jetstreamManager(connection);
      await ensureStream(jsm, clusterId, options.leaseDurationMs, options.replicas ?? 1);
    } catch (error) {
      throw new IllegalArgumentError(
        'invalid-value',
        `cannot join the leader election of cluster '${clusterId}' (is JetStream enabled on the NATS server? ` +
          `start it with -js): ${describeError(error)}`,
        { argument: 'nats', clusterId },
      );
    }
    const election = new LeaderElection(clusterId, jetstream(connection), jsm, connection, options);
    election.#actor.start();
    await election.#firstOutcome;
    await election.#transitions;
    return election;
  }

  /** Whether this JobManager leads now. */
  get isLeader(): boolean {
    return this.#actor.getSnapshot().matches('leading');
  }

  /** Our fencing token while we lead, else null. */
  get token(): number | null {
    return this.#actor.getSnapshot().context.token;
  }

  /** Who leads, as last read from the lease (us included), or null when nobody does. */
  get leader(): Leader | null {
    if (this.isLeader) return { holder: this.#ownHolder(), token: this.token! };
    return this.#leader;
  }

  /** A message carried fencing token `token`: if it is newer than ours, we step down. */
  fence(token: number): void {
    this.#actor.send({ type: 'FENCED', token });
  }

  /** Stops contending; a leader revokes its services and releases the lease (a standby claims it at once). */
  close(): Promise<void> {
    this.#closed ??= (async () => {
      this.#actor.send({ type: 'CLOSE' });
      await this.#transitions;
      await this.#releasing;
      this.#actor.stop();
      this.#watch.unsubscribe();
    })();
    return this.#closed;
  }

  #ownHolder(): LeaseHolder {
    return { ...this.holder, restUrl: this.#o.restUrl?.() ?? null };
  }

  #transition(step: () => void | Promise<void>): void {
    this.#transitions = this.#transitions
      .then(step)
      .catch((error: unknown) => this.#o.log('error', `leadership change failed: ${describeError(error)}`));
  }

  /** Someone wrote the lease (heard on its subject, or read): remember who leads; a release invites a claim. */
  #heard(record: LeaseRecord | null, sequence: number | null): void {
    if (record === null) return;
    if (record.released) {
      if (this.#leader?.holder.id === record.holder.id) this.#setLeader(null);
      this.#actor.send({ type: 'RELEASED' });
      return;
    }
    const token = record.term ?? sequence;
    if (token === null || record.holder.id === this.holder.id) return;
    if (this.#leader?.token !== token || this.#leader.holder.restUrl !== record.holder.restUrl)
      this.#setLeader({ holder: record.holder, token });
  }

  #setLeader(leader: Leader | null): void {
    this.#leader = leader;
    this.#o.onLeader?.(leader);
  }

  async #claim(): Promise<void> {
    const sentAt = Date.now();
    try {
      const current = await readLease(this.#jsm, this.clusterId);
      if (current !== null && !current.record?.released && current.record?.holder.id !== this.holder.id) {
        if (current.record !== null) this.#heard(current.record, current.sequence);
        this.#actor.send({ type: 'REFUSED' });
        return;
      }
      const sequence = await publishExpecting(
        this.#js,
        this.clusterId,
        { holder: this.#ownHolder(), term: null },
        current?.sequence ?? 0,
      );
      if (sequence === null) {
        this.#actor.send({ type: 'REFUSED' });
        return;
      }
      this.#sequence = sequence;
      this.#setLeader(null);
      // Ours now: the lease lasts what our renew deadline is reckoned against (another JobManager may have made it).
      await ensureStream(this.#jsm, this.clusterId, this.#o.leaseDurationMs, this.#o.replicas ?? 1, true).catch(
        (error: unknown) => this.#o.log('warn', `could not set the lease's duration: ${describeError(error)}`),
      );
      this.#actor.send({ type: 'CLAIMED', token: sequence, ageMs: Date.now() - sentAt });
      // The term goes out at once: TaskManagers and standbys learn the token from it.
      void this.#renew();
    } catch (error) {
      this.#actor.send({ type: 'CLAIM_FAILED', error: describeError(error) });
    }
  }

  async #renew(): Promise<void> {
    const token = this.token;
    if (this.#renewing || token === null) return;
    this.#renewing = true;
    const sentAt = Date.now();
    try {
      const record: LeaseRecord = { holder: this.#ownHolder(), term: token };
      let renewed = await publishExpecting(this.#js, this.clusterId, record, this.#sequence);
      if (renewed === null) {
        // Ours is gone: it lapsed (we could not renew in time) or another took it. Taken is lost.
        const current = await readLease(this.#jsm, this.clusterId);
        const mine = current === null || current.record?.holder.id === this.holder.id;
        if (!mine) {
          if (this.token === token) this.#actor.send({ type: 'TAKEN', by: describeHolder(current?.record?.holder) });
          return;
        }
        renewed = await publishExpecting(this.#js, this.clusterId, record, current?.sequence ?? 0);
        if (renewed === null) return; // raced: the next round reads it again
      }
      if (this.token !== token) return;
      this.#sequence = renewed;
      this.#troubled = false;
      this.#actor.send({ type: 'RENEWED', ageMs: Date.now() - sentAt });
    } catch (error) {
      // The server out of reach, for now: the next round tries again (told once per spell).
      if (!this.#troubled)
        this.#o.log(
          'warn',
          `could not renew the lease of cluster '${this.clusterId}' (this JobManager steps down after ` +
            `${this.#o.renewDeadlineMs} ms without a renewal): ${describeError(error)}`,
        );
      this.#troubled = true;
      this.#actor.send({ type: 'RENEW_FAILED', error: describeError(error) });
      if (isApiError(error, JetStreamApiCodes.StreamNotFound))
        await ensureStream(this.#jsm, this.clusterId, this.#o.leaseDurationMs, this.#o.replicas ?? 1).catch(() => {});
    } finally {
      this.#renewing = false;
    }
  }

  #release(): void {
    const sequence = this.#sequence;
    this.#releasing = publishExpecting(
      this.#js,
      this.clusterId,
      { holder: this.#ownHolder(), term: null, released: true },
      sequence,
    ).then(
      () => {},
      () => {},
    );
  }
}

/** Reads who leads `clusterId` now (null when nobody does), for a TaskManager or a client. */
export async function currentLeader(connection: NatsConnection, clusterId: string): Promise<Leader | null> {
  const jsm = await jetstreamManager(connection);
  const current = await unlessStreamNotFound(readLease(jsm, clusterId));
  if (current === null || current.record === null || current.record.released) return null;
  return { holder: current.record.holder, token: current.record.term ?? current.sequence };
}

/**
 * Calls `listener` with each lease record written for `clusterId` (renewals included, every retry
 * period): a leader's token is its `term`. Returns the subscription.
 */
export function watchLease(
  connection: NatsConnection,
  clusterId: string,
  listener: (record: LeaseRecord) => void,
): Subscription {
  return connection.subscribe(leaseSubject(clusterId), {
    callback: (error, msg) => {
      const record = error === null ? parseRecord(msg.data) : null;
      if (record !== null) listener(record);
    },
  });
}

export function describeHolder(holder: LeaseHolder | undefined): string {
  return holder === undefined ? 'unknown' : `on ${holder.host}, pid ${holder.pid}, since ${holder.startedAt}`;
}

function parseRecord(data: Uint8Array): LeaseRecord | null {
  try {
    const record = JSON.parse(decoder.decode(data)) as LeaseRecord;
    return typeof record?.holder?.id === 'string' ? record : null;
  } catch {
    return null;
  }
}

/**
 * The lease's stream, made with `leaseDurationMs` and `replicas` if missing (set to them with `update`, by a new
 * leader only: a standby must not change the lease the leader's renew deadline is reckoned against); its max_age in ns.
 */
async function ensureStream(
  jsm: JetStreamManager,
  clusterId: string,
  leaseDurationMs: number,
  replicas: number,
  update = false,
): Promise<number> {
  const config = {
    subjects: [leaseSubject(clusterId)],
    num_replicas: replicas,
    max_age: leaseDurationMs * 1_000_000,
    duplicate_window: Math.min(leaseDurationMs, MAX_DUPLICATE_WINDOW_MS) * 1_000_000,
    max_msgs_per_subject: 1,
  };
  const info = await openedDespiteRace(async () => {
    const found = await unlessStreamNotFound(jsm.streams.info(leaseStream(clusterId)));
    return found ?? (await jsm.streams.add({ name: leaseStream(clusterId), ...config }));
  });
  if (update && (info.config.max_age !== config.max_age || info.config.num_replicas !== replicas))
    return (await jsm.streams.update(leaseStream(clusterId), config)).config.max_age;
  return info.config.max_age;
}

/** Publishes `record` if the subject's last message is `expected` (0: none); its sequence, or null. */
async function publishExpecting(
  js: JetStreamClient,
  clusterId: string,
  record: LeaseRecord,
  expected: number,
): Promise<number | null> {
  try {
    const ack = await js.publish(leaseSubject(clusterId), JSON.stringify(record), {
      expect: { lastSubjectSequence: expected },
    });
    return ack.seq;
  } catch (error) {
    if (isApiError(error, JetStreamApiCodes.StreamWrongLastSequence)) return null;
    throw error;
  }
}

/** The lease's message now: its record (null if unreadable) and sequence; null when there is none. */
async function readLease(
  jsm: JetStreamManager,
  clusterId: string,
): Promise<{ record: LeaseRecord | null; sequence: number } | null> {
  const message = await jsm.streams.getMessage(leaseStream(clusterId), { last_by_subj: leaseSubject(clusterId) });
  if (message === null) return null;
  return { record: parseRecord(message.data), sequence: message.seq };
}

/** The leader election's times: the high-availability.leader-election.* options. */
export function leaseTimes(configuration: ResolvedOptions) {
  return {
    leaseDurationMs: Math.ceil(configuration['high-availability.leader-election.lease-duration']),
    renewDeadlineMs: Math.ceil(configuration['high-availability.leader-election.renew-deadline']),
    retryPeriodMs: Math.ceil(configuration['high-availability.leader-election.retry-period']),
  };
}
