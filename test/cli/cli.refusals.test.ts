/**
 * Every refusal of the slotwise commands, in this process: a bad flag or value, an unreadable job
 * file, a JobManager that is not there or does not answer, a REST refusal — each one line on
 * stderr, `slotwise <command>: <what is wrong>`, and exit code 2.
 */
import { expect } from 'chai';
import { once } from 'node:events';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCli } from '../../lib/cli/runCli.js';
import { cliInProcess, closedPort } from './support.js';

/** Refused with exit 2 and exactly one stderr line that contains `text`. */
async function refused(
  argv: readonly string[],
  text: string | RegExp,
  env: Record<string, string> = {},
): Promise<string> {
  const { code, lines } = await cliInProcess(argv, env);
  expect(code, lines.stderr.join('\n')).to.equal(2);
  expect(lines.stderr, argv.join(' ')).to.have.length(1);
  expect(lines.stdout, argv.join(' ')).to.deep.equal([]);
  if (typeof text === 'string') expect(lines.stderr[0]).to.contain(text);
  else expect(lines.stderr[0]).to.match(text);
  return lines.stderr[0]!;
}

describe('slotwise: refusals (one line, exit code 2)', function () {
  this.timeout(30_000);

  it('no command prints the usage to stderr; an unknown command names the commands', async () => {
    const none = await cliInProcess([]);
    expect(none.code).to.equal(2);
    expect(none.stderr).to.contain('Usage: slotwise <command>');
    await refused(
      ['deploy'],
      "slotwise: unknown command 'deploy'; commands: run, list, cancel, logs, overview, jobmanager, taskmanager",
    );
  });

  it('--help of every command prints its usage to stdout with exit 0', async () => {
    for (const command of ['run', 'list', 'cancel', 'logs', 'overview', 'jobmanager', 'taskmanager']) {
      const { code, stdout, stderr } = await cliInProcess([command, '--help']);
      expect(code, stderr).to.equal(0);
      expect(stdout).to.contain(`Usage: slotwise ${command}`);
    }
  });

  it('refuses unknown flags, stray arguments and missing values, naming them', async () => {
    await refused(['list', '--colour'], "slotwise list: unknown option '--colour'; list takes --jobmanager, --json");
    await refused(['list', 'extra'], "slotwise list: unexpected argument 'extra'");
    await refused(['run', '--jobmanager'], "option '--jobmanager <value>' argument missing");
    await refused(['run'], 'slotwise run: run takes one JOB_FILE, got none');
    await refused(['run', 'a.mjs', 'b.mjs'], 'run takes one JOB_FILE, got a.mjs b.mjs');
    await refused(['cancel'], 'cancel takes one JOB_ID, got none');
    await refused(
      ['run', '--detached', '--output', 'result.json', 'a.mjs'],
      'slotwise run: --output writes the result: it cannot go with --detached',
    );
    await refused(['run', '--output', '', 'a.mjs'], 'slotwise run: --output takes a file name');
  });

  it('refuses a JobManager URL that is not one, from the flag or from SLOTWISE_JOBMANAGER', async () => {
    await refused(
      ['list', '--jobmanager', 'ftp://host'],
      "slotwise list: --jobmanager must be the JobManager's REST URL, like http://127.0.0.1:8081 " +
        '(several: comma-separated), got "ftp://host"',
    );
    await refused(['overview', '--jobmanager', 'http://host:1/?a=b'], '--jobmanager must be');
    await refused(['list', '--jobmanager', 'http://127.0.0.1:1,ftp://host'], 'got "ftp://host"');
    await refused(['list'], "SLOTWISE_JOBMANAGER must be the JobManager's REST URL", {
      SLOTWISE_JOBMANAGER: 'localhost:8081',
    });
  });

  it('refuses a JobID that is not 32 hex characters before calling anyone', async () => {
    await refused(
      ['cancel', 'not-a-job'],
      'slotwise cancel: JOB_ID must be 32 lowercase hex characters, as slotwise list shows it, got "not-a-job"',
    );
  });

  it('answers an unreachable JobManager (nothing on the port) at once, for every command', async () => {
    const url = `http://127.0.0.1:${await closedPort()}`;
    for (const argv of [
      ['list'],
      ['overview'],
      ['cancel', '0123456789abcdef0123456789abcdef'],
      ['run', 'sumOfSquares.job.mjs'],
    ]) {
      await refused([...argv, '--jobmanager', url], `cannot reach the JobManager at ${url}: ECONNREFUSED`);
    }
    // The default comes from the environment.
    await refused(['list'], `cannot reach the JobManager at ${url}`, { SLOTWISE_JOBMANAGER: url });
  });

  it('gives up on a JobManager that accepts the connection and never answers, at the call deadline', async () => {
    const sockets: Socket[] = [];
    const silent = createServer((socket) => sockets.push(socket));
    silent.listen(0, '127.0.0.1');
    await once(silent, 'listening');
    try {
      const url = `http://127.0.0.1:${(silent.address() as { port: number }).port}`;
      await refused(['list', '--jobmanager', url], `the JobManager at ${url} did not answer GET /jobs within 5000 ms`);
    } finally {
      for (const socket of sockets) socket.destroy();
      silent.close();
    }
  });

  it(
    'refuses a job file that is missing, not a job, throws, ' + 'or holds a bad graph — before reaching any JobManager',
    async () => {
      const url = `http://127.0.0.1:${await closedPort()}`;
      await refused(
        ['run', '--jobmanager', url, 'missing.job.mjs'],
        'slotwise run: cannot read job file missing.job.mjs: no such file',
      );
      await refused(
        ['run', '--jobmanager', url, 'notAJob.mjs'],
        'job file notAJob.mjs must export default a JobGraphSpec ({ ' +
          'name, vertices, edges? }) or a function returning one, got number',
      );
      await refused(
        ['run', '--jobmanager', url, 'throwsOnLoad.job.mjs'],
        'job file throwsOnLoad.job.mjs could not be loaded: it threw while loading: no graph today',
      );
      await refused(['run', '--jobmanager', url, 'zeroParallelism.job.mjs'], /slotwise run: .*parallelism/);
      await refused(
        ['run', '--jobmanager', url, 'mapConfig.job.mjs'],
        "vertex 'sum': config.lookup is a Map, which JSON cannot hold",
      );
    },
  );

  it("refuses a job file with a syntax error naming file, line and column, its own or an import's", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'slotwise-job-file-'));
    try {
      writeFileSync(join(dir, 'broken.job.mjs'), "export default {\n  name: 'broken',\n  vertices: [1, ]],\n};\n");
      mkdirSync(join(dir, 'parts'));
      writeFileSync(join(dir, 'parts', 'vertices.mjs'), 'export const vertices = [\n  { id: 1 }}\n];\n');
      writeFileSync(
        join(dir, 'imports.job.mjs'),
        "import { vertices } from './parts/vertices.mjs';\nexport default { name: 'x', vertices };\n",
      );
      // Under tsx (as this test runs), a TypeScript job file: tsx's error names no place either.
      writeFileSync(
        join(dir, 'typed.job.ts'),
        "const n: number = 1;\nexport default { name: 'x', vertices: [n, ]] };\n",
      );
      const run = async (file: string) => {
        const stderr: string[] = [];
        const code = await runCli(['run', '--jobmanager', `http://127.0.0.1:${await closedPort()}`, file], {
          stdout: (line) => expect.fail(`printed ${line}`),
          stderr: (line) => stderr.push(line),
          env: {},
          cwd: dir,
        });
        expect(code).to.equal(2);
        return stderr;
      };
      const refusal = (file: string, why: string) => `slotwise run: job file ${file} could not be loaded: ${why}`;
      expect(await run('broken.job.mjs')).to.deep.equal([
        refusal('broken.job.mjs', "broken.job.mjs:3:18: SyntaxError: Unexpected token ']'"),
      ]);
      expect(await run('imports.job.mjs')).to.deep.equal([
        refusal('imports.job.mjs', "parts/vertices.mjs:2:12: SyntaxError: Unexpected token '}'"),
      ]);
      expect(await run('typed.job.ts')).to.deep.equal([
        refusal('typed.job.ts', 'typed.job.ts:2:44: Expected "}" but found "]"'),
      ]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('refuses bad jobmanager flags before starting anything', async () => {
    await refused(
      ['jobmanager', '--rest-port', '70000'],
      'slotwise jobmanager: --rest-port must be an integer from 0 to 65535, got "70000"',
    );
    await refused(['jobmanager', '--rest-port', 'http'], '--rest-port must be an integer');
    await refused(['jobmanager', '--rest-address', 'a b'], '--rest-address must be a host name or IP address');
    await refused(
      ['jobmanager', '--local-taskmanagers', '0'],
      '--local-taskmanagers must be an integer from 1 to 256, got "0"',
    );
    await refused(
      ['jobmanager', '--local-taskmanagers', '1', '--mode', 'fiber'],
      '--mode must be one of thread, process, got "fiber"',
    );
    await refused(
      ['jobmanager', '--local-taskmanagers', '1', '--nats', 'nats://127.0.0.1:4222'],
      '--nats and --local-taskmanagers exclude each other',
    );
    await refused(['jobmanager', '--slots', '2'], '--slots goes with --local-taskmanagers');
    await refused(
      ['jobmanager', '--nats', 'http://127.0.0.1:4222'],
      '--nats must be a NATS server URL like nats://127.0.0.1:4222 (several: comma-separated), ' +
        'got "http://127.0.0.1:4222"',
    );
    await refused(['jobmanager', '--cluster-id', 'a.b'], '--cluster-id must be 1 to 64 letters, digits, _ or -');
  });

  it('refuses bad taskmanager flags before connecting', async () => {
    await refused(
      ['taskmanager', '--slots', '0'],
      'slotwise taskmanager: --slots must be an integer from 1 to 1024, got "0"',
    );
    await refused(['taskmanager', '--cpu-cores', '-1'], '--cpu-cores must be a number > 0, like 2 or 0.5, got "-1"');
    await refused(['taskmanager', '--cpu-cores', 'two'], '--cpu-cores must be a number > 0, like 2 or 0.5, got "two"');
    await refused(
      ['taskmanager', '--task-heap', '12parsecs'],
      '--task-heap must be a memory size like 512m, 1g or 256 mb: "12parsecs" has unknown unit "parsecs"',
    );
    await refused(['taskmanager', '--managed-memory', 'lots'], '--managed-memory must be a memory size');
    await refused(['taskmanager', '--network-memory', '-5m'], '--network-memory must be a memory size');
    await refused(['jobmanager', '--rest-port', '-1'], '--rest-port must be an integer from 0 to 65535, got "-1"');
    await refused(['taskmanager', '--resource', 'gpu'], '--resource must be NAME=AMOUNT, like gpu=2, got "gpu"');
    await refused(['taskmanager', '--resource', 'gpu=1', '--resource', 'gpu=2'], '--resource names gpu twice');
    await refused(['taskmanager', '--mode', 'vm'], '--mode must be one of thread, process, got "vm"');
    await refused(['taskmanager', '--nats', 'nats//x'], '--nats must be a NATS server URL');
  });

  it(
    'jobmanager and taskmanager over NATS: without a reachable ' +
      'session cluster, one line and exit 2 within seconds',
    async () => {
      const nats = `nats://127.0.0.1:${await closedPort()}`;
      // This build may lack lib/cluster ("not available"), or have it and find no NATS server there.
      const missing = String.raw`the NATS session cluster \(lib\/cluster\) is not available in this build`;
      const why = `(${missing}|.*(NATS|nats|connect|ECONNREFUSED))`;
      await refused(['jobmanager', '--nats', nats, '--rest-port', '0'], new RegExp(`slotwise jobmanager: ${why}`));
      await refused(['taskmanager', '--nats', nats], new RegExp(`slotwise taskmanager: ${why}`));
    },
  );
});
