/**
 * The JetStream answers a session cluster treats as outcomes, not failures; and operations tried again while a
 * lost NATS node's streams elect new leaders.
 */
import { JetStreamApiCodes, JetStreamApiError } from '@nats-io/jetstream';

/** `promise`'s value, or null when JetStream says the stream does not exist (yet). */
export async function unlessStreamNotFound<T>(promise: Promise<T>): Promise<T | null> {
  try {
    return await promise;
  } catch (error) {
    if (isApiError(error, JetStreamApiCodes.StreamNotFound)) return null;
    throw error;
  }
}

/** Whether `error` is JetStream's answer `code` (e.g. StreamWrongLastSequence: an expected-sequence publish lost). */
export function isApiError(error: unknown, code: number): boolean {
  return error instanceof JetStreamApiError && error.code === code;
}

/** How often an operation on a stream or store is tried, and the wait before the second try (doubling). */
const ATTEMPTS = 4;
const BACKOFF_MS = 250;

/**
 * `operation()`, tried again when JetStream does not answer (a NATS node lost: its streams elect new leaders for a
 * few seconds), at most ATTEMPTS times; the last error if none answers. Only for what may safely run twice (a read,
 * a put under a name).
 */
export async function retriedWhileElecting<T>(operation: () => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await operation();
    } catch (error) {
      if (attempt >= ATTEMPTS) throw error;
      await new Promise((resolve) => setTimeout(resolve, BACKOFF_MS * 2 ** (attempt - 1)));
    }
  }
}

/**
 * JetStream's answers to adding a stream that another process added meanwhile with the same subjects: "subjects
 * overlap with an existing stream" (10065) and "stream name already in use" (10058).
 */
const ADDED_MEANWHILE = new Set([10065, 10058]);

/**
 * `open()` (a create-or-open of a stream, KV bucket or object store), once more when it lost a race: JobManagers and
 * TaskManagers that start together each find a cluster's stream missing and each add it, and every add but the first
 * is refused; the second try finds the stream the first one made.
 */
export async function openedDespiteRace<T>(open: () => Promise<T>): Promise<T> {
  try {
    return await open();
  } catch (error) {
    if (!(error instanceof JetStreamApiError && ADDED_MEANWHILE.has(error.code))) throw error;
    return await open();
  }
}
