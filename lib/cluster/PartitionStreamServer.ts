/**
 * The producer's side of the data plane (Flink's PartitionRequestServerHandler with a
 * CreditBasedSequenceNumberingViewReader per read): it answers the reads of the partitions its TaskExecutor holds,
 * one stream per read, cutting the subpartition's bytes into numbered chunks below the server's `max_payload` and
 * sending one only while the reader has credit for it — never more chunks in flight than the reader granted. A stream
 * whose reader grants nothing more for `idleTimeoutMs` is dropped (the reader is gone or gave up); so is one the reader
 * cancels, and every one at `close()`. The bytes are sent from where they are kept (a view of the partition's
 * SharedArrayBuffer), not copied here.
 */
import type { Clock, TimerHandle } from '../core/clock.js';
import {
  chunkBytesFor,
  type DataBus,
  HEADER_CHUNKS,
  HEADER_CREDIT,
  HEADER_KIND,
  HEADER_PARTITION,
  HEADER_REASON,
  HEADER_REPLY,
  HEADER_SEQ,
  HEADER_STREAM,
  HEADER_SUBPARTITION,
  HEADER_TOTAL,
  MAX_CREDIT,
} from './partitionStreamWire.js';

/** What the server looks partitions up in: the bytes of a subpartition, a value that is not bytes, or nothing. */
export type PartitionLookup = (partitionId: string, subpartition: number) => Uint8Array | { raw: unknown } | undefined;

export interface PartitionStreamServerOptions {
  readonly bus: DataBus;
  /** The subject it serves on (partitionStreamWire's dataSubject). */
  readonly subject: string;
  readonly clock: Clock;
  /** How long a stream waits for credit before it is dropped. */
  readonly idleTimeoutMs: number;
  /** A chunk's bytes at most (default: partitionStreamWire's DEFAULT_CHUNK_BYTES, below `max_payload`). */
  readonly chunkBytes?: number;
  /** Told of what went wrong sending (the connection closed): the stream is dropped. */
  readonly log?: (message: string) => void;
}

interface Stream {
  readonly key: string;
  readonly id: string;
  readonly replyTo: string;
  readonly bytes: Uint8Array;
  readonly chunks: number;
  next: number;
  /** Chunks the reader granted and not sent yet. */
  credit: number;
  timer: TimerHandle | undefined;
}

export class PartitionStreamServer {
  readonly #o: PartitionStreamServerOptions;
  readonly #chunkBytes: number;
  readonly #streams = new Map<string, Stream>();
  readonly #subscription: { unsubscribe(): void };
  #lookup: PartitionLookup = () => undefined;
  #closed = false;

  constructor(options: PartitionStreamServerOptions) {
    this.#o = options;
    this.#chunkBytes = chunkBytesFor(options.bus.maxPayload, options.chunkBytes);
    this.#subscription = options.bus.subscribe(options.subject, (_, header) => this.#arrive(header));
  }

  /** Where it looks partitions up. */
  serve(lookup: PartitionLookup): void {
    this.#lookup = lookup;
  }

  /** Reads being answered now. */
  get streams(): number {
    return this.#streams.size;
  }

  /** The bytes of a chunk it sends. */
  get chunkBytes(): number {
    return this.#chunkBytes;
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#subscription.unsubscribe();
    for (const stream of [...this.#streams.values()]) this.#drop(stream);
  }

  #arrive(header: (name: string) => string): void {
    if (this.#closed) return;
    const kind = header(HEADER_KIND);
    const replyTo = header(HEADER_REPLY);
    const id = header(HEADER_STREAM);
    if (replyTo === '' || id === '') return; // not one of ours
    const key = `${replyTo} ${id}`;
    if (kind === 'request') return this.#request(key, id, replyTo, header);
    const stream = this.#streams.get(key);
    if (stream === undefined) return; // finished, dropped, or never known: nothing to do
    if (kind === 'cancel') return this.#drop(stream);
    if (kind === 'credit') {
      stream.credit = Math.min(MAX_CREDIT, stream.credit + creditOf(header));
      this.#pump(stream);
    }
  }

  #request(key: string, id: string, replyTo: string, header: (name: string) => string): void {
    const partitionId = header(HEADER_PARTITION);
    const subpartition = Number(header(HEADER_SUBPARTITION));
    const part = this.#lookup(partitionId, subpartition);
    if (!(part instanceof Uint8Array)) {
      const reason = part === undefined ? 'not-found' : 'not-serializable';
      this.#send(replyTo, new Uint8Array(0), {
        [HEADER_KIND]: 'refused',
        [HEADER_STREAM]: id,
        [HEADER_REASON]: reason,
      });
      return;
    }
    const existing = this.#streams.get(key);
    if (existing !== undefined) this.#drop(existing); // the reader asked again under the same id: start over
    const chunks = Math.max(1, Math.ceil(part.byteLength / this.#chunkBytes));
    const stream: Stream = {
      key,
      id,
      replyTo,
      bytes: part,
      chunks,
      next: 0,
      credit: creditOf(header),
      timer: undefined,
    };
    this.#streams.set(key, stream);
    this.#pump(stream);
  }

  /** Sends what the stream's credit allows; then waits for more (bounded), or is done. */
  #pump(stream: Stream): void {
    if (stream.timer !== undefined) this.#o.clock.clearTimeout(stream.timer);
    stream.timer = undefined;
    const { bytes, chunks } = stream;
    while (stream.credit > 0 && stream.next < chunks) {
      const start = stream.next * this.#chunkBytes;
      const ok = this.#send(
        stream.replyTo,
        bytes.subarray(start, Math.min(bytes.byteLength, start + this.#chunkBytes)),
        {
          [HEADER_KIND]: 'chunk',
          [HEADER_STREAM]: stream.id,
          [HEADER_SEQ]: String(stream.next),
          [HEADER_CHUNKS]: String(chunks),
          [HEADER_TOTAL]: String(bytes.byteLength),
        },
      );
      if (!ok) return this.#drop(stream);
      stream.next++;
      stream.credit--;
    }
    if (stream.next === chunks) return this.#drop(stream);
    stream.timer = this.#o.clock.setTimeout(() => {
      stream.timer = undefined;
      this.#drop(stream);
    }, this.#o.idleTimeoutMs);
  }

  #drop(stream: Stream): void {
    if (stream.timer !== undefined) this.#o.clock.clearTimeout(stream.timer);
    stream.timer = undefined;
    if (this.#streams.get(stream.key) === stream) this.#streams.delete(stream.key);
  }

  #send(subject: string, body: Uint8Array, fields: Record<string, string>): boolean {
    try {
      this.#o.bus.publish(subject, body, fields);
      return true;
    } catch (error) {
      this.#o.log?.(
        `could not send on ${subject} (a result partition's read): ${error instanceof Error ? error.message : error}`,
      );
      return false;
    }
  }
}

/** The credit a message grants: a whole number from 0 to MAX_CREDIT (anything else grants none). */
function creditOf(header: (name: string) => string): number {
  const credit = Number(header(HEADER_CREDIT));
  return Number.isInteger(credit) && credit > 0 ? Math.min(credit, MAX_CREDIT) : 0;
}
