/**
 * What crosses NATS between a session cluster's processes, beside the bodies: the headers every message carries
 * (who sends, where to answer, sessions, fencing, stored messages; the numbering's are natsDelivery.ts's), what an
 * inbox is given (NatsInboxOptions), and the checks of subjects and peer ids.
 */
import type { NatsConnection } from '@nats-io/transport-node';
import { IllegalArgumentError } from '../core/errors.js';

export const HEADER_FROM = 'Slotwise-From';
export const HEADER_REPLY = 'Slotwise-Reply';
export const HEADER_CLOSE = 'Slotwise-Close';
export const HEADER_STORED = 'Slotwise-Stored';
/** A random id per transport: a peer that restarts (a new session) is a new peer, and a stale close is ignored. */
export const HEADER_SESSION = 'Slotwise-Session';
/**
 * The session of ours the sender is talking to, once it knows it: a message still on its way to an
 * earlier transport of ours on the same subject (a closed one) is dropped, never taken for ours.
 */
export const HEADER_TO_SESSION = 'Slotwise-To-Session';
/** The fencing token of the leadership the sender acts under, or follows (LeaderElection.ts). */
export const HEADER_FENCE = 'Slotwise-Fence';
/**
 * Leader fencing on an inbox: the token stamped on everything we send, and the verdict on what a
 * peer sends — a JobManager drops (and steps down on) a token newer than its own, a TaskManager drops
 * a token older than the leader it follows.
 */
export interface InboxFencing {
  /** Stamped as `Slotwise-Fence` on every message we send (undefined: none). */
  outgoing(): number | undefined;
  /**
   * A message from `peerId` carrying `token` (undefined: none): 'accept'; 'drop' (counted in
   * `fencedDrops`); or 'adopt', a new leader's — the transport to that peer forgets the peer's last
   * session first, so the new one is not taken for a restart of the old.
   */
  incoming(peerId: string, token: number | undefined): 'accept' | 'drop' | 'adopt';
}

/** Where a message over `max_payload` goes instead (largeMessageStore.ts: JetStream's object store). */
export interface LargeMessageStore {
  /** Stores `bytes`; resolves with the key the receiver fetches them by. */
  put(bytes: Uint8Array): Promise<string>;
  /** The bytes stored under `key` (and removes them: each stored message is read once). */
  take(key: string): Promise<Uint8Array>;
}

export interface NatsInboxOptions {
  readonly connection: NatsConnection;
  /** The subject we listen on; peers send to it. */
  readonly subject: string;
  /** Who we are to our peers (header `Slotwise-From`): letters, digits, `_ - . :`. */
  readonly id: string;
  /** Where messages over the server's `max_payload` go; without one they are refused in `send`. */
  readonly largeMessages?: LargeMessageStore;
  /** Messages from a peer that is unknown and not taken by `onUnknownPeer` are dropped; told here. */
  readonly log?: (message: string) => void;
  /** Leader fencing (see InboxFencing). Default: none. */
  readonly fencing?: InboxFencing;
  /**
   * Whether a peer we do not know yet may start talking to us now (default: always): a JobManager takes
   * no TaskExecutor before it recovered its jobs. A message refused so is dropped; its sender retries.
   */
  readonly admitting?: () => boolean;
  /** How long a message may go unacknowledged before it is given up. Default GIVE_UP_MS. */
  readonly giveUpMs?: number;
}

export const SUBJECT = /^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$/;
export const PEER_ID = /^[A-Za-z0-9_.:-]{1,128}$/;

/** Throws an IllegalArgumentError unless `subject` is a literal NATS subject (no wildcards, no blanks). */
export function checkSubject(subject: unknown, argument: string): string {
  if (typeof subject !== 'string' || !SUBJECT.test(subject)) {
    throw new IllegalArgumentError(
      'invalid-value',
      `${argument} must be a NATS subject of tokens of letters, ` +
        `digits, '_' or '-' joined by '.', got ${JSON.stringify(subject)}`,
      { argument, value: subject },
    );
  }
  return subject;
}

export function checkPeerId(id: unknown, argument: string): string {
  if (typeof id !== 'string' || !PEER_ID.test(id)) {
    throw new IllegalArgumentError(
      'invalid-value',
      `${argument} must be 1-128 letters, digits, '_', '.', ':' or '-', got ${JSON.stringify(id)}`,
      { argument, value: id },
    );
  }
  return id;
}
