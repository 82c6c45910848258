/**
 * The task module checker on real checker workers: a module's top-level code runs there, never on
 * this thread; what it does there (hang, exit, throw, patch globals) becomes a verdict. Few workers:
 * one checker serves the thread cases; modules that passed are remembered by file identity.
 */
import { expect } from 'chai';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { IllegalArgumentError, IllegalStateError } from '../../lib/core/errors.js';
import { DefaultTaskModuleChecker, type TaskModuleVerdict } from '../../lib/jobmaster/TaskModuleChecker.js';
import { eventually } from '../support/eventually.js';

const fixture = (name: string) => fileURLToPath(new URL(`../fixtures/tasks/${name}.ts`, import.meta.url));
const problemOf = (verdict: TaskModuleVerdict | undefined) =>
  verdict?.status === 'invalid' ? verdict.problem : verdict?.status;

describe('DefaultTaskModuleChecker', function () {
  this.timeout(60_000);
  let checker: DefaultTaskModuleChecker;
  let dir: string;

  before(() => {
    checker = new DefaultTaskModuleChecker({ timeoutMs: 3_000 });
    dir = mkdtempSync(join(tmpdir(), 'slotwise-checker-'));
  });

  after(async () => {
    await checker.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('accepts a module whose default export is a function, and loads it again only when the file changed', async () => {
    const module = join(dir, 'task.mjs');
    writeFileSync(module, 'export default async function task() { return 1; }\n');
    const started = checker.workersStarted;
    expect(await checker.check([module])).to.deep.equal([{ status: 'valid' }]);
    expect(await checker.check([module, module])).to.deep.equal([{ status: 'valid' }, { status: 'valid' }]);
    expect(checker.workersStarted, 'one worker for the first check, none for the second').to.equal(started + 1);
    writeFileSync(module, 'export const notATask = 1;\n');
    const [changed] = await checker.check([module]);
    expect(changed).to.deep.include({ status: 'invalid', problem: 'no-default-export' });
    expect(checker.workersStarted).to.equal(started + 2);
  });

  it('times out a module whose top-level await never settles; the next check gets a new worker', async () => {
    const [verdict] = await checker.check([fixture('hangsOnLoad')]);
    expect(verdict).to.deep.include({ status: 'invalid', problem: 'timed-out' });
    expect((verdict as { message: string }).message).to.match(
      /did not finish within 3 s \(dispatcher\.task-module-check\.timeout\)/,
    );
    expect(problemOf((await checker.check([fixture('ok')]))[0])).to.equal('valid');
  });

  it('reports a top-level process.exit as exited with its code; this process lives on', async () => {
    const [verdict] = await checker.check([fixture('exitsOnLoad')]);
    expect(verdict).to.deep.include({ status: 'invalid', problem: 'exited' });
    expect((verdict as { message: string }).message).to.match(/exited with code 3/);
    expect(process.exitCode ?? 0).to.equal(0);
  });

  it('reports a top-level throw as threw, with its error', async () => {
    const [verdict] = await checker.check([fixture('throwsOnLoad')]);
    expect(verdict).to.deep.include({ status: 'invalid', problem: 'threw' });
    expect((verdict as { message: string }).message).to.match(/Error: refusing to load/);
    expect((verdict as { message: string }).message).to.contain(`(at ${fixture('throwsOnLoad')}:2:`);
  });

  it('says where a module does not parse: file, line and column', async () => {
    const module = join(dir, 'unparsable.mjs');
    writeFileSync(module, 'export default async function task() {\n  const x = [1, 2;\n  return x;\n}\n');
    const [verdict] = await checker.check([module]);
    expect(verdict).to.deep.include({ status: 'invalid', problem: 'threw' });
    expect((verdict as { message: string }).message).to.contain(
      `threw SyntaxError: Unexpected token ';' (at ${module}:2:18)`,
    );
  });

  it('reports a module without a default export, naming what it exports', async () => {
    const [verdict] = await checker.check([fixture('noDefault')]);
    expect(verdict).to.deep.include({ status: 'invalid', problem: 'no-default-export' });
    expect((verdict as { message: string }).message).to.match(/has no default export function \(it exports notATask\)/);
  });

  it('reports a missing file without starting a worker', async () => {
    const started = checker.workersStarted;
    expect(problemOf((await checker.check([join(dir, 'nope.ts')]))[0])).to.equal('not-found');
    expect(checker.workersStarted).to.equal(started);
  });

  it('keeps what a module patches at top level in the checker: Map.prototype.set here is untouched', async () => {
    const set = Map.prototype.set;
    expect(problemOf((await checker.check([fixture('patchesMap')]))[0])).to.equal('valid');
    expect(Map.prototype.set).to.equal(set);
    expect((globalThis as { __slotwiseStolen?: unknown }).__slotwiseStolen).to.equal(undefined);
  });

  it('stops at the first invalid module and leaves the later ones unchecked', async () => {
    const verdicts = await checker.check([fixture('ok'), fixture('throwsOnLoad'), fixture('sleep')]);
    expect(verdicts.map(problemOf)).to.deep.equal(['valid', 'threw', 'unchecked']);
  });

  it('checks a module that concurrent checks need at once in one worker', async () => {
    const module = join(dir, 'shared.mjs');
    writeFileSync(module, 'export default async () => 2;\n');
    const started = checker.workersStarted;
    const all = await Promise.all([checker.check([module]), checker.check([module]), checker.check([module])]);
    expect(all.map(([v]) => problemOf(v))).to.deep.equal(['valid', 'valid', 'valid']);
    expect(checker.workersStarted).to.equal(started + 1);
  });

  it('refuses a relative path and bad options with IllegalArgumentError', async () => {
    expect(await checker.check(['tasks/ok.ts']).catch((e: unknown) => e)).to.be.instanceOf(IllegalArgumentError);
    expect(() => new DefaultTaskModuleChecker({ timeoutMs: 0 })).to.throw(
      IllegalArgumentError,
      /timeoutMs must be a finite number of ms > 0, got 0/,
    );
    expect(() => new DefaultTaskModuleChecker({ mode: 'fiber' as never })).to.throw(
      IllegalArgumentError,
      /mode must be 'thread' or 'process'/,
    );
  });

  it(
    'close() ends a check under way (it rejects with ' + 'IllegalStateError) and resolves once its worker exited',
    async () => {
      const closing = new DefaultTaskModuleChecker({ timeoutMs: 60_000 });
      const check = closing.check([fixture('hangsOnLoad')]).catch((e: unknown) => e);
      await eventually(() => closing.workersStarted === 1, 'the checker worker to start');
      await closing.close();
      expect(await check).to.be.instanceOf(IllegalStateError);
      expect(await closing.check([fixture('ok')]).catch((e: unknown) => e)).to.be.instanceOf(IllegalStateError);
    },
  );

  it('in process mode loads modules in a child process: exit and throw are verdicts there too', async () => {
    const inProcess = new DefaultTaskModuleChecker({ mode: 'process', timeoutMs: 10_000 });
    try {
      expect((await inProcess.check([fixture('ok')])).map(problemOf)).to.deep.equal(['valid']);
      const [exited] = await inProcess.check([fixture('exitsOnLoad')]);
      expect(exited).to.deep.include({ problem: 'exited' });
      expect((exited as { message: string }).message).to.match(/exited with code 3/);
      expect((await inProcess.check([fixture('throwsOnLoad')])).map(problemOf)).to.deep.equal(['threw']);
    } finally {
      await inProcess.close();
    }
  });
});
