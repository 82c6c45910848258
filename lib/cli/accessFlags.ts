/**
 * The flags and environment variables that say who a command is (docs/cluster.md, Credentials):
 *
 * - the REST client's (`run`, `list`, `cancel`, `overview`): `--token-file FILE` or
 *   SLOTWISE_REST_TOKEN, sent as `Authorization: Bearer`; `--ca FILE` for an https JobManager;
 * - the REST server's (`jobmanager`): the same token (`--rest-token-file`, SLOTWISE_REST_TOKEN),
 *   `--rest-cert`/`--rest-key` for https, `--rest-client-ca` to ask clients for certificates;
 * - NATS (`jobmanager`, `taskmanager`): `--nats-user` with SLOTWISE_NATS_PASSWORD or
 *   `--nats-password-file`, SLOTWISE_NATS_TOKEN or `--nats-token-file`, `--nats-creds FILE`,
 *   `--nats-nkey FILE`, and `--nats-ca`, `--nats-cert`, `--nats-key` for TLS.
 *
 * Secrets come from the environment or from files, never from the command line, where any user of
 * the host can read them (`ps`). Paths are taken relative to the working directory. This file loads
 * no NATS client: the cluster checks what the files hold (natsAuth.ts) when it starts.
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { IllegalArgumentError } from '../core/errors.js';
import { ACCESS_TOKEN, ACCESS_TOKEN_RULE } from '../dashboard/accessToken.js';
import type { CliIo, ParsedFlags } from './flags.js';
import { JobManagerClient } from './JobManagerClient.js';
import { RestClient, type RestClientOptions } from './RestClient.js';

/** The REST client's flags, beside `--jobmanager`. */
export const CLIENT_FLAGS = {
  'token-file': { type: 'string' },
  ca: { type: 'string' },
  cert: { type: 'string' },
  key: { type: 'string' },
} as const;

export const CLIENT_FLAGS_USAGE = [
  "  --token-file FILE  the REST API's token, if it asks for one (default $SLOTWISE_REST_TOKEN)",
  "  --ca FILE          the CA certificate an https JobManager's certificate chains to (PEM)",
  '  --cert FILE        a client certificate (PEM), with --key FILE its key, for one that asks for it',
].join('\n');

/** The REST server's flags (`jobmanager`). */
export const REST_SERVER_FLAGS = {
  'rest-token-file': { type: 'string' },
  'rest-cert': { type: 'string' },
  'rest-key': { type: 'string' },
  'rest-client-ca': { type: 'string' },
} as const;

export const REST_SERVER_FLAGS_USAGE = [
  "  --rest-token-file FILE  a token every REST route asks for, the dashboard's and /metrics too, the same",
  '                          at every start (default $SLOTWISE_REST_TOKEN; without one: a new dashboard',
  '                          token at each start, the API open on loopback). Needed beyond loopback.',
  '  --rest-cert FILE        serve https with this certificate (PEM), with --rest-key FILE its key',
  '  --rest-client-ca FILE   with https: only clients with a certificate this CA signed (then no token needed)',
].join('\n');

/** NATS's flags (`jobmanager`, `taskmanager`). */
export const NATS_FLAGS = {
  'nats-user': { type: 'string' },
  'nats-password-file': { type: 'string' },
  'nats-token-file': { type: 'string' },
  'nats-creds': { type: 'string' },
  'nats-nkey': { type: 'string' },
  'nats-ca': { type: 'string' },
  'nats-cert': { type: 'string' },
  'nats-key': { type: 'string' },
} as const;

export const NATS_FLAGS_USAGE = [
  '  --nats-user USER        a NATS user; its password in $SLOTWISE_NATS_PASSWORD or --nats-password-file FILE',
  '  --nats-token-file FILE  a NATS token (default $SLOTWISE_NATS_TOKEN)',
  '  --nats-creds FILE       a NATS .creds file (user JWT and NKey seed)',
  '  --nats-nkey FILE        a file holding a NATS NKey user seed (SU...)',
  "  --nats-ca FILE          TLS: the CA the NATS server's certificate chains to (PEM)",
  '  --nats-cert FILE        TLS: a client certificate, with --nats-key FILE its key',
].join('\n');

/** What the REST client is given: its token and CA. */
export function restClient(url: string, values: ParsedFlags['values'], io: CliIo): RestClient {
  return new RestClient(url, restClientOptions(values, io));
}

/** A client of every JobManager `urls` names (the one that answers), with the access flags' token and TLS. */
export function jobManagerClient(urls: readonly string[], values: ParsedFlags['values'], io: CliIo): JobManagerClient {
  return new JobManagerClient(urls, restClientOptions(values, io));
}

function restClientOptions(values: ParsedFlags['values'], io: CliIo): RestClientOptions {
  const token = secret(values, io, 'token-file', 'SLOTWISE_REST_TOKEN');
  const [ca, cert, key] = (['ca', 'cert', 'key'] as const).map((flag) => {
    const file = string(values, flag);
    return file === undefined ? undefined : readFlagFile(flag, file, io);
  });
  if ((cert === undefined) !== (key === undefined))
    throw new IllegalArgumentError('missing', '--cert and --key go together (a client certificate and its key)', {
      argument: cert === undefined ? '--cert' : '--key',
    });
  return {
    ...(token === undefined ? {} : { token }),
    ...(ca === undefined ? {} : { ca }),
    ...(cert === undefined || key === undefined ? {} : { cert, key }),
  };
}

