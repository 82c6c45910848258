/**
 * The ID family (Flink's ResourceID, JobID, AllocationID, ExecutionAttemptID, ResourceManagerId).
 * Each ID is a string at run time (so it crosses threads as itself and serves as a map key) and a
 * distinct branded type at compile time, so an AllocationID cannot be passed where a JobID is
 * expected.
 *
 * - ResourceID: one TaskExecutor (a worker), e.g. `taskexecutor-3f9a1c`.
 * - SlotID: a physical slot, a ResourceID plus a slot number (`taskexecutor-3f9a1c/2`).
 * - JobID: one job, 32 hex characters like Flink's.
 * - AllocationID: one lease of a slot to a job (a new one for every allocation), 32 hex characters.
 * - ExecutionAttemptID: one attempt of one subtask, 32 hex characters, optionally followed by a
 *   readable label (`…_tokenize_3_1` for vertex `tokenize`, subtask 3, attempt 1).
 * - ResourceManagerId: one ResourceManager, 32 hex characters (a TaskExecutor grants slots only to
 *   the one it is registered at).
 */
import { describeValue, IllegalArgumentError } from './errors.js';

declare const brand: unique symbol;
type Brand<T, B extends string> = T & { readonly [brand]: B };

export type ResourceID = Brand<string, 'ResourceID'>;
export type JobID = Brand<string, 'JobID'>;
export type AllocationID = Brand<string, 'AllocationID'>;
export type ExecutionAttemptID = Brand<string, 'ExecutionAttemptID'>;
export type ResourceManagerId = Brand<string, 'ResourceManagerId'>;

export interface SlotID {
  readonly resourceId: ResourceID;
  readonly slotNumber: number;
}

const HEX32 = /^[0-9a-f]{32}$/;
const LABEL = /^[A-Za-z0-9][\w.:-]*$/;

// IDs are made in bursts (an AllocationID per slot request, an attempt ID per task): draw random
// bytes a few kilobytes at a time instead of one crypto call per ID.
const POOL_SIZE = 4096;
const pool = new Uint8Array(POOL_SIZE);
let poolOffset = POOL_SIZE;
const HEX_DIGITS = Array.from('0123456789abcdef', (c) => c.charCodeAt(0));
/**
 * Per number of bytes, the character codes of one ID (reused: setting an array's length per call is a runtime call).
 */
const charCodes: number[][] = [];

/**
 * `bytes` random bytes as hex, then `suffix`. Built with one String.fromCharCode, not `+=` per byte
 * or a template literal: those make a rope (a piece per `+`) that every Map keyed by the ID hashes
 * and compares through its pieces, and that holds ~4 string headers more per ID while it lives (an
 * attempt ID per subtask: 100,000 of them in a large job).
 */
function randomHex(bytes: number, suffix = ''): string {
  if (poolOffset + bytes > POOL_SIZE) {
    globalThis.crypto.getRandomValues(pool);
    poolOffset = 0;
  }
  let codes: number[];
  if (suffix === '') {
    codes = charCodes[bytes] ??= new Array<number>(2 * bytes).fill(0);
  } else {
    codes = new Array<number>(2 * bytes + suffix.length);
    for (let i = 0; i < suffix.length; i++) codes[2 * bytes + i] = suffix.charCodeAt(i);
  }
  for (let i = 0; i < bytes; i++) {
    const byte = pool[poolOffset + i]!;
    codes[2 * i] = HEX_DIGITS[byte >> 4]!;
    codes[2 * i + 1] = HEX_DIGITS[byte & 15]!;
  }
  poolOffset += bytes;
  return String.fromCharCode(...codes);
}

function requireString(kind: string, value: unknown): string {
  if (typeof value !== 'string' || value.length === 0) {
    throw new IllegalArgumentError('invalid-type', `${kind} must be a non-empty string, got ${describeValue(value)}`, {
      argument: kind,
      value: describeValue(value),
    });
  }
  return value;
}

function hexId<T extends string>(kind: string) {
  return {
    /** A new random ID (16 random bytes as 32 hex characters, like Flink's AbstractID). */
    generate(): T {
      return randomHex(16) as T;
    },
    /** Checks a string received from outside (a wire message, a user) and brands it. */
    parse(value: unknown): T {
      const s = requireString(kind, value);
      if (!HEX32.test(s)) {
        throw new IllegalArgumentError(
          'invalid-value',
          `${kind} must be 32 lower-case hex characters, got ${JSON.stringify(s)}`,
          {
            argument: kind,
            value: s,
          },
        );
      }
      return s as T;
    },
    is(value: unknown): value is T {
      return typeof value === 'string' && HEX32.test(value);
    },
    /** The first 8 characters: enough to tell IDs apart in a log line. */
    short(id: T): string {
      return id.slice(0, 8);
    },
  };
}

export const JobID = hexId<JobID>('JobID');
export const AllocationID = hexId<AllocationID>('AllocationID');
/** One ResourceManager (Flink's ResourceManagerId, its fencing token): a slot request names the one that sent it. */
export const ResourceManagerId = hexId<ResourceManagerId>('ResourceManagerId');

