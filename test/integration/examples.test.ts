/**
 * The examples the README points to run as a newcomer runs them: each in its own process, which
 * must end by itself with exit code 0 and print the right answer.
 */
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';

function run(example: string, args: string[] = []): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const file = fileURLToPath(new URL(`../../examples/${example}`, import.meta.url));
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      ['--import', 'tsx', file, ...args],
      { timeout: 50_000, killSignal: 'SIGKILL' },
      (error, stdout, stderr) => {
        resolve({ code: error ? ((error as { code?: number }).code ?? null) : 0, stdout, stderr });
      },
    );
  });
}

describe('examples', function () {
  this.timeout(60_000);

  it('the README quick start prints the sum of the squares of 1..100', async () => {
    const { code, stdout, stderr } = await run('quickstart/main.ts');
    expect(code, stderr).to.equal(0);
    expect(stdout).to.contain('finished [ 338350 ]');
    expect(stdout.match(/^square#\d runs on taskexecutor-/gm)).to.have.length(4);
  });

  it('the demo (npm start) counts the words right, shows the slot table, and exits 0', async () => {
    const { code, stdout, stderr } = await run('demo.ts', ['--lines', '300', '--counters', '3']);
    expect(code, stderr).to.equal(0);
    expect(stdout).to.contain('the counts match a single loop over the same text');
    expect(stdout).to.match(/count#2 \((running|deploying|scheduled)\)/);
    expect(stdout).to.contain('cluster closed');
  });

  it('the demo refuses a bad flag with its usage and exit code 2', async () => {
    const { code, stderr } = await run('demo.ts', ['--lines', 'many']);
    expect(code).to.equal(2);
    expect(stderr).to.contain('--lines must be an integer >= 1');
    expect(stderr).to.contain('Usage: npm start -- [options]');
  });

  it('the demo refuses a negative count with the range message, not parseArgs\' "ambiguous argument"', async () => {
    const { code, stderr } = await run('demo.ts', ['--executors', '-1']);
    expect(code).to.equal(2);
    expect(stderr).to.contain("--executors must be an integer >= 1, got '-1'");
    expect(stderr).to.contain('--seed <n>');
  });

  it('the demo in process mode says it runs child processes, and counts right', async () => {
    const { code, stdout, stderr } = await run('demo.ts', [
      '--mode',
      'process',
      '--lines',
      '50',
      '--parallelism',
      '1',
      '--counters',
      '1',
    ]);
    expect(code, stderr).to.equal(0);
    expect(stdout).to.contain('cluster up: 2 TaskExecutor(s) (child processes) × 4 slots');
    expect(stdout).to.contain('the counts match a single loop over the same text');
  });
});
