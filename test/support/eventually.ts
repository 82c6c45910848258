/**
 * Polls `check` (every few ms) until it holds, for what crosses threads or sockets and so takes an
 * unknown number of wake-ups. The deadline is generous: it only bounds a test that would hang, it
 * does not time anything.
 */
export async function eventually(check: () => boolean, what: string, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 2));
  }
}
