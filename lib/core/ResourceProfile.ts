/**
 * ResourceProfile: the resources a slot offers or a task asks for, with the semantics of Flink's
 * modern ResourceProfile (UNKNOWN / ANY, isMatching as an equality test, fine-grained arithmetic).
 *
 * CPU and extended-resource amounts are held as integers in units of 1e-8 (Flink keeps CPU as a
 * BigDecimal of scale 8), so merge and subtract are exact: 0.1 + 0.2 cores equals 0.3 cores and
 * a slot given back restores exactly what was taken.
 */
import { describeValue, ResourceProfileError } from './errors.js';
import { ResourceProfileBuilder } from './ResourceProfileBuilder.js';
import { formatShortfall, type ResourceShortfall, shortfallOf } from './ResourceShortfall.js';
import { formatMemorySize, type MemorySizeInput } from './MemorySize.js';
import {
  checked,
  checkName,
  MEMORY,
  runningAmounts,
  SCALE,
  STANDARD,
  type Amounts,
  type StandardField,
} from './resourceAmounts.js';

export { UNITS_PER_CORE } from './resourceAmounts.js';

const KEY_PREFIX = ['c', 'h', 'o', 'm', 'n'] as const;
const NO_EXTENDED: ReadonlyMap<string, number> = new Map();

/** A profile as plain data; memory sizes may be written as strings (`'256m'`). Missing fields are 0. */
export interface ResourceSpec {
  cpuCores?: number;
  taskHeapMemory?: MemorySizeInput;
  taskOffHeapMemory?: MemorySizeInput;
  managedMemory?: MemorySizeInput;
  networkMemory?: MemorySizeInput;
  extendedResources?: Record<string, number>;
}

/** The wire form of a profile: plain, structured-cloneable data (memory in bytes). */
export type ResourceProfileJSON =
  | 'UNKNOWN'
  | 'ANY'
  | {
      cpuCores: number;
      taskHeapMemory: number;
      taskOffHeapMemory: number;
      managedMemory: number;
      networkMemory: number;
      extendedResources: Record<string, number>;
    };

/** One field in which a profile falls short of a requirement (cores, bytes, or an extended amount). */
export { formatShortfall, type ResourceShortfall } from './ResourceShortfall.js';
export { ResourceProfileBuilder } from './ResourceProfileBuilder.js';

let createProfile: (
  kind: ResourceProfile['kind'],
  amounts: Amounts,
  extended: ReadonlyMap<string, number>,
) => ResourceProfile;
const createSpecified = (amounts: Amounts, extended: ReadonlyMap<string, number>) =>
  createProfile('specified', amounts, extended);

/**
 * The resources of a slot or a requirement (Flink's ResourceProfile): CPU cores, four kinds of
 * memory and named extended resources. Immutable; compare with {@link equals} or {@link key}.
 */
export class ResourceProfile {
  /** A requirement whose size is not known (Flink's UNKNOWN): any slot will do, amounts are undefined. */
  static readonly UNKNOWN: ResourceProfile = new ResourceProfile('unknown', [0, 0, 0, 0, 0], new Map());
  /** Infinite in every standard field (Flink's ANY): matches any requirement, an unbounded budget. */
  static readonly ANY: ResourceProfile = new ResourceProfile(
    'any',
    [Infinity, Infinity, Infinity, Infinity, Infinity],
    new Map(),
  );
  /** Nothing at all (Flink's ZERO). */
  static readonly ZERO: ResourceProfile = new ResourceProfile('specified', [0, 0, 0, 0, 0], new Map());

  /** Whether this is UNKNOWN, ANY, or a profile with amounts. */
  readonly kind: 'unknown' | 'any' | 'specified';
  /**
   * The raw amounts — CPU in 1e-8 cores, then task heap, task off-heap, managed and network memory
   * in bytes — and the extended resources (name → 1e-8 units, names sorted). Read the getters
   * instead; these are public so that deep-equality checks (chai's `deep.equal`) compare by value.
   */
  readonly amounts: Amounts;
  readonly extended: ReadonlyMap<string, number>;
  /**
   * The same amounts in a plain array that is never handed out: V8 reads the elements of a frozen
   * array many times slower than a plain one's, and the arithmetic below reads them on every step.
   */
  readonly #units: Amounts;
  /** The canonical key, built on first use: most profiles (intermediate sums) never need one. */
  #key: string | undefined;

