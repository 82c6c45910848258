/**
 * ResourceCounter: an immutable multiset of ResourceProfiles (Flink's ResourceCounter), each
 * profile mapped to a positive count. Every operation returns a new counter.
 *
 * Entries are keyed by `profile.key` and kept in insertion order: a profile keeps its place when its
 * count changes, goes to the end when it is added again after dropping to zero. Flink iterates a
 * HashMap here; the insertion order is what makes the trackers built on top deterministic.
 */
import { describeValue, IllegalArgumentError } from './errors.js';
import { ResourceProfile, type ResourceProfileJSON } from './ResourceProfile.js';

/** One entry of {@link ResourceCounter.toJSON}. */
export interface ResourceCountJSON {
  readonly profile: ResourceProfileJSON;
  readonly count: number;
}

type Entry = readonly [profile: ResourceProfile, count: number];

function checkProfile(value: unknown, argument: string): ResourceProfile {
  if (!(value instanceof ResourceProfile)) {
    throw new IllegalArgumentError(
      'invalid-type',
      `${argument} must be a ResourceProfile, got ${describeValue(value)}`,
      {
        argument,
        value: describeValue(value),
      },
    );
  }
  return value;
}

function checkCount(value: unknown, argument: string): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) {
    throw new IllegalArgumentError(
      'invalid-value',
      `${argument} must be a non-negative safe integer, got ${describeValue(value)}`,
      { argument, value: describeValue(value) },
    );
  }
  return value;
}

/** Applies signed deltas to a copy of `base`; counts at or below zero disappear. */
function applied(base: ReadonlyMap<string, Entry>, deltas: Iterable<Entry>, sign: 1 | -1): ResourceCounter {
  const next = new Map(base);
  for (const [profile, count] of deltas) {
    if (count === 0) continue;
    const value = (next.get(profile.key)?.[1] ?? 0) + sign * count;
    if (!Number.isSafeInteger(value)) {
      throw new IllegalArgumentError(
        'out-of-range',
        `the count of ${profile} would exceed ${Number.MAX_SAFE_INTEGER}`,
        { argument: 'count', value: count },
      );
    }
    // Frozen: entries() hands these tuples out as they are.
    if (value > 0) next.set(profile.key, Object.freeze([next.get(profile.key)?.[0] ?? profile, value] as const));
    else next.delete(profile.key);
  }
  return construct(next);
}

let construct: (entries: ReadonlyMap<string, Entry>) => ResourceCounter;

/** An immutable map ResourceProfile → positive count (Flink's ResourceCounter). */
export class ResourceCounter {
  static #EMPTY: ResourceCounter;
  readonly #entries: ReadonlyMap<string, Entry>;

  private constructor(entries: ReadonlyMap<string, Entry>) {
    this.#entries = entries;
    Object.freeze(this);
  }

