/**
 * ResourceBudgetManager: reserve and release resources against a fixed total, as Flink's
 * TaskExecutor does for the slots it hands out. Unlike Flink's (mutable, boolean results) this one
 * is immutable — every operation returns a new manager — so it can sit in a statechart's context,
 * and a refused operation throws a typed error and leaves the receiver as it was.
 */
import { ResourceBudgetError, ResourceProfileError } from './errors.js';
import { formatShortfall, ResourceProfile, type ResourceProfileJSON } from './ResourceProfile.js';
import type { Mutable } from './Mutable.js';

/** Reservations against a total budget; immutable. */
export class ResourceBudgetManager {
  /** The whole budget; ANY means unbounded. */
  readonly total: ResourceProfile;
  /** What is left to reserve (ANY stays ANY). */
  readonly available: ResourceProfile;
  /**
   * What is reserved. Kept as its own running sum rather than total − available, because for an
   * ANY total that difference is ANY and would say nothing.
   */
  readonly reserved: ResourceProfile;

  /** A manager with nothing reserved. `total` must not be UNKNOWN ('unknown-profile'); ANY is an unbounded budget. */
  constructor(total: ResourceProfile) {
    if (!(total instanceof ResourceProfile) || total.isUnknown()) {
      throw new ResourceProfileError(
        'unknown-profile',
        `a resource budget needs a known total (a specified profile or ANY), got ${String(total)}`,
        {
          field: 'total',
        },
      );
    }
    this.total = total;
    this.available = total;
    this.reserved = ResourceProfile.ZERO;
    Object.freeze(this);
  }

  /** Whether `profile` fits in what is available; an UNKNOWN profile never fits. */
  canReserve(profile: ResourceProfile): boolean {
    return !profile.isUnknown() && this.available.allFieldsNoLessThan(profile);
  }

  /** A manager with `profile` reserved; refuses what does not fit ('insufficient-budget'). */
  reserve(profile: ResourceProfile): ResourceBudgetManager {
    requireKnown(profile, 'reserve');
    if (!this.canReserve(profile)) {
      const shortfall = this.available.shortfall(profile);
      throw new ResourceBudgetError('insufficient-budget', `cannot reserve ${profile}: ${formatShortfall(shortfall)}`, {
        requested: profile.toJSON(),
        available: this.available.toJSON(),
        shortfall,
      });
    }
    return derive(this, this.available.subtract(profile), this.reserved.merge(profile));
  }

  /**
   * A manager with `profile` given back; refuses a release that would make available exceed total
   * in any field ('over-release'). Checked against what is reserved, which is the same test for a
   * bounded total and also catches a stray release against an ANY total.
   */
  release(profile: ResourceProfile): ResourceBudgetManager {
    requireKnown(profile, 'release');
    const excess = this.reserved.shortfall(profile);
    if (excess.length > 0) {
      throw new ResourceBudgetError(
        'over-release',
        `cannot release ${profile}: it is more than is reserved, so available ` +
          `would exceed total (${formatShortfall(excess, ['reserved', 'released'])})`,
        { released: profile.toJSON(), reserved: this.reserved.toJSON(), total: this.total.toJSON(), excess },
      );
    }
    return derive(this, this.available.merge(profile), this.reserved.subtract(profile));
  }

  /** Plain data: the total and what is available. */
  toJSON(): { total: ResourceProfileJSON; available: ResourceProfileJSON } {
    return { total: this.total.toJSON(), available: this.available.toJSON() };
  }
}

/** A manager in the given state, skipping the constructor (which starts with nothing reserved). */
function derive(
  from: ResourceBudgetManager,
  available: ResourceProfile,
  reserved: ResourceProfile,
): ResourceBudgetManager {
  const next = Object.create(ResourceBudgetManager.prototype) as Mutable<ResourceBudgetManager>;
  next.total = from.total;
  next.available = available;
  next.reserved = reserved;
  return Object.freeze(next) as ResourceBudgetManager;
}

function requireKnown(profile: ResourceProfile, operation: string): void {
  if (profile.isUnknown()) {
    throw new ResourceProfileError(
      'unknown-profile',
      `cannot ${operation} ResourceProfile.UNKNOWN against a budget: its amounts are not known`,
      {
        field: 'profile',
      },
    );
  }
}
