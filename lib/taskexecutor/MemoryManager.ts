/**
 * A slot's managed memory: fixed-size pages of one SharedArrayBuffer, as Flink's per-slot
 * MemoryManager hands out MemorySegments. Each TaskSlot gets its own manager sized by its profile's
 * managed memory, so the tasks of one slot can never take memory from another.
 *
 * Shared layout (what {@link MemoryManager.share} hands to other threads):
 *
 * - `data`: `totalPages * pageSize` bytes; page `i` is bytes `[i * pageSize, (i + 1) * pageSize)`.
 * - `control`: an Int32Array of `3 + totalPages` entries:
 *   - `[0]` free-page counter, used as a semaphore: an allocation first reserves its whole `count`
 *     with a compare-exchange loop and only then claims pages, so the counter never dips below zero
 *     and a refused request changes nothing. Invariant: counter + reserved-but-unclaimed + held =
 *     totalPages; a release frees the page in the table *before* adding it back to the counter, so
 *     a reserver always finds as many free table entries as it reserved.
 *   - `[1]` shutdown flag (0 = running, 1 = shut down), seen by every view.
 *   - `[2]` next owner token (`Atomics.add`), so two views never hand out the same token.
 *   - `[3 + i]` page table: 0 = page `i` is free, otherwise the token of its owner. A page is
 *     claimed with `compareExchange(i, 0, token)` and released with `compareExchange(i, token, 0)`.
 *
 * Owner names are per view: each view maps its own names to tokens, so `"task-1"` in the slot's view
 * and `"task-1"` in an attached view are two different owners, and a view can neither see by name
 * nor release the pages another view's owners hold. Where a view reports a token it does not know,
 * the owner reads `#<token>`.
 *
 * Like Flink's segments, a page is not zeroed when handed out: it holds whatever its last holder
 * left there (the buffer itself starts zeroed).
 *
 * `data` is a growable SharedArrayBuffer of `totalPages * pageSize` bytes at most: it starts empty
 * and grows (never shrinks) to cover the highest page handed out, so a slot whose tasks never use
 * managed memory costs no memory and no zeroing — a slot allocation makes a new buffer, and a
 * fixed one was most of a small job's cost on its TaskExecutor (zeroing reused heap pages, and GC
 * pressure from the external memory V8 counts for it).
 *
 * No `node:` imports: SharedArrayBuffer and Atomics are globals, so a view works in any thread.
 */
import { describeValue, IllegalArgumentError, MemoryAllocationError } from '../core/errors.js';
import { checkHandle, checkOwner, checkPageSize } from './memoryArguments.js';

/** Flink's default `taskmanager.memory.segment-size`. */
export const DEFAULT_PAGE_SIZE = 32 * 1024;

// The free counter and the page table are Int32, so the page count must fit one.
const MAX_PAGES = 0x7fff_ffff - 3;

const FREE = 0;
const SHUTDOWN = 1;
const NEXT_TOKEN = 2;
const TABLE = 3;

/** One page handed to an owner. */
export interface MemorySegment {
  readonly index: number;
  readonly owner: string;
  /** A view of the page in the shared buffer (not a copy). */
  readonly bytes: Uint8Array;
}

/** What the owners still held when the manager shut down; owners sorted by name. */
export interface MemoryLeakReport {
  readonly leakedPages: number;
  readonly leakedBytes: number;
  readonly owners: ReadonlyArray<{ owner: string; pages: number }>;
}

/** Everything another thread needs to {@link MemoryManager.attach}; structured-cloneable. */
export interface SharedMemoryHandle {
  readonly data: SharedArrayBuffer;
  readonly control: SharedArrayBuffer;
  readonly pageSize: number;
  readonly totalPages: number;
}

interface Shared {
  readonly data: SharedArrayBuffer;
  readonly controlBuffer: SharedArrayBuffer;
  readonly control: Int32Array;
  /** `control` from index {@link TABLE}: one entry per page. */
  readonly table: Int32Array;
}

interface OwnerState {
  readonly token: number;
  /**
   * Pages this owner holds; exact, because only this view claims or releases with its token (or a shutdown frees all).
   */
  pages: number;
}

