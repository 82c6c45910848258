/**
 * Errors that cross threads as themselves (docs/runtime.md, Gateways; docs/configuration.md, IDs,
 * errors, clock): a SlotwiseError travels as its `toJSON()` (plus its stack) and is revived as the
 * same class with the same reason and details; any other Error keeps name, message, stack (and a
 * string `code`, e.g. ERR_WORKER_OUT_OF_MEMORY); any other thrown value travels as itself. Gateway
 * calls carry a thrown value in their ErrorFrame (serializeThrown / deserializeThrown).
 *
 * The same goes for an object exposed with comlink over a Link channel: comlink's own 'throw'
 * handler sends an Error as `{ name, message, stack }` and rebuilds a plain Error, so a
 * SlotAllocationError would arrive without its `_tag`, `reason` and `details`. This module
 * replaces that handler, once, at import (both sides must load it; the gateways do). It patches the
 * `comlink` instance the bare specifier resolves to (`comlink/dist/esm/…` is a second copy with
 * its own table).
 */
import { transferHandlers, type TransferHandler } from 'comlink';
import { isSlotwiseError, reviveError } from '../core/errors.js';
import type { SerializedThrow, WireError } from './protocol.js';

export type { SerializedThrow, WireError } from './protocol.js';

/** comlink's wrapper around a thrown value (its marker symbol is private; its own canHandle spots it). */
interface Thrown {
  readonly value: unknown;
}

const INSTALLED = Symbol.for('slotwise.errorTransfer');

/** An error's wire form: a SlotwiseError with `_tag`, `reason`, `details`; another Error with name, message, stack. */
export function serializeError(error: unknown): WireError {
  if (isSlotwiseError(error)) {
    return { ...error.toJSON(), name: error.name, ...(error.stack === undefined ? {} : { stack: error.stack }) };
  }
  if (error instanceof Error) {
    const code = (error as { code?: unknown }).code;
    return {
      name: error.name,
      message: error.message,
      ...(error.stack === undefined ? {} : { stack: error.stack }),
      ...(typeof code === 'string' ? { code } : {}),
    };
  }
  return { name: 'Error', message: String(error) };
}

/**
 * The error a wire form stands for: the same SlotwiseError class (reason, details), or an Error with name, message,
 * stack.
 */
export function deserializeError(wire: WireError): Error {
  if (typeof wire._tag === 'string') {
    const error = reviveError({
      _tag: wire._tag,
      reason: wire.reason ?? '',
      message: wire.message,
      details: wire.details ?? {},
    });
    // Keep the thrower's stack: it says where, on the other side, the error came from.
    if (typeof wire.stack === 'string') error.stack = wire.stack;
    return error;
  }
  const error = new Error(wire.message);
  error.name = wire.name;
  if (typeof wire.stack === 'string') error.stack = wire.stack;
  if (typeof wire.code === 'string')
    Object.defineProperty(error, 'code', { value: wire.code, enumerable: true, writable: true, configurable: true });
  return error;
}

/** A thrown value's wire form: an Error as its WireError, anything else as itself. */
export function serializeThrown(value: unknown): SerializedThrow {
  return value instanceof Error ? { isError: true, error: serializeError(value) } : { isError: false, value };
}

/** What a thrown value's wire form stands for: the error (its own class) or the value that was thrown. */
export function deserializeThrown(thrown: SerializedThrow): unknown {
  return thrown.isError ? deserializeError(thrown.error) : thrown.value;
}

/** Installs the handler (idempotent; done at import). */
export function installErrorTransfer(): void {
  const current = transferHandlers.get('throw') as
    | (TransferHandler<Thrown, SerializedThrow> & { [INSTALLED]?: true })
    | undefined;
  if (current === undefined || current[INSTALLED] === true) return;
  const handler: TransferHandler<Thrown, SerializedThrow> & { [INSTALLED]: true } = {
    [INSTALLED]: true,
    canHandle: (value: unknown): value is Thrown => current.canHandle(value),
    serialize: (thrown) => [serializeThrown(thrown.value), []],
    deserialize: (serialized) => {
      throw deserializeThrown(serialized);
    },
  };
  transferHandlers.set('throw', handler as TransferHandler<unknown, unknown>);
}

installErrorTransfer();
