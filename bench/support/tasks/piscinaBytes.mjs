// bench/data.bench.ts's peer, as a piscina user writes it: a producer returns its buffer moved (transferred) — its
// parts, for a shuffle, as an array of buffers (cloned: move() takes one transferable) — and a consumer adds up the
// bytes it was handed (transferred by the caller).
import { move } from 'piscina';

export default ({ op, bytes, parts, index, inputs }) => {
  if (op === 'consume') {
    let total = 0;
    for (const value of inputs) total += value.byteLength;
    return total;
  }
  if (parts === undefined) return move(new Uint8Array(bytes).fill(index & 255).buffer);
  return Array.from({ length: parts }, () => new Uint8Array(bytes / parts).fill(index & 255).buffer);
};
