/**
 * `npm run bench`: runs every `bench/*.bench.ts`, one after another, each in its own child process
 * (`node --expose-gc --import tsx <file>`), so one benchmark's heap, JIT state and timers never
 * colour the next one's figures. Output streams through as it comes; a summary follows. Exits 1
 * if any benchmark failed (non-zero exit or a signal) or if there was none to run.
 *
 * A new benchmark is just a new `bench/<name>.bench.ts` file. `npm run bench -- matching` runs only
 * the files whose name contains one of the given words.
 */
import { spawn } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const benchDir = dirname(fileURLToPath(import.meta.url));
const root = dirname(benchDir);
const filters = process.argv.slice(2);

const files = readdirSync(benchDir)
  .filter((name) => name.endsWith('.bench.ts'))
  .filter((name) => filters.length === 0 || filters.some((word) => name.includes(word)))
  .sort()
  .map((name) => join(benchDir, name));

if (files.length === 0) {
  console.error(
    `no benchmark to run: no bench/*.bench.ts${filters.length > 0 ? ` matching ${filters.join(', ')}` : ''}`,
  );
  process.exit(1);
}

interface Outcome {
  readonly file: string;
  readonly ok: boolean;
  readonly how: string;
  readonly seconds: number;
}

function runOne(file: string): Promise<Outcome> {
  const started = performance.now();
  const name = relative(root, file);
  return new Promise((resolve) => {
    // cwd = the package root, so `--import tsx` resolves this package's tsx.
    const child = spawn(process.execPath, ['--expose-gc', '--import', 'tsx', file], { cwd: root, stdio: 'inherit' });
    const done = (ok: boolean, how: string) =>
      resolve({ file: name, ok, how, seconds: (performance.now() - started) / 1000 });
    child.on('error', (error) => done(false, `could not start: ${error.message}`));
    child.on('exit', (code, signal) => done(code === 0, signal !== null ? `killed by ${signal}` : `exit ${code}`));
  });
}

const outcomes: Outcome[] = [];
for (const file of files) {
  console.log(`\n=== ${relative(root, file)} ===`);
  outcomes.push(await runOne(file));
}

console.log('\n=== summary ===');
for (const o of outcomes) console.log(`${o.ok ? 'ok    ' : 'FAILED'} ${o.file} (${o.how}, ${o.seconds.toFixed(1)} s)`);
const failed = outcomes.filter((o) => !o.ok).length;
console.log(`${outcomes.length - failed} passed, ${failed} failed`);
process.exitCode = failed > 0 ? 1 : 0;
