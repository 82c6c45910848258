/**
 * The compiled build works without tsx: `tsc -p tsconfig.build.json` into a temporary folder, then
 * one task on one TaskExecutor in thread mode and in process mode under plain node, and the task
 * module checker's worker entry. (tsc's output differs from tsx's: a class that names itself in a
 * static initializer broke only there.)
 */
import { expect } from 'chai';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

describe('the compiled build (dist)', function () {
  this.timeout(120_000);
  let outDir: string;

  before(() => {
    // Inside the project, so that the build finds node_modules as dist/ would (ignored by git).
    outDir = mkdtempSync(join(ROOT, '.dist-test-'));
    execFileSync(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', join(ROOT, 'tsconfig.build.json'), '--outDir', outDir], { cwd: ROOT, stdio: 'pipe' });
  });

  after(() => rmSync(outDir, { recursive: true, force: true }));

  it('runs a task on a TaskExecutor thread and in a TaskExecutor process under plain node, and checks task modules', () => {
    const smoke = fileURLToPath(new URL('../fixtures/compiled/smoke.mjs', import.meta.url));
    // A clean environment: no tsx hooks inherited from the test runner.
    const env = { ...process.env, NODE_OPTIONS: '' };
    const output = execFileSync(process.execPath, [smoke, join(outDir, 'lib', 'index.js'), join(outDir, 'lib', 'internals.js')], { cwd: ROOT, env, encoding: 'utf8', timeout: 60_000 });
    const lines = output.trim().split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines).to.deep.equal([
      { mode: 'thread', state: 'finished', output: { sum: 6, vertex: 'sum' }, error: null },
      { mode: 'process', state: 'finished', output: { sum: 6, vertex: 'sum' }, error: null },
      { checked: './sumTask.mjs', problem: null },
      { checked: './noDefault.mjs', problem: 'no-default-export' },
    ]);
  });
});
