/**
 * Numbered delivery for a transport over core NATS, which delivers at most once (a node going away, or a
 * reconnect, loses what was in flight): every message of a transport is numbered (`Slotwise-Seq`, from 1); the
 * receiver takes them in order only and says how far it got (`Slotwise-Ack`, on a message it sends anyway or alone
 * after ACK_DELAY_MS); the sender keeps what is not acknowledged and sends it again — at once when the receiver
 * saw a gap (`Slotwise-Nack`) or the client reconnected (NatsInbox), otherwise after RETRANSMIT_MS without progress,
 * doubling to MAX_RETRANSMIT_MS. A repeat is dropped by its number, so each message is delivered once and in
 * order. What waits for an acknowledgement is bounded — GIVE_UP_MS, MAX_UNACKED messages, MAX_UNACKED_BYTES;
 * past that the oldest go, and a retransmission tells the receiver where its sender's messages start now
 * (`Slotwise-Floor`), so it skips what will not come. (Go-back-N: no selective repeat; losses are rare.)
 */

/** A message's number on its transport, from 1 (a new session, or a new leader under the same id, starts again). */
export const HEADER_SEQ = 'Slotwise-Seq';
/** The highest number the sender has received in order from us; alone (no body) an acknowledgement only. */
export const HEADER_ACK = 'Slotwise-Ack';
/** On an acknowledgement: the sender saw a gap after it, send again from there. */
export const HEADER_NACK = 'Slotwise-Nack';
/** The lowest number the sender still holds: what is below it and not received is lost for good. */
export const HEADER_FLOOR = 'Slotwise-Floor';

/** How long a receiver waits for a message of its own to carry an acknowledgement before sending one alone. */
export const ACK_DELAY_MS = 50;
/** How long a sender waits for an acknowledgement before sending again what is unacknowledged (then doubling). */
export const RETRANSMIT_MS = 1_000;
const MAX_RETRANSMIT_MS = 8_000;
/**
 * A message unacknowledged this long is given up (the receiver is told to skip it): the calls it carried have met
 * their deadlines (rpc.ask.timeout, 10 s by default), and a peer that refused it (a JobManager still recovering its
 * jobs) must not receive a pile of stale registration attempts once it admits us.
 */
export const GIVE_UP_MS = 10_000;
/** Unacknowledged messages kept for sending again, at most (count and bytes). */
const MAX_UNACKED = 4_096;
const MAX_UNACKED_BYTES = 64 * 1024 * 1024;

export interface NumberedDeliveryOptions {
  /** Publishes one message: with `seq` a numbered one, without an acknowledgement or a gap report alone. */
  readonly emit: (data: Uint8Array, extra: Record<string, string>, seq?: number) => void;
  /** Whether anything may go out now (not closed, not silenced). */
  readonly sending: () => boolean;
  readonly giveUpMs: number;
  readonly log?: (message: string) => void;
}

interface Unacked {
  readonly seq: number;
  readonly data: Uint8Array;
  readonly extra: Record<string, string>;
  readonly sentAt: number;
}

/** Both directions of one transport: what we sent and the peer has not acknowledged, and how far we received. */
export class NumberedDelivery {
  readonly #o: NumberedDeliveryOptions;
  /** The number of our next message. */
  #nextSeq = 1;
  /** What the peer has not acknowledged yet, ascending. */
  #unacked: Unacked[] = [];
  #unackedBytes = 0;
  #retransmitTimer: ReturnType<typeof setTimeout> | null = null;
  #retransmitMs = RETRANSMIT_MS;
  /** The highest number received in order from the peer. */
  #received = 0;
  #ackTimer: ReturnType<typeof setTimeout> | null = null;
  #lastNackAt = 0;
  /** Messages sent again, and repeats dropped (for tests and diagnosis). */
  retransmitted = 0;
  duplicatesDropped = 0;

  constructor(options: NumberedDeliveryOptions) {
    this.#o = options;
  }

