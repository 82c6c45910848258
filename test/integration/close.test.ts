/**
 * close() leaves nothing running: a process that starts a MiniCluster, runs a job and closes the
 * cluster without process.exit ends on its own, having canceled its jobs.
 */
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { MiniCluster } from '../../lib/MiniCluster.js';
import { childProcesses } from '../support/childProcesses.js';

/** This process's child node processes, zombies (state Z, not yet reaped) included. */
const nodeChildren = () => childProcesses().filter((child) => child.comm === 'node');

function runScript(mode: 'thread' | 'process'): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const script = fileURLToPath(new URL('../fixtures/closeWhileRunning.ts', import.meta.url));
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', script, mode],
      { timeout: 45_000, killSignal: 'SIGKILL' },
      (error, stdout, stderr) => {
        resolve({ code: error ? ((error as { code?: number }).code ?? null) : 0, stdout, stderr });
      },
    );
  });
}

describe('MiniCluster.close', function () {
  this.timeout(60_000);

  it(
    'cancels running and waiting jobs, stops every ' + 'TaskExecutor thread, and lets the process exit by itself',
    async () => {
      const { code, stdout, stderr } = await runScript('thread');
      expect(code, `the process did not end by itself (killed after 45 s?)\n${stderr}`).to.equal(0);
      expect(JSON.parse(stdout.trim().split('\n').at(-1)!)).to.deep.equal({
        running: 'canceled',
        waiting: 'canceled',
        executors: 0,
      });
    },
  );

  it('does the same with TaskExecutors in child processes', async () => {
    const { code, stdout, stderr } = await runScript('process');
    expect(code, `the process did not end by itself (killed after 45 s?)\n${stderr}`).to.equal(0);
    expect(JSON.parse(stdout.trim().split('\n').at(-1)!)).to.deep.equal({
      running: 'canceled',
      waiting: 'canceled',
      executors: 0,
    });
  });

  it(
    'resolves only once every child process has exited and been ' +
      'reaped: TaskExecutors and the task module checker, none left defunct',
    async function () {
      if (process.platform !== 'linux') this.skip();
      const before = new Set(nodeChildren().map((c) => c.pid));
      const cluster = await MiniCluster.start({ mode: 'process', taskExecutors: 2, slotsPerTaskExecutor: 1 });
      try {
        const job = await cluster.submitJob({
          name: 'one task',
          vertices: [{ id: 'ok', taskModule: new URL('../fixtures/tasks/ok.ts', import.meta.url), parallelism: 1 }],
        });
        expect((await job.result).status).to.equal('finished');
        expect(nodeChildren().filter((c) => !before.has(c.pid)).length, 'the TaskExecutor processes').to.be.at.least(2);
      } finally {
        await cluster.close();
      }
      expect(nodeChildren().filter((c) => !before.has(c.pid))).to.deep.equal([]);
    },
  );
});
