/**
 * `slotwise taskmanager` as an operator sees it, against a real nats-server (child processes on
 * loopback): it says it joined only once a JobManager accepted it, says each registration after that
 * with its ResourceID (the same when a new JobManager leads: it follows the leader), and stops within
 * a second of SIGINT or SIGTERM whether the JobManager never came or hangs.
 */
import { expect } from 'chai';
import { until } from '../support/eventually.js';
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { natsServerOrSkip, startNatsServer, type NatsServer } from '../support/natsServer.js';
import { FIXTURES, startJobManagerChild, TSX_CLI } from './support.js';

const CLUSTER = 'tm-e2e';
/** What the stop may take, the JobManager's state notwithstanding. */
const STOP_MS = 1_000;

/**
 * The children's temporary files (their task code caches) go here, removed after the suite: a child killed with
 * SIGKILL leaves nothing in the OS tmpdir.
 */
const TMP = mkdtempSync(join(tmpdir(), 'slotwise-tm-e2e-'));
const childEnv = { ...process.env, TMPDIR: TMP };

/** A `slotwise taskmanager` child: its output so far, and a wait for a line that matches. */
function startTaskManager(nats: string) {
  const child = spawn(
    TSX_CLI[0],
    [...TSX_CLI.slice(1), 'taskmanager', '--nats', nats, '--cluster-id', CLUSTER, '--slots', '1', '--task-heap', '64m'],
    { cwd: FIXTURES, stdio: ['ignore', 'pipe', 'pipe'], env: childEnv },
  );
  let output = '';
  const waiters = new Set<() => void>();
  const take = (chunk: Buffer) => {
    output += chunk.toString();
    for (const waiter of waiters) waiter();
  };
  child.stdout!.on('data', take);
  child.stderr!.on('data', take);
  const exited = once(child, 'exit') as Promise<[number | null, string | null]>;
  /** The first line that matches `pattern`, once printed (within `ms`). */
  const line = (pattern: RegExp, ms: number) =>
    new Promise<RegExpExecArray>((resolve, reject) => {
      const look = () => {
        const found = pattern.exec(output);
        if (found === null) return;
        done();
        resolve(found);
      };
      const timer = setTimeout(() => {
        done();
        reject(new Error(`no line matching ${pattern} within ${ms} ms:\n${output}`));
      }, ms);
      const done = () => {
        clearTimeout(timer);
        waiters.delete(look);
      };
      waiters.add(look);
      look();
    });
  /** Sends `signal`; resolves with the exit code and how long the process took to end. */
  const stop = async (signal: NodeJS.Signals) => {
    const sent = Date.now();
    child.kill(signal);
    const [code] = await exited;
    return { code, ms: Date.now() - sent };
  };
  return { child, output: () => output, line, stop };
}

/** The TaskManagers a JobManager lists at `url`, once it lists any. */
const listedAt = (url: string) => async () => {
  const { taskmanagers } = (await (await fetch(`${url}/taskmanagers`)).json()) as { taskmanagers: { id: string }[] };
  return taskmanagers.length > 0 && taskmanagers.map((tm) => tm.id);
};

async function kill(child: ChildProcess | undefined): Promise<void> {
  if (child === undefined || child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, 'exit');
  child.kill('SIGKILL');
  await exited;
}

describe('slotwise taskmanager against a NATS session cluster (child processes)', function () {
  this.timeout(120_000);
  let server: NatsServer | undefined;
  const children: ChildProcess[] = [];
  let alone: ReturnType<typeof startTaskManager>;
  let joining: ReturnType<typeof startTaskManager>;
  let jm: Awaited<ReturnType<typeof startJobManagerChild>> | undefined;
  const startJobManager = async () => {
    jm = await startJobManagerChild(
      TSX_CLI,
      ['--nats', server!.url, '--cluster-id', CLUSTER, '--rest-port', '0'],
      FIXTURES,
      childEnv,
    );
    children.push(jm.child);
    return jm;
  };

  before(async function () {
    const binary = natsServerOrSkip(this, 'slotwise taskmanager over NATS');
    server = await startNatsServer(binary);
    alone = startTaskManager(server.url);
    joining = startTaskManager(server.url);
    children.push(alone.child, joining.child);
  });

  after(async () => {
    for (const child of children) {
      if (child.signalCode === 'SIGSTOP' || child.exitCode === null) child.kill('SIGCONT');
      await kill(child);
    }
    await server?.stop();
    rmSync(TMP, { recursive: true, force: true });
  });

  it('with no JobManager there, says it is registering, never that it joined', async () => {
    for (const tm of [alone, joining]) {
      const [, resourceId] = await tm.line(/^slotwise taskmanager: (\S+) registering with the JobManager of /m, 30_000);
      expect(resourceId).to.match(/^taskmanager-[0-9a-f]{12}$/);
      expect(tm.output()).to.not.contain('joined');
    }
  });

  it('stops within a second of SIGTERM while no JobManager ever answered it', async () => {
    const { code, ms } = await alone.stop('SIGTERM');
    expect(code, alone.output()).to.equal(0);
    expect(ms, alone.output()).to.be.below(STOP_MS);
    expect(alone.output()).to.match(/^slotwise taskmanager: stopped$/m);
  });

  it('says it joined once a JobManager accepted it, under the ResourceID the JobManager lists', async () => {
    const { url } = await startJobManager();
    // Its first registrations went out before the JobManager listened: they are retried (timeouts 100 ms, doubling).
    const [, resourceId] = await joining.line(/^slotwise taskmanager: (\S+) joined cluster 'tm-e2e' at nats:/m, 30_000);
    // Its line comes as the registration is accepted; the JobManager lists it once its slot report is in.
    expect(await until('the JobManager to list the TaskManager', listedAt(url), 10_000)).to.deep.equal([resourceId]);
  });

  it('says it registered again under its ResourceID with the next JobManager to lead', async () => {
    const [, first] = /^slotwise taskmanager: (\S+) joined/m.exec(joining.output())!;
    expect(await jm!.stop()).to.equal(0);
    const { url } = await startJobManager();
    const [, again] = await joining.line(/^slotwise taskmanager: (\S+) registered again with the JobManager$/m, 30_000);
    expect(again).to.equal(first);
    expect(joining.output()).to.not.contain('a fresh TaskExecutor');
    expect(await until('the JobManager to list the TaskManager', listedAt(url), 10_000)).to.deep.equal([first]);
  });

  it('stops within a second of SIGINT while the JobManager it is registered at hangs', async () => {
    jm!.child.kill('SIGSTOP');
    const { code, ms } = await joining.stop('SIGINT');
    jm!.child.kill('SIGCONT');
    expect(code, joining.output()).to.equal(0);
    expect(ms, joining.output()).to.be.below(STOP_MS);
    expect(joining.output()).to.match(/^slotwise taskmanager: stopped$/m);
  });
});
