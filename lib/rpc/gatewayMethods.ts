/**
 * Which names a gateway answers to, shared by both sides: a served implementation's own methods
 * and its class's (never Object.prototype's, never `then`, so a gateway is not mistaken for a
 * promise), and the error for a name that is not one of them.
 */
import { IllegalArgumentError } from '../core/errors.js';

/** Names no gateway serves (Object.prototype's) — and `then`. */
export const NOT_METHODS: ReadonlySet<string> = new Set<string>([
  ...Object.getOwnPropertyNames(Object.prototype),
  'then',
]);

/** The method names of `implementation`: its own function properties and its class's, up to Object.prototype. */
export function methodNames(implementation: object): string[] {
  const names = new Set<string>();
  for (
    let o: object | null = implementation;
    o !== null && o !== Object.prototype;
    o = Object.getPrototypeOf(o) as object | null
  ) {
    for (const name of Object.getOwnPropertyNames(o)) {
      if (NOT_METHODS.has(name) || names.has(name)) continue;
      const descriptor = Object.getOwnPropertyDescriptor(o, name);
      if (descriptor !== undefined && typeof descriptor.value === 'function') names.add(name);
    }
  }
  return [...names].sort();
}

/** `gateway` has no method `method`: the error names the ones it has. */
export function unknownMethod(gateway: string, method: string, allowed: readonly string[]): IllegalArgumentError {
  return new IllegalArgumentError(
    'unknown-key',
    `${gateway} has no method "${method}"; its methods are ${allowed.join(', ')}`,
    {
      argument: 'method',
      value: method,
      gateway,
      allowed,
    },
  );
}
