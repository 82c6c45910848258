/**
 * Under tsx, the esbuild children tsx starts in the threads we start (a task module checker, task
 * threads, a TaskExecutor thread) are ended and reaped before their thread ends (issue 24 item 8;
 * lib/rpc/esbuildReaper.ts): none is left defunct. Each test writes `.ts` modules of its own, so
 * tsx's cache cannot serve them and esbuild has to compile them.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { expect } from 'chai';
import { MiniCluster } from '../../lib/MiniCluster.js';
import { startWorker } from '../../lib/rpc/startWorker.js';
import { childProcesses } from '../support/childProcesses.js';

/** This process's children as `pid (command)`; with `defunct`, only those exited and never reaped. */
const children = (defunct = false): string[] =>
  childProcesses()
    .filter((child) => !defunct || child.state === 'Z')
    .map((child) => `${child.pid} (${child.comm})`);

/**
 * The children started since `before` that are left defunct, once every other one of them has
 * ended (a child whose thread ended exits when it sees its stdin closed, a moment later) or 3 s
 * have passed (one still running then is not ours: this process's own tsx may start one).
 */
async function leftDefunct(before: ReadonlySet<string>): Promise<string[]> {
  const deadline = Date.now() + 3_000;
  const fresh = () => children().filter((child) => !before.has(child));
  const defunct = () => children(true).filter((child) => !before.has(child));
  while (fresh().length > defunct().length && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
  return defunct();
}

/** A directory of ES modules (`"type": "module"`), with `.ts` files whose text no earlier run had. */
function freshModules(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), 'slotwise-ts-modules-'));
  writeFileSync(join(dir, 'package.json'), '{ "type": "module" }\n');
  const stamp = `${process.pid}-${Date.now()}-${Math.random()}`;
  for (const [name, source] of Object.entries(files)) writeFileSync(join(dir, name), `// ${stamp}\n${source}`);
  return dir;
}

describe('esbuild children of tsx in our threads', function () {
  this.timeout(60_000);
  const dirs: string[] = [];

  before(function () {
    if (process.platform !== 'linux') this.skip();
  });

  after(() => {
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });

  it('a worker thread on a .ts entry that compiles new modules leaves no defunct child when it ends', async () => {
    const dir = freshModules({
      'entry.ts': [
        "import { parentPort } from 'node:worker_threads';",
        "import { answer } from './answer.js';",
        'const checked: number = answer;',
        'parentPort!.postMessage(checked);',
      ].join('\n'),
      'answer.ts': 'export const answer: number = 42;\n',
    });
    dirs.push(dir);
    const before = new Set(children());
    const worker = startWorker(pathToFileURL(join(dir, 'entry.ts')));
    const [answer] = await Promise.all([
      new Promise((resolve, reject) => worker.once('message', resolve).once('error', reject)),
      new Promise((resolve) => worker.once('exit', resolve)),
    ]);
    expect(answer).to.equal(42);
    expect(await leftDefunct(before)).to.deep.equal([]);
  });

  const closed = 'a MiniCluster that ran a job with a .ts task module leaves no defunct child once closed';
  for (const cache of ['served', 'off'] as const)
    it(`${closed} (tsx's cache ${cache})`, async () => {
      const dir = freshModules({
        'task.ts': [
          "import { double } from './double.js';",
          'export default async function task(context: { subtaskIndex: number }): Promise<number> {',
          '  return double(context.subtaskIndex + 1);',
          '}',
        ].join('\n'),
        'double.ts': 'export const double = (n: number): number => 2 * n;\n',
      });
      dirs.push(dir);
      const before = new Set(children());
      // Off: every thread compiles all it loads (the runtime too), as on a machine whose cache is empty.
      if (cache === 'off') process.env['TSX_DISABLE_CACHE'] = '1';
      const cluster = await MiniCluster.start({ taskExecutors: 1, slotsPerTaskExecutor: 2 }).finally(
        () => delete process.env['TSX_DISABLE_CACHE'],
      );
      try {
        const job = await cluster.submitJob({
          name: 'typescript task',
          vertices: [{ id: 'task', taskModule: join(dir, 'task.ts'), parallelism: 2 }],
        });
        const result = await job.result;
        expect(result.status, result.error?.message).to.equal('finished');
        expect(result.outputs['task']).to.deep.equal([2, 4]);
      } finally {
        await cluster.close();
      }
      expect(await leftDefunct(before)).to.deep.equal([]);
    });
});
