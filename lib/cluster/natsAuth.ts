/**
 * How a cluster process proves itself to NATS, and how it checks the server (`natsAuth`, the
 * `--nats-*` flags): one way to authenticate — user and password, a token, a `.creds` file (a user
 * JWT and its NKey seed, as `nsc` writes it) or an NKey seed file — and TLS: the CA that signed the
 * server's certificate, and a client certificate and key when the server asks for one. Without any
 * of it the server must let anyone in, and anyone on the network can read every job's code from the
 * object store and act as a JobManager or TaskManager of any cluster: docs/cluster.md, Credentials.
 *
 * Checked at the door (every file read once, its shape checked); the options become the client's
 * `user`/`pass`, `token`, `authenticator` and `tls`. The options travel to a TaskManager's child
 * process over IPC, never on its command line (TaskManagerProcess.ts).
 */
import { readFileSync } from 'node:fs';
import { isAbsolute } from 'node:path';
import { credsAuthenticator, nkeyAuthenticator, type ConnectionOptions } from '@nats-io/transport-node';
import { describeValue, IllegalArgumentError } from '../core/errors.js';

export interface NatsAuthOptions {
  /** A user name (`--nats-user`); goes with `password`. */
  readonly user?: string;
  /** That user's password (`SLOTWISE_NATS_PASSWORD`, `--nats-password-file`). */
  readonly password?: string;
  /** A token the server's `authorization { token }` names (`SLOTWISE_NATS_TOKEN`, `--nats-token-file`). */
  readonly token?: string;
  /** A `.creds` file: a user JWT and its NKey seed (`--nats-creds`); absolute path. */
  readonly credsFile?: string;
  /** A file holding an NKey user seed, `SU…` (`--nats-nkey`); absolute path. */
  readonly nkeyFile?: string;
  /** The CA certificate(s) the server's certificate must chain to (`--nats-ca`); absolute path. Asks for TLS. */
  readonly caFile?: string;
  /** A client certificate for a server that verifies its clients (`--nats-cert`); goes with `keyFile`. */
  readonly certFile?: string;
  /** The client certificate's private key (`--nats-key`); goes with `certFile`. */
  readonly keyFile?: string;
}

/** What the NATS client is given, and a few words on the credentials for messages (never the secret). */
export interface ResolvedNatsAuth {
  readonly connectOptions: Partial<ConnectionOptions>;
  /** `user 'app'`, `a token`, `the .creds file /etc/…`, `no credentials`: what a refusal names. */
  readonly description: string;
}

const KEYS = ['user', 'password', 'token', 'credsFile', 'nkeyFile', 'caFile', 'certFile', 'keyFile'] as const;

/** No credentials, no TLS: today's open server. */
export const NO_NATS_AUTH: ResolvedNatsAuth = { connectOptions: {}, description: 'no credentials' };

/**
 * Checks `natsAuth` and reads its files: an IllegalArgumentError naming the option (`options.natsAuth.user`) and what
 * it takes, for a wrong type, an unknown key, two ways of authenticating at once, a user without a password (or the
 * reverse), a key without a certificate (or the reverse), a file that cannot be read or does not hold what it should.
 */
