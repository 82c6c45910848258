/**
 * The compiled build (`dist/`), for benchmarks that measure what a user runs: an application
 * imports the package's JavaScript, and its TaskExecutor workers and task threads load compiled
 * files, not TypeScript through tsx (which costs a worker ~1 s to start and every call a little).
 *
 * `compiled(path)` imports `dist/<path>` after `npm run build` if any source under lib/ or
 * machines/ is newer than the build (or there is none), so a figure always belongs to the code in
 * the working tree.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = dirname(dirname(dirname(fileURLToPath(import.meta.url))));
const marker = join(root, 'dist', 'lib', 'index.js');

function newestSource(dir: string): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) newest = Math.max(newest, newestSource(path));
    else if (entry.name.endsWith('.ts')) newest = Math.max(newest, statSync(path).mtimeMs);
  }
  return newest;
}

let built = false;

/** Builds dist/ once per process if it is missing or older than the sources. */
export function ensureCompiled(): void {
  if (built) return;
  const stale =
    !existsSync(marker) ||
    statSync(marker).mtimeMs < Math.max(newestSource(join(root, 'lib')), newestSource(join(root, 'machines')));
  if (stale) {
    console.log('building dist/ (npm run build): the benchmark measures the compiled code');
    execFileSync('npm', ['run', '--silent', 'build'], { cwd: root, stdio: 'inherit' });
  }
  built = true;
}

/** The compiled module `dist/<path>` (e.g. 'lib/index.js'). */
export async function compiled<T>(path: string): Promise<T> {
  ensureCompiled();
  return (await import(pathToFileURL(join(root, 'dist', path)).href)) as T;
}
