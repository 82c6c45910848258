/**
 * `T` with its `readonly` modifiers removed: for code that builds a value of a read-only type field by field (an
 * object literal filled in conditionally, an instance made with `Object.create` without running its constructor)
 * before it hands it out as `T`.
 */
export type Mutable<T> = { -readonly [K in keyof T]: T[K] };
