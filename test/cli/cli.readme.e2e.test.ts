/**
 * The README's CLI section as a reader follows it from a clone's root: the job file it shows and the
 * quick start's task modules beside it are the files of examples/cli/, and its commands, run as
 * written (`slotwise` being `node --import tsx lib/cli/main.ts`, as the README says for a clone),
 * print what its comments say. Also what the README states of the package's entry points, of where a
 * TaskManager in thread mode runs its TaskExecutor, and of a local cluster's slots.
 */
import { expect } from 'chai';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { cliChild, cliInProcess, startJobManagerChild, TSX_CLI } from './support.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const read = (path: string) => readFileSync(new URL(path, new URL('../../', import.meta.url)), 'utf8');
const README = read('README.md');

/** The README's section under `heading`, up to the next section of level 2. */
function section(heading: string): string {
  const start = README.indexOf(`\n${heading}\n`);
  expect(start, heading).to.be.greaterThan(-1);
  const end = README.indexOf('\n## ', start + 1);
  return README.slice(start, end === -1 ? undefined : end);
}

/** The code blocks of a section in `language`, as written. */
const blocks = (text: string, language: string) =>
  [...text.matchAll(new RegExp(`\`\`\`${language}\\n([\\s\\S]*?)\`\`\``, 'g'))].map((m) => m[1]!);

/** The block whose first line names `file` (`// file — …`). */
function blockOf(text: string, file: string): string {
  const found = blocks(text, 'js').filter((code) => code.startsWith(`// ${file} `));
  expect(found, `the README's block of ${file}`).to.have.length(1);
  return found[0]!;
}

