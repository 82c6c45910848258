/**
 * Transports over NATS: one subject per endpoint process, many peers on it. A `NatsInbox` is our
 * subscription on our own subject (`slotwise.<clusterId>.rm` for a JobManager,
 * `slotwise.<clusterId>.te.<resourceId>` for a TaskManager); each message on it names its sender
 * (header `Slotwise-From`) and the subject that sender listens on (`Slotwise-Reply`), and the inbox
 * hands it to the Transport of that peer — made on first contact by `onUnknownPeer` on the serving
 * side, or up front with `transportTo` on the calling side. A Link (and the gateways over it) runs
 * on each such Transport exactly as over a MessagePort: the Link's call frames and answers are the
 * request/reply, with its deadlines and typed errors (connect.ts); NATS carries the batches.
 *
 * - Messages are encoded with `v8.serialize` — the structured clone of a child process's
 *   `serialization: 'advanced'` IPC — so what crosses to a thread or a child crosses here too, and
 *   what cannot be cloned throws in `send` (the Link then fails only that call).
 * - A message larger than the server's `max_payload` is never cut: without a `largeMessages` store
 *   `send` throws an IllegalArgumentError ('out-of-range') naming both sizes (the Link fails that
 *   call with it); with one it goes through the store (JetStream's object store, largeMessageStore.ts)
 *   and only its key crosses. Order is kept both ways: messages behind a stored one wait for it.
 * - Nothing is lost to a NATS node going away or a reconnect: messages are numbered, acknowledged and sent
 *   again until acknowledged (or given up after GIVE_UP_MS), each delivered once and in order (natsDelivery.ts).
 * - `close()` tells the peer (header `Slotwise-Close`), whose transport reports it lost; the NATS
 *   connection closing for good loses every transport of the inbox. A peer that stays silent is lost
 *   by heartbeats (HeartbeatMonitor), not here.
 */
import { randomUUID } from 'node:crypto';
import { deserialize, serialize } from 'node:v8';
import { headers as natsHeaders, type Msg, type MsgHdrs, type Subscription } from '@nats-io/transport-node';
import { IllegalArgumentError, IllegalStateError } from '../core/errors.js';
import { BaseTransport, type Detach } from './BaseTransport.js';
import { GIVE_UP_MS, HEADER_ACK, HEADER_FLOOR, HEADER_NACK, HEADER_SEQ, NumberedDelivery } from './natsDelivery.js';
import {
  checkPeerId,
  checkSubject,
  HEADER_CLOSE,
  HEADER_FENCE,
  HEADER_FROM,
  HEADER_REPLY,
  HEADER_SESSION,
  HEADER_STORED,
  HEADER_TO_SESSION,
  PEER_ID,
  SUBJECT,
  type NatsInboxOptions,
} from './natsWire.js';
import type { Transport } from './Transport.js';

export type { LargeMessageStore } from './natsWire.js';

/** Our subscription on our own subject, and the Transport of each peer that talks to us there. */
export class NatsInbox {
  readonly subject: string;
  readonly id: string;
  readonly #o: NatsInboxOptions;
  readonly #peers = new Map<string, NatsTransport>();
  readonly #subscription: Subscription;
  #unknownPeer: ((peerId: string, replySubject: string) => Transport | undefined) | undefined;
  #closed = false;
  #fencedDrops = 0;

  constructor(options: NatsInboxOptions) {
    this.#o = options;
    this.subject = checkSubject(options.subject, 'options.subject');
    this.id = checkPeerId(options.id, 'options.id');
    if (options.connection.isClosed()) {
      throw new IllegalStateError(`cannot listen on ${this.subject}: the NATS connection is closed`, {
        component: 'NatsInbox',
        operation: 'subscribe',
        state: 'closed',
        allowed: ['connected'],
      });
    }
    this.#subscription = options.connection.subscribe(this.subject, {
      callback: (error, msg) => (error === null ? this.#arrive(msg) : this.#fail(error)),
    });
    void options.connection
      .closed()
      .then((error) => this.#lostAll(`the NATS connection closed${error ? `: ${error.message}` : ''}`));
    void this.#watchReconnects();
  }