/**
 * One view over a slot's managed memory. {@link MemoryManager.create} makes the slot's manager;
 * {@link MemoryManager.attach} makes another view (e.g. in a task thread) over the same pages and
 * accounting. A view is used by one thread; the atomics keep views in different threads consistent.
 */
export class MemoryManager {
  /** Bytes of one page. */
  readonly pageSize: number;
  /** Usable pages. */
  readonly totalPages: number;
  /** Usable bytes: `totalPages * pageSize` (the remainder of an uneven size is not usable). */
  readonly memorySize: number;

  #shared: Shared | null;
  /** Shutdown before the buffers exist (they are created lazily). */
  #shutdownLocally = false;
  #report: MemoryLeakReport | null = null;
  #owners = new Map<string, OwnerState>();
  #names = new Map<number, string>();
  /** Where the next claim scan starts, so scans do not keep re-reading the taken front of the table. */
  #hint = 0;

  private constructor(pageSize: number, totalPages: number, shared: Shared | null) {
    this.pageSize = pageSize;
    this.totalPages = totalPages;
    this.memorySize = totalPages * pageSize;
    this.#shared = shared;
  }

  /**
   * A manager of `memorySize` bytes in pages of `pageSize` bytes. There are
   * `floor(memorySize / pageSize)` pages; the remainder is unusable (`memorySize` of the manager
   * reads the usable part). The buffers are created on the first {@link allocatePages} or
   * {@link share}, so a slot whose memory is never used costs nothing.
   */
  static create(memorySize: number, pageSize: number = DEFAULT_PAGE_SIZE): MemoryManager {
    checkPageSize(pageSize, 'pageSize');
    if (typeof memorySize !== 'number') {
      throw new IllegalArgumentError(
        'invalid-type',
        `memorySize must be a number of bytes, got ${describeValue(memorySize)}`,
        {
          argument: 'memorySize',
          value: describeValue(memorySize),
        },
      );
    }
    if (!Number.isSafeInteger(memorySize) || memorySize < 0) {
      throw new IllegalArgumentError(
        'invalid-value',
        `memorySize must be a non-negative safe integer (bytes), got ${memorySize}`,
        {
          argument: 'memorySize',
          value: memorySize,
        },
      );
    }
    const totalPages = Math.floor(memorySize / pageSize);
    if (totalPages > MAX_PAGES) {
      throw new IllegalArgumentError(
        'out-of-range',
        `memorySize ${memorySize} makes ${totalPages} pages of ${pageSize} ` +
          `bytes; at most ${MAX_PAGES} pages are allowed (use a larger pageSize)`,
        { argument: 'memorySize', value: memorySize, pageSize, totalPages, maxPages: MAX_PAGES },
      );
    }
    return new MemoryManager(pageSize, totalPages, null);
  }

  /** A second view over the pages and accounting of a {@link share}d manager (e.g. in a task thread). */
  static attach(handle: SharedMemoryHandle): MemoryManager {
    checkHandle(handle, MAX_PAGES, TABLE);
    const { data, control, pageSize, totalPages } = handle;
    return new MemoryManager(pageSize, totalPages, view(data, control, totalPages));
  }

  /** Pages neither held nor reserved by an allocation in progress. */
  get freePages(): number {
    return this.#shared === null ? this.totalPages : Atomics.load(this.#shared.control, FREE);
  }

  /** Bytes of {@link freePages}. */
  get availableMemory(): number {
    return this.freePages * this.pageSize;
  }

  /** True once any view has shut the manager down. */
  get isShutdown(): boolean {
    return this.#shared === null ? this.#shutdownLocally : Atomics.load(this.#shared.control, SHUTDOWN) !== 0;
  }

