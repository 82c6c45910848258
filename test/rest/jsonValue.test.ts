import { expect } from 'chai';
import { toJsonValue } from '../../lib/rest/jsonValue.js';

describe('toJsonValue (task outputs as JSON)', () => {
  it('keeps JSON values as they are', () => {
    const value = { a: [1, 'two', true, null, { b: 2.5 }] };
    expect(toJsonValue(value)).to.deep.equal(value);
  });

  it('turns what JSON.stringify would throw on or drop into data, the same way every time', () => {
    const shared = { x: 1 };
    const cyclic: Record<string, unknown> = { name: 'c' };
    cyclic['self'] = cyclic;
    expect(
      toJsonValue({
        big: 12345678901234567890n,
        map: new Map<unknown, unknown>([
          ['k', 1],
          [2, new Set([3])],
        ]),
        bytes: new Uint8Array([1, 2]),
        big64: new BigInt64Array([5n]),
        floats: new Float64Array([0.5]),
        buffer: new Uint8Array([7]).buffer,
        date: new Date(0),
        notNumbers: [NaN, Infinity, undefined],
        gone: undefined,
        error: new RangeError('too far'),
        twice: [shared, shared],
        cyclic,
      }),
    ).to.deep.equal({
      big: '12345678901234567890',
      map: [
        ['k', 1],
        [2, [3]],
      ],
      bytes: { base64: 'AQI=' },
      big64: ['5'],
      floats: [0.5],
      buffer: { base64: 'Bw==' },
      date: '1970-01-01T00:00:00.000Z',
      notNumbers: [null, null, null],
      error: { name: 'RangeError', message: 'too far' },
      twice: [{ x: 1 }, { x: 1 }],
      cyclic: { name: 'c', self: '[Circular]' },
    });
  });
});