  /** After a reconnect what was in flight may be gone: every transport sends its unacknowledged messages again. */
  async #watchReconnects(): Promise<void> {
    try {
      for await (const status of this.#o.connection.status()) {
        if (this.#closed) return;
        if (status.type === 'reconnect') for (const transport of this.#peers.values()) transport.resend();
      }
    } catch {
      // The connection closed: closed() tells.
    }
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** Peers with a live transport now. */
  get peers(): readonly string[] {
    return [...this.#peers.keys()];
  }

  /**
   * Resolves once the server has our subscription (a round trip on our connection): a peer on
   * another connection that sends before then is not heard — the server drops what nobody
   * listens to. Rejects if the connection closes first.
   */
  ready(): Promise<void> {
    return this.#o.connection.flush();
  }

  /** The NATS server's largest message, in bytes (1 MB by default). */
  get maxPayload(): number {
    return this.#o.connection.info?.max_payload ?? 1024 * 1024;
  }

  /**
   * `handler(peerId, replySubject)` is asked for a transport when a peer we do not know yet sends
   * its first message; what it returns gets that message and the later ones (undefined: dropped).
   */
  onUnknownPeer(handler: (peerId: string, replySubject: string) => Transport | undefined): void {
    this.#unknownPeer = handler;
  }

  /**
   * The transport to `peerId`, who listens on `peerSubject` (one per peer: a second call while the first is open is
   * refused).
   */
  transportTo(peerId: string, peerSubject: string): NatsTransport {
    checkPeerId(peerId, 'peerId');
    checkSubject(peerSubject, 'peerSubject');
    if (this.#closed)
      throw new IllegalStateError(`${this.subject}: the inbox is closed`, {
        component: 'NatsInbox',
        operation: 'transportTo',
        state: 'closed',
        allowed: ['open'],
      });
    const open = this.#peers.get(peerId);
    if (open !== undefined && !open.closed) {
      throw new IllegalStateError(`${this.subject} already has an open transport to ${peerId}`, {
        component: 'NatsInbox',
        operation: 'transportTo',
        state: 'connected',
        allowed: ['no transport to that peer'],
      });
    }
    const transport = new NatsTransport(this.#o, this.id, peerId, peerSubject, () => {
      if (this.#peers.get(peerId) === transport) this.#peers.delete(peerId);
    });
    transport.silent = this.#silent;
    this.#peers.set(peerId, transport);
    return transport;
  }

  /** Messages dropped for a stale (or, at a JobManager, a newer) fencing token. */
  get fencedDrops(): number {
    return this.#fencedDrops;
  }

  /**
   * The peer `peerId` is someone new under the same id (a new leader): our transport to it forgets
   * its last session, and its next message starts a new one instead of being taken for a restart.
   */
  retarget(peerId: string): void {
    this.#peers.get(peerId)?.restartSession();
  }

  /**
   * From now on nothing goes out to any peer of this inbox, not even a close: a JobManager that no
   * longer leads falls silent, and its TaskExecutors register with the next leader under their
   * ResourceIDs.
   */
  silence(): void {
    for (const transport of this.#peers.values()) transport.silent = true;
    this.#silent = true;
  }

  #silent = false;

  /** Stops listening; every peer's transport is closed (each peer is told, unless silenced). */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    for (const transport of [...this.#peers.values()]) transport.close();
    this.#peers.clear();
    this.#subscription.unsubscribe();
  }

  #arrive(msg: Msg): void {
    if (this.#closed) return;
    const from = msg.headers?.get(HEADER_FROM) ?? '';
    const reply = msg.headers?.get(HEADER_REPLY) ?? '';
    if (!PEER_ID.test(from) || !SUBJECT.test(reply))
      return this.#o.log?.(`${this.subject}: dropped a message without a valid ${HEADER_FROM}/${HEADER_REPLY} header`);
    const fencing = this.#o.fencing;
    if (fencing !== undefined) {
      const raw = msg.headers?.get(HEADER_FENCE);
      const token = raw ? Number(raw) : Number.NaN;
      const verdict = fencing.incoming(from, Number.isSafeInteger(token) ? token : undefined);
      if (verdict === 'drop') {
        this.#fencedDrops++;
        return;
      }
      if (verdict === 'adopt') this.retarget(from);
    }
    const session = msg.headers?.get(HEADER_SESSION) ?? '';
    const toSession = msg.headers?.get(HEADER_TO_SESSION) ?? '';
    let transport: Transport | undefined = this.#peers.get(from);
    // Addressed to an earlier transport of ours to that peer: stale.
    if (transport instanceof NatsTransport && toSession !== '' && toSession !== transport.session) return;
    if (
      transport instanceof NatsTransport &&
      transport.peerSession !== undefined &&
      transport.peerSession !== session
    ) {
      // A close from an earlier session of that peer concerns a transport that is gone already.
      if (msg.headers?.has(HEADER_CLOSE)) return;
      // The peer restarted: what we had with it is lost; its new session is a new peer.
      transport.connectionLost(`${from} started again (a new session)`);
      transport = undefined;
    }
    if (transport === undefined) {
      // A close notice from a peer we no longer know needs no transport.
      if (msg.headers?.has(HEADER_CLOSE)) return;
      if (this.#o.admitting?.() === false) return;
      transport = this.#unknownPeer?.(from, reply);
      if (transport === undefined) return this.#o.log?.(`${this.subject}: dropped a message from unknown peer ${from}`);
    }
    if (transport instanceof NatsTransport) transport.arrive(msg);
  }

  #fail(error: Error): void {
    this.#lostAll(`the subscription on ${this.subject} failed: ${error.message}`);
  }

  #lostAll(reason: string): void {
    if (this.#closed) return;
    this.#closed = true;
    for (const transport of [...this.#peers.values()]) transport.connectionLost(reason);
    this.#peers.clear();
  }
}

/** One peer over NATS: what we send goes to its subject, what it sends us arrives through our inbox. */
export class NatsTransport extends BaseTransport {
  readonly peerId: string;
  readonly peerSubject: string;
  /** Ours, sent with every message. */
  readonly session: string = randomUUID();
  /** The peer's, from its first message (undefined until then, and again once retargeted). */
  peerSession: string | undefined = undefined;
  /** Nothing more goes out, not even a close (NatsInbox.silence). */
  silent = false;
  readonly #o: NatsInboxOptions;
  readonly #ownId: string;
  readonly #forget: () => void;
  /** Messages held behind one going through the large-message store (kept in order). */
  #outgoing: Promise<void> | null = null;
  #incoming: Promise<void> | null = null;
  #sendFailures = 0;
  /** Numbered delivery: what the peer has not acknowledged, and how far we received (natsDelivery.ts). */
  readonly #delivery: NumberedDelivery;

  constructor(options: NatsInboxOptions, ownId: string, peerId: string, peerSubject: string, forget: () => void) {
    super();
    this.#o = options;
    this.#ownId = ownId;
    this.peerId = peerId;
    this.peerSubject = peerSubject;
    this.#forget = forget;
    this.#delivery = new NumberedDelivery({
      emit: (data, extra, seq) => this.#emit(data, extra, seq),
      sending: () => !this.closed && !this.silent,
      giveUpMs: options.giveUpMs ?? GIVE_UP_MS,
      log: (message) => options.log?.(`${peerId}: ${message}`),
    });
  }

  send(message: unknown): void {
    if (this.closed) return;
    // Throws here, synchronously, for what cannot be cloned (as a port does).
    const bytes = serialize(message);
    const maxPayload = this.#o.connection.info?.max_payload ?? 1024 * 1024;
    // Headers and protocol take a little of max_payload too.
    if (bytes.length + 512 <= maxPayload) {
      if (this.#outgoing === null) this.#delivery.send(bytes, {});
      else this.#after('outgoing', () => this.#delivery.send(bytes, {}));
      return;
    }
    const store = this.#o.largeMessages;
    if (store === undefined) {
      throw new IllegalArgumentError(
        'out-of-range',
        `a message of ${bytes.length} bytes to ${this.peerId} exceeds the NATS server's max_payload ` +
          `of ${maxPayload} bytes, and no large-message store is configured; nothing was sent`,
        {
          argument: 'message',
          bytes: bytes.length,
          maxPayload,
        },
      );
    }
    this.#after('outgoing', async () => {
      const key = await store.put(bytes);
      this.#delivery.send(new Uint8Array(0), { [HEADER_STORED]: key });
    });
  }

  /** A message from the peer, through our inbox. */
  arrive(msg: Msg): void {
    if (this.closed) return;
    const closing = msg.headers?.get(HEADER_CLOSE);
    const stored = msg.headers?.get(HEADER_STORED);
    const session = msg.headers?.get(HEADER_SESSION) ?? '';
    if (closing) {
      // Only the session we know may close us (a close of an earlier one, or before we heard from it, is stale).
      if (session !== this.peerSession) return;
      if (this.#incoming === null) this.#peerClosed(closing);
      else this.#after('incoming', () => this.#peerClosed(closing));
      return;
    }
    this.peerSession ??= session;
    const ack = msg.headers?.get(HEADER_ACK);
    if (ack) this.#delivery.acknowledged(Number(ack), msg.headers?.has(HEADER_NACK) === true);
    const seqHeader = msg.headers?.get(HEADER_SEQ);
    if (!seqHeader) {
      if (ack && !stored && msg.data.length === 0) return; // an acknowledgement alone
    } else if (!this.#delivery.inOrder(Number(seqHeader), msg.headers?.get(HEADER_FLOOR))) return;
    const store = this.#o.largeMessages;
    if (stored) {
      if (store === undefined)
        return this.#o.log?.(`dropped a stored message from ${this.peerId}: no large-message store is configured here`);
      this.#after('incoming', async () => this.#deliverBytes(await store.take(stored)));
      return;
    }
    if (this.#incoming === null) this.#deliverBytes(msg.data);
    else this.#after('incoming', () => this.#deliverBytes(msg.data));
  }

  /** The NATS connection closed for good. */
  connectionLost(reason: string): void {
    this.#delivery.stop();
    this.lost(reason);
  }

  /** Sends again every unacknowledged message, in order (after a reconnect). */
  resend(): void {
    this.#delivery.resend();
  }

  /**
   * The peer is someone new under the same id (a new leader): its next message starts a new session, and both
   * directions number from 1 again; what the last one did not acknowledge is not for the new one.
   */
  restartSession(): void {
    this.peerSession = undefined;
    this.#delivery.restart();
  }

  /** Messages sent again, and repeats dropped (for tests and diagnosis). */
  get retransmitted(): number {
    return this.#delivery.retransmitted;
  }

  get duplicatesDropped(): number {
    return this.#delivery.duplicatesDropped;
  }

  protected attach(): Detach {
    return () => {};
  }

  protected closePipe(): void {
    this.#delivery.stop();
    this.#forget();
    // Tell the peer, so its transport (and the Link over it) closes now, not at its next deadline.
    if (!this.#o.connection.isClosed())
      this.#publish(new Uint8Array(0), { [HEADER_CLOSE]: `${this.#ownId} closed the transport` }, true);
  }

  #peerClosed(reason: string): void {
    this.#delivery.stop();
    this.#forget();
    this.lost(`${this.peerId}: ${reason}`);
  }

  #deliverBytes(bytes: Uint8Array): void {
    let message: unknown;
    try {
      message = deserialize(bytes);
    } catch (error) {
      this.#o.log?.(
        `dropped a message from ${this.peerId} that could not be ` +
          `decoded: ${error instanceof Error ? error.message : String(error)}`,
      );
      return;
    }
    this.deliver(message);
  }

  #publish(data: Uint8Array, extra: Record<string, string> = {}, force = false): void {
    this.#emit(data, extra, undefined, force);
  }

  /** Publishes with our headers (and the acknowledgement of what we received, which an owed one then need not). */
  #emit(data: Uint8Array, extra: Record<string, string>, seq?: number, force = false): void {
    if ((this.closed && !force) || this.silent) return;
    const h: MsgHdrs = natsHeaders();
    h.set(HEADER_FROM, this.#ownId);
    h.set(HEADER_REPLY, this.#o.subject);
    h.set(HEADER_SESSION, this.session);
    if (this.peerSession !== undefined) h.set(HEADER_TO_SESSION, this.peerSession);
    const fence = this.#o.fencing?.outgoing();
    if (fence !== undefined) h.set(HEADER_FENCE, String(fence));
    if (seq !== undefined) h.set(HEADER_SEQ, String(seq));
    const received = this.#delivery.acknowledging(extra[HEADER_NACK] !== undefined);
    if (received !== null) h.set(HEADER_ACK, String(received));
    for (const [key, value] of Object.entries(extra)) h.set(key, value);
    try {
      this.#o.connection.publish(this.peerSubject, data, { headers: h });
    } catch (error) {
      // Closed or draining under us: the Link's deadlines tell the calls; say it once.
      if (this.#sendFailures++ === 0)
        this.#o.log?.(`sending to ${this.peerId} failed: ${error instanceof Error ? error.message : String(error)}`);
    }
  }

  /** Runs `step` after what is queued in that direction; later messages wait for it. */
  #after(direction: 'outgoing' | 'incoming', step: () => void | Promise<void>): void {
    const previous = (direction === 'outgoing' ? this.#outgoing : this.#incoming) ?? Promise.resolve();
    const next: Promise<void> = previous
      .then(() => (this.closed ? undefined : step()))
      .catch((error: unknown) =>
        this.#o.log?.(
          `a large message ${direction === 'outgoing' ? 'to' : 'from'} ${this.peerId} ` +
            `was lost: ${error instanceof Error ? error.message : String(error)}`,
        ),
      )
      .finally(() => {
        if (direction === 'outgoing' && this.#outgoing === next) this.#outgoing = null;
        if (direction === 'incoming' && this.#incoming === next) this.#incoming = null;
      });
    if (direction === 'outgoing') this.#outgoing = next;
    else this.#incoming = next;
  }
}
