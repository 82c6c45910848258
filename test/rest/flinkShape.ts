/**
 * A small checker for the JSON-schema subset of flink-shapes/shapes.json (type, required, properties,
 * items, enum, $ref to a top-level shape): the list of places where a value departs from Flink's
 * shape, empty when it conforms. Keys Flink does not have are allowed (slotwise adds its own).
 */
import { readFileSync } from 'node:fs';

export interface Shape {
  readonly type?: string | readonly string[];
  readonly required?: readonly string[];
  readonly properties?: Readonly<Record<string, Shape>>;
  readonly items?: Shape;
  readonly enum?: readonly unknown[];
  readonly $ref?: string;
}

export const FLINK_SHAPES = JSON.parse(
  readFileSync(new URL('./flink-shapes/shapes.json', import.meta.url), 'utf8'),
) as { readonly routes: Readonly<Record<string, Shape>> } & Readonly<Record<string, Shape>>;

function typeOf(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  if (typeof value === 'number') return Number.isInteger(value) ? 'integer' : 'number';
  return typeof value;
}

export function departures(value: unknown, shape: Shape, at = '$'): string[] {
  if (shape.$ref !== undefined) return departures(value, FLINK_SHAPES[shape.$ref]!, at);
  const problems: string[] = [];
  if (shape.type !== undefined) {
    const allowed = typeof shape.type === 'string' ? [shape.type] : shape.type;
    const actual = typeOf(value);
    if (!allowed.includes(actual) && !(actual === 'integer' && allowed.includes('number')))
      return [`${at} is ${actual}, Flink's is ${allowed.join(' or ')}`];
  }
  if (shape.enum !== undefined && !shape.enum.includes(value))
    problems.push(`${at} is ${JSON.stringify(value)}, Flink's is one of ${JSON.stringify(shape.enum)}`);
  if (typeOf(value) === 'object') {
    const record = value as Record<string, unknown>;
    for (const key of shape.required ?? []) if (!(key in record)) problems.push(`${at} lacks '${key}'`);
    for (const [key, sub] of Object.entries(shape.properties ?? {}))
      if (key in record) problems.push(...departures(record[key], sub, `${at}.${key}`));
  }
  if (Array.isArray(value) && shape.items !== undefined)
    value.forEach((item, i) => problems.push(...departures(item, shape.items!, `${at}[${i}]`)));
  return problems;
}
