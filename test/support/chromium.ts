/**
 * Headless Chromium for the dashboard tests: Debian's `chromium` driven by playwright-core, with
 * the flags that keep it off the (closed) network and a fresh profile; every URL the browser asks
 * for is recorded. `chromiumOrSkip` skips a suite, saying why, when chromium is not installed.
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';

export const CHROMIUM = '/usr/bin/chromium';
const FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
];
/** How long a locator waits for the page to show something. */
export const UI_TIMEOUT = 30_000;

export interface Browser {
  readonly context: BrowserContext;
  readonly page: Page;
  /** Every URL the browser requested, in order. */
  readonly requested: readonly string[];
  /** Closes the browser and removes its profile. */
  close(): Promise<void>;
}

/** In a mocha `before`: `this.skip()` with a visible line when there is no chromium. */
export function chromiumOrSkip(context: Mocha.Context): void {
  if (existsSync(CHROMIUM)) return;
  console.log(`    skipped: no ${CHROMIUM} (apt-get install -y chromium; .ci/run installs it)`);
  context.skip();
}

export async function launchChromium(): Promise<Browser> {
  const userDataDir = mkdtempSync(join(tmpdir(), 'slotwise-chromium-'));
  const requested: string[] = [];
  let context: BrowserContext;
  try {
    context = await chromium.launchPersistentContext(userDataDir, {
      executablePath: CHROMIUM,
      headless: true,
      args: FLAGS,
      viewport: { width: 1280, height: 1000 },
    });
  } catch (error) {
    rmSync(userDataDir, { recursive: true, force: true });
    throw error;
  }
  context.on('request', (request) => requested.push(request.url()));
  const page = context.pages()[0] ?? (await context.newPage());
  page.setDefaultTimeout(UI_TIMEOUT);
  return {
    context,
    page,
    requested,
    close: async () => {
      await context.close();
      rmSync(userDataDir, { recursive: true, force: true });
    },
  };
}
