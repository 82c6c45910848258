/**
 * A session cluster on a nats-server that asks for credentials: a process without them (or with
 * wrong ones) is refused at once with a ClusterError naming the server, and reads nothing; with them
 * a JobManager and a TaskManager — its TaskExecutor in a child process, which gets the password over
 * IPC, not on its command line — run a job. Then TLS: a server with a certificate of a throwaway CA
 * that verifies its clients' certificates.
 */
import { expect } from 'chai';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect, nkeys } from '@nats-io/transport-node';
import { Objm } from '@nats-io/obj';
import { startJobManager, type JobManager } from '../../lib/cluster/JobManager.js';
import { startTaskManager } from '../../lib/cluster/TaskManager.js';
import { TaskManagerProcess } from '../../lib/cluster/TaskManagerProcess.js';
import { ClusterError, IllegalArgumentError } from '../../lib/core/errors.js';
import { type Certificates, certificatesOrSkip } from '../support/certificates.js';
import { until } from '../support/eventually.js';
import { natsServerOrSkip, startNatsServer, type NatsServer } from '../support/natsServer.js';
import { rejection } from '../rpc/support/transports.js';

const configuration = { 'heartbeat.interval': 1_000, 'heartbeat.timeout': 5_000 };
const PASSWORD = 'correct horse battery staple';
const natsAuth = { user: 'slotwise', password: PASSWORD };
/** A second user of the server, known by its NKey: the seed stays in a file on the client's side. */
const nkeyUser = nkeys.createUser();