  private constructor(kind: ResourceProfile['kind'], amounts: Amounts, extended: ReadonlyMap<string, number>) {
    this.kind = kind;
    this.#units = runningAmounts(amounts) as unknown as Amounts;
    this.amounts = Object.freeze(amounts) as Amounts;
    // Sorted so that the key, toString and toJSON do not depend on insertion order; no copy when empty.
    this.extended =
      extended.size === 0
        ? NO_EXTENDED
        : new Map([...extended].filter(([, u]) => u !== 0).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
    Object.freeze(this);
  }

  /** Canonical string, equal iff {@link equals}: a Map key for indexing slots by profile. */
  get key(): string {
    return (this.#key ??=
      this.kind === 'unknown'
        ? 'UNKNOWN'
        : this.kind === 'any'
          ? 'ANY'
          : [
              ...this.amounts.map((a, i) => `${KEY_PREFIX[i]}${a}`),
              ...[...this.extended].map(([n, u]) => `${n}=${u}`),
            ].join('|'));
  }

  static {
    // The builder is the only outside caller of the private constructor.
    createProfile = (kind, amounts, extended) => new ResourceProfile(kind, amounts, extended);
  }

  /** A builder for a specified profile, every field starting at 0. */
  static newBuilder(): ResourceProfileBuilder {
    return new ResourceProfileBuilder(createSpecified);
  }

  /**
   * A profile from plain data: a spec object (missing fields 0, unknown keys refused), a profile, `'UNKNOWN'` or
   * `'ANY'`.
   */
  static fromSpec(spec: ResourceSpec | ResourceProfile | 'UNKNOWN' | 'ANY'): ResourceProfile {
    if (spec instanceof ResourceProfile) return spec;
    if (spec === 'UNKNOWN') return ResourceProfile.UNKNOWN;
    if (spec === 'ANY') return ResourceProfile.ANY;
    return new ResourceProfileBuilder(createSpecified).setSpec(spec).build();
  }

  /**
   * A specified profile from raw amounts as {@link amounts} and {@link extended} hold them: CPU in
   * 1e-8 cores, the four memory sizes in bytes, extended resources as name → 1e-8 units (0 drops
   * the name). Every amount must be a non-negative safe integer; for code that keeps running totals
   * as plain numbers and turns them into a profile only when asked.
   */
  static fromAmounts(amounts: readonly number[], extended: ReadonlyMap<string, number> = NO_EXTENDED): ResourceProfile {
    if (!Array.isArray(amounts) || amounts.length !== STANDARD.length) {
      throw new ResourceProfileError(
        'invalid-size',
        `amounts must be an array of ${STANDARD.length} numbers ` +
          `(${STANDARD.join(', ')}), got ${describeValue(amounts)}`,
        { field: 'amounts', value: describeValue(amounts) },
      );
    }
    const unit = (field: string, value: unknown): number => {
      if (typeof value !== 'number' || !Number.isFinite(value))
        throw new ResourceProfileError('not-finite', `${field} must be a finite amount, got ${describeValue(value)}`, {
          field,
          value: describeValue(value),
        });
      if (value < 0)
        throw new ResourceProfileError('negative-amount', `${field} must be non-negative, got ${value}`, {
          field,
          value,
        });
      if (!Number.isInteger(value))
        throw new ResourceProfileError('not-integer', `${field} must be a whole number of units, got ${value}`, {
          field,
          value,
        });
      if (!Number.isSafeInteger(value))
        throw new ResourceProfileError(
          'invalid-size',
          `${field} must be at most ${Number.MAX_SAFE_INTEGER} units, got ${value}`,
          { field, value },
        );
      return value + 0;
    };
    if (!(extended instanceof Map)) {
      throw new ResourceProfileError(
        'invalid-name',
        `extended must be a Map of name → units, got ${describeValue(extended)}`,
        { field: 'extendedResources', value: describeValue(extended) },
      );
    }
    const checkedAmounts = STANDARD.map((field, i) => unit(field, amounts[i])) as unknown as Amounts;
    const checkedExtended = new Map<string, number>();
    for (const [name, units] of extended) if (unit(checkName(name), units) !== 0) checkedExtended.set(name, units);
    return new ResourceProfile('specified', checkedAmounts, checkedExtended);
  }

  /** The inverse of {@link toJSON}; the data is checked as {@link fromSpec} checks it. */
  static fromJSON(json: unknown): ResourceProfile {
    return ResourceProfile.fromSpec(json as ResourceProfileJSON);
  }

  /** Whether this is Flink's UNKNOWN (no amounts). */
  isUnknown(): boolean {
    return this.kind === 'unknown';
  }
  /** Whether this is Flink's ANY (infinite in every standard field). */
  isAny(): boolean {
    return this.kind === 'any';
  }

  /** CPU cores (8 decimal places). */
  get cpuCores(): number {
    return this.#amount('cpuCores', 0) / SCALE;
  }
  /** Task heap memory in bytes. */
  get taskHeapMemory(): number {
    return this.#amount('taskHeapMemory', 1);
  }
  /** Task off-heap memory in bytes. */
  get taskOffHeapMemory(): number {
    return this.#amount('taskOffHeapMemory', 2);
  }
  /** Managed memory in bytes. */
  get managedMemory(): number {
    return this.#amount('managedMemory', 3);
  }
  /** Network memory in bytes. */
  get networkMemory(): number {
    return this.#amount('networkMemory', 4);
  }
  /** Extended resources (name → amount, names sorted), frozen; empty on ANY. */
  get extendedResources(): Readonly<Record<string, number>> {
    this.#requireKnown('extendedResources');
    return Object.freeze(Object.fromEntries([...this.extended].map(([n, u]) => [n, u / SCALE])));
  }
  /** Heap + off-heap + managed + network, in bytes (Flink's getTotalMemory). */
  get totalMemory(): number {
    this.#requireKnown('totalMemory');
    return this.operatorsMemory + this.networkMemory;
  }
  /** Heap + off-heap + managed, in bytes: the memory operators use (Flink's getOperatorsMemory). */
  get operatorsMemory(): number {
    this.#requireKnown('operatorsMemory');
    return this.taskHeapMemory + this.taskOffHeapMemory + this.managedMemory;
  }

  /**
   * Flink's isMatching: whether a slot of this profile may serve `required`. Not a ≥ test — true
   * only if this is ANY, the two are equal, or `required` is UNKNOWN. Throws on an UNKNOWN receiver.
   */
  isMatching(required: ResourceProfile): boolean {
    this.#requireKnown('isMatching');
    return this.isAny() || this.equals(required) || required.isUnknown();
  }

  /** Whether every field is at least `other`'s (ANY ≥ everything; UNKNOWN ≥ nothing but is ≤ everything). */
  allFieldsNoLessThan(other: ResourceProfile): boolean {
    if (this.isAny() || this.equals(other)) return true;
    if (this.isUnknown()) return false;
    if (other.isUnknown()) return true;
    return this.#covers(other);
  }

  /** Field-wise sum (Flink's merge); ANY absorbs everything, then UNKNOWN does. */
  merge(other: ResourceProfile): ResourceProfile {
    if (this.isAny() || other.isAny()) return ResourceProfile.ANY;
    if (this.isUnknown() || other.isUnknown()) return ResourceProfile.UNKNOWN;
    let extended = this.extended;
    if (other.extended.size > 0) {
      const sum = new Map(this.extended);
      for (const [n, u] of other.extended) sum.set(n, checked(n, (sum.get(n) ?? 0) + u));
      extended = sum;
    }
    const a = this.#units;
    const b = other.#units;
    const amounts: Amounts = [
      checked('cpuCores', a[0] + b[0]),
      checked('taskHeapMemory', a[1] + b[1]),
      checked('taskOffHeapMemory', a[2] + b[2]),
      checked('managedMemory', a[3] + b[3]),
      checked('networkMemory', a[4] + b[4]),
    ];
    return new ResourceProfile('specified', amounts, extended);
  }

  /** Field-wise difference (Flink's subtract); refuses to go below zero in any field ('insufficient-resources'). */
  subtract(other: ResourceProfile): ResourceProfile {
    if (this.isAny() || other.isAny()) return ResourceProfile.ANY;
    if (this.isUnknown() || other.isUnknown()) return ResourceProfile.UNKNOWN;
    if (!this.#covers(other)) {
      const short = this.shortfall(other)[0]!;
      throw new ResourceProfileError(
        'insufficient-resources',
        `cannot subtract ${other} from ${this}: ${formatShortfall([short])}`,
        { ...short },
      );
    }
    let extended = this.extended;
    if (other.extended.size > 0) {
      const rest = new Map(this.extended);
      for (const [n, u] of other.extended) rest.set(n, rest.get(n)! - u);
      extended = rest;
    }
    const a = this.#units;
    const b = other.#units;
    return new ResourceProfile(
      'specified',
      [a[0] - b[0], a[1] - b[1], a[2] - b[2], a[3] - b[3], a[4] - b[4]],
      extended,
    );
  }

  /** Every field times `n`, a non-negative safe integer (Flink's multiply). */
  multiply(n: number): ResourceProfile {
    if (!Number.isSafeInteger(n) || n < 0) {
      const message = `multiplier must be a non-negative whole number, got ${describeValue(n)}`;
      throw new ResourceProfileError('invalid-multiplier', message, { field: 'multiplier', value: describeValue(n) });
    }
    if (this.kind !== 'specified') return this;
    if (n === 0) return ResourceProfile.ZERO;
    const amounts = this.amounts.map((a, i) => checked(STANDARD[i]!, a * n)) as unknown as Amounts;
    return new ResourceProfile(
      'specified',
      amounts,
      new Map([...this.extended].map(([k, u]) => [k, checked(k, u * n)])),
    );
  }

  /**
   * Every field divided by `n`, a whole number >= 1, rounded down at the kept precision (Flink's
   * Resource.divide and MemorySize.divide round down): CPU and extended amounts to 1e-8, memory to
   * whole bytes, so `n` shares never add up to more than this. 2 cores / 3 = 0.66666666 cores.
   */
  divide(n: number): ResourceProfile {
    if (!Number.isSafeInteger(n) || n < 1) {
      const message = `divisor must be a whole number >= 1, got ${describeValue(n)}`;
      throw new ResourceProfileError('invalid-divisor', message, { field: 'divisor', value: describeValue(n) });
    }
    if (this.kind !== 'specified' || n === 1) return this;
    // Integer units over a safe integer: the floating quotient never rounds up across a whole unit.
    const amounts = this.#units.map((a) => Math.floor(a / n)) as unknown as Amounts;
    return new ResourceProfile(
      'specified',
      amounts,
      new Map([...this.extended].map(([k, u]) => [k, Math.floor(u / n)])),
    );
  }

  /**
   * Every field (standard, then extended) where this has less than `required`; empty when it suffices or either is
   * UNKNOWN.
   */
  shortfall(required: ResourceProfile): ResourceShortfall[] {
    if (this.isUnknown() || required.isUnknown() || this.isAny()) return [];
    return shortfallOf(required.amounts, required.extended, this.#units, this.extended);
  }

  /** Value equality (same kind, same amounts, same extended resources). */
  equals(other: unknown): boolean {
    if (other === this) return true;
    if (!(other instanceof ResourceProfile) || other.kind !== this.kind) return false;
    const a = this.#units;
    const b = other.#units;
    if (a[0] !== b[0] || a[1] !== b[1] || a[2] !== b[2] || a[3] !== b[3] || a[4] !== b[4]) return false;
    if (this.extended.size !== other.extended.size) return false;
    for (const [n, u] of this.extended) if (other.extended.get(n) !== u) return false;
    return true;
  }

  /** Every field at least `other`'s (both specified); allocation-free, for the matching hot path. */
  #covers(other: ResourceProfile): boolean {
    const a = this.#units;
    const b = other.#units;
    if (a[0] < b[0] || a[1] < b[1] || a[2] < b[2] || a[3] < b[3] || a[4] < b[4]) return false;
    for (const [n, need] of other.extended) if ((this.extended.get(n) ?? 0) < need) return false;
    return true;
  }

  /**
   * For running totals kept as plain numbers (`amounts` in {@link amounts} order and units,
   * `extended` name → units without zeros): whether every amount of this specified profile is at
   * most theirs, as `allFieldsNoLessThan` would find of a profile holding them.
   */
  fitsWithin(amounts: ArrayLike<number>, extended: ReadonlyMap<string, number>): boolean {
    this.#requireRunningTotal('fitsWithin', amounts, extended);
    const b = this.#units;
    if (amounts[0]! < b[0] || amounts[1]! < b[1] || amounts[2]! < b[2] || amounts[3]! < b[3] || amounts[4]! < b[4])
      return false;
    if (this.extended.size > 0) for (const [n, need] of this.extended) if ((extended.get(n) ?? 0) < need) return false;
    return true;
  }

  /**
   * Adds this specified profile to a running total (see {@link fitsWithin}); false, changing nothing, if a sum would
   * pass the safe integers.
   */
  addTo(amounts: number[], extended: Map<string, number>): boolean {
    this.#requireRunningTotal('addTo', amounts, extended);
    const b = this.#units;
    for (let i = 0; i < 5; i++) if (amounts[i]! + b[i]! > Number.MAX_SAFE_INTEGER) return false;
    if (this.extended.size > 0) {
      for (const [n, units] of this.extended)
        if ((extended.get(n) ?? 0) + units > Number.MAX_SAFE_INTEGER) return false;
      for (const [n, units] of this.extended) extended.set(n, (extended.get(n) ?? 0) + units);
    }
    for (let i = 0; i < 5; i++) amounts[i] = amounts[i]! + b[i]!;
    return true;
  }

  /**
   * Takes this specified profile off a running total (see {@link fitsWithin}); false, changing nothing, if any amount
   * would go below zero.
   */
  subtractFrom(amounts: number[], extended: Map<string, number>): boolean {
    if (!this.fitsWithin(amounts, extended)) return false;
    if (this.extended.size > 0) {
      for (const [n, units] of this.extended) {
        const left = extended.get(n)! - units;
        if (left === 0) extended.delete(n);
        else extended.set(n, left);
      }
    }
    const b = this.#units;
    for (let i = 0; i < 5; i++) amounts[i] = amounts[i]! - b[i]!;
    return true;
  }

  /** Flink's toString, memory printed readably: `ResourceProfile{cpuCores=1, taskHeapMemory=256 mb, …, gpu=1}`. */
  toString(): string {
    if (this.kind !== 'specified') return `ResourceProfile{${this.kind.toUpperCase()}}`;
    const fields = [`cpuCores=${this.cpuCores}`, ...MEMORY.map((f) => `${f}=${formatMemorySize(this[f])}`)];
    for (const [n, u] of this.extended) fields.push(`${n}=${u / SCALE}`);
    return `ResourceProfile{${fields.join(', ')}}`;
  }

  /** Plain data (`'UNKNOWN'`, `'ANY'`, or amounts in cores and bytes), for threads and inspectors. */
  toJSON(): ResourceProfileJSON {
    if (this.kind === 'unknown') return 'UNKNOWN';
    if (this.kind === 'any') return 'ANY';
    const { cpuCores, taskHeapMemory, taskOffHeapMemory, managedMemory, networkMemory } = this;
    return {
      cpuCores,
      taskHeapMemory,
      taskOffHeapMemory,
      managedMemory,
      networkMemory,
      extendedResources: { ...this.extendedResources },
    };
  }

  /** Node's console / util.inspect shows the readable form. */
  [Symbol.for('nodejs.util.inspect.custom')](): string {
    return this.toString();
  }

  #requireKnown(what: string): void {
    if (this.kind === 'unknown') {
      const message =
        `${what} is not defined for ResourceProfile.UNKNOWN (an ` +
        `unknown requirement has no amounts); check isUnknown() first`;
      throw new ResourceProfileError('unknown-profile', message, { field: what });
    }
  }
  /** This profile specified, and a running total as {@link fitsWithin} takes it (five amounts, a Map). */
  #requireRunningTotal(what: string, amounts: ArrayLike<number>, extended: ReadonlyMap<string, number>): void {
    if (this.kind !== 'specified') {
      throw new ResourceProfileError(
        'unknown-profile',
        `${what} needs a specified profile, not ResourceProfile.${this.kind.toUpperCase()}`,
        { field: what },
      );
    }
    if (amounts?.length !== STANDARD.length || !(extended instanceof Map)) {
      throw new ResourceProfileError(
        'invalid-size',
        `${what} needs a running total of ${STANDARD.length} amounts (${STANDARD.join(', ')}) and ` +
          `a Map of extended resources, got ${describeValue(amounts)} and ${describeValue(extended)}`,
        { field: what },
      );
    }
  }

  #amount(field: StandardField, index: number): number {
    this.#requireKnown(field);
    return this.#units[index]!;
  }
}
