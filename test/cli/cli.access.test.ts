/**
 * The commands' credentials, in this process: flags that cannot work together refused before
 * anything starts; then a session cluster on a nats-server with authorization — `slotwise
 * jobmanager` and `slotwise taskmanager` join it with a user whose password comes from the
 * environment, the JobManager's REST API asks for the token its file holds, and `slotwise overview`
 * sends it (`--token-file`, or SLOTWISE_REST_TOKEN) while `slotwise list` without it is refused.
 */
import { expect } from 'chai';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCli } from '../../lib/cli/runCli.js';
import { until } from '../support/eventually.js';
import { natsServerOrSkip, startNatsServer, type NatsServer } from '../support/natsServer.js';
import { cliInProcess } from './support.js';

const PASSWORD = 'a password only the environment knows';
const TOKEN = 'the-rest-token-of-this-test-0123456789';

/** A long-running command in this process: its output lines, and a stop (as Ctrl-C) resolving with its exit code. */
function start(argv: readonly string[], env: Record<string, string>, cwd: string) {
  const lines: string[] = [];
  const shutdown = new AbortController();
  const exited = runCli(argv, {
    stdout: (line) => lines.push(line),
    stderr: (line) => lines.push(line),
    env,
    cwd,
    shutdown: shutdown.signal,
  });
  return {
    lines,
    exited,
    stop: () => {
      shutdown.abort();
      return exited;
    },
  };
}

describe('slotwise: credentials for NATS and the REST API', function () {
  this.timeout(60_000);

  it('refuses credential flags that cannot work, before starting anything', async () => {
    for (const [argv, env, text] of [
      [['jobmanager', '--rest-address', '0.0.0.0'], {}, '--rest-address 0.0.0.0 reaches beyond this machine'],
      [['taskmanager', '--nats-user', 'app'], {}, '--nats-user app needs its password: in SLOTWISE_NATS_PASSWORD'],
      [['taskmanager', '--nats-cert', 'client.pem'], {}, '--nats-cert and --nats-key go together'],
      [['jobmanager', '--rest-key', 'key.pem'], {}, '--rest-cert and --rest-key go together'],
      [['taskmanager', '--nats-token-file', 'missing.token'], {}, '--nats-token-file missing.token cannot be read'],
      [
        ['taskmanager', '--nats-creds', 'app.creds'],
        { SLOTWISE_NATS_TOKEN: 't' },
        'NATS takes one way to authenticate',
      ],
      [['list', '--token-file', 'missing.token'], {}, '--token-file missing.token cannot be read: ENOENT'],
      [
        ['jobmanager', '--local-taskmanagers', '1'],
        { SLOTWISE_REST_TOKEN: 'short' },
        'the REST token of SLOTWISE_REST_TOKEN must be 16 to 512 letters',
      ],
    ] as const) {
      const { code, lines } = await cliInProcess(argv, env);
      expect(code, argv.join(' ')).to.equal(2);
      expect(lines.stderr, argv.join(' ')).to.have.length(1);
      expect(lines.stderr[0]).to.contain(text);
    }
  });

  describe('a cluster on a NATS server with authorization', () => {
    let server: NatsServer | undefined;
    let dir = '';

    before(async function () {
      const binary = natsServerOrSkip(this, 'CLI credentials');
      server = await startNatsServer(binary, {
        config: `authorization { users = [ { user: "app", password: "${PASSWORD}" } ] }`,
      });
      dir = mkdtempSync(join(tmpdir(), 'slotwise-cli-access-'));
      writeFileSync(join(dir, 'rest.token'), `${TOKEN}\n`);
    });

    after(async () => {
      await server?.stop();
      if (dir !== '') rmSync(dir, { recursive: true, force: true });
    });

    it('joins with the password from the environment, and the REST API asks for its token', async () => {
      const nats = ['--nats', server!.url, '--cluster-id', 'cli-access', '--nats-user', 'app'];
      const env = { SLOTWISE_NATS_PASSWORD: PASSWORD };
      // Without the password the server refuses, and says so at once.
      const refused = await cliInProcess(['taskmanager', '--nats', server!.url, '--cluster-id', 'cli-access']);
      expect(refused.code).to.equal(2);
      expect(refused.stderr).to.contain(`the NATS server at ${server!.url} refused the credentials`);

      const jobManager = start(
        ['jobmanager', ...nats, '--rest-port', '0', '--rest-token-file', 'rest.token'],
        env,
        dir,
      );
      let taskManager: ReturnType<typeof start> | undefined;
      try {
        await until('the JobManager to print its REST URL', () => jobManager.lines.some((l) => l.startsWith('http')));
        const url = jobManager.lines.find((line) => line.startsWith('http'))!;
        // The configured token is not printed.
        expect(jobManager.lines.join('\n')).not.to.contain(TOKEN);
        taskManager = start(['taskmanager', ...nats], env, dir);
        await until('the TaskManager to join', () => taskManager!.lines.some((l) => l.includes('joined')));

        const withFile = await cliInProcess([
          'overview',
          '--jobmanager',
          url,
          '--json',
          '--token-file',
          join(dir, 'rest.token'),
        ]);
        expect(withFile.code, withFile.stderr).to.equal(0);
        expect(JSON.parse(withFile.stdout).taskmanagers).to.have.length(1);
        const withEnv = await cliInProcess(['list', '--jobmanager', url], { SLOTWISE_REST_TOKEN: TOKEN });
        expect(withEnv.code, withEnv.stderr).to.equal(0);
        const without = await cliInProcess(['list', '--jobmanager', url]);
        expect(without.code).to.equal(2);
        expect(without.stderr).to.contain('this REST API asks for its token');
      } finally {
        expect(await taskManager?.stop()).to.be.oneOf([0, undefined]);
        expect(await jobManager.stop()).to.equal(0);
      }
    });
  });
});
