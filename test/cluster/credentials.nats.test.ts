/**
 * A session cluster on a nats-server that asks for credentials: a process without them (or with
 * wrong ones) is refused at once with a ClusterError naming the server, and reads nothing; with them
 * a JobManager and a TaskManager — its TaskExecutor in a child process, which gets the password over
 * IPC, not on its command line — run a job. Then TLS: a server with a certificate of a throwaway CA
 * that verifies its clients' certificates.
 */
import { expect } from 'chai';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect } from '@nats-io/transport-node';
import { Objm } from '@nats-io/obj';
import { startJobManager, type JobManager } from '../../lib/cluster/JobManager.js';
import { startTaskManager } from '../../lib/cluster/TaskManager.js';
import { TaskManagerProcess } from '../../lib/cluster/TaskManagerProcess.js';
import { ClusterError, IllegalArgumentError } from '../../lib/core/errors.js';
import { until } from '../support/eventually.js';
import { natsServerOrSkip, startNatsServer, type NatsServer } from '../support/natsServer.js';
import { rejection } from '../rpc/support/transports.js';

const configuration = { 'heartbeat.interval': 1_000, 'heartbeat.timeout': 5_000 };
const PASSWORD = 'correct horse battery staple';
const natsAuth = { user: 'slotwise', password: PASSWORD };

describe('a session cluster on a NATS server with authorization', function () {
  this.timeout(60_000);
  let server: NatsServer | undefined;
  let jobManager: JobManager | undefined;

  before(async function () {
    const binary = natsServerOrSkip(this, 'NATS credentials');
    server = await startNatsServer(binary, {
      config: `authorization { users = [ { user: "slotwise", password: "${PASSWORD}" } ] }`,
    });
  });

  after(async () => {
    await jobManager?.close();
    await server?.stop();
  });

  it('refuses a JobManager and a TaskManager without credentials or with a wrong password, at once, naming the server', async () => {
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
    }
  });
});

describe('a session cluster on a NATS server with TLS and client certificates', function () {
  this.timeout(60_000);
  let server: NatsServer | undefined;
  let dir = '';
  const file = (name: string) => join(dir, name);

  before(async function () {
    const binary = natsServerOrSkip(this, 'NATS TLS');
    if (spawnSync('openssl', ['version'], { stdio: 'ignore' }).status !== 0) {
      console.log('      [skipped] NATS TLS: openssl is not installed (it makes the test CA)');
      this.skip();
    }
    dir = mkdtempSync(join(tmpdir(), 'slotwise-tls-'));
    makeCertificates(dir);
    server = await startNatsServer(binary, {
      config: `tls { cert_file: "${file('server.pem')}", key_file: "${file('server.key')}", ca_file: "${file('ca.pem')}", verify: true }`,
    });
  });

  after(async () => {
    await server?.stop();
    if (dir !== '') rmSync(dir, { recursive: true, force: true });
  });

  it('connects with the CA and a client certificate, and is refused without the CA', async () => {
    const tls = { caFile: file('ca.pem'), certFile: file('client.pem'), keyFile: file('client.key') };
    const jobManager = await startJobManager({ nats: server!.url, natsAuth: tls, clusterId: 'tls', configuration });
    await jobManager.close();
    // The server's certificate chains to a CA this process does not trust.
    const error = await rejection(
      startTaskManager({
        nats: server!.url,
        natsAuth: { certFile: tls.certFile, keyFile: tls.keyFile },
        clusterId: 'tls',
        connectTimeoutMs: 2_000,
      }),
    );
    expect(error).to.be.instanceOf(IllegalArgumentError);
    expect(error.message).to.contain(`cannot connect to the NATS server at ${server!.url}`);
  });
});

/** A throwaway CA, a server certificate for 127.0.0.1 and a client certificate, both signed by it. */
function makeCertificates(dir: string): void {
  const openssl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
  openssl(
    'req',
    '-x509',
    '-newkey',
    'ec',
    '-pkeyopt',
    'ec_paramgen_curve:prime256v1',
    '-nodes',
    '-keyout',
    'ca.key',
    '-out',
    'ca.pem',
    '-days',
    '1',
    '-subj',
    '/CN=slotwise test CA',
  );
  for (const [name, extension] of [
    ['server', 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth'],
    ['client', 'extendedKeyUsage=clientAuth'],
  ] as const) {
    writeFileSync(join(dir, `${name}.ext`), `${extension}\n`);
    openssl(
      'req',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-keyout',
      `${name}.key`,
      '-out',
      `${name}.csr`,
      '-subj',
      `/CN=slotwise ${name}`,
    );
    openssl(
      'x509',
      '-req',
      '-in',
      `${name}.csr`,
      '-CA',
      'ca.pem',
      '-CAkey',
      'ca.key',
      '-CAcreateserial',
      '-out',
      `${name}.pem`,
      '-days',
      '1',
      '-extfile',
      `${name}.ext`,
    );
  }
}