export function checkNatsAuth(auth: unknown, argument = 'options.natsAuth'): ResolvedNatsAuth {
  if (auth === undefined) return NO_NATS_AUTH;
  if (typeof auth !== 'object' || auth === null || Array.isArray(auth))
    throw new IllegalArgumentError(
      'invalid-type',
      `${argument} must be an object { user, password } | { token } | { credsFile } | { nkeyFile }, ` +
        `with caFile, certFile and keyFile for TLS; got ${describeValue(auth)}`,
      { argument },
    );
  const unknown = Object.keys(auth).find((key) => !(KEYS as readonly string[]).includes(key));
  if (unknown !== undefined)
    throw new IllegalArgumentError(
      'unknown-key',
      `${argument}: unknown option '${unknown}'; known: ${KEYS.join(', ')}`,
      {
        argument: `${argument}.${unknown}`,
      },
    );
  const o = auth as NatsAuthOptions;
  for (const key of ['user', 'password', 'token'] as const) {
    const value = o[key];
    if (value !== undefined && (typeof value !== 'string' || value === '' || /[\r\n]/.test(value)))
      throw new IllegalArgumentError(
        'invalid-value',
        `${argument}.${key} must be a non-empty string on one line, got ` +
          // Never the secret itself: only what is wrong with it.
          (key === 'user'
            ? describeValue(value)
            : typeof value === 'string'
              ? 'an empty or multi-line string'
              : typeof value),
        { argument: `${argument}.${key}` },
      );
  }
  const ways = [
    o.user !== undefined || o.password !== undefined ? 'user' : null,
    o.token !== undefined ? 'token' : null,
    o.credsFile !== undefined ? 'credsFile' : null,
    o.nkeyFile !== undefined ? 'nkeyFile' : null,
  ].filter((way) => way !== null);
  if (ways.length > 1)
    throw new IllegalArgumentError(
      'invalid-value',
      `${argument} takes one way to authenticate: user and password, token, credsFile or nkeyFile; ` +
        `got ${ways.join(' and ')}`,
      { argument: `${argument}.${ways[1]}` },
    );
  if ((o.user === undefined) !== (o.password === undefined))
    throw new IllegalArgumentError(
      'missing',
      `${argument}.user and ${argument}.password go together; ` +
        `${o.user === undefined ? 'password' : 'user'} was given alone`,
      { argument: `${argument}.${o.user === undefined ? 'user' : 'password'}` },
    );
  if ((o.certFile === undefined) !== (o.keyFile === undefined))
    throw new IllegalArgumentError(
      'missing',
      `${argument}.certFile and ${argument}.keyFile go together (a client certificate and its key); ` +
        `${o.certFile === undefined ? 'keyFile' : 'certFile'} was given alone`,
      { argument: `${argument}.${o.certFile === undefined ? 'certFile' : 'keyFile'}` },
    );
  const connectOptions: Partial<ConnectionOptions> & Record<string, unknown> = {};
  let description = 'no credentials';
  if (o.user !== undefined) {
    connectOptions['user'] = o.user;
    connectOptions['pass'] = o.password;
    description = `user ${JSON.stringify(o.user)}`;
  } else if (o.token !== undefined) {
    connectOptions['token'] = o.token;
    description = 'a token';
  } else if (o.credsFile !== undefined) {
    const text = readText(o.credsFile, `${argument}.credsFile`);
    if (!text.includes('BEGIN NATS USER JWT') || !text.includes('BEGIN USER NKEY SEED'))
      throw new IllegalArgumentError(
        'invalid-value',
        `${argument}.credsFile ${o.credsFile} must be a .creds file (a NATS USER JWT and a USER NKEY SEED block)`,
        { argument: `${argument}.credsFile` },
      );
    connectOptions['authenticator'] = credsAuthenticator(new TextEncoder().encode(text));
    description = `the .creds file ${o.credsFile}`;
  } else if (o.nkeyFile !== undefined) {
    const seed = readText(o.nkeyFile, `${argument}.nkeyFile`).trim();
    if (!/^SU[A-Z2-7]{50,}$/.test(seed))
      throw new IllegalArgumentError(
        'invalid-value',
        `${argument}.nkeyFile ${o.nkeyFile} must hold one NKey user seed (a line starting with SU)`,
        { argument: `${argument}.nkeyFile` },
      );
    connectOptions['authenticator'] = nkeyAuthenticator(new TextEncoder().encode(seed));
    description = `the NKey seed in ${o.nkeyFile}`;
  }
  if (o.caFile !== undefined || o.certFile !== undefined) {
    const tls: Record<string, string> = {};
    for (const [key, block] of [
      ['caFile', 'CERTIFICATE'],
      ['certFile', 'CERTIFICATE'],
      ['keyFile', 'PRIVATE KEY'],
    ] as const) {
      const path = o[key];
      if (path === undefined) continue;
      const text = readText(path, `${argument}.${key}`);
      if (!text.includes('-----BEGIN ') || !text.includes(block))
        throw new IllegalArgumentError(
          'invalid-value',
          `${argument}.${key} ${path} must be a PEM file holding a ${block}`,
          { argument: `${argument}.${key}` },
        );
      tls[key.replace('File', '')] = text;
    }
    connectOptions['tls'] = tls;
    description += o.certFile === undefined ? ' over TLS' : ` over TLS with the client certificate ${o.certFile}`;
  }
  return { connectOptions, description };
}

/** A file's text, or an IllegalArgumentError naming the option when the path is not absolute or cannot be read. */
function readText(path: unknown, argument: string): string {
  if (typeof path !== 'string' || !isAbsolute(path))
    throw new IllegalArgumentError(
      'invalid-value',
      `${argument} must be an absolute path to a file, got ${JSON.stringify(path)}`,
      { argument, value: path },
    );
  try {
    return readFileSync(path, 'utf8');
  } catch (error) {
    throw new IllegalArgumentError(
      'invalid-value',
      `${argument} ${path} cannot be read: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`,
      { argument, value: path },
    );
  }
}
