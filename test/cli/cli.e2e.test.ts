/**
 * The slotwise command end to end, each step a child process: `slotwise jobmanager
 * --local-taskmanagers 1` serves a MiniCluster over REST; `slotwise run` submits job files (their
 * task modules bundled with their imports) and prints progress and the exact result; `list`,
 * `overview` and `cancel` work against it; refusals answer one line and exit code 2.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { until } from '../support/eventually.js';
import { cliChild, FIXTURES, startJobManagerChild, TSX_CLI } from './support.js';

describe('slotwise CLI against slotwise jobmanager --local-taskmanagers (child processes)', function () {
  this.timeout(120_000);
  let jm: Awaited<ReturnType<typeof startJobManagerChild>>;
  const cli = (...argv: string[]) => cliChild(TSX_CLI, argv);

  before(async () => {
    jm = await startJobManagerChild(TSX_CLI, ['--local-taskmanagers', '1', '--slots', '2', '--rest-port', '0']);
  });

  after(async () => {
    await jm?.stop();
  });

  it('prints the REST URL on a line of its own', () => {
    expect(jm.url).to.match(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(jm.output()).to.contain('an in-process cluster of 1 TaskExecutor(s) × 2 slot(s) (worker threads)');
  });

  it('run: bundles the task modules, prints each subtask as it runs, then the exact result; exit 0', async () => {
    const { code, stdout, stderr } = await cli('run', '--jobmanager', jm.url, 'sumOfSquares.job.mjs');
    expect(code, stderr).to.equal(0);
    expect(stdout).to.match(/^submitted job 'sum of squares' as [0-9a-f]{32}$/m);
    expect(stdout.match(/^square#\d running on taskexecutor-\S+$/gm)).to.have.length(4);
    expect(stdout).to.match(/^sum#0 finished$/m);
    expect(stdout).to.match(/^job finished in \d+ ms \(0 restarts\)$/m);
    expect(stdout.trimEnd().split('\n').at(-1)).to.equal('sum: [338350]');
  });

  it('run: a 3 MB result prints as its size on the terminal; --output FILE has every byte; exit 0', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'slotwise-cli-output-'));
    try {
      const file = join(dir, 'result.json');
      const { code, stdout, stderr } = await cli('run', '--jobmanager', jm.url, '--output', file, 'bigResult.job.mjs');
      expect(code, stderr).to.equal(0);
      expect(stdout.trimEnd().split('\n').at(-1)).to.equal(`bytes: ["<${3 * 1024 * 1024} bytes>"]`);
      // Streamed from the JobManager, and written to the file as one line, chunk by chunk.
      const text = readFileSync(file, 'utf8');
      expect(stdout).to.contain(`result written to ${file} (${Buffer.byteLength(text)} bytes of JSON)`);
      expect(text.indexOf('\n')).to.equal(text.length - 1);
      const result = JSON.parse(text) as {
        status: string;
        outputs: { bytes: [{ base64: string }] };
      };
      expect(result.status).to.equal('finished');
      const bytes = Buffer.from(result.outputs.bytes[0].base64, 'base64');
      expect(bytes.length).to.equal(3 * 1024 * 1024);
      expect(bytes.every((b) => b === 7)).to.equal(true);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it(
    'run --json: one JSON line with the result on stdout ' +
      '(progress on stderr); SLOTWISE_JOBMANAGER names the JobManager',
    async () => {
      const { code, stdout, stderr } = await cliChild(TSX_CLI, ['run', '--json', 'sumOfSquares.job.mjs'], {
        SLOTWISE_JOBMANAGER: jm.url,
      });
      expect(code, stderr).to.equal(0);
      const lines = stdout.trimEnd().split('\n');
      expect(lines).to.have.length(1);
      const result = JSON.parse(lines[0]!);
      expect(result).to.deep.include({
        name: 'sum of squares',
        status: 'finished',
        outputs: { sum: [338350] },
        error: null,
        restarts: 0,
      });
      expect(result.jobId).to.match(/^[0-9a-f]{32}$/);
      expect(stderr).to.contain('square#0 running on taskexecutor-');
    },
  );

  it("run: a job whose task throws fails with exit 1 and the task's error", async () => {
    const { code, stdout } = await cli('run', '--jobmanager', jm.url, 'failing.job.mjs');
    expect(code).to.equal(1);
    expect(stdout).to.match(/^job failed in \d+ ms \(0 restarts\): TaskExecutionError: .*no luck today$/m);
    // Then the root cause: where it failed, the error, and the first frames of the task's own stack.
    const lines = stdout.trimEnd().split('\n');
    const at = lines.findIndex((line) => line.startsWith('root cause'));
    expect(lines[at]).to.match(
      /^root cause \(throws \(1\/1\)#0 on taskexecutor-[0-9a-f]+, slot [0-9a-f]{8}\): TaskExecutionError: .*no luck/,
    );
    // The task ran from its uploaded bundle; its stack names the user's file and line (the bundle's source map).
    expect(lines[at + 1]).to.equal(`    at throws (${FIXTURES}throws.mjs:2:9)`);
    expect(stdout).not.to.match(/[0-9a-f]{64}\.mjs/);
    const jobId = /^submitted job 'failing' as ([0-9a-f]{32})$/m.exec(stdout)![1]!;
    const { exceptionHistory } = (await (await fetch(`${jm.url}/jobs/${jobId}/exceptions`)).json()) as {
      exceptionHistory: { entries: Array<{ stacktrace: string }> };
    };
    expect(exceptionHistory.entries[0]!.stacktrace)
      .to.contain(`\n    at throws (${FIXTURES}throws.mjs:2:9)\n`)
      .and.not.match(/[0-9a-f]{64}\.mjs/);
  });

  it('run --detached prints the JobID; list and overview show the job running; cancel cancels it', async () => {
    const detached = await cli('run', '--jobmanager', jm.url, '--detached', 'sleeper.job.mjs');
    expect(detached.code, detached.stderr).to.equal(0);
    const jobId = detached.stdout.trim();
    expect(jobId).to.match(/^[0-9a-f]{32}$/);

    const listed = await cli('list', '--jobmanager', jm.url);
    expect(listed.code, listed.stderr).to.equal(0);
    expect(listed.stdout).to.match(/^JOB ID\s+STATUS\s+NAME$/m);
    expect(listed.stdout).to.match(new RegExp(`^${jobId}  (CREATED|RUNNING) +sleeper$`, 'm'));
    expect(listed.stdout).to.match(/^[0-9a-f]{32} {2}FINISHED +sum of squares$/m);

    const table = await until('the sleeper in the slot table', async () => {
      const shown = await cli('overview', '--jobmanager', jm.url);
      return shown.stdout.includes('sleep#0 (running)') ? shown : undefined;
    });
    expect(table.code).to.equal(0);
    expect(table.stdout).to.match(/^1 TaskManager\(s\), 2 slots \(1 free\), 1 job\(s\) running$/m);
    expect(table.stdout).to.match(/taskexecutor-\S+\s+0\s+allocated\s+1 core, 128 mb heap\s+sleep#0 \(running\)/);

    const canceled = await cli('cancel', '--jobmanager', jm.url, jobId);
    expect(canceled.code, canceled.stderr).to.equal(0);
    expect(canceled.stdout.trim()).to.equal(`canceling job ${jobId}`);
    const json = await until('the sleeper canceled', async () => {
      const list = JSON.parse((await cli('list', '--jobmanager', jm.url, '--json')).stdout) as Array<{
        id: string;
        status: string;
      }>;
      return list.find((job) => job.id === jobId && job.status === 'CANCELED');
    });
    expect(json.status).to.equal('CANCELED');

    const again = await cli('cancel', '--jobmanager', jm.url, jobId);
    expect(again.code).to.equal(2);
    expect(again.stderr.trim()).to.equal(
      `slotwise cancel: job ${jobId} has already canceled: there is nothing to cancel`,
    );
  });

  it('refuses bad input with one line and exit 2: an unknown job, a missing job file, a bad flag', async () => {
    const unknown = await cli('cancel', '--jobmanager', jm.url, '0123456789abcdef0123456789abcdef');
    expect(unknown.code).to.equal(2);
    expect(unknown.stderr.trim().split('\n')).to.deep.equal([
      'slotwise cancel: no job 0123456789abcdef0123456789abcdef in this cluster (ended ' +
        'jobs are kept for jobstore.expiration-time, at most jobstore.max-capacity)',
    ]);
    const missing = await cli('run', '--jobmanager', jm.url, 'nothere.job.mjs');
    expect(missing.code).to.equal(2);
    expect(missing.stderr.trim().split('\n')).to.deep.equal([
      'slotwise run: cannot read job file nothere.job.mjs: no such file',
    ]);
    const flag = await cli('overview', '--jobmanager', jm.url, '--wide');
    expect(flag.code).to.equal(2);
    expect(flag.stderr.trim()).to.equal(
      "slotwise overview: unknown option '--wide'; overview takes --jobmanager, --json, --token-file, --ca, " +
        '--cert, --key (slotwise overview --help)',
    );
  });

  it('the JobManager stops on SIGTERM with exit code 0', async () => {
    expect(await jm.stop()).to.equal(0);
    expect(jm.output()).to.contain('slotwise jobmanager: stopped');
  });
});