  /** Numbers `data`, keeps it until acknowledged, and publishes it. */
  send(data: Uint8Array, extra: Record<string, string>): void {
    if (!this.#o.sending()) return;
    const seq = this.#nextSeq++;
    this.#unacked.push({ seq, data, extra, sentAt: Date.now() });
    this.#unackedBytes += data.length;
    while (this.#unacked.length > MAX_UNACKED || this.#unackedBytes > MAX_UNACKED_BYTES)
      this.#unackedBytes -= this.#unacked.shift()!.data.length;
    this.#o.emit(data, extra, seq);
    this.#armRetransmit(false);
  }

  /** Sends again every unacknowledged message, in order (a reconnect, a gap the peer saw, or no progress). */
  resend(): void {
    const givenUp = Date.now() - this.#o.giveUpMs;
    while (this.#unacked.length > 0 && this.#unacked[0]!.sentAt < givenUp)
      this.#unackedBytes -= this.#unacked.shift()!.data.length;
    if (this.#unacked.length === 0) this.#stopRetransmit();
    if (!this.#o.sending() || this.#unacked.length === 0) return;
    // Below the first we hold nothing can come again (acknowledged, or given up): the receiver must not wait for it.
    const floor = { [HEADER_FLOOR]: String(this.#unacked[0]!.seq) };
    for (const m of this.#unacked) this.#o.emit(m.data, { ...m.extra, ...floor }, m.seq);
    this.retransmitted += this.#unacked.length;
    this.#armRetransmit(true);
  }

  /** Both directions number from 1 again (a new peer under the same id); nothing unacknowledged is kept. */
  restart(): void {
    this.#nextSeq = 1;
    this.#unacked = [];
    this.#unackedBytes = 0;
    this.#received = 0;
    this.stop();
  }

  /** Stops the timers (the transport closed). */
  stop(): void {
    this.#stopRetransmit();
    if (this.#ackTimer !== null) clearTimeout(this.#ackTimer);
    this.#ackTimer = null;
  }

  /**
   * Whether the peer's message `seq` is the next in order (then counted received, to be acknowledged); a repeat or
   * one after a gap is not (a gap is reported). `floorHeader`: where the peer's held messages start.
   */
  inOrder(seq: number, floorHeader: string | undefined): boolean {
    if (!Number.isSafeInteger(seq) || seq < 1) return true; // not numbered as we number: taken as it comes
    const floor = floorHeader ? Number(floorHeader) : 0;
    if (Number.isSafeInteger(floor) && floor - 1 > this.#received) {
      this.#o.log?.(`skipped ${floor - 1 - this.#received} message(s) it gave up sending (unacknowledged)`);
      this.#received = floor - 1;
    }
    if (seq <= this.#received) {
      this.duplicatesDropped++;
      this.#oweAck();
      return false;
    }
    if (seq > this.#received + 1) {
      // A gap: ask for everything from the first missing one, at most once per ack delay.
      const now = Date.now();
      if (now - this.#lastNackAt >= ACK_DELAY_MS && this.#o.sending()) {
        this.#lastNackAt = now;
        this.#o.emit(new Uint8Array(0), { [HEADER_NACK]: '1' });
      }
      return false;
    }
    this.#received = seq;
    this.#oweAck();
    return true;
  }

  /** The peer received everything up to `upTo`; with `nack` it saw a gap after it. */
  acknowledged(upTo: number, nack: boolean): void {
    if (!Number.isSafeInteger(upTo)) return;
    let progressed = false;
    while (this.#unacked.length > 0 && this.#unacked[0]!.seq <= upTo) {
      this.#unackedBytes -= this.#unacked.shift()!.data.length;
      progressed = true;
    }
    if (progressed) this.#retransmitMs = RETRANSMIT_MS;
    if (this.#unacked.length === 0) this.#stopRetransmit();
    else if (nack) this.resend();
    else if (progressed) this.#armRetransmit(true);
  }

  /**
   * The acknowledgement a message about to go out carries (how far we received; null: nothing to acknowledge) —
   * an acknowledgement owed then need not go alone. `gapReport`: a gap report carries one even at 0.
   */
  acknowledging(gapReport: boolean): number | null {
    if (this.#received === 0 && !gapReport) return null;
    if (this.#ackTimer !== null) clearTimeout(this.#ackTimer);
    this.#ackTimer = null;
    return this.#received;
  }

  #oweAck(): void {
    if (this.#ackTimer !== null || !this.#o.sending()) return;
    this.#ackTimer = setTimeout(() => {
      this.#ackTimer = null;
      if (this.#o.sending()) this.#o.emit(new Uint8Array(0), {});
    }, ACK_DELAY_MS);
    this.#ackTimer.unref?.();
  }

  #armRetransmit(restart: boolean): void {
    if (this.#retransmitTimer !== null) {
      if (!restart) return;
      clearTimeout(this.#retransmitTimer);
    }
    this.#retransmitTimer = setTimeout(() => {
      this.#retransmitTimer = null;
      this.#retransmitMs = Math.min(this.#retransmitMs * 2, MAX_RETRANSMIT_MS);
      this.resend();
    }, this.#retransmitMs);
    this.#retransmitTimer.unref?.();
  }

  #stopRetransmit(): void {
    if (this.#retransmitTimer !== null) clearTimeout(this.#retransmitTimer);
    this.#retransmitTimer = null;
  }
}
