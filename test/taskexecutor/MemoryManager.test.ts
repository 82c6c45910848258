import { expect } from 'chai';
import { DEFAULT_PAGE_SIZE, MemoryManager } from '../../lib/taskexecutor/MemoryManager.js';
import type { MemorySegment } from '../../lib/taskexecutor/MemoryManager.js';
import { IllegalArgumentError, MemoryAllocationError } from '../../lib/core/errors.js';
import { seededRandom as prng } from '../support/random.js';

const KiB = 1024;
const MiB = 1024 * KiB;
const GiB = 1024 * MiB;
const PAGE = 4 * KiB;

/** Runs `fn`, expects a MemoryAllocationError with `reason`, and returns it for further checks. */
function refused(fn: () => unknown, reason: string): MemoryAllocationError {
  try {
    fn();
  } catch (error) {
    expect(error).to.be.instanceOf(MemoryAllocationError);
    expect((error as MemoryAllocationError).reason).to.equal(reason);
    return error as MemoryAllocationError;
  }
  expect.fail(`expected a MemoryAllocationError '${reason}'`);
}

describe('MemoryManager', () => {
  describe('sizes', () => {
    it('cuts the memory into whole pages; the remainder is unusable', () => {
      const mm = MemoryManager.create(10 * PAGE + 123, PAGE);
      expect(mm.pageSize).to.equal(PAGE);
      expect(mm.totalPages).to.equal(10);
      expect(mm.memorySize).to.equal(10 * PAGE);
      expect(mm.freePages).to.equal(10);
      expect(mm.availableMemory).to.equal(10 * PAGE);
    });

    it("uses Flink's 32 KiB segment size by default", () => {
      expect(DEFAULT_PAGE_SIZE).to.equal(32 * KiB);
      const mm = MemoryManager.create(MiB);
      expect(mm.pageSize).to.equal(32 * KiB);
      expect(mm.totalPages).to.equal(32);
    });

    it('refuses a page size that is not a power of two from 4 KiB to 16 MiB', () => {
      for (const pageSize of [2 * KiB, 5000, 32 * MiB, 0, -PAGE, 4096.5, Number.NaN]) {
        expect(() => MemoryManager.create(MiB, pageSize), String(pageSize))
          .to.throw(IllegalArgumentError, /pageSize must be a power of two from 4096 \(4 KiB\) to 16777216 \(16 MiB\)/)
          .with.property('details')
          .that.includes({ argument: 'pageSize' });
      }
      expect(MemoryManager.create(MiB, 16 * MiB).totalPages).to.equal(0);
    });

    it('refuses a memory size that is not a non-negative safe integer', () => {
      for (const memorySize of [-1, 1.5, Number.POSITIVE_INFINITY, Number.NaN, 2 ** 53]) {
        expect(() => MemoryManager.create(memorySize), String(memorySize))
          .to.throw(IllegalArgumentError, /memorySize must be a non-negative safe integer/)
          .with.property('details')
          .that.includes({ argument: 'memorySize' });
      }
      expect(() => MemoryManager.create('1024' as unknown as number)).to.throw(
        IllegalArgumentError,
        /memorySize must be a number/,
      );
    });

    it('refuses a memory size with more pages than the Int32 page table can count', () => {
      expect(() => MemoryManager.create(2 ** 52, PAGE)).to.throw(IllegalArgumentError, /at most \d+ pages/);
    });
  });

  describe('allocation', () => {
    it('hands out distinct pages whose bytes are views of the page in the shared buffer', () => {
      const mm = MemoryManager.create(4 * PAGE, PAGE);
      const segments = mm.allocatePages('task-a', 3);
      expect(segments).to.have.length(3);
      expect(new Set(segments.map((s) => s.index)).size).to.equal(3);
      for (const s of segments) {
        expect(s.owner).to.equal('task-a');
        expect(s.bytes.byteLength).to.equal(PAGE);
        expect(s.bytes.buffer).to.be.instanceOf(SharedArrayBuffer);
        expect(s.bytes.byteOffset).to.equal(s.index * PAGE);
      }
      segments[0]!.bytes[0] = 42;
      segments[0]!.bytes[PAGE - 1] = 7;
      expect(segments[0]!.bytes[0]).to.equal(42);
      expect(segments[1]!.bytes[0]).to.equal(0);
      expect(mm.freePages).to.equal(1);
      expect(mm.availableMemory).to.equal(PAGE);
      expect(mm.pagesOf('task-a')).to.equal(3);
    });

    it("shows a write through one view's segment to an attached view of the same page", () => {
      const mm = MemoryManager.create(2 * PAGE, PAGE);
      const other = MemoryManager.attach(mm.share());
      const written = mm.allocatePages('writer', 2);
      for (const s of written) s.bytes.fill(s.index + 10);
      mm.releasePages('writer', written);

      // Pages are not zeroed on hand-out, so the reader sees the writer's bytes in the same pages.
      const read = other.allocatePages('reader', 2);
      for (const s of read) {
        expect(s.bytes[0]).to.equal(s.index + 10);
        expect(s.bytes[PAGE - 1]).to.equal(s.index + 10);
      }
      read[0]!.bytes[1] = 99;
      expect(new Uint8Array(mm.share().data)[read[0]!.index * PAGE + 1]).to.equal(99);
    });

    it('refuses an over-allocation, saying how much is free and how much was asked', () => {
      const mm = MemoryManager.create(5 * PAGE, PAGE);
      mm.allocatePages('a', 2);
      const error = refused(() => mm.allocatePages('b', 4), 'insufficient-memory');
      expect(error.message)
        .to.include('4 pages (16384 bytes)')
        .and.include('only 3 pages (12288 bytes)')
        .and.include('"b"');
      expect(error.details).to.deep.equal({
        owner: 'b',
        requestedPages: 4,
        freePages: 3,
        pageSize: PAGE,
        requestedBytes: 4 * PAGE,
        availableBytes: 3 * PAGE,
      });
    });

    it('changes nothing when it refuses an over-allocation', () => {
      const mm = MemoryManager.create(5 * PAGE, PAGE);
      mm.allocatePages('a', 2);
      const before = { free: mm.freePages, owners: mm.owners() };
      refused(() => mm.allocatePages('b', 4), 'insufficient-memory');
      refused(() => mm.allocatePages('a', 4), 'insufficient-memory');
      expect(mm.freePages).to.equal(before.free);
      expect(mm.owners()).to.deep.equal(before.owners);
      expect(mm.pagesOf('a')).to.equal(2);
      expect(mm.pagesOf('b')).to.equal(0);
    });

    it('is all or nothing: after a refusal the exact remainder can still be taken', () => {
      const mm = MemoryManager.create(5 * PAGE, PAGE);
      mm.allocatePages('a', 2);
      refused(() => mm.allocatePages('b', 4), 'insufficient-memory');
      expect(mm.allocatePages('b', 3)).to.have.length(3);
      expect(mm.freePages).to.equal(0);
      refused(() => mm.allocatePages('c', 1), 'insufficient-memory');
    });

    it('refuses an empty owner or a count that is not a positive safe integer, naming the argument', () => {
      const mm = MemoryManager.create(4 * PAGE, PAGE);
      expect(refused(() => mm.allocatePages('', 1), 'invalid-request').details).to.include({ argument: 'owner' });
      expect(refused(() => mm.allocatePages(7 as unknown as string, 1), 'invalid-request').details).to.include({
        argument: 'owner',
      });
      for (const count of [0, -1, 1.5, Number.NaN]) {
        const error = refused(() => mm.allocatePages('a', count), 'invalid-request');
        expect(error.details).to.include({ argument: 'count' });
        expect(error.message).to.match(/count must be a positive safe integer/);
      }
      expect(mm.freePages).to.equal(4);
    });
  });

  describe('release', () => {
    it('releases pages given as segments', () => {
      const mm = MemoryManager.create(4 * PAGE, PAGE);
      const segments = mm.allocatePages('a', 3);
      mm.releasePages('a', segments.slice(0, 2));
      expect(mm.pagesOf('a')).to.equal(1);
      expect(mm.freePages).to.equal(3);
    });

    it('releases pages given as page indexes', () => {
      const mm = MemoryManager.create(4 * PAGE, PAGE);
      const segments = mm.allocatePages('a', 3);
      mm.releasePages('a', [segments[2]!.index, segments[0]!.index]);
      expect(mm.pagesOf('a')).to.equal(1);
      expect(mm.owners()).to.deep.equal([{ owner: 'a', pages: 1 }]);
      expect(mm.freePages).to.equal(3);
    });

    it('refuses to release a page the owner does not hold, and releases none of the list', () => {
      const mm = MemoryManager.create(4 * PAGE, PAGE);
      const mine = mm.allocatePages('a', 2);
      const theirs = mm.allocatePages('b', 1);
      const error = refused(() => mm.releasePages('a', [...mine, ...theirs]), 'not-owner');
      expect(error.details).to.deep.equal({ page: theirs[0]!.index, owner: 'a', holder: 'b' });
      expect(error.message).to.include(`page ${theirs[0]!.index}`).and.include('held by "b"');
      expect(mm.pagesOf('a')).to.equal(2);
      expect(mm.pagesOf('b')).to.equal(1);
      expect(mm.freePages).to.equal(1);

      const free = [0, 1, 2, 3].find((i) => ![...mine, ...theirs].some((s) => s.index === i))!;
      expect(refused(() => mm.releasePages('a', [free]), 'not-owner').details).to.include({ holder: null });
      mm.releasePages('a', mine);
      expect(refused(() => mm.releasePages('a', mine), 'not-owner').message).to.include('free');
      expect(refused(() => mm.releasePages('nobody', theirs), 'not-owner').details).to.include({ holder: 'b' });
    });

    it('refuses a malformed release list without releasing anything', () => {
      const mm = MemoryManager.create(4 * PAGE, PAGE);
      const [s] = mm.allocatePages('a', 1);
      expect(refused(() => mm.releasePages('a', [s!.index, 4]), 'invalid-request').details).to.include({
        argument: 'segments',
      });
      expect(refused(() => mm.releasePages('a', [s!, s!.index]), 'invalid-request').message).to.match(/twice/);
      expect(refused(() => mm.releasePages('a', 'x' as unknown as number[]), 'invalid-request').details).to.include({
        argument: 'segments',
      });
      expect(mm.pagesOf('a')).to.equal(1);
    });

    it('releaseAll gives back every page of one owner and says how many', () => {
      const mm = MemoryManager.create(6 * PAGE, PAGE);
      mm.allocatePages('a', 2);
      mm.allocatePages('b', 1);
      mm.allocatePages('a', 1);
      expect(mm.releaseAll('a')).to.equal(3);
      expect(mm.pagesOf('a')).to.equal(0);
      expect(mm.pagesOf('b')).to.equal(1);
      expect(mm.freePages).to.equal(5);
      expect(mm.releaseAll('a')).to.equal(0);
      expect(mm.releaseAll('never-seen')).to.equal(0);
      expect(mm.allocatePages('a', 5)).to.have.length(5);
    });
  });

  it('lists the owners holding pages, sorted by name', () => {
    const mm = MemoryManager.create(8 * PAGE, PAGE);
    expect(mm.owners()).to.deep.equal([]);
    mm.allocatePages('zeta', 1);
    mm.allocatePages('alpha', 3);
    mm.allocatePages('mid', 2);
    mm.releaseAll('mid');
    expect(mm.owners()).to.deep.equal([
      { owner: 'alpha', pages: 3 },
      { owner: 'zeta', pages: 1 },
    ]);
  });

  describe('shutdown', () => {
    it('reports the pages each owner still held as leaks, and frees them all', () => {
      const mm = MemoryManager.create(8 * PAGE, PAGE);
      mm.allocatePages('b', 2);
      mm.allocatePages('a', 3);
      mm.releaseAll('b');
      mm.allocatePages('c', 1);
      const report = mm.shutdown();
      expect(report).to.deep.equal({
        leakedPages: 4,
        leakedBytes: 4 * PAGE,
        owners: [
          { owner: 'a', pages: 3 },
          { owner: 'c', pages: 1 },
        ],
      });
      expect(mm.isShutdown).to.equal(true);
      expect(mm.freePages).to.equal(8);
      expect(mm.owners()).to.deep.equal([]);
      expect(mm.pagesOf('a')).to.equal(0);
    });

    it('reports no leaks when every owner gave its pages back', () => {
      const mm = MemoryManager.create(8 * PAGE, PAGE);
      mm.releasePages('a', mm.allocatePages('a', 3));
      expect(mm.shutdown()).to.deep.equal({ leakedPages: 0, leakedBytes: 0, owners: [] });
    });

    it('returns the same report from a second shutdown', () => {
      const mm = MemoryManager.create(8 * PAGE, PAGE);
      mm.allocatePages('a', 2);
      const first = mm.shutdown();
      expect(mm.shutdown()).to.equal(first);
      expect(first.leakedPages).to.equal(2);
    });

    it('refuses every allocation after shutdown with shut-down', () => {
      const mm = MemoryManager.create(8 * PAGE, PAGE);
      mm.shutdown();
      const error = refused(() => mm.allocatePages('a', 1), 'shut-down');
      expect(error.message).to.match(/shut down/);
      expect(mm.freePages).to.equal(8);
    });

    it(
      'refuses allocation from an attached view once the ' + 'manager is shut down, and names unknown owners by token',
      () => {
        const mm = MemoryManager.create(8 * PAGE, PAGE);
        const other = MemoryManager.attach(mm.share());
        other.allocatePages('task', 2);
        const report = mm.shutdown();
        expect(report.leakedPages).to.equal(2);
        expect(report.owners).to.have.length(1);
        expect(report.owners[0]!.owner).to.match(/^#\d+$/);
        expect(other.isShutdown).to.equal(true);
        expect(other.freePages).to.equal(8);
        refused(() => other.allocatePages('task', 1), 'shut-down');
      },
    );

    it('makes release after shutdown a no-op', () => {
      const mm = MemoryManager.create(8 * PAGE, PAGE);
      const segments = mm.allocatePages('a', 2);
      mm.shutdown();
      mm.releasePages('a', segments);
      mm.releasePages('someone-else', segments);
      expect(mm.releaseAll('a')).to.equal(0);
      expect(mm.freePages).to.equal(8);
    });

    it('shuts down a manager whose buffers were never created, and still shares a shut-down state', () => {
      const mm = MemoryManager.create(8 * PAGE, PAGE);
      expect(mm.shutdown()).to.deep.equal({ leakedPages: 0, leakedBytes: 0, owners: [] });
      refused(() => mm.allocatePages('a', 1), 'shut-down');
      expect(MemoryManager.attach(mm.share()).isShutdown).to.equal(true);
    });
  });

  describe('attach', () => {
    it('sees the same free count and the same owners as the manager it was shared from', () => {
      const mm = MemoryManager.create(8 * PAGE, PAGE);
      mm.allocatePages('slot-owner', 3);
      const other = MemoryManager.attach(mm.share());
      expect(other.pageSize).to.equal(PAGE);
      expect(other.totalPages).to.equal(8);
      expect(other.memorySize).to.equal(8 * PAGE);
      expect(other.freePages).to.equal(5);
      other.allocatePages('task', 2);
      expect(mm.freePages).to.equal(3);
      expect(other.owners()).to.have.length(2);
      expect(mm.owners()).to.deep.include({ owner: 'slot-owner', pages: 3 });
    });

    it("keeps owner names per view: a view cannot release another view's pages by name", () => {
      const mm = MemoryManager.create(8 * PAGE, PAGE);
      const other = MemoryManager.attach(mm.share());
      const pages = mm.allocatePages('task', 2);
      expect(other.pagesOf('task')).to.equal(0);
      const error = refused(() => other.releasePages('task', pages), 'not-owner');
      expect(error.details['holder']).to.match(/^#\d+$/);
      other.allocatePages('task', 1);
      expect(mm.pagesOf('task')).to.equal(2);
      expect(other.pagesOf('task')).to.equal(1);
    });

    it('shares a handle that survives structured cloning', () => {
      const mm = MemoryManager.create(4 * PAGE, PAGE);
      const handle = structuredClone(mm.share());
      const other = MemoryManager.attach(handle);
      mm.allocatePages('a', 1);
      expect(other.freePages).to.equal(3);
    });

    it('refuses a handle whose buffers do not match its geometry', () => {
      const handle = MemoryManager.create(4 * PAGE, PAGE).share();
      expect(() => MemoryManager.attach({ ...handle, totalPages: 5 })).to.throw(IllegalArgumentError, /handle\.data/);
      expect(() => MemoryManager.attach({ ...handle, control: new SharedArrayBuffer(4) })).to.throw(
        IllegalArgumentError,
        /handle\.control/,
      );
      expect(() => MemoryManager.attach({ ...handle, pageSize: 3000 })).to.throw(
        IllegalArgumentError,
        /handle\.pageSize/,
      );
      expect(() => MemoryManager.attach(null as never)).to.throw(IllegalArgumentError, /handle/);
    });
  });

  it('creates no buffers until the first allocation or share: 1,000 managers of 1 GiB cost no real memory', () => {
    const before = process.memoryUsage().arrayBuffers;
    const managers: MemoryManager[] = [];
    for (let i = 0; i < 1000; i++) managers.push(MemoryManager.create(GiB));
    const grown = process.memoryUsage().arrayBuffers - before;
    expect(grown).to.be.below(MiB);
    expect(managers[999]!.freePages).to.equal(GiB / DEFAULT_PAGE_SIZE);
    expect(managers[999]!.availableMemory).to.equal(GiB);
    expect(managers[999]!.owners()).to.deep.equal([]);
    // A request that can never fit is refused without creating the buffers either.
    refused(() => managers[0]!.allocatePages('a', GiB / DEFAULT_PAGE_SIZE + 1), 'insufficient-memory');
    expect(process.memoryUsage().arrayBuffers - before).to.be.below(MiB);
  });

  it('has no pages when created with 0 bytes, so every allocation is refused', () => {
    const mm = MemoryManager.create(0);
    expect(mm.totalPages).to.equal(0);
    expect(mm.memorySize).to.equal(0);
    expect(mm.freePages).to.equal(0);
    const error = refused(() => mm.allocatePages('a', 1), 'insufficient-memory');
    expect(error.details).to.include({ freePages: 0, availableBytes: 0 });
    expect(MemoryManager.attach(mm.share()).totalPages).to.equal(0);
    expect(mm.shutdown()).to.deep.equal({ leakedPages: 0, leakedBytes: 0, owners: [] });
  });

  it('serialises to its geometry, free pages and shutdown state', () => {
    const mm = MemoryManager.create(4 * PAGE, PAGE);
    mm.allocatePages('a', 1);
    expect(mm.toJSON()).to.deep.equal({ pageSize: PAGE, totalPages: 4, freePages: 3, shutdown: false });
    mm.shutdown();
    expect(JSON.parse(JSON.stringify(mm))).to.deep.equal({
      pageSize: PAGE,
      totalPages: 4,
      freePages: 4,
      shutdown: true,
    });
  });

  it('keeps free + held = total through a seeded random interleaving of two views', () => {
    const TOTAL = 16;
    const mm = MemoryManager.create(TOTAL * PAGE, PAGE);
    const views = [mm, MemoryManager.attach(mm.share())] as const;
    const owners = ['o1', 'o2', 'o3'];
    // The model: what each (view, owner) holds, by page index.
    const held = new Map<string, MemorySegment[]>();
    const key = (v: number, owner: string) => `${v}:${owner}`;
    const random = prng(0x5107_3153);
    const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)]!;

    for (let step = 0; step < 2000; step++) {
      const v = random() < 0.5 ? 0 : 1;
      const view = views[v]!;
      const owner = pick(owners);
      const mine = held.get(key(v, owner)) ?? [];
      const op = random();
      const context = `step ${step}: view ${v}, owner ${owner}`;
      if (op < 0.45) {
        const count = 1 + Math.floor(random() * 6);
        const free = view.freePages;
        if (count > free) {
          refused(() => view.allocatePages(owner, count), 'insufficient-memory');
          expect(view.freePages, context).to.equal(free);
        } else {
          held.set(key(v, owner), [...mine, ...view.allocatePages(owner, count)]);
        }
      } else if (op < 0.75) {
        const release = mine.filter(() => random() < 0.5);
        view.releasePages(owner, random() < 0.5 ? release : release.map((s) => s.index));
        held.set(
          key(v, owner),
          mine.filter((s) => !release.includes(s)),
        );
      } else if (op < 0.85) {
        expect(view.releaseAll(owner), context).to.equal(mine.length);
        held.set(key(v, owner), []);
      } else {
        // Try to release a page this owner does not hold: refused, nothing changes.
        const notMine = [...Array(TOTAL).keys()].find((i) => !mine.some((s) => s.index === i));
        if (notMine !== undefined) {
          const free = view.freePages;
          refused(() => view.releasePages(owner, [...mine.map((s) => s.index), notMine]), 'not-owner');
          expect(view.freePages, context).to.equal(free);
        }
      }

      const heldTotal = [...held.values()].reduce((sum, segments) => sum + segments.length, 0);
      const indexes = [...held.values()].flat().map((s) => s.index);
      expect(new Set(indexes).size, `${context}: a page has two holders`).to.equal(indexes.length);
      for (const [w, other] of views.entries()) {
        const listed = other.owners().reduce((sum, entry) => sum + entry.pages, 0);
        expect(other.freePages + listed, `${context}: view ${w} free + held`).to.equal(TOTAL);
        expect(listed, `${context}: view ${w} held`).to.equal(heldTotal);
        for (const name of owners) expect(other.pagesOf(name), context).to.equal(held.get(key(w, name))?.length ?? 0);
      }
    }
    const report = mm.shutdown();
    expect(report.leakedPages).to.equal([...held.values()].reduce((sum, segments) => sum + segments.length, 0));
    expect(views[1].freePages).to.equal(TOTAL);
  });
});
