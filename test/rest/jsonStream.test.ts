/**
 * The streamed JSON encoder (lib/rest/jsonStream.ts) on its own: the same text as JSON.stringify of jsonValue.ts'
 * conversion, in chunks of at most chunkBytes bytes, bytes and long strings in slices; and a JsonStream that encodes
 * only as fast as its reader takes.
 */
import { expect } from 'chai';
import fc from 'fast-check';
import { once } from 'node:events';
import { Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { IllegalArgumentError, RestError } from '../../lib/core/errors.js';
import type { JobID } from '../../lib/core/ids.js';
import type { JobResult } from '../../lib/jobmaster/JobResult.js';
import { DEFAULT_CHUNK_BYTES, jsonBody, jsonChunks, JsonStream } from '../../lib/rest/jsonStream.js';
import { toJsonValue } from '../../lib/rest/jsonValue.js';
import { jobResultBody, jobResultView } from '../../lib/rest/restViews.js';

const MB = 1 << 20;

/** Every chunk, checked against the bound as it comes. */
function chunksOf(value: unknown, chunkBytes?: number): string[] {
  const chunks = [...jsonChunks(value, chunkBytes === undefined ? {} : { chunkBytes })];
  const bound = chunkBytes ?? DEFAULT_CHUNK_BYTES;
  for (const chunk of chunks) expect(Buffer.byteLength(chunk)).to.be.within(1, bound);
  return chunks;
}

const resultOf = (outputs: Record<string, unknown[]>, error: JobResult['error'] = null): JobResult => ({
  jobId: 'ab'.repeat(16) as JobID,
  jobName: 'streamed',
  status: error === null ? 'finished' : 'failed',
  outputs,
  error,
  restarts: 1,
  durationMs: 42,
});

/** Bytes whose every byte is its index mod 251, so a slice out of place shows. */
const counting = (length: number) => Uint8Array.from({ length }, (_, i) => i % 251);

describe('jsonChunks / JsonStream (a JSON body written piecewise)', () => {
  it("writes GET /jobs/:id/result's document as JSON.stringify(jobResultView) does, for every kind of output", () => {
    const shared = new SharedArrayBuffer(7);
    new Uint8Array(shared).set([1, 2, 3, 4, 5, 6, 7]);
    const cyclic: Record<string, unknown> = { name: 'c' };
    cyclic['self'] = cyclic;
    const outputs = {
      sink: [
        { nested: { deeper: [[1, [2, [3, {}]]], []], empty: {} }, n: null, t: true, f: false },
        'plain "quoted" \\ back\\slash\n\t\u0000\u001f\u2028 é 日本 😀 \ud800 lone \udc00',
        [0, -0, 1.5, -2e-7, 1e21, 5e-324, Number.MAX_VALUE, NaN, Infinity, -Infinity],
        [null, undefined, () => 1, Symbol('s')],
        { gone: undefined, fn: () => 1, kept: 1, '': 'empty key', 'ключ "k"': 2, 10: 'ten', 2: 'two' },
        [counting(0), counting(1), counting(2), counting(3), counting(1000)],
        new DataView(counting(300).buffer, 7, 200),
        shared,
        counting(20).buffer,
        new Int8Array([-1, 0, 1]),
        new Float32Array([0.5, NaN]),
        new BigInt64Array([-5n]),
        12345678901234567890n,
        new Map<unknown, unknown>([
          ['k', new Set([1, 'two'])],
          [{ x: 1 }, new Date(0)],
        ]),
        new Date(Number.NaN),
        /a+b/gi,
        new RangeError('too far'),
        cyclic,
      ],
    };
    const error = { _tag: 'TaskExecutionError', name: 'TaskExecutionError', message: 'it threw', stack: 'at task' };
    for (const result of [resultOf(outputs), resultOf({ sink: [1] }, error as never), null]) {
      const expected = JSON.stringify(jobResultView(result));
      for (const chunkBytes of [64, 100, 4096, undefined]) {
        expect(chunksOf(jobResultBody(result), chunkBytes).join(''), `chunkBytes ${chunkBytes}`).to.equal(expected);
      }
    }
  });

  it('agrees with JSON.stringify(toJsonValue(v)) on any value, at any chunk size', () => {
    const unicode = fc.string({ unit: 'grapheme', maxLength: 80 });
    const binary = fc.string({ unit: 'binary', maxLength: 80 });
    const leaf = fc.oneof(fc.double(), fc.integer(), fc.boolean(), fc.constant(null), unicode, binary, fc.bigInt());
    const value = fc.letrec((tie) => ({
      node: fc.oneof(
        { depthSize: 'small' },
        leaf,
        fc.array(tie('node'), { maxLength: 5 }),
        fc.dictionary(fc.oneof(unicode, binary), tie('node'), { maxKeys: 5 }),
        fc.uint8Array({ maxLength: 200 }),
        fc.anything(),
      ),
    })).node;
    fc.assert(
      fc.property(value, fc.integer({ min: 64, max: 600 }), (v, chunkBytes) => {
        expect(chunksOf(v, chunkBytes).join('')).to.equal(JSON.stringify(toJsonValue(v)));
      }),
      { numRuns: 300, seed: 20_240_611 },
    );
  });

  it('slices bytes in whole 3-byte groups and long strings between surrogate pairs, no chunk past the bound', () => {
    const bytes = counting(3 * MB + 1);
    const chunks = chunksOf({ bytes }, undefined);
    expect(chunks.length).to.be.at.least(4);
    const parsed = JSON.parse(chunks.join('')) as { bytes: { base64: string } };
    expect(Buffer.from(parsed.bytes.base64, 'base64').equals(bytes)).to.equal(true);
    // A surrogate pair at every possible cut, and characters that escape to six bytes.
    const text = `${'😀a\u0001'.repeat(200)}${'日'.repeat(300)}`;
    for (const chunkBytes of [64, 65, 66, 67, 68, 69]) {
      expect(chunksOf({ text }, chunkBytes).join('')).to.equal(JSON.stringify({ text }));
      expect(chunksOf({ [text]: 1 }, chunkBytes).join('')).to.equal(JSON.stringify({ [text]: 1 }));
    }
  });

  it('refuses a chunkBytes that cannot hold every piece, and a stallTimeoutMs that is no finite time', () => {
    for (const chunkBytes of [0, 63, 64.5, Number.NaN, 2 ** 29])
      expect(() => jsonChunks({}, { chunkBytes }), String(chunkBytes)).to.throw(IllegalArgumentError, /chunkBytes/);
    for (const stallTimeoutMs of [0, -1, Number.POSITIVE_INFINITY])
      expect(() => new JsonStream([][Symbol.iterator](), { stallTimeoutMs })).to.throw(IllegalArgumentError);
  });

  it('gives a document that fits in one chunk as a string, and a larger one as a stream of its chunks', async () => {
    expect(jsonBody({ a: [1, 2] })).to.equal('{"a":[1,2]}');
    const body = jsonBody({ bytes: counting(3 * MB) });
    expect(body).to.be.instanceOf(JsonStream);
    let text = '';
    for await (const chunk of body as JsonStream) text += String(chunk);
    expect(text).to.equal(JSON.stringify(toJsonValue({ bytes: counting(3 * MB) })));
  });

  it('encodes no further while its reader is paused, and finishes once it reads again', async () => {
    // 1 MiB of bytes in chunks of 1 KiB: 1,366 chunks, far more than the stream and its reader hold.
    const stream = new JsonStream(jsonChunks({ bytes: new Uint8Array(MB) }, { chunkBytes: 1024 }));
    const held: Array<() => void> = [];
    let paused = true;
    let received = 0;
    let firstWrite!: () => void;
    const first = new Promise<void>((resolve) => (firstWrite = resolve));
    const reader = new Writable({
      highWaterMark: 1,
      write(_chunk, _encoding, callback) {
        received++;
        firstWrite();
        if (paused) held.push(callback);
        else callback();
      },
    });
    const done = pipeline(stream, reader);
    await first;
    // Let every read the pipe has pending run: with the reader's callback held, none may go past the stream's
    // high-water mark.
    const turns = async () => {
      for (let turn = 0; turn < 20; turn++) await new Promise((resolve) => setImmediate(resolve));
    };
    await turns();
    const whilePaused = stream.produced;
    expect(received).to.equal(1);
    expect(stream.readableLength).to.be.at.least(stream.readableHighWaterMark);
    expect(whilePaused).to.be.below(100);
    await turns();
    expect(stream.produced, 'nothing encoded while paused').to.equal(whilePaused);
    paused = false;
    for (const callback of held.splice(0)) callback();
    await done;
    expect(stream.produced).to.be.above(1_300);
    expect(received).to.equal(stream.produced);
  });

  it('cuts off a reader that takes nothing for stallTimeoutMs, with RestError timed-out', async () => {
    const stream = new JsonStream(jsonChunks({ bytes: new Uint8Array(MB) }, { chunkBytes: 1024 }), {
      stallTimeoutMs: 20,
    });
    stream.on('readable', () => {}); // it fills its buffer, then nobody reads
    const [error] = (await once(stream, 'error')) as [RestError];
    expect(error).to.be.instanceOf(RestError);
    expect(error.reason).to.equal('timed-out');
    expect(error.message).to.match(/took nothing for 20 ms/);
  });
});
