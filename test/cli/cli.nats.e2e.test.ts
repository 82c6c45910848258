/**
 * The slotwise command against a real session cluster: a nats-server, `slotwise jobmanager --nats`
 * and two `slotwise taskmanager`s, each a child process on loopback; `slotwise run` submits a job
 * file whose task code travels through the cluster's object store to the TaskManagers, and prints
 * the exact result; `list`, `overview` and `cancel` work against it; its dashboard URL is printed.
 */
import { expect } from 'chai';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { until } from '../support/eventually.js';
import { natsServerOrSkip, startNatsServer, type NatsServer } from '../support/natsServer.js';
import { cliChild, FIXTURES, startJobManagerChild, TSX_CLI } from './support.js';

describe(
  'slotwise CLI against a NATS session cluster ' + '(jobmanager and two taskmanagers as child processes)',
  function () {
    this.timeout(180_000);
    let server: NatsServer | undefined;
    let jm: Awaited<ReturnType<typeof startJobManagerChild>> | undefined;
    const taskManagers: ChildProcess[] = [];
    const cli = (...argv: string[]) => cliChild(TSX_CLI, argv);

    before(async function () {
      const binary = natsServerOrSkip(this, 'slotwise CLI over NATS');
      server = await startNatsServer(binary);
      jm = await startJobManagerChild(TSX_CLI, ['--nats', server.url, '--cluster-id', 'e2e', '--rest-port', '0']);
      for (let i = 0; i < 2; i++) {
        const child = spawn(
          TSX_CLI[0],
          [
            ...TSX_CLI.slice(1),
            'taskmanager',
            '--nats',
            server.url,
            '--cluster-id',
            'e2e',
            '--slots',
            '2',
            '--task-heap',
            '512m',
          ],
          { cwd: FIXTURES, stdio: ['ignore', 'pipe', 'inherit'] },
        );
        child.stdout!.resume();
        taskManagers.push(child);
      }
      await until(
        'both TaskManagers in the JobManager',
        async () =>
          ((await (await fetch(`${jm!.url}/taskmanagers`)).json()) as { taskmanagers: unknown[] }).taskmanagers
            .length === 2,
        90_000,
      );
    });

    after(async () => {
      for (const child of taskManagers) {
        if (child.exitCode !== null || child.signalCode !== null) continue;
        const exited = once(child, 'exit');
        child.kill('SIGTERM');
        const forced = setTimeout(() => child.kill('SIGKILL'), 20_000);
        await exited;
        clearTimeout(forced);
      }
      await jm?.stop();
      await server?.stop();
    });

    it('run: the task code reaches the TaskManagers through the object store and the result is exact', async () => {
      const { code, stdout, stderr } = await cli('run', '--jobmanager', jm!.url, 'sumOfSquares.job.mjs');
      expect(code, stderr).to.equal(0);
      expect(stdout.match(/^square#\d running on taskmanager-\S+$/gm)).to.have.length(4);
      expect(stdout.trimEnd().split('\n').at(-1)).to.equal('sum: [338350]');
    });

    it('list, overview and cancel work against it', async () => {
      const detached = await cli('run', '--jobmanager', jm!.url, '--detached', 'sleeper.job.mjs');
      expect(detached.code, detached.stderr).to.equal(0);
      const jobId = detached.stdout.trim();
      const listed = await cli('list', '--jobmanager', jm!.url);
      expect(listed.stdout).to.match(/^[0-9a-f]{32} {2}FINISHED +sum of squares$/m);
      expect(listed.stdout).to.match(new RegExp(`^${jobId}  (CREATED|RUNNING) +sleeper$`, 'm'));
      const table = await until('the sleeper in the slot table', async () => {
        const shown = await cli('overview', '--jobmanager', jm!.url);
        return shown.stdout.includes('sleep#0 (running)') ? shown : undefined;
      });
      expect(table.stdout).to.match(/^2 TaskManager\(s\), 4 slots \(3 free\), 1 job\(s\) running$/m);
      const canceled = await cli('cancel', '--jobmanager', jm!.url, jobId);
      expect(canceled.code, canceled.stderr).to.equal(0);
      await until('the sleeper canceled', async () => {
        const list = JSON.parse((await cli('list', '--jobmanager', jm!.url, '--json')).stdout) as Array<{
          id: string;
          status: string;
        }>;
        return list.find((job) => job.id === jobId && job.status === 'CANCELED');
      });
    });

    it('prints the dashboard URL, on the REST port with a token, and it serves the page and /metrics', async () => {
      const printed = /^slotwise jobmanager: dashboard at (http:\/\/\S+)$/m.exec(jm!.output())?.[1];
      expect(printed, jm!.output()).to.be.a('string');
      const dashboard = new URL(printed!);
      expect(dashboard.origin).to.equal(new URL(jm!.url).origin);
      expect((await fetch(dashboard)).status).to.equal(200);
      const metrics = await fetch(`${dashboard.origin}/metrics${dashboard.search}`);
      expect(await metrics.text()).to.match(/^slotwise_jobmanager_numRegisteredTaskManagers 2$/m);
      expect((await fetch(`${dashboard.origin}/metrics`)).status, 'no token').to.equal(403);
    });
  },
);
