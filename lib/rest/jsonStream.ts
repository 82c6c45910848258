/**
 * A JSON document written piecewise: the same text as `JSON.stringify(toJsonValue(value))` (jsonValue.ts' rules),
 * produced as chunks of at most `chunkBytes` UTF-8 bytes while the value is walked — objects and arrays member by
 * member, bytes base64-encoded in slices of a multiple of 3 bytes (so the slices' base64 joins into the whole's),
 * long strings escaped in slices (never between the two halves of a surrogate pair, which JSON.stringify would
 * escape apart). A job's result of 100 MB of bytes thus never becomes one string of 133 MB of JSON: the REST server
 * sends it as a JsonStream, which encodes the next chunk only when the client has taken the last one (Flink's REST
 * handlers build the whole body instead).
 */
import { Readable } from 'node:stream';
import { IllegalArgumentError, RestError } from '../core/errors.js';
import { jsonShape } from './jsonValue.js';

/** A chunk's bytes at most by default: bytes go in slices of 768 KiB, 1 MiB once in base64. */
export const DEFAULT_CHUNK_BYTES = 1 << 20;
/** The smallest chunk allowed: room for any piece that is not sliced (a number, `{"base64":"`). */
const MIN_CHUNK_BYTES = 64;
const MAX_CHUNK_BYTES = 1 << 28;

export interface JsonChunksOptions {
  /** The most UTF-8 bytes one chunk holds: an integer from 64 to 2^28 (default 1 MiB). */
  readonly chunkBytes?: number;
}

export interface JsonStreamOptions {
  /**
   * How long the stream waits for its reader to take a chunk before it gives up with RestError('timed-out'), in ms
   * (a finite number > 0); default: it waits as long as it takes.
   */
  readonly stallTimeoutMs?: number;
}

/** The JSON text of `value` in chunks (jsonValue.ts' rules; IllegalArgumentError for a bad `chunkBytes`). */
export function jsonChunks(value: unknown, options: JsonChunksOptions = {}): Generator<string, void, undefined> {
  const chunkBytes = options.chunkBytes ?? DEFAULT_CHUNK_BYTES;
  if (!Number.isInteger(chunkBytes) || chunkBytes < MIN_CHUNK_BYTES || chunkBytes > MAX_CHUNK_BYTES)
    throw new IllegalArgumentError(
      'out-of-range',
      `chunkBytes must be an integer from ${MIN_CHUNK_BYTES} to ${MAX_CHUNK_BYTES}, got ${String(chunkBytes)}`,
      { argument: 'chunkBytes' },
    );
  return encode(value, chunkBytes);
}

/**
 * The body of a response: the document as one string when it fits in one chunk (sent in one write, with its
 * Content-Length), else a JsonStream of its chunks (sent chunked).
 */
export function jsonBody(value: unknown, options: JsonChunksOptions & JsonStreamOptions = {}): string | JsonStream {
  const chunks = jsonChunks(value, options);
  // Every document has a first chunk; whether there is a second tells a small one.
  const first = chunks.next().value ?? '';
  const second = chunks.next();
  if (second.done === true) return first;
  return new JsonStream(prepended([first, second.value], chunks), options);
}

/**
 * A readable stream of chunks (from `jsonChunks`): it asks for the next one only when its reader has taken what it
 * holds (one chunk past its high-water mark), so a reader that stops stops the encoding.
 */
export class JsonStream extends Readable {
  readonly #chunks: Iterator<string, void, undefined>;
  readonly #stallTimeoutMs: number | undefined;
  #stall: NodeJS.Timeout | undefined;
  #produced = 0;

  constructor(chunks: Iterator<string, void, undefined>, options: JsonStreamOptions = {}) {
    const { stallTimeoutMs } = options;
    if (stallTimeoutMs !== undefined && !(Number.isFinite(stallTimeoutMs) && stallTimeoutMs > 0))
      throw new IllegalArgumentError(
        'out-of-range',
        `stallTimeoutMs must be a finite number of ms > 0, got ${String(stallTimeoutMs)}`,
        { argument: 'stallTimeoutMs' },
      );
    super();
    this.#chunks = chunks;
    this.#stallTimeoutMs = stallTimeoutMs;
  }

  /** Chunks encoded so far. */
  get produced(): number {
    return this.#produced;
  }

  override _read(): void {
    clearTimeout(this.#stall);
    let step: IteratorResult<string, void>;
    try {
      step = this.#chunks.next();
    } catch (error) {
      this.destroy(error instanceof Error ? error : new Error(String(error)));
      return;
    }
    if (step.done) {
      this.push(null);
      return;
    }
    this.#produced++;
    this.push(step.value);
    if (this.#stallTimeoutMs !== undefined) {
      const ms = this.#stallTimeoutMs;
      this.#stall = setTimeout(
        () =>
          this.destroy(
            new RestError('timed-out', `the reader of a JSON body took nothing for ${ms} ms: the body was cut off`, {
              timeoutMs: ms,
              chunksSent: this.#produced,
            }),
          ),
        ms,
      );
      this.#stall.unref();
    }
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    clearTimeout(this.#stall);
    try {
      this.#chunks.return?.();
    } catch {
      // A generator that throws while it closes: nothing more to let go of.
    }
    callback(error);
  }
}

function* prepended(
  head: readonly string[],
  rest: Iterator<string, void, undefined>,
): Generator<string, void, undefined> {
  yield* head;
  yield* { [Symbol.iterator]: () => rest };
}

/** A container being written: its members still to come, and how it closes. */
interface Frame {
  readonly container: object;
  readonly members: Iterator<unknown> | Iterator<readonly [string, unknown]>;
  readonly close: ']' | '}';
  first: boolean;
}

/** Pieces (none longer than chunkBytes) joined into chunks of at most chunkBytes bytes. */
class Chunker {
  #parts: string[] = [];
  #bytes = 0;

