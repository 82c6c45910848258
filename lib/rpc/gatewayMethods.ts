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

/**
 * A gateway's control methods travel by comlink on a channel of their own beside the gateway's
 * channel (docs/runtime.md, Gateways): `rm` → `rm/control`, `jm:<address>` → `jm:<address>/control`.
 * A prefix handler (Link.onUnknownChannel('jm:')) sees both names; gatewayChannel maps either back.
 */
export const CONTROL_SUFFIX = '/control';

export const controlChannel = (channel: string): string => channel + CONTROL_SUFFIX;

/** The gateway's channel for either of its two channels. */
export const gatewayChannel = (name: string): string =>
  name.endsWith(CONTROL_SUFFIX) ? name.slice(0, -CONTROL_SUFFIX.length) : name;
