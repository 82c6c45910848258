/** The JetStream answers a session cluster treats as outcomes, not failures. */
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
