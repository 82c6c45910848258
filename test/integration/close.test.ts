/**
 * close() leaves nothing running: a process that starts a MiniCluster, runs a job and closes the
 * cluster without process.exit ends on its own, having canceled its jobs.
 */
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';

function runScript(mode: 'thread' | 'process'): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const script = fileURLToPath(new URL('../fixtures/closeWhileRunning.ts', import.meta.url));
  return new Promise((resolve) => {
    execFile(process.execPath, ['--import', 'tsx', script, mode], { timeout: 45_000, killSignal: 'SIGKILL' }, (error, stdout, stderr) => {
      resolve({ code: error ? ((error as { code?: number }).code ?? null) : 0, stdout, stderr });
    });
  });
}

describe('MiniCluster.close', function () {
  this.timeout(60_000);

  it('cancels running and waiting jobs, stops every TaskExecutor thread, and lets the process exit by itself', async () => {
    const { code, stdout, stderr } = await runScript('thread');
    expect(code, `the process did not end by itself (killed after 45 s?)\n${stderr}`).to.equal(0);
    expect(JSON.parse(stdout.trim().split('\n').at(-1)!)).to.deep.equal({ running: 'canceled', waiting: 'canceled', executors: 0 });
  });

  it('does the same with TaskExecutors in child processes', async () => {
    const { code, stdout, stderr } = await runScript('process');
    expect(code, `the process did not end by itself (killed after 45 s?)\n${stderr}`).to.equal(0);
    expect(JSON.parse(stdout.trim().split('\n').at(-1)!)).to.deep.equal({ running: 'canceled', waiting: 'canceled', executors: 0 });
  });
});