  static {
    // `this`, not the class name: tsc's ES2022 output binds the name only after the class body has run.
    // biome-ignore lint/complexity/noThisInStatic: the class name is not bound yet here (see above)
    this.#EMPTY = new this(new Map());
    construct = (entries) => (entries.size === 0 ? ResourceCounter.#EMPTY : new ResourceCounter(entries));
  }

  /** The counter with nothing in it. */
  static empty(): ResourceCounter {
    return ResourceCounter.#EMPTY;
  }

  /** `count` of `profile`; a count of 0 gives the empty counter. */
  static withResource(profile: ResourceProfile, count: number): ResourceCounter {
    return ResourceCounter.#EMPTY.add(profile, count);
  }

  /** A counter from `[profile, count]` pairs; a profile listed twice is summed, in first-seen order. */
  static fromEntries(entries: Iterable<readonly [ResourceProfile, number]>): ResourceCounter {
    if (entries === null || typeof (entries as { [Symbol.iterator]?: unknown })?.[Symbol.iterator] !== 'function') {
      throw new IllegalArgumentError(
        'invalid-type',
        `entries must be an iterable of [ResourceProfile, count] pairs, got ${describeValue(entries)}`,
        { argument: 'entries' },
      );
    }
    const checked: Entry[] = [];
    for (const pair of entries) {
      if (!Array.isArray(pair)) {
        throw new IllegalArgumentError(
          'invalid-type',
          `every entry must be a [ResourceProfile, count] pair, got ${describeValue(pair)}`,
          { argument: 'entries' },
        );
      }
      checked.push([checkProfile(pair[0], 'profile'), checkCount(pair[1], 'count')]);
    }
    return applied(new Map(), checked, 1);
  }

  /** The inverse of {@link toJSON}; every profile and count is checked. */
  static fromJSON(json: unknown): ResourceCounter {
    if (!Array.isArray(json)) {
      throw new IllegalArgumentError(
        'invalid-type',
        `a ResourceCounter in JSON must be an array of { profile, count }, got ${describeValue(json)}`,
        { argument: 'json' },
      );
    }
    return ResourceCounter.fromEntries(
      json.map((e: Partial<ResourceCountJSON> | null) => [ResourceProfile.fromJSON(e?.profile), e?.count as number]),
    );
  }

  /** This counter plus `count` of `profile` (0 changes nothing). */
  add(profile: ResourceProfile, count: number): ResourceCounter;
  /** This counter plus every entry of `other`. */
  add(other: ResourceCounter): ResourceCounter;
  add(profileOrCounter: ResourceProfile | ResourceCounter, count?: number): ResourceCounter {
    return applied(this.#entries, this.#operand(profileOrCounter, count), 1);
  }

  /** This counter minus `count` of `profile`; a count that reaches 0 or less disappears. */
  subtract(profile: ResourceProfile, count: number): ResourceCounter;
  /** This counter minus every entry of `other`; counts that reach 0 or less disappear. */
  subtract(other: ResourceCounter): ResourceCounter;
  subtract(profileOrCounter: ResourceProfile | ResourceCounter, count?: number): ResourceCounter {
    return applied(this.#entries, this.#operand(profileOrCounter, count), -1);
  }

  /** The count of `profile`, 0 when absent. */
  getResourceCount(profile: ResourceProfile): number {
    return this.#entries.get(checkProfile(profile, 'profile').key)?.[1] ?? 0;
  }

  /** The sum of all counts. */
  getTotalResourceCount(): number {
    let total = 0;
    for (const [, count] of this.#entries.values()) total += count;
    return total;
  }

  /**
   * The merge of every profile times its count: ZERO when empty. As with ResourceProfile.merge, an
   * ANY entry makes the total ANY and otherwise an UNKNOWN entry makes it UNKNOWN.
   */
  getTotalResource(): ResourceProfile {
    let total = ResourceProfile.ZERO;
    for (const [profile, count] of this.#entries.values()) total = total.merge(profile.multiply(count));
    return total;
  }

  /** The profiles, in insertion order. */
  getResources(): ResourceProfile[] {
    return [...this.#entries.values()].map(([profile]) => profile);
  }

  /** The `[profile, count]` pairs, in insertion order; every count is positive. */
  entries(): Array<readonly [ResourceProfile, number]> {
    return [...this.#entries.values()];
  }

  /** The number of distinct profiles. */
  get size(): number {
    return this.#entries.size;
  }

  isEmpty(): boolean {
    return this.#entries.size === 0;
  }

  /** Whether `profile` has a positive count. */
  containsResource(profile: ResourceProfile): boolean {
    return this.#entries.has(checkProfile(profile, 'profile').key);
  }

  /** Multiset equality: the same profiles with the same counts, in any order. */
  equals(other: unknown): boolean {
    if (!(other instanceof ResourceCounter)) return false;
    if (other.#entries.size !== this.#entries.size) return false;
    for (const [key, [, count]] of this.#entries) if (other.#entries.get(key)?.[1] !== count) return false;
    return true;
  }

  /** `{ResourceProfile{UNKNOWN}=3, ResourceProfile{cpuCores=1, …}=2}`, in insertion order. */
  toString(): string {
    return `{${[...this.#entries.values()].map(([profile, count]) => `${profile}=${count}`).join(', ')}}`;
  }

  /** Plain data, in insertion order. */
  toJSON(): ResourceCountJSON[] {
    return [...this.#entries.values()].map(([profile, count]) => ({ profile: profile.toJSON(), count }));
  }

  [Symbol.for('nodejs.util.inspect.custom')](): string {
    return `ResourceCounter${this.toString()}`;
  }

  #operand(profileOrCounter: unknown, count: unknown): Iterable<Entry> {
    if (profileOrCounter instanceof ResourceCounter) return profileOrCounter.#entries.values();
    return [[checkProfile(profileOrCounter, 'profile'), checkCount(count, 'count')]];
  }
}