describe('a session cluster on a NATS server with authorization', function () {
  this.timeout(60_000);
  let server: NatsServer | undefined;
  let jobManager: JobManager | undefined;
  let seedDir = '';

  before(async function () {
    const binary = natsServerOrSkip(this, 'NATS credentials');
    server = await startNatsServer(binary, { config: users(PASSWORD) });
    seedDir = mkdtempSync(join(tmpdir(), 'slotwise-nkey-'));
    writeFileSync(join(seedDir, 'user.nk'), `${new TextDecoder().decode(nkeyUser.getSeed())}\n`);
  });

  after(async () => {
    await jobManager?.close();
    await server?.stop();
    if (seedDir !== '') rmSync(seedDir, { recursive: true, force: true });
  });

  /** The server's users: ours with `password`, and the NKey user. */
  const users = (password: string) =>
    `authorization { users = [ { user: "slotwise", password: "${password}" }, ` +
    `{ nkey: "${nkeyUser.getPublicKey()}" } ] }`;

  it('refuses a JobManager and a TaskManager without credentials or with a wrong password at once', async () => {
    const started = Date.now();
    for (const start of [
      () => startJobManager({ nats: server!.url, clusterId: 'creds', configuration }),
      () => startTaskManager({ nats: server!.url, clusterId: 'creds', configuration }),
      () =>
        startJobManager({
          nats: server!.url,
          clusterId: 'creds',
          natsAuth: { user: 'slotwise', password: 'guess' },
          configuration,
        }),
    ]) {
      const error = await rejection(start());
      expect(error).to.be.instanceOf(ClusterError);
      expect((error as ClusterError).reason).to.equal('credentials-refused');
      expect(error.message).to.contain(`the NATS server at ${server!.url} refused the credentials`);
      expect(error.message).not.to.contain('guess');
    }
    // Not the connect timeout, not a retry loop.
    expect(Date.now() - started).to.be.below(3_000);
  });

  it('lets a client without credentials read nothing: not even the object store', async () => {
    const error = await rejection(connect({ servers: server!.url, timeout: 2_000 }));
    expect(error.name).to.equal('AuthorizationError');
    const nc = await connect({ servers: server!.url, user: 'slotwise', pass: PASSWORD });
    try {
      // With them, the same client sees the store (empty: no cluster here yet).
      expect(await new Objm(nc).list().next()).to.deep.equal([]);
    } finally {
      await nc.close();
    }
  });

  it('runs a job on a JobManager and a process-mode TaskManager that both have credentials', async () => {
    jobManager = await startJobManager({ nats: server!.url, natsAuth, clusterId: 'creds', configuration });
    const taskManager = await startTaskManager({
      nats: server!.url,
      natsAuth,
      clusterId: 'creds',
      mode: 'process',
      slots: 2,
      configuration,
    });
    try {
      expect(taskManager).to.be.instanceOf(TaskManagerProcess);
      // The password reached the child over IPC: nothing on its command line shows it.
      const pid = (taskManager as TaskManagerProcess).pid!;
      expect(readFileSync(`/proc/${pid}/cmdline`, 'utf8')).not.to.contain(PASSWORD);
      await until('the TaskManager to register', () => jobManager!.overview().taskExecutors.length === 1);
      // Its code goes through the object store, which only a client with credentials reaches.
      const job = await jobManager.submitJob({
        name: 'with credentials',
        vertices: [{ id: 'ok', taskModule: new URL('../fixtures/tasks/ok.ts', import.meta.url).href, parallelism: 2 }],
      });
      const result = await job.result;
      expect(result.status, result.error?.message).to.equal('finished');
      expect(
        (result.outputs['ok'] as Array<{ seen: { subtaskIndex: number } }>).map((o) => o.seen.subtaskIndex),
      ).to.deep.equal([0, 1]);
    } finally {
      await taskManager.close();
      await jobManager.close();
      jobManager = undefined;
    }
  });

  it('connects with an NKey seed file, which the server knows by its public key only', async () => {
    const taskManager = await startTaskManager({
      nats: server!.url,
      natsAuth: { nkeyFile: join(seedDir, 'user.nk') },
      clusterId: 'nkey',
      configuration,
    });
    await taskManager.close();
  });

  it('a TaskManager whose credentials are revoked says so, and neither crashes nor spins', async () => {
    const logs: string[] = [];
    const taskManager = await startTaskManager({
      nats: server!.url,
      natsAuth,
      clusterId: 'revoked',
      configuration,
      logger: (record) => logs.push(`${record.level} ${record.message}`),
    });
    try {
      server!.reload(users('a new one'));
      await until('the TaskManager to say its credentials were refused', () =>
        logs.some((line) => line.startsWith('error') && line.includes('the server refused our credentials')),
      );
      // Past the fresh start it would have tried (cluster.registration.initial-timeout): no new TaskExecutor.
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      expect(taskManager.incarnations).to.equal(1);
    } finally {
      await taskManager.close();
      server!.reload(users(PASSWORD));
    }
  });
});

describe('a session cluster on a NATS server with TLS and client certificates', function () {
  this.timeout(60_000);
  let server: NatsServer | undefined;
  let certificates: Certificates | undefined;

  before(async function () {
    const binary = natsServerOrSkip(this, 'NATS TLS');
    const c = (certificates = certificatesOrSkip(this, 'NATS TLS'));
    server = await startNatsServer(binary, {
      config: `tls { cert_file: "${c.serverCert}", key_file: "${c.serverKey}", ca_file: "${c.ca}", verify: true }`,
    });
  });

  after(async () => {
    await server?.stop();
    certificates?.remove();
  });

  it('connects with the CA and a client certificate, and is refused without the CA', async () => {
    const c = certificates!;
    const natsAuth = { caFile: c.ca, certFile: c.clientCert, keyFile: c.clientKey };
    const jobManager = await startJobManager({ nats: server!.url, natsAuth, clusterId: 'tls', configuration });
    await jobManager.close();
    // The server's certificate chains to a CA this process does not trust.
    const error = await rejection(
      startTaskManager({
        nats: server!.url,
        natsAuth: { certFile: c.clientCert, keyFile: c.clientKey },
        clusterId: 'tls',
        connectTimeoutMs: 2_000,
      }),
    );
    expect(error).to.be.instanceOf(IllegalArgumentError);
    expect(error.message).to.contain(`cannot connect to the NATS server at ${server!.url}`);
  });
});
