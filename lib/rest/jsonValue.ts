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

/**
 * One value as JSON, one level deep: a leaf, bytes, or a container with its members still to convert (under these
 * rules, with the container on the path). Both `toJsonValue` and the streamed encoder (jsonStream.ts) walk values by
 * it, so the REST API's result is the same document whichever of them writes it.
 */
export type JsonShape =
  | { readonly kind: 'leaf'; readonly value: null | boolean | number | string }
  | { readonly kind: 'bytes'; readonly bytes: Uint8Array }
  | { readonly kind: 'array'; readonly items: IterableIterator<unknown> }
  | { readonly kind: 'object'; readonly entries: IterableIterator<readonly [string, unknown]> };

export function toJsonValue(value: unknown): JsonValue {
  return convert(value, new Set());
}

/** `value`'s shape; `path` holds the containers being converted around it (a value among them is a cycle). */
export function jsonShape(value: unknown, path: ReadonlySet<object>): JsonShape {
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return { kind: 'leaf', value };
    case 'number':
      return { kind: 'leaf', value: Number.isFinite(value) ? value : null };
    case 'bigint':
      return { kind: 'leaf', value: value.toString() };
    case 'undefined':
    case 'function':
    case 'symbol':
      return NULL;
  }
  if (value === null) return NULL;
  const object = value as object;
  if (path.has(object)) return { kind: 'leaf', value: '[Circular]' };
  if (object instanceof Date)
    return { kind: 'leaf', value: Number.isNaN(object.getTime()) ? null : object.toISOString() };
  if (object instanceof Error)
    return {
      kind: 'object',
      entries: members([
        ['name', object.name],
        ['message', object.message],
      ]),
    };
  if (object instanceof Map) return { kind: 'array', items: pairs(object) };
  if (object instanceof Set) return { kind: 'array', items: object.values() };
  if (object instanceof ArrayBuffer || object instanceof SharedArrayBuffer)
    return { kind: 'bytes', bytes: new Uint8Array(object) };
  if (ArrayBuffer.isView(object)) {
    if (object instanceof DataView || object instanceof Uint8Array || object instanceof Int8Array)
      return { kind: 'bytes', bytes: new Uint8Array(object.buffer, object.byteOffset, object.byteLength) };
    return {
      kind: 'array',
      items: (object as unknown as Iterable<number | bigint>)[Symbol.iterator]() as IterableIterator<unknown>,
    };
  }
  // A hole reads as undefined, which becomes null, as JSON.stringify writes a hole.
  if (Array.isArray(object)) return { kind: 'array', items: Array.prototype.values.call(object) };
  if (object instanceof RegExp) return { kind: 'leaf', value: object.toString() };
  return {
    kind: 'object',
    entries: members(Object.keys(object).map((key) => [key, (object as Record<string, unknown>)[key]])),
  };
}

const NULL: JsonShape = { kind: 'leaf', value: null };

/** A Map's entries as `[key, value]` arrays (converted as arrays). */
function* pairs(map: Map<unknown, unknown>): IterableIterator<unknown> {
  for (const [key, value] of map) yield [key, value];
}

/**
 * The members JSON keeps: undefined, functions and symbols are left out (as `JSON.stringify` does), and so is
 * `__proto__` (assigning it to a plain object sets the prototype, so toJsonValue never kept it as data).
 */
function* members(entries: Iterable<readonly [string, unknown]>): IterableIterator<readonly [string, unknown]> {
  for (const [key, value] of entries)
    if (value !== undefined && typeof value !== 'function' && typeof value !== 'symbol' && key !== '__proto__')
      yield [key, value];
}

function convert(value: unknown, path: Set<object>): JsonValue {
  const shape = jsonShape(value, path);
  if (shape.kind === 'leaf') return shape.value;
  if (shape.kind === 'bytes') return base64Of(shape.bytes);
  const object = value as object;
  path.add(object);
  try {
    if (shape.kind === 'array') return Array.from(shape.items, (item) => convert(item, path));
    const out: { [key: string]: JsonValue } = {};
    for (const [key, member] of shape.entries) out[key] = convert(member, path);
    return out;
  } finally {
    path.delete(object);
  }
}

/** Bytes as JSON: `{ base64 }` (Node's Buffer over the same memory, no copy before the encoding). */
function base64Of(bytes: Uint8Array): JsonValue {
  return { base64: Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64') };
}