  constructor(readonly chunkBytes: number) {}

  /** Adds a piece; the chunk built so far when the piece does not fit beside it. */
  add(piece: string): string | undefined {
    const bytes = piece.length === 1 && piece.charCodeAt(0) < 0x80 ? 1 : Buffer.byteLength(piece);
    let full: string | undefined;
    if (this.#bytes + bytes > this.chunkBytes && this.#bytes > 0) full = this.flush();
    this.#parts.push(piece);
    this.#bytes += bytes;
    return full;
  }

  flush(): string | undefined {
    if (this.#bytes === 0) return undefined;
    const chunk = this.#parts.join('');
    this.#parts = [];
    this.#bytes = 0;
    return chunk;
  }
}

function* encode(root: unknown, chunkBytes: number): Generator<string, void, undefined> {
  // 4 base64 characters per 3 bytes; an escaped UTF-16 unit is at most 6 bytes (`\u001f`).
  const byteSlice = Math.floor(chunkBytes / 4) * 3;
  const stringSlice = Math.floor(chunkBytes / 6);
  const out = new Chunker(chunkBytes);
  const path = new Set<object>();
  const stack: Frame[] = [];
  let value = root;
  let pending = true;
  for (;;) {
    if (pending) {
      pending = false;
      const shape = jsonShape(value, path);
      if (shape.kind === 'leaf') {
        const leaf = shape.value;
        if (typeof leaf !== 'string' || isShort(leaf, stringSlice)) {
          const full = out.add(JSON.stringify(leaf));
          if (full !== undefined) yield full;
        } else
          for (const piece of stringPieces(leaf, stringSlice)) {
            const full = out.add(piece);
            if (full !== undefined) yield full;
          }
      } else if (shape.kind === 'bytes') {
        for (const piece of base64Pieces(shape.bytes, byteSlice)) {
          const full = out.add(piece);
          if (full !== undefined) yield full;
        }
      } else {
        const container = value as object;
        path.add(container);
        const array = shape.kind === 'array';
        stack.push({ container, members: array ? shape.items : shape.entries, close: array ? ']' : '}', first: true });
        const full = out.add(array ? '[' : '{');
        if (full !== undefined) yield full;
      }
    }
    const frame = stack.at(-1);
    if (frame === undefined) break;
    const step = frame.members.next();
    if (step.done === true) {
      stack.pop();
      path.delete(frame.container);
      const full = out.add(frame.close);
      if (full !== undefined) yield full;
      continue;
    }
    if (!frame.first) {
      const full = out.add(',');
      if (full !== undefined) yield full;
    }
    frame.first = false;
    if (frame.close === ']') value = step.value;
    else {
      const [key, member] = step.value as readonly [string, unknown];
      if (isShort(key, stringSlice)) {
        const full = out.add(`${JSON.stringify(key)}:`);
        if (full !== undefined) yield full;
      } else {
        for (const piece of stringPieces(key, stringSlice)) {
          const full = out.add(piece);
          if (full !== undefined) yield full;
        }
        const full = out.add(':');
        if (full !== undefined) yield full;
      }
      value = member;
    }
    pending = true;
  }
  const last = out.flush();
  if (last !== undefined) yield last;
}

/**
 * Whether a string goes as one piece: escaped, it is at most 6 bytes per UTF-16 unit plus its quotes (and the `:` of a
 * key), within a slice's 6 bytes per unit.
 */
const isShort = (text: string, slice: number) => text.length * 6 + 3 <= slice * 6;

/** A long string as JSON: its quotes and its escaped slices. */
function* stringPieces(text: string, slice: number): Generator<string, void, undefined> {
  yield '"';
  for (let at = 0; at < text.length; ) {
    let end = Math.min(at + slice, text.length);
    const last = text.charCodeAt(end - 1);
    // A high surrogate stays with its low one: apart, JSON.stringify would escape both as lone surrogates.
    if (end < text.length && last >= 0xd800 && last <= 0xdbff) end--;
    yield JSON.stringify(text.slice(at, end)).slice(1, -1);
    at = end;
  }
  yield '"';
}

/** Bytes as `{"base64":"…"}`, the base64 in slices of whole 3-byte groups (only the last one padded). */
function* base64Pieces(bytes: Uint8Array, slice: number): Generator<string, void, undefined> {
  yield '{"base64":"';
  for (let at = 0; at < bytes.byteLength; at += slice) {
    const length = Math.min(slice, bytes.byteLength - at);
    yield Buffer.from(bytes.buffer, bytes.byteOffset + at, length).toString('base64');
  }
  yield '"}';
}
