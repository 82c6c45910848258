/**
 * The doors of the session cluster: every option of startJobManager / startTaskManager checked
 * before anything connects, with a typed error naming the option and what is allowed; an
 * unreachable NATS server answered within the connect timeout, never a hang. No server needed.
 */
import { expect } from 'chai';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigurationError, IllegalArgumentError } from '../../lib/core/errors.js';
import { startJobManager } from '../../lib/cluster/JobManager.js';
import { startTaskManager, type TaskManagerOptions } from '../../lib/cluster/TaskManager.js';
import { clusterSubjects } from '../../lib/cluster/clusterSubjects.js';
import { freePort } from '../support/natsServer.js';
import { rejection } from '../rpc/support/transports.js';

describe('session cluster options', () => {
  const refusals: Array<[string, TaskManagerOptions, RegExp]> = [
    [
      'a NATS URL that is not one',
      { nats: 'http://127.0.0.1:4222' },
      /options\.nats must be a NATS URL like nats:\/\/127\.0\.0\.1:4222/,
    ],
    ['a cluster id with a dot', { clusterId: 'a.b' }, /options\.clusterId must be 1-64 letters, digits/],
    [
      'an unknown option',
      { slot: 2 } as unknown as TaskManagerOptions,
      /unknown option 'slot'; known: nats, natsAuth, clusterId, slots/,
    ],
    [
      'an unknown mode',
      { mode: 'fork' as 'thread' },
      /options\.mode must be 'thread' \(the TaskExecutor in this process\) or 'process'/,
    ],
    ['a relative cache directory', { cacheDir: 'cache' }, /options\.cacheDir must be an absolute path/],
  ];
  for (const [what, options, message] of refusals) {
    it(`refuses ${what} with an IllegalArgumentError, before connecting`, async () => {
      const error = await rejection(startTaskManager(options));
      expect(error).to.be.instanceOf(IllegalArgumentError);
      expect(error.message).to.match(message);
    });
  }

  it(
    'refuses slots 0, a negative CPU and a bad memory ' + 'size through the runtime options, naming the option',
    async () => {
      for (const [options, option] of [
        [{ slots: 0 }, 'taskmanager.numberOfTaskSlots'],
        [{ cpuCores: -1 }, 'taskmanager.cpu.cores'],
        [{ taskHeap: 'lots' }, 'taskmanager.memory.task.heap.size'],
      ] as const) {
        const error = await rejection(startTaskManager(options));
        expect(error, JSON.stringify(options)).to.be.instanceOf(ConfigurationError);
        expect((error as ConfigurationError).details['option']).to.equal(option);
      }
    },
  );

  it('answers an unreachable NATS server with an error naming it, within the connect timeout', async () => {
    const url = `nats://127.0.0.1:${await freePort()}`;
    for (const start of [
      () => startTaskManager({ nats: url, connectTimeoutMs: 2_000 }),
      () => startJobManager({ nats: url, connectTimeoutMs: 2_000 }),
    ]) {
      const error = await rejection(start());
      expect(error).to.be.instanceOf(IllegalArgumentError);
      expect(error.message).to.contain(`cannot connect to the NATS server at ${url} within 2000 ms`);
    }
  });

  it('refuses natsAuth that is wrong, naming the option and what it takes, before connecting', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'slotwise-auth-'));
    const notASeed = join(dir, 'seed.nk');
    writeFileSync(notASeed, 'hello\n');
    try {
      for (const [natsAuth, argument, message] of [
        ['secret', 'options.natsAuth', /options\.natsAuth must be an object \{ user, password \} \| \{ token \}/],
        [{ pass: 'x' }, 'options.natsAuth.pass', /unknown option 'pass'; known: user, password, token, credsFile/],
        [{ user: 'app' }, 'options.natsAuth.password', /user and options\.natsAuth\.password go together/],
        [
          { user: 'app', password: 'pw-not-in-messages', token: 't' },
          'options.natsAuth.token',
          /takes one way to authenticate/,
        ],
        [{ token: '' }, 'options.natsAuth.token', /options\.natsAuth\.token must be a non-empty string/],
        [{ credsFile: 'app.creds' }, 'options.natsAuth.credsFile', /must be an absolute path to a file/],
        [{ nkeyFile: join(dir, 'none.nk') }, 'options.natsAuth.nkeyFile', /cannot be read: ENOENT/],
        [{ nkeyFile: notASeed }, 'options.natsAuth.nkeyFile', /must hold one NKey user seed/],
        [{ caFile: notASeed }, 'options.natsAuth.caFile', /must be a PEM file holding a CERTIFICATE/],
        [{ keyFile: notASeed }, 'options.natsAuth.certFile', /certFile and options\.natsAuth\.keyFile go together/],
      ] as const) {
        for (const start of [
          () => startTaskManager({ natsAuth: natsAuth as never, connectTimeoutMs: 500 }),
          () => startJobManager({ natsAuth: natsAuth as never, connectTimeoutMs: 500 }),
        ]) {
          const error = await rejection(start());
          expect(error, JSON.stringify(natsAuth)).to.be.instanceOf(IllegalArgumentError);
          expect((error as IllegalArgumentError).details['argument']).to.equal(argument);
          expect(error.message).to.match(message);
          expect(error.message).not.to.contain('pw-not-in-messages'); // the password never echoed
        }
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('refuses a REST server beyond loopback without a token or client certificates, before connecting', async () => {
    const url = `nats://127.0.0.1:${await freePort()}`;
    for (const [rest, argument] of [
      [{ address: '0.0.0.0' }, 'options.rest.address'],
      [{ address: '0.0.0.0', token: 'short' }, 'options.rest.token'],
      [{ tls: { certFile: 'cert.pem', keyFile: 'key.pem' } }, 'options.rest.tls.certFile'],
    ] as const) {
      const error = await rejection(startJobManager({ nats: url, rest, connectTimeoutMs: 2_000 }));
      expect(error, JSON.stringify(rest)).to.be.instanceOf(IllegalArgumentError);
      expect((error as IllegalArgumentError).details['argument']).to.equal(argument);
    }
  });

  it('puts every subject of a cluster under its id', () => {
    const subjects = clusterSubjects('prod');
    expect(subjects.resourceManager).to.equal('slotwise.prod.rm');
    expect(subjects.taskExecutor('taskmanager-1a2b3c')).to.equal('slotwise.prod.te.taskmanager-1a2b3c');
    expect(() => subjects.taskExecutor('te.1')).to.throw(
      IllegalArgumentError,
      /resourceId must be 1-128 letters, digits, '_' or '-'/,
    );
  });
});