  /**
   * Hands `count` pages to `owner`, all or nothing: a request larger than what is free fails with
   * MemoryAllocationError `insufficient-memory` and changes nothing. After shutdown it fails with
   * `shut-down`.
   */
  allocatePages(owner: string, count: number): MemorySegment[] {
    checkOwner(owner);
    if (!Number.isSafeInteger(count) || count <= 0) {
      throw new MemoryAllocationError(
        'invalid-request',
        `count must be a positive safe integer (pages), got ${describeValue(count)}`,
        {
          argument: 'count',
          value: describeValue(count),
        },
      );
    }
    if (this.isShutdown) throw this.#shutDownError(owner, count);
    // A request that could never fit is refused without creating the buffers.
    if (this.#shared === null && count > this.totalPages) throw this.#insufficient(owner, count, this.totalPages);

    const shared = this.#materialize();
    const { control, table, data } = shared;

    // Reserve first: the counter is a semaphore, so it never goes below zero and a refusal changes nothing.
    for (;;) {
      const free = Atomics.load(control, FREE);
      if (free < count) throw this.#insufficient(owner, count, free);
      if (Atomics.compareExchange(control, FREE, free, free - count) === free) break;
    }

    let state: OwnerState;
    try {
      state = this.#stateFor(owner);
    } catch (error) {
      Atomics.add(control, FREE, count);
      throw error;
    }

    // Claim: the reservation guarantees at least `count` free entries, though other threads may
    // take the ones this scan sees first, so it goes round until it has them all.
    const claimed: number[] = [];
    let i = this.#hint;
    while (claimed.length < count) {
      if (Atomics.compareExchange(table, i, 0, state.token) === 0) claimed.push(i);
      i = i + 1 === this.totalPages ? 0 : i + 1;
    }
    this.#hint = i;

    // A shutdown that raced with this claim may have scanned past pages claimed after it began:
    // give back whatever it did not free itself, so no page outlives the shutdown.
    if (Atomics.load(control, SHUTDOWN) !== 0) {
      this.#free(state.token, claimed);
      throw this.#shutDownError(owner, count);
    }

    state.pages += count;
    let highest = 0;
    for (const index of claimed) if (index > highest) highest = index;
    growTo(data, (highest + 1) * this.pageSize);
    return claimed.map((index) =>
      Object.freeze({ index, owner, bytes: new Uint8Array(data, index * this.pageSize, this.pageSize) }),
    );
  }

  /**
   * Gives back pages (segments or page indexes) held by `owner`. Every page must be held by that
   * owner in this view, else MemoryAllocationError `not-owner` and nothing is released. After
   * shutdown it does nothing: the shutdown already freed every page.
   */
  releasePages(owner: string, segments: ReadonlyArray<MemorySegment | number>): void {
    checkOwner(owner);
    if (!Array.isArray(segments)) {
      throw new MemoryAllocationError(
        'invalid-request',
        `segments must be an array of MemorySegments or page indexes, got ${describeValue(segments)}`,
        {
          argument: 'segments',
          value: describeValue(segments),
        },
      );
    }
    const indexes: number[] = [];
    const seen = new Set<number>();
    for (const item of segments as ReadonlyArray<unknown>) {
      const index = typeof item === 'number' ? item : (item as Partial<MemorySegment> | null)?.index;
      if (!Number.isInteger(index) || (index as number) < 0 || (index as number) >= this.totalPages) {
        throw new MemoryAllocationError(
          'invalid-request',
          `segments must hold MemorySegments or page indexes from 0 ` +
            `to ${this.totalPages - 1}, got ${describeValue(index ?? item)}`,
          { argument: 'segments', value: describeValue(index ?? item), totalPages: this.totalPages },
        );
      }
      if (seen.has(index as number)) {
        throw new MemoryAllocationError(
          'invalid-request',
          `segments lists page ${index} twice; each page can be released once`,
          {
            argument: 'segments',
            page: index,
          },
        );
      }
      seen.add(index as number);
      indexes.push(index as number);
    }
    if (this.isShutdown || indexes.length === 0) return;

    // Check every page before releasing any, so a refusal releases nothing.
    const state = this.#owners.get(owner);
    const table = this.#shared?.table;
    for (const index of indexes) {
      const holder = table === undefined ? 0 : Atomics.load(table, index);
      if (state === undefined || holder !== state.token) {
        const holderName = holder === 0 ? null : this.#nameOf(holder);
        throw new MemoryAllocationError(
          'not-owner',
          `owner ${JSON.stringify(owner)} cannot release page ${index}: it ` +
            `is ${holderName === null ? 'free' : `held by ${JSON.stringify(holderName)}`}; ` +
            `only pages an owner holds can be released`,
          { page: index, owner, holder: holderName },
        );
      }
    }
    // state and table exist: the owner held every listed page.
    state!.pages -= this.#free(state!.token, indexes);
  }

  /** Gives back every page `owner` holds in this view; returns how many. Does nothing after shutdown. */
  releaseAll(owner: string): number {
    checkOwner(owner);
    const state = this.#owners.get(owner);
    if (this.isShutdown || state === undefined || state.pages === 0 || this.#shared === null) return 0;
    const { table } = this.#shared;
    const indexes: number[] = [];
    for (let i = 0; i < this.totalPages; i++) {
      if (Atomics.load(table, i) === state.token) indexes.push(i);
    }
    const released = this.#free(state.token, indexes);
    state.pages -= released;
    return released;
  }

  /** Pages `owner` holds in this view (0 after shutdown). */
  pagesOf(owner: string): number {
    checkOwner(owner);
    if (this.isShutdown) return 0;
    return this.#owners.get(owner)?.pages ?? 0;
  }

  /** Every owner holding pages, across all views (unknown tokens read `#<token>`), sorted by name. */
  owners(): ReadonlyArray<{ owner: string; pages: number }> {
    if (this.#shared === null) return [];
    const counts = new Map<number, number>();
    const { table } = this.#shared;
    for (let i = 0; i < this.totalPages; i++) {
      const token = Atomics.load(table, i);
      if (token !== 0) counts.set(token, (counts.get(token) ?? 0) + 1);
    }
    return this.#byName(counts);
  }

  /**
   * Shuts the manager down for every view (their allocations then fail `shut-down`), frees every
   * page and reports what each owner still held: the leaks. Idempotent: a second call on this view
   * returns the same report. A view shutting down after another view already did reports only what
   * it still found (normally nothing).
   */
  shutdown(): MemoryLeakReport {
    if (this.#report !== null) return this.#report;
    const counts = new Map<number, number>();
    if (this.#shared === null) {
      this.#shutdownLocally = true;
    } else {
      const { control, table } = this.#shared;
      // Flag first, so an allocation that claims behind this scan sees it and gives its pages back.
      Atomics.store(control, SHUTDOWN, 1);
      let freed = 0;
      // One pass that frees and counts, so the report is exactly what this call freed.
      for (let i = 0; i < this.totalPages; i++) {
        const token = Atomics.load(table, i);
        if (token !== 0 && Atomics.compareExchange(table, i, token, 0) === token) {
          counts.set(token, (counts.get(token) ?? 0) + 1);
          freed++;
        }
      }
      if (freed > 0) Atomics.add(control, FREE, freed);
    }
    const owners = this.#byName(counts);
    const leakedPages = owners.reduce((sum, entry) => sum + entry.pages, 0);
    this.#report = Object.freeze({ leakedPages, leakedBytes: leakedPages * this.pageSize, owners });
    for (const state of this.#owners.values()) state.pages = 0;
    return this.#report;
  }

  /** The buffers and geometry another thread needs to {@link attach}; creates the buffers if needed. */
  share(): SharedMemoryHandle {
    const { data, controlBuffer } = this.#materialize();
    return Object.freeze({ data, control: controlBuffer, pageSize: this.pageSize, totalPages: this.totalPages });
  }

  toJSON(): { pageSize: number; totalPages: number; freePages: number; shutdown: boolean } {
    return {
      pageSize: this.pageSize,
      totalPages: this.totalPages,
      freePages: this.freePages,
      shutdown: this.isShutdown,
    };
  }

  #materialize(): Shared {
    if (this.#shared !== null) return this.#shared;
    const data = new (SharedArrayBuffer as GrowableSharedArrayBufferConstructor)(0, {
      maxByteLength: this.memorySize,
    });
    const control = new SharedArrayBuffer((TABLE + this.totalPages) * Int32Array.BYTES_PER_ELEMENT);
    const shared = view(data, control, this.totalPages);
    // No other view exists yet, so plain initialisation is safe; the buffers cross threads only after this.
    shared.control[FREE] = this.totalPages;
    shared.control[SHUTDOWN] = this.#shutdownLocally ? 1 : 0;
    shared.control[NEXT_TOKEN] = 1; // 0 marks a free page
    this.#shared = shared;
    return shared;
  }

  /**
   * Frees the pages still held by `token` (a racing shutdown may have freed some); returns how many this call freed.
   */
  #free(token: number, indexes: readonly number[]): number {
    const { control, table } = this.#shared!;
    let freed = 0;
    for (const index of indexes) {
      if (Atomics.compareExchange(table, index, token, 0) === token) freed++;
    }
    // Table first, counter second: a reserver must always find the pages the counter promises.
    if (freed > 0) Atomics.add(control, FREE, freed);
    return freed;
  }

  #stateFor(owner: string): OwnerState {
    const known = this.#owners.get(owner);
    if (known !== undefined) return known;
    // Tokens are never reused (the counter is shared by all views and only grows), so a view keeps
    // its owners for its lifetime rather than burning a new token every time an owner comes back.
    const token = Atomics.add(this.#shared!.control, NEXT_TOKEN, 1);
    if (token < 1) {
      throw new MemoryAllocationError(
        'invalid-request',
        `owner ${JSON.stringify(owner)} cannot be registered: all 2^31 - 1 owner tokens of this manager are used`,
        {
          argument: 'owner',
          owner,
        },
      );
    }
    const state: OwnerState = { token, pages: 0 };
    this.#owners.set(owner, state);
    this.#names.set(token, owner);
    return state;
  }

  #nameOf(token: number): string {
    return this.#names.get(token) ?? `#${token}`;
  }

  #byName(counts: ReadonlyMap<number, number>): ReadonlyArray<{ owner: string; pages: number }> {
    const entries = [...counts].map(([token, pages]) => Object.freeze({ owner: this.#nameOf(token), pages }));
    entries.sort((a, b) => (a.owner < b.owner ? -1 : a.owner > b.owner ? 1 : 0));
    return Object.freeze(entries);
  }

  #insufficient(owner: string, requestedPages: number, freePages: number): MemoryAllocationError {
    const requestedBytes = requestedPages * this.pageSize;
    const availableBytes = freePages * this.pageSize;
    return new MemoryAllocationError(
      'insufficient-memory',
      `cannot allocate ${requestedPages} pages (${requestedBytes} bytes) for owner ${JSON.stringify(owner)}: ` +
        `only ${freePages} pages (${availableBytes} bytes) ` +
        `of ${this.totalPages} are free (page size ${this.pageSize} bytes)`,
      { owner, requestedPages, freePages, pageSize: this.pageSize, requestedBytes, availableBytes },
    );
  }

  #shutDownError(owner: string, requestedPages: number): MemoryAllocationError {
    return new MemoryAllocationError(
      'shut-down',
      `cannot allocate ${requestedPages} pages for owner ${JSON.stringify(owner)}: ` +
        `the memory manager has been shut down (its slot closed)`,
      { owner, requestedPages },
    );
  }
}

/** ES2024's growable SharedArrayBuffer, which Node 20 has and the ES2023 lib does not type. */
type GrowableSharedArrayBufferConstructor = new (
  length: number,
  options: { maxByteLength: number },
) => SharedArrayBuffer;

/** Grows `data` (growable) to at least `bytes`; another thread may grow it at the same time. */
function growTo(data: SharedArrayBuffer, bytes: number): void {
  const growable = data as SharedArrayBuffer & { grow?: (length: number) => void };
  while (data.byteLength < bytes) {
    try {
      growable.grow!(bytes);
    } catch (error) {
      // Grown past `bytes` meanwhile by another thread: grow() refuses to shrink, and nothing is needed.
      if (data.byteLength < bytes) throw error;
    }
  }
}

function view(data: SharedArrayBuffer, control: SharedArrayBuffer, totalPages: number): Shared {
  return {
    data,
    controlBuffer: control,
    control: new Int32Array(control),
    table: new Int32Array(control, TABLE * Int32Array.BYTES_PER_ELEMENT, totalPages),
  };
}