export const ExecutionAttemptID = {
  /**
   * A new attempt ID. With a label (`vertex`, `subtask`, `attempt`) the string reads
   * `<32 hex>_<vertex>_<subtask>_<attempt>`, as Flink prints its attempts.
   */
  generate(label?: { vertex: string; subtask: number; attempt: number }): ExecutionAttemptID {
    if (label === undefined) return randomHex(16) as ExecutionAttemptID;
    if (!LABEL.test(label.vertex)) {
      throw new IllegalArgumentError(
        'invalid-value',
        `vertex name in an ExecutionAttemptID must match ${LABEL}, got ${JSON.stringify(label.vertex)}`,
        {
          argument: 'vertex',
          value: label.vertex,
        },
      );
    }
    for (const key of ['subtask', 'attempt'] as const) {
      if (!Number.isSafeInteger(label[key]) || label[key] < 0) {
        throw new IllegalArgumentError(
          'invalid-value',
          `${key} in an ExecutionAttemptID must be a non-negative integer, got ${label[key]}`,
          {
            argument: key,
            value: label[key],
          },
        );
      }
    }
    return randomHex(16, `_${label.vertex}_${label.subtask}_${label.attempt}`) as ExecutionAttemptID;
  },
  parse(value: unknown): ExecutionAttemptID {
    const s = requireString('ExecutionAttemptID', value);
    if (!HEX32.test(s.slice(0, 32)) || (s.length > 32 && s[32] !== '_')) {
      throw new IllegalArgumentError(
        'invalid-value',
        `ExecutionAttemptID must start with 32 lower-case hex characters, got ${JSON.stringify(s)}`,
        {
          argument: 'ExecutionAttemptID',
          value: s,
        },
      );
    }
    return s as ExecutionAttemptID;
  },
  is(value: unknown): value is ExecutionAttemptID {
    return typeof value === 'string' && HEX32.test(value.slice(0, 32)) && (value.length === 32 || value[32] === '_');
  },
  short(id: ExecutionAttemptID): string {
    return id.length > 32 ? `${id.slice(0, 8)}${id.slice(32)}` : id.slice(0, 8);
  },
  /**
   * The subtask a labelled ID names (its `generate` label's vertex and subtask), or undefined for an ID without a
   * label. Read from the end: a vertex may hold `_` itself.
   */
  subtaskOf(id: ExecutionAttemptID): { readonly vertex: string; readonly subtask: number } | undefined {
    const last = id.lastIndexOf('_');
    const before = last > 33 ? id.lastIndexOf('_', last - 1) : -1;
    if (before <= 33) return undefined;
    return { vertex: id.slice(33, before), subtask: Number(id.slice(before + 1, last)) };
  },
};

const RESOURCE_ID = /^[A-Za-z0-9][\w.:-]{0,127}$/;

export const ResourceID = {
  /** A new TaskExecutor ID: `<prefix>-<12 hex>`; the prefix defaults to `taskexecutor`. */
  generate(prefix = 'taskexecutor'): ResourceID {
    return ResourceID.parse(`${prefix}-${randomHex(6)}`);
  },
  /** A ResourceID is any readable name of 1–128 characters: letters, digits, `_ . : -`. */
  parse(value: unknown): ResourceID {
    const s = requireString('ResourceID', value);
    if (!RESOURCE_ID.test(s)) {
      throw new IllegalArgumentError(
        'invalid-value',
        `ResourceID must be 1-128 characters of letters, digits, '_', '.', ` +
          `':' or '-', starting with a letter or digit; got ${JSON.stringify(s)}`,
        {
          argument: 'ResourceID',
          value: s,
        },
      );
    }
    return s as ResourceID;
  },
  is(value: unknown): value is ResourceID {
    return typeof value === 'string' && RESOURCE_ID.test(value);
  },
};

export const SlotID = {
  of(resourceId: ResourceID, slotNumber: number): SlotID {
    ResourceID.parse(resourceId);
    if (!Number.isSafeInteger(slotNumber) || slotNumber < 0) {
      throw new IllegalArgumentError('invalid-value', `slot number must be a non-negative integer, got ${slotNumber}`, {
        argument: 'slotNumber',
        value: slotNumber,
      });
    }
    return Object.freeze({ resourceId, slotNumber });
  },
  toString(slotId: SlotID): string {
    return `${slotId.resourceId}/${slotId.slotNumber}`;
  },
  parse(value: unknown): SlotID {
    const s = requireString('SlotID', value);
    const at = s.lastIndexOf('/');
    const number = Number(s.slice(at + 1));
    if (at <= 0 || s.slice(at + 1) === '' || !Number.isSafeInteger(number)) {
      throw new IllegalArgumentError(
        'invalid-value',
        `SlotID must read <ResourceID>/<slot number>, got ${JSON.stringify(s)}`,
        {
          argument: 'SlotID',
          value: s,
        },
      );
    }
    return SlotID.of(ResourceID.parse(s.slice(0, at)), number);
  },
  equals(a: SlotID, b: SlotID): boolean {
    return a.resourceId === b.resourceId && a.slotNumber === b.slotNumber;
  },
};
