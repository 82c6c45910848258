/**
 * Task outputs are structured-cloneable values, a wider set than JSON: the REST API turns them into
 * JSON data before it sends them, the same way every time, instead of letting `JSON.stringify`
 * throw (a BigInt) or silently drop them (a Map becomes `{}`).
 *
 * | value | JSON |
 * | --- | --- |
 * | BigInt | its decimal digits, as a string |
 * | Map | an array of `[key, value]` pairs |
 * | Set, typed array of numbers | an array of its elements |
 * | bytes: ArrayBuffer, SharedArrayBuffer, Uint8Array (a Buffer), Int8Array, DataView | `{ base64 }` (a third bigger) |
 *
 * Bytes are never an array of numbers: that is up to eight times bigger and slow to parse.
 * | Date | its ISO string (as `JSON.stringify`) |
 * | NaN, ±Infinity, undefined in an array | null (as `JSON.stringify`) |
 * | undefined as an object value | left out (as `JSON.stringify`) |
 * | Error | `{ name, message }` |
 * | a value seen again on its own path (a cycle) | `'[Circular]'` |
 */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

export function toJsonValue(value: unknown): JsonValue {
  return convert(value, new Set());
}

function convert(value: unknown, path: Set<object>): JsonValue {
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return value;
    case 'number':
      return Number.isFinite(value) ? value : null;
    case 'bigint':
      return value.toString();
    case 'undefined':
    case 'function':
    case 'symbol':
      return null;
  }
  if (value === null) return null;
  const object = value as object;
  if (path.has(object)) return '[Circular]';
  path.add(object);
  try {
    if (object instanceof Date) return Number.isNaN(object.getTime()) ? null : object.toISOString();
    if (object instanceof Error) return { name: object.name, message: object.message };
    if (object instanceof Map) return [...object].map(([k, v]) => [convert(k, path), convert(v, path)]);
    if (object instanceof Set) return [...object].map((v) => convert(v, path));
    if (object instanceof ArrayBuffer || object instanceof SharedArrayBuffer) return base64Of(new Uint8Array(object));
    if (ArrayBuffer.isView(object)) {
      if (object instanceof DataView || object instanceof Uint8Array || object instanceof Int8Array)
        return base64Of(new Uint8Array(object.buffer, object.byteOffset, object.byteLength));
      return [...(object as unknown as Iterable<number | bigint>)].map((v) => convert(v, path));
    }
    if (Array.isArray(object)) return object.map((v) => convert(v, path));
    if (object instanceof RegExp) return object.toString();
    const out: { [key: string]: JsonValue } = {};
    for (const [key, v] of Object.entries(object)) {
      if (v !== undefined && typeof v !== 'function' && typeof v !== 'symbol') out[key] = convert(v, path);
    }
    return out;
  } finally {
    path.delete(object);
  }
}

/** Bytes as JSON: `{ base64 }` (Node's Buffer over the same memory, no copy before the encoding). */
function base64Of(bytes: Uint8Array): JsonValue {
  return { base64: Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64') };
}