/** The REST server's `token` and `tls`, as startRestServer and startJobManager's `rest` take them. */
export function restServerAccess(
  values: ParsedFlags['values'],
  io: CliIo,
): { token?: string; tls?: { certFile: string; keyFile: string; clientCaFile?: string } } {
  const token = secret(values, io, 'rest-token-file', 'SLOTWISE_REST_TOKEN');
  if (token !== undefined && !ACCESS_TOKEN.test(token)) {
    const source = values['rest-token-file'] === undefined ? 'SLOTWISE_REST_TOKEN' : '--rest-token-file';
    throw new IllegalArgumentError(
      'invalid-value',
      `the REST token of ${source} must be ${ACCESS_TOKEN_RULE}; it has ${token.length} characters`,
      { argument: source },
    );
  }
  const [cert, key, clientCa] = (['rest-cert', 'rest-key', 'rest-client-ca'] as const).map((flag) =>
    path(values, io, flag),
  );
  if ((cert === undefined) !== (key === undefined) || (clientCa !== undefined && cert === undefined)) {
    const given = Object.entries({ '--rest-cert': cert, '--rest-key': key, '--rest-client-ca': clientCa })
      .filter(([, file]) => file !== undefined)
      .map(([flag]) => flag);
    throw new IllegalArgumentError(
      'missing',
      `--rest-cert and --rest-key go together (https), and --rest-client-ca goes with them; got ${given.join(' ')}`,
      { argument: cert === undefined ? '--rest-cert' : '--rest-key' },
    );
  }
  return {
    ...(token === undefined ? {} : { token }),
    ...(cert === undefined || key === undefined
      ? {}
      : { tls: { certFile: cert, keyFile: key, ...(clientCa === undefined ? {} : { clientCaFile: clientCa }) } }),
  };
}

/** startJobManager's and startTaskManager's `natsAuth`, or undefined without any NATS credential flag. */
export function natsAuthFlags(values: ParsedFlags['values'], io: CliIo): Record<string, string> | undefined {
  const user = string(values, 'nats-user');
  const password = secret(values, io, 'nats-password-file', 'SLOTWISE_NATS_PASSWORD');
  const token = secret(values, io, 'nats-token-file', 'SLOTWISE_NATS_TOKEN');
  const creds = path(values, io, 'nats-creds');
  const nkey = path(values, io, 'nats-nkey');
  if (user === undefined && values['nats-password-file'] !== undefined)
    throw new IllegalArgumentError('missing', '--nats-password-file goes with --nats-user USER', {
      argument: '--nats-user',
    });
  if (user !== undefined && password === undefined)
    throw new IllegalArgumentError(
      'missing',
      `--nats-user ${user} needs its password: in SLOTWISE_NATS_PASSWORD or a file named by --nats-password-file`,
      { argument: '--nats-password-file' },
    );
  // A password in the environment without --nats-user is left alone: it may be there for another command.
  const ways = [
    user === undefined ? null : '--nats-user',
    token === undefined ? null : values['nats-token-file'] === undefined ? 'SLOTWISE_NATS_TOKEN' : '--nats-token-file',
    creds === undefined ? null : '--nats-creds',
    nkey === undefined ? null : '--nats-nkey',
  ].filter((way) => way !== null);
  if (ways.length > 1)
    throw new IllegalArgumentError(
      'invalid-value',
      `NATS takes one way to authenticate: --nats-user, a token (SLOTWISE_NATS_TOKEN or --nats-token-file), ` +
        `--nats-creds or --nats-nkey; got ${ways.join(' and ')}`,
      { argument: ways[1]! },
    );
  const [ca, cert, key] = (['nats-ca', 'nats-cert', 'nats-key'] as const).map((flag) => path(values, io, flag));
  if ((cert === undefined) !== (key === undefined))
    throw new IllegalArgumentError(
      'missing',
      `--nats-cert and --nats-key go together (a client certificate and its key); ` +
        `got only ${cert === undefined ? '--nats-key' : '--nats-cert'}`,
      { argument: cert === undefined ? '--nats-cert' : '--nats-key' },
    );
  const auth: Record<string, string> = {};
  if (user !== undefined) Object.assign(auth, { user, password });
  if (token !== undefined) auth['token'] = token;
  if (creds !== undefined) auth['credsFile'] = creds;
  if (nkey !== undefined) auth['nkeyFile'] = nkey;
  if (ca !== undefined) auth['caFile'] = ca;
  if (cert !== undefined && key !== undefined) Object.assign(auth, { certFile: cert, keyFile: key });
  return Object.keys(auth).length === 0 ? undefined : auth;
}

function string(values: ParsedFlags['values'], flag: string): string | undefined {
  return values[flag] as string | undefined;
}

function path(values: ParsedFlags['values'], io: CliIo, flag: string): string | undefined {
  const value = string(values, flag);
  if (value === undefined) return undefined;
  if (value === '')
    throw new IllegalArgumentError('invalid-value', `--${flag} must name a file`, { argument: `--${flag}` });
  return resolve(io.cwd, value);
}

/** A secret from `--<flag> FILE` (its first line), else from the environment variable; undefined when neither. */
function secret(values: ParsedFlags['values'], io: CliIo, flag: string, variable: string): string | undefined {
  const file = string(values, flag);
  if (file !== undefined) {
    const text = readFlagFile(flag, file, io).trim();
    if (text === '' || /[\r\n]/.test(text))
      throw new IllegalArgumentError(
        'invalid-value',
        `--${flag} ${file} must hold the secret on one line, and nothing else`,
        { argument: `--${flag}` },
      );
    return text;
  }
  const value = io.env[variable];
  return value === undefined || value === '' ? undefined : value;
}

function readFlagFile(flag: string, file: string, io: CliIo): string {
  try {
    return readFileSync(resolve(io.cwd, file), 'utf8');
  } catch (error) {
    throw new IllegalArgumentError(
      'invalid-value',
      `--${flag} ${file} cannot be read: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`,
      { argument: `--${flag}` },
    );
  }
}
