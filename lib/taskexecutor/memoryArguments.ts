/** The arguments a MemoryManager checks at its door, and how a refused value is described. */
import { describeValue, IllegalArgumentError, MemoryAllocationError } from '../core/errors.js';
import type { SharedMemoryHandle } from './MemoryManager.js';

const MIN_PAGE_SIZE = 4 * 1024;
const MAX_PAGE_SIZE = 16 * 1024 * 1024;

export function checkPageSize(pageSize: unknown, argument: string): asserts pageSize is number {
  if (typeof pageSize !== 'number') {
    throw new IllegalArgumentError(
      'invalid-type',
      `${argument} must be a number of bytes, got ${describeValue(pageSize)}`,
      {
        argument,
        value: describeValue(pageSize),
      },
    );
  }
  if (
    !Number.isInteger(pageSize) ||
    pageSize < MIN_PAGE_SIZE ||
    pageSize > MAX_PAGE_SIZE ||
    (pageSize & (pageSize - 1)) !== 0
  ) {
    throw new IllegalArgumentError(
      'out-of-range',
      `${argument} must be a power of two from ${MIN_PAGE_SIZE} ` +
        `(4 KiB) to ${MAX_PAGE_SIZE} (16 MiB) bytes, got ${pageSize}`,
      { argument, value: pageSize, min: MIN_PAGE_SIZE, max: MAX_PAGE_SIZE },
    );
  }
}

export function checkOwner(owner: unknown): asserts owner is string {
  if (typeof owner !== 'string' || owner.length === 0) {
    throw new MemoryAllocationError(
      'invalid-request',
      `owner must be a non-empty string, got ${describeValue(owner)}`,
      {
        argument: 'owner',
        value: describeValue(owner),
      },
    );
  }
}

/** Checks a handle from MemoryManager.share(): its geometry, and buffers of the sizes that geometry needs. */
export function checkHandle(handle: unknown, maxPages: number, table: number): asserts handle is SharedMemoryHandle {
  if (typeof handle !== 'object' || handle === null) {
    throw new IllegalArgumentError(
      'invalid-type',
      `handle must be a SharedMemoryHandle from MemoryManager.share(), got ${describeValue(handle)}`,
      {
        argument: 'handle',
        value: describeValue(handle),
      },
    );
  }
  const { data, control, pageSize, totalPages } = handle as SharedMemoryHandle;
  checkPageSize(pageSize, 'handle.pageSize');
  if (!Number.isSafeInteger(totalPages) || totalPages < 0 || totalPages > maxPages) {
    throw new IllegalArgumentError(
      'invalid-value',
      `handle.totalPages must be an integer from 0 to ${maxPages}, got ${describeValue(totalPages)}`,
      {
        argument: 'handle.totalPages',
        value: describeValue(totalPages),
      },
    );
  }
  if (!(data instanceof SharedArrayBuffer) || capacityOf(data) !== totalPages * pageSize) {
    throw new IllegalArgumentError(
      'invalid-value',
      `handle.data must be a SharedArrayBuffer (growable or not) of totalPages * pageSize ` +
        `= ${totalPages * pageSize} bytes, got ${describeBuffer(data)}`,
      { argument: 'handle.data', value: describeBuffer(data) },
    );
  }
  const controlBytes = (table + totalPages) * Int32Array.BYTES_PER_ELEMENT;
  if (!(control instanceof SharedArrayBuffer) || control.byteLength !== controlBytes) {
    throw new IllegalArgumentError(
      'invalid-value',
      `handle.control must be a SharedArrayBuffer of (3 + totalPages) ` +
        `* 4 = ${controlBytes} bytes, got ${describeBuffer(control)}`,
      { argument: 'handle.control', value: describeBuffer(control) },
    );
  }
}

/** The bytes a SharedArrayBuffer holds or, growable, may grow to. */
export function capacityOf(buffer: SharedArrayBuffer): number {
  const growable = buffer as SharedArrayBuffer & { readonly growable?: boolean; readonly maxByteLength?: number };
  return growable.growable === true ? growable.maxByteLength! : buffer.byteLength;
}

export function describeBuffer(value: unknown): string {
  if (value instanceof SharedArrayBuffer) return `a SharedArrayBuffer of ${capacityOf(value)} bytes`;
  return describeValue(value);
}
