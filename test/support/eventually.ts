/**
 * Polling for what crosses threads or sockets and so takes an unknown number of wake-ups. The
 * deadlines are generous: they only bound a test that would hang, they do not time anything.
 */

type Probed<T> = T | undefined | null | false;

/**
 * Polls `probe` (which may ask another thread, and so return a promise) until it gives a value (not undefined, null or
 * false) and resolves with it.
 */
export async function until<T>(what: string, probe: () => Probed<T> | Promise<Probed<T>>, ms = 20_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const value = await probe();
    if (value !== undefined && value !== null && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
}

/** Polls `check` until it holds. */
export async function eventually(check: () => boolean, what: string, ms = 10_000): Promise<void> {
  await until(what, check, ms);
}
