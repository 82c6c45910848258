/**
 * The consumer's side of the data plane (Flink's PartitionRequestClient with a RemoteInputChannel per read): it asks
 * a producer's TaskExecutor for a subpartition granting `credit` chunks, copies each chunk as it comes into one
 * SharedArrayBuffer of the subpartition's size (the consumer's task thread shares it), and grants the chunks it copied
 * back in batches of half its credit — so the producer never has more than `credit` chunks in flight to it. At most
 * `maxReads` reads are in progress at once, the others wait their turn: what is in flight to this TaskExecutor is
 * bounded (8 × 8 chunks of 512 KiB: 32 MiB, half the NATS server's default `max_pending` for a connection, past
 * which it would drop what it sends us as to a slow consumer).
 *
 * Every wait is bounded: a read whose next chunk does not come within `timeoutMs` (of its request, or of the chunk
 * before) fails with PartitionError('timed-out') naming the partition, the subpartition and the producer; a chunk
 * whose number is not the next one (NATS lost one: a reconnect) fails it at once with PartitionError('chunk-lost').
 * Either way the producer is told to stop (`cancel`).
 */
import type { Clock, TimerHandle } from '../core/clock.js';
import type { PartitionError } from '../core/errors.js';
import { ExecutionAttemptID } from '../core/ids.js';
import type { PartitionInputWire } from '../rpc/protocol.js';
import { notFound, partitionError } from '../taskexecutor/ResultPartitions.js';
import {
  type DataBus,
  DEFAULT_CREDIT,
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

export interface PartitionStreamReaderOptions {
  readonly bus: DataBus;
  /** The subject it takes chunks on (partitionStreamWire's dataInSubject). */
  readonly subject: string;
  readonly clock: Clock;
  /** Chunks granted to each read (default 8, at most 64). */
  readonly credit?: number;
  /** Reads in progress at once; the others wait their turn (default 8). */
  readonly maxReads?: number;
}

/** Reads in progress at once by default. */
export const DEFAULT_MAX_READS = 8;

interface Read {
  readonly id: string;
  readonly input: PartitionInputWire;
  /** The producer's data subject. */
  readonly producer: string;
  readonly timeoutMs: number;
  readonly resolve: (bytes: Uint8Array) => void;
  readonly reject: (error: Error) => void;
  into: Uint8Array | null;
  filled: number;
  next: number;
  /** Chunks copied since the last grant. */
  copied: number;
  timer: TimerHandle | undefined;
}

export class PartitionStreamReader {
  readonly #o: PartitionStreamReaderOptions;
  readonly #credit: number;
  readonly #maxReads: number;
  readonly #reads = new Map<string, Read>();
  /** Reads waiting for their turn, oldest first. */
  readonly #waiting: Read[] = [];
  readonly #subscription: { unsubscribe(): void };
  #nextId = 0;
  #closed = false;

  constructor(options: PartitionStreamReaderOptions) {
    this.#o = options;
    this.#credit = Math.max(1, Math.min(MAX_CREDIT, options.credit ?? DEFAULT_CREDIT));
    this.#maxReads = Math.max(1, options.maxReads ?? DEFAULT_MAX_READS);
    this.#subscription = options.bus.subscribe(options.subject, (body, header) => this.#arrive(body, header));
  }

  /** Reads in progress (at most `maxReads`). */
  get reads(): number {
    return this.#reads.size;
  }

  /** Reads waiting for their turn. */
  get waiting(): number {
    return this.#waiting.length;
  }

  /**
   * Reads `input` from the TaskExecutor serving on `producerSubject`; rejects with PartitionError (not-found,
   * timed-out, chunk-lost, unreachable). Its bound starts when its turn comes (a read waiting for it waits for reads
   * that are each bounded).
   */
  read(producerSubject: string, input: PartitionInputWire, timeoutMs: number): Promise<Uint8Array> {
    if (this.#closed) return Promise.reject(closing(input));
    return new Promise<Uint8Array>((resolve, reject) => {
      const id = String(++this.#nextId);
      const read: Read = {
        id,
        input,
        producer: producerSubject,
        timeoutMs,
        resolve,
        reject,
        into: null,
        filled: 0,
        next: 0,
        copied: 0,
        timer: undefined,
      };
      if (this.#reads.size < this.#maxReads) this.#start(read);
      else this.#waiting.push(read);
    });
  }

  #start(read: Read): void {
    this.#reads.set(read.id, read);
    this.#wait(read);
    this.#send(read, 'request', {
      [HEADER_PARTITION]: read.input.partitionId,
      [HEADER_SUBPARTITION]: String(read.input.subpartition),
      [HEADER_CREDIT]: String(this.#credit),
    });
  }

  /** Fails every read in progress (PartitionError 'unreachable') and stops listening. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#subscription.unsubscribe();
    for (const read of this.#waiting.splice(0)) read.reject(closing(read.input));
    for (const read of [...this.#reads.values()]) this.#fail(read, closing(read.input));
  }

  #arrive(body: Uint8Array, header: (name: string) => string): void {
    const read = this.#reads.get(header(HEADER_STREAM));
    if (read === undefined) return; // a read that ended (timed out, failed): its late chunks are dropped
    const kind = header(HEADER_KIND);
    if (kind === 'refused') {
      const reason = header(HEADER_REASON);
      return this.#fail(
        read,
        reason === 'not-found'
          ? notFound(read.input)
          : partitionError(
              'unreachable',
              read.input,
              `TaskExecutor ${read.input.resourceId} holds result partition ${short(read.input)} as a value that ` +
                `cannot cross hosts (a view of managed memory): it refused the read (${reason})`,
            ),
      );
    }
    if (kind !== 'chunk') return;
    const seq = Number(header(HEADER_SEQ));
    const chunks = Number(header(HEADER_CHUNKS));
    const total = Number(header(HEADER_TOTAL));
    if (seq !== read.next) {
      this.#send(read, 'cancel', {});
      return this.#fail(
        read,
        partitionError(
          'chunk-lost',
          read.input,
          `chunk ${read.next} of result partition ${short(read.input)} from TaskExecutor ${read.input.resourceId} ` +
            `never came (chunk ${seq} of ${chunks} did): a message was lost on NATS (a reconnect?)`,
        ),
      );
    }
    if (read.into === null) {
      if (!Number.isSafeInteger(total) || total < 0 || !Number.isSafeInteger(chunks) || chunks < 1)
        return this.#fail(read, partitionError('unreachable', read.input, `a malformed chunk of ${short(read.input)}`));
      read.into = new Uint8Array(new SharedArrayBuffer(total));
    }
    if (read.filled + body.byteLength > read.into.byteLength) {
      this.#send(read, 'cancel', {});
      return this.#fail(
        read,
        partitionError(
          'unreachable',
          read.input,
          `result partition ${short(read.input)} from TaskExecutor ${read.input.resourceId} came longer than the ` +
            `${read.into.byteLength} bytes it announced`,
        ),
      );
    }
    read.into.set(body, read.filled);
    read.filled += body.byteLength;
    read.next++;
    if (read.next === chunks) {
      if (read.filled !== read.into.byteLength)
        return this.#fail(
          read,
          partitionError(
            'unreachable',
            read.input,
            `result partition ${short(read.input)} from TaskExecutor ${read.input.resourceId} came with ` +
              `${read.filled} of the ${read.into.byteLength} bytes it announced`,
          ),
        );
      this.#end(read);
      return read.resolve(read.into);
    }
    // The copied chunks' credit goes back in batches: half the window, so the producer rarely idles.
    if (++read.copied >= Math.max(1, this.#credit >> 1)) {
      this.#send(read, 'credit', { [HEADER_CREDIT]: String(read.copied) });
      read.copied = 0;
    }
    this.#wait(read);
  }

  /** (Re)starts the read's bound on its next chunk. */
  #wait(read: Read): void {
    if (read.timer !== undefined) this.#o.clock.clearTimeout(read.timer);
    read.timer = this.#o.clock.setTimeout(() => {
      read.timer = undefined;
      if (this.#reads.get(read.id) !== read) return;
      this.#send(read, 'cancel', {});
      this.#fail(
        read,
        partitionError(
          'timed-out',
          read.input,
          `no chunk of result partition ${short(read.input)} came from TaskExecutor ${read.input.resourceId} ` +
            `within ${read.timeoutMs} ms (rpc.ask.timeout; ${read.next} chunk(s) came before): it is gone or stuck`,
        ),
      );
    }, read.timeoutMs);
  }

  /** The read is over: the next waiting one's turn. */
  #end(read: Read): void {
    if (read.timer !== undefined) this.#o.clock.clearTimeout(read.timer);
    read.timer = undefined;
    if (!this.#reads.delete(read.id)) return;
    const next = this.#waiting.shift();
    if (next !== undefined && !this.#closed) this.#start(next);
  }

  #fail(read: Read, error: PartitionError): void {
    this.#end(read);
    read.reject(error);
  }

  #send(read: Read, kind: 'request' | 'credit' | 'cancel', fields: Record<string, string>): void {
    try {
      this.#o.bus.publish(read.producer, new Uint8Array(0), {
        ...fields,
        [HEADER_KIND]: kind,
        [HEADER_STREAM]: read.id,
        [HEADER_REPLY]: this.#o.subject,
      });
    } catch (error) {
      if (kind === 'cancel' || this.#reads.get(read.id) !== read) return;
      this.#fail(
        read,
        partitionError(
          'unreachable',
          read.input,
          `cannot ask TaskExecutor ${read.input.resourceId} for result partition ${short(read.input)}: ` +
            `${error instanceof Error ? error.message : String(error)}`,
        ),
      );
    }
  }
}

const short = (input: PartitionInputWire) =>
  `${ExecutionAttemptID.short(input.partitionId)} (subpartition ${input.subpartition})`;

const closing = (input: PartitionInputWire) =>
  partitionError(
    'unreachable',
    input,
    `cannot read result partition ${short(input)} from TaskExecutor ${input.resourceId}: this TaskExecutor is closing`,
  );
