/**
 * The adaptive scheduler's rule (Flink's DefaultVertexParallelismDecider): one subtask per average data volume its
 * producers produced, within the bounds and the slots the cluster may hold, pointwise edges kept divisible, broadcast
 * (all-to-all) bytes counted at most half the average volume.
 */
import { expect } from 'chai';
import {
  decideParallelism,
  type ParallelismBounds,
  type ProducedInput,
} from '../../lib/jobmaster/adaptivebatch/VertexParallelismDecider.js';

const MB = 2 ** 20;
const BOUNDS: ParallelismBounds = {
  avgDataVolumePerTask: MB,
  minParallelism: 1,
  maxParallelism: 32,
  defaultSourceParallelism: 1,
  slotLimit: Infinity,
};
const pointwise = (parallelism: number, bytes: number, from = 'src'): ProducedInput => ({
  from,
  pattern: 'pointwise',
  parallelism,
  bytes,
});

describe('VertexParallelismDecider', () => {
  it('gives the consumer of 8 producers of 1 MB each 8 subtasks at 1 MB per subtask, saying why', () => {
    const decision = decideParallelism('sink', [pointwise(8, 8 * MB)], BOUNDS);
    expect(decision).to.deep.include({ vertexId: 'sink', parallelism: 8, bytes: 8 * MB });
    expect(decision.reason).to.equal('its inputs produced 8 mb; at 1 mb per subtask that is 8, within [1, 32]: 8');
  });

  it('gives the maximum when the producers produced more than max × the average (64 MB, max 32)', () => {
    const decision = decideParallelism('sink', [pointwise(8, 64 * MB)], BOUNDS);
    expect(decision.parallelism).to.equal(32);
    expect(decision.reason).to.contain('that is 64, within [1, 32]: 32');
  });

  it('keeps the minimum for little data, and the maximum below the slots the cluster may hold', () => {
    expect(decideParallelism('sink', [pointwise(1, 10)], { ...BOUNDS, minParallelism: 3 }).parallelism).to.equal(3);
    expect(decideParallelism('sink', [pointwise(1, 0)], BOUNDS).parallelism).to.equal(1);
    const capped = decideParallelism('sink', [pointwise(1, 64 * MB)], { ...BOUNDS, slotLimit: 6 });
    expect(capped.parallelism).to.equal(6);
    expect(capped.reason).to.contain('max capped at 6 by the slots the cluster may hold');
    // The slots win over a minimum above them.
    expect(decideParallelism('sink', [pointwise(1, 10)], { ...BOUNDS, minParallelism: 8, slotLimit: 4 })).to.include({
      parallelism: 4,
    });
  });

  it('keeps a pointwise edge divisible: the nearest parallelism in the bounds that divides or is divided by it', () => {
    // 5 MB from 8 producers: 5 does not divide 8; 4 is nearer than 8.
    const five = decideParallelism('sink', [pointwise(8, 5 * MB)], BOUNDS);
    expect(five.parallelism).to.equal(4);
    expect(five.reason).to.contain('4 keeps the pointwise edge from parallelism 8 divisible');
    // 6 MB: 4 and 8 are as near; the larger, so no subtask reads more than the average.
    expect(decideParallelism('sink', [pointwise(8, 6 * MB)], BOUNDS).parallelism).to.equal(8);
    // 20 MB from 8: 16 and 24, multiples of 8, are as near: the larger again.
    expect(decideParallelism('sink', [pointwise(8, 20 * MB)], BOUNDS).parallelism).to.equal(24);
    // Within [min, max]: 12 MB from 8 with max 10 → 10 clamped, 8 divides.
    expect(decideParallelism('sink', [pointwise(8, 12 * MB)], { ...BOUNDS, maxParallelism: 10 }).parallelism).to.equal(
      8,
    );
    // Two pointwise inputs (6 and 4): 12 divides neither but is a multiple of both.
    const two = decideParallelism('sink', [pointwise(6, 11 * MB, 'a'), pointwise(4, 0, 'b')], BOUNDS);
    expect(two.parallelism).to.equal(12);
  });

  it('says so when no parallelism within the bounds keeps a pointwise edge divisible', () => {
    const decision = decideParallelism('sink', [pointwise(7, 5 * MB)], {
      ...BOUNDS,
      minParallelism: 2,
      maxParallelism: 5,
    });
    expect(decision.parallelism).to.equal(7);
    expect(decision.reason).to.contain('(none within [2, 5] does)');
  });

  it("counts all-to-all (broadcast) bytes at most half the average volume, as Flink's CAP_RATIO_OF_BROADCAST", () => {
    const broadcast: ProducedInput = { from: 'dim', pattern: 'all-to-all', parallelism: 2, bytes: 100 * MB };
    // Only a broadcast: it does not split with the parallelism; the minimum.
    expect(decideParallelism('join', [broadcast], BOUNDS).parallelism).to.equal(1);
    // 8 MB pointwise beside it: each subtask has half its volume left for them, so 16.
    const decision = decideParallelism('join', [pointwise(8, 8 * MB), broadcast], BOUNDS);
    expect(decision).to.deep.include({ parallelism: 16, bytes: 108 * MB });
    expect(decision.reason).to.contain('plus 100 mb every subtask reads whole');
  });

  it('gives a source the default source parallelism, within the bounds', () => {
    expect(decideParallelism('src', [], { ...BOUNDS, defaultSourceParallelism: 4 })).to.deep.include({
      parallelism: 4,
      bytes: 0,
    });
    expect(decideParallelism('src', [], { ...BOUNDS, defaultSourceParallelism: 64 }).parallelism).to.equal(32);
    expect(decideParallelism('src', [], BOUNDS).reason).to.contain('a source: the default source parallelism 1');
  });

  describe('a hash edge: contiguous ranges of the subpartitions its producers wrote', () => {
    /** A hash input of `parallelism` producers whose subpartitions hold `bytes[k]` bytes, summed over them. */
    const hash = (parallelism: number, bytes: readonly number[], from = 'map'): ProducedInput => ({
      from,
      pattern: 'hash',
      parallelism,
      bytes: bytes.reduce((a, b) => a + b, 0),
      subpartitions: bytes.length,
      subpartitionBytes: bytes,
    });
    const even = (count: number, each: number) => new Array<number>(count).fill(each);
    /** `count` ranges of `size` subpartitions each, from 0. */
    const blocks = (count: number, size: number) =>
      Array.from({ length: count }, (_, i) => [size * i, size * i + size]);

    it('splits 8 MB in 32 subpartitions into 8 ranges of 1 MB at 1 MB per subtask, saying why', () => {
      const decision = decideParallelism('reduce', [hash(8, even(32, MB / 4))], BOUNDS);
      expect(decision).to.deep.include({ parallelism: 8, bytes: 8 * MB });
      expect(decision.subpartitionRanges).to.deep.equal(blocks(8, 4));
      expect(decision.reason).to.equal(
        "its inputs produced 8 mb; its producers' 32 subpartitions in contiguous ranges of about 1 mb make 8, " +
          'within [1, 32]: 8',
      );
    });

    it('gives a heavy subpartition a subtask of its own and packs the light ones together', () => {
      const bytes = [MB / 4, MB / 4, 3 * MB, MB / 4, MB / 4, MB / 4, MB / 4, 0];
      const decision = decideParallelism('reduce', [hash(4, bytes)], { ...BOUNDS, maxParallelism: 8 });
      expect(decision.subpartitionRanges).to.deep.equal([
        [0, 2],
        [2, 3],
        [3, 8],
      ]);
      expect(decision.parallelism).to.equal(3);
    });

    it('searches the volume per range that gives the maximum when the data asks for more (64 MB, max 8)', () => {
      const decision = decideParallelism('reduce', [hash(8, even(32, 2 * MB))], { ...BOUNDS, maxParallelism: 8 });
      expect(decision.parallelism).to.equal(8);
      expect(decision.subpartitionRanges).to.deep.equal(blocks(8, 4));
      expect(decision.reason).to.contain('make 8 (32 at 1 mb a range), within [1, 8]: 8');
    });

    it('searches the smallest even ranges that give the minimum for little data (1 KB, min 4)', () => {
      const decision = decideParallelism('reduce', [hash(2, even(32, 32))], { ...BOUNDS, minParallelism: 4 });
      expect(decision.parallelism).to.equal(4);
      expect(decision.subpartitionRanges).to.deep.equal(blocks(4, 8));
    });

    it('splits by count when no split by bytes reaches the bounds (nothing produced, min 4)', () => {
      const decision = decideParallelism('reduce', [hash(2, even(32, 0))], { ...BOUNDS, minParallelism: 4 });
      expect(decision.parallelism).to.equal(4);
      expect(decision.subpartitionRanges).to.deep.equal(blocks(4, 8));
      expect(decision.reason).to.contain('so they are split by count');
    });

    it('never gives more subtasks than subpartitions, saying what capped it', () => {
      const decision = decideParallelism('reduce', [hash(2, even(4, 8 * MB))], BOUNDS);
      expect(decision.parallelism).to.equal(4);
      expect(decision.reason).to.contain('within [1, 4] (max capped at 4 by the subpartitions its producers wrote)');
      expect(decision.subpartitionRanges).to.deep.equal(blocks(4, 1));
    });

    it('with a pointwise input beside: decided as for pointwise, the subpartitions split evenly by count', () => {
      const decision = decideParallelism('join', [pointwise(4, 2 * MB, 'left'), hash(3, even(32, MB / 8))], BOUNDS);
      // 2 MB + 4 MB at 1 MB: 6, which does not divide 4; 4 and 8 are as near: 8.
      expect(decision.parallelism).to.equal(8);
      expect(decision.subpartitionRanges).to.deep.equal(blocks(8, 4));
      // 3 subtasks over 32 subpartitions: 10, 11, 11.
      const three = decideParallelism('join', [pointwise(3, 0, 'left'), hash(3, even(32, 0))], {
        ...BOUNDS,
        minParallelism: 3,
      });
      expect(three.subpartitionRanges).to.deep.equal([
        [0, 10],
        [10, 21],
        [21, 32],
      ]);
    });

    it('reads a broadcast beside a hash edge whole, its bytes taking from each range', () => {
      const broadcast: ProducedInput = { from: 'dim', pattern: 'all-to-all', parallelism: 1, bytes: MB / 2 };
      // Half of each subtask's 1 MB is the broadcast's: 8 MB of hash data make ranges of 0.5 MB, 16 of them.
      const decision = decideParallelism('join', [hash(8, even(32, MB / 4)), broadcast], BOUNDS);
      expect(decision.parallelism).to.equal(16);
      expect(decision.subpartitionRanges![0]).to.deep.equal([0, 2]);
    });
  });
});