const CLI_SECTION = section('## CLI');
/** The CLI section's commands: each line of its shell block, comment apart, as argv and comment. */
const COMMANDS = blocks(CLI_SECTION, 'sh')[0]!
  .split('\n')
  .map((line) => /^(slotwise\s[^#]*?)\s*(?:#\s*(.*))?$/.exec(line))
  .filter((m) => m !== null)
  .map((m) => ({ argv: m[1]!.split(/\s+/).slice(1), comment: m[2] ?? '' }));

describe("the README's CLI section, followed from a clone's root", function () {
  this.timeout(120_000);

  it("shows the files of examples/cli/: its job file, and the quick start's task modules beside it", () => {
    expect(blockOf(CLI_SECTION, 'sumOfSquares.job.mjs')).to.equal(read('examples/cli/sumOfSquares.job.mjs'));
    const quickStart = section('## Quick start: a job on a MiniCluster');
    for (const file of ['square.mjs', 'sum.mjs'])
      expect(blockOf(quickStart, file)).to.equal(read(`examples/cli/${file}`));
    expect(
      COMMANDS.map(({ argv }) => argv.filter((a) => a.startsWith('--') || !a.includes('/')).join(' ')),
    ).to.deep.equal([
      'jobmanager --local-taskmanagers 2 --slots 2 --rest-port 8081',
      'run',
      'run --json',
      'run --detached',
      'list',
      'overview',
      'cancel 6f0c…',
    ]);
    for (const { argv } of COMMANDS.filter(({ argv }) => argv[0] === 'run'))
      expect(argv.at(-1)).to.equal('examples/cli/sumOfSquares.job.mjs');
  });

  describe('its commands, as written', () => {
    let jm: Awaited<ReturnType<typeof startJobManagerChild>> | undefined;
    /** The README's command of that name (and flag, for run), in the order the first test holds. */
    const command = (name: string, flag?: string) =>
      COMMANDS.find(
        ({ argv }) =>
          argv[0] === name &&
          (flag === undefined ? !argv.includes('--json') && !argv.includes('--detached') : argv.includes(flag)),
      )!;
    /** A command of the README run from the clone's root, the JobManager named as the README says it may be. */
    const slotwise = (argv: readonly string[]) =>
      cliChild(TSX_CLI, argv, { SLOTWISE_JOBMANAGER: jm!.url }, 60_000, ROOT);

    before(async () => {
      // The one change: port 8081 may be taken on this machine; every other command finds the
      // JobManager through $SLOTWISE_JOBMANAGER, which the README names as their default.
      const argv = command('jobmanager').argv.slice(1);
      argv[argv.indexOf('--rest-port') + 1] = '0';
      jm = await startJobManagerChild(TSX_CLI, argv, ROOT);
    });

    after(async () => {
      await jm?.stop();
    });

    it('jobmanager: serves the cluster on REST, its slots of the shape the README states', async () => {
      expect(jm!.url).to.match(/^http:\/\/127\.0\.0\.1:\d+$/);
      expect(jm!.output()).to.contain(
        'an in-process cluster of 2 TaskExecutor(s) × 2 slot(s) (worker threads), ' +
          'each slot 1 core(s) and 128 mb of task heap',
      );
      expect(CLI_SECTION.replace(/\s+/g, ' ')).to.contain(
        'each of the `--slots 2` above has 1 core and 128 mb of task heap',
      );
      const { taskmanagers } = (await (await fetch(`${jm!.url}/taskmanagers`)).json()) as {
        taskmanagers: { id: string }[];
      };
      const details = (await (await fetch(`${jm!.url}/taskmanagers/${taskmanagers[0]!.id}`)).json()) as {
        slots: { resources: { cpuCores: number; taskHeapMemory: number } }[];
      };
      expect(details.slots).to.have.length(2);
      for (const { resources } of details.slots)
        expect([resources.cpuCores, resources.taskHeapMemory]).to.deep.equal([1, 128 * 1024 * 1024]);
    });

    it('run: prints each subtask as it runs, then the result its comment shows; exit 0', async () => {
      const { argv, comment } = command('run');
      const shown = /\((sum: \[\d+\])\)/.exec(comment)?.[1];
      expect(shown, comment).to.equal('sum: [338350]');
      const { code, stdout, stderr } = await slotwise(argv);
      expect(code, stderr).to.equal(0);
      expect(stdout.match(/^square#\d running on taskexecutor-\S+$/gm)).to.have.length(4);
      expect(stdout.trimEnd().split('\n').at(-1)).to.equal(shown);
    });

    it('run --json: the result as one JSON line on stdout, progress on stderr', async () => {
      const { code, stdout, stderr } = await slotwise(command('run', '--json').argv);
      expect(code, stderr).to.equal(0);
      expect(stdout.trimEnd().split('\n')).to.have.length(1);
      expect(JSON.parse(stdout)).to.deep.include({ status: 'finished', outputs: { sum: [338350] } });
      expect(stderr).to.contain('square#0 running on taskexecutor-');
    });

    it('run --detached prints the JobID; list shows it; overview shows the TaskManagers and their slots', async () => {
      const detached = await slotwise(command('run', '--detached').argv);
      expect(detached.code, detached.stderr).to.equal(0);
      const jobId = detached.stdout.trim();
      expect(jobId).to.match(/^[0-9a-f]{32}$/);
      const listed = await slotwise(command('list').argv);
      expect(listed.code, listed.stderr).to.equal(0);
      expect(listed.stdout).to.match(/^JOB ID\s+STATUS\s+NAME$/m);
      expect(listed.stdout).to.match(new RegExp(`^${jobId}  [A-Z]+ +sum of squares$`, 'm'));
      const overview = await slotwise(command('overview').argv);
      expect(overview.code, overview.stderr).to.equal(0);
      expect(overview.stdout).to.match(/^2 TaskManager\(s\), 4 slots \(\d free\), \d job\(s\) running$/m);
      expect(overview.stdout).to.match(/^ +executor +slot +state +resources +subtasks *$/m);
      for (const line of overview.stdout.trimEnd().split('\n')) expect([...line].length, line).to.be.at.most(100);
    });

    it('cancel <JobID>: cancels a running job', async () => {
      const sleeper = fileURLToPath(new URL('../fixtures/cli/sleeper.job.mjs', import.meta.url));
      const detached = await slotwise(['run', '--detached', sleeper]);
      expect(detached.code, detached.stderr).to.equal(0);
      const jobId = detached.stdout.trim();
      const argv = command('cancel').argv.map((arg) => (arg.endsWith('…') ? jobId : arg));
      const { code, stdout, stderr } = await slotwise(argv);
      expect(code, stderr).to.equal(0);
      expect(stdout.trim()).to.equal(`canceling job ${jobId}`);
    });

    it('Ctrl-C stops the jobmanager: exit code 0', async () => {
      const exited = new Promise<number | null>((resolve) => jm!.child.once('exit', resolve));
      jm!.child.kill('SIGINT');
      expect(await exited).to.equal(0);
      expect(jm!.output()).to.contain('slotwise jobmanager: stopped');
    });
  });
});

describe("the README's statements about the package and the CLI", () => {
  it('counts the entry points package.json exports, and names each', () => {
    const { exports } = JSON.parse(read('package.json')) as { exports: Record<string, unknown> };
    const entries = Object.keys(exports)
      .filter((path) => path !== './package.json')
      .map((path) => `slotwise${path.slice(1)}`);
    const numbers = ['One', 'Two', 'Three', 'Four', 'Five', 'Six', 'Seven', 'Eight'];
    const install = section('## Install');
    expect(install).to.contain(`${numbers[entries.length - 1]} entry points`);
    for (const entry of entries) expect(install, entry).to.contain(`| \`'${entry}'\` |`);
  });

  it('says where a thread-mode TaskManager runs its TaskExecutor as `slotwise taskmanager --help` does', async () => {
    const { stdout } = await cliInProcess(['taskmanager', '--help']);
    const mode = stdout.slice(stdout.indexOf('--mode'));
    expect(mode).to.contain("the TaskExecutor on this process's main thread");
    expect(mode).to.not.contain('worker thread');
    expect(read('docs/cluster.md').replace(/\s+/g, ' ')).to.contain(
      "A TaskManager in `mode: 'thread'` runs its TaskExecutor on its main thread",
    );
  });
});
