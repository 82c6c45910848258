/**
 * Flag parsing for every `slotwise` command: node:util parseArgs in strict mode (an unknown flag,
 * a missing value or a stray argument is refused), then one check per flag whose message names the
 * flag and what it takes. A refused flag is an IllegalArgumentError with `details.argument` the flag.
 */
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { IllegalArgumentError } from '../core/errors.js';
import { parseMemorySize } from '../core/MemorySize.js';

/** Where a command reads and writes: the process's streams and environment, or a test's. */
export interface CliIo {
  readonly stdout: (line: string) => void;
  readonly stderr: (line: string) => void;
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly cwd: string;
  /** Aborted: a long-running command (jobmanager, taskmanager) shuts down. Default: SIGINT / SIGTERM. */
  readonly shutdown?: AbortSignal;
}

export const DEFAULT_JOBMANAGER = 'http://127.0.0.1:8081';

type Options = NonNullable<ParseArgsConfig['options']>;

/** What parseFlags found: each flag's value (a string, true, or a list for `multiple`), and the arguments. */
export interface ParsedFlags {
  readonly values: Readonly<Record<string, string | boolean | string[] | undefined>>;
  readonly positionals: readonly string[];
}

/** parseArgs, strict, with `--help`; its errors in one short line naming the flag. */
export function parseFlags(
  command: string,
  args: readonly string[],
  options: Options,
  positionals: boolean,
): ParsedFlags {
  try {
    const { values, positionals: found } = parseArgs({
      args: joinNegativeValues(args, options),
      options: { ...options, help: { type: 'boolean', short: 'h' } },
      strict: true,
      allowPositionals: positionals,
    });
    return { values: values as ParsedFlags['values'], positionals: found };
  } catch (error) {
    const { code, message } = error as { code?: string; message: string };
    const known = Object.keys(options)
      .map((name) => `--${name}`)
      .join(', ');
    if (code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION') {
      const flag = /'([^']+)'/.exec(message)?.[1] ?? '?';
      throw new IllegalArgumentError(
        'unknown-key',
        `unknown option '${flag}'; ${command} takes ${known || 'no options'} (slotwise ${command} --help)`,
        { argument: flag },
      );
    }
    if (code === 'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL') {
      const argument = /'([^']+)'/.exec(message)?.[1] ?? '?';
      throw new IllegalArgumentError('unknown-key', `unexpected argument '${argument}' (slotwise ${command} --help)`, {
        argument,
      });
    }
    // ERR_PARSE_ARGS_INVALID_OPTION_VALUE: "Option '--slots <value>' argument missing", or a value given to a boolean.
    const flag = /'(--?[\w-]+)/.exec(message)?.[1] ?? '?';
    throw new IllegalArgumentError('invalid-value', `${message.split('. ')[0]!.replace(/^Option/, 'option')}`, {
      argument: flag,
    });
  }
}

/**
 * `--slots -1` as `--slots=-1`, so that a negative number reaches its flag's range check instead of
 * parseArgs' "argument is ambiguous" (a string flag followed by something that looks like a flag).
 */
function joinNegativeValues(args: readonly string[], options: Options): string[] {
  const out: string[] = [];
  for (let i = 0; i < args.length; i++) {
    const name = args[i]!.startsWith('--') ? args[i]!.slice(2) : undefined;
    const next = args[i + 1];
    if (name !== undefined && options[name]?.type === 'string' && next !== undefined && /^-\d/.test(next)) {
      out.push(`${args[i]}=${next}`);
      i++;
    } else out.push(args[i]!);
  }
  return out;
}

/** The JobManager's REST URL: `--jobmanager`, else SLOTWISE_JOBMANAGER, else http://127.0.0.1:8081. */
export function jobManagerUrl(flag: string | undefined, env: CliIo['env']): string {
  const [url] = jobManagerUrls(flag, env);
  return url!;
}

/**
 * The REST URLs of the cluster's JobManagers, comma-separated (any of them: a standby redirects to the leader):
 * `--jobmanager`, else SLOTWISE_JOBMANAGER, else http://127.0.0.1:8081.
 */
export function jobManagerUrls(flag: string | undefined, env: CliIo['env']): string[] {
  const [value, source] =
    flag !== undefined
      ? [flag, '--jobmanager']
      : env['SLOTWISE_JOBMANAGER']
        ? [env['SLOTWISE_JOBMANAGER'], 'SLOTWISE_JOBMANAGER']
        : [DEFAULT_JOBMANAGER, 'the default'];
  return value.split(',').map((one) => checkJobManagerUrl(one.trim(), source));
}

function checkJobManagerUrl(value: string, source: string): string {
  let url: URL | undefined;
  try {
    url = new URL(value);
  } catch {
    url = undefined;
  }
  if (
    url === undefined ||
    (url.protocol !== 'http:' && url.protocol !== 'https:') ||
    url.hostname === '' ||
    url.search !== '' ||
    url.hash !== '' ||
    url.username !== ''
  ) {
    throw new IllegalArgumentError(
      'invalid-value',
      `${source} must be the JobManager's REST URL, like http://127.0.0.1:8081 (several: comma-separated), ` +
        `got ${JSON.stringify(value)}`,
      { argument: source },
    );
  }
  return url.href.replace(/\/+$/, '');
}

/** An integer flag within [min, max]. */
export function integerFlag(flag: string, value: string, min: number, max: number): number {
  const n = /^-?\d+$/.test(value) ? Number(value) : NaN;
  if (!Number.isSafeInteger(n) || n < min || n > max)
    throw new IllegalArgumentError(
      'out-of-range',
      `--${flag} must be an integer from ${min} to ${max}, got ${JSON.stringify(value)}`,
      { argument: `--${flag}` },
    );
  return n;
}

/** A number flag > 0 (CPU cores). */
export function positiveNumberFlag(flag: string, value: string): number {
  const n = /^\d+(\.\d+)?$/.test(value) ? Number(value) : NaN;
  if (!Number.isFinite(n) || n <= 0)
    throw new IllegalArgumentError(
      'out-of-range',
      `--${flag} must be a number > 0, like 2 or 0.5, got ${JSON.stringify(value)}`,
      { argument: `--${flag}` },
    );
  return n;
}

/** A memory size flag (`512m`, `1g`, `256 mb`), kept as given once it parses. */
export function memoryFlag(flag: string, value: string): string {
  const parsed = parseMemorySize(value);
  if (!parsed.ok)
    throw new IllegalArgumentError(
      'invalid-value',
      `--${flag} must be a memory size like 512m, 1g or 256 mb: ${JSON.stringify(value)} ${parsed.problem}`,
      { argument: `--${flag}` },
    );
  return value;
}

/** One of the allowed words. */
export function choiceFlag<T extends string>(flag: string, value: string, allowed: readonly T[]): T {
  if (!(allowed as readonly string[]).includes(value))
    throw new IllegalArgumentError(
      'invalid-value',
      `--${flag} must be one of ${allowed.join(', ')}, got ${JSON.stringify(value)}`,
      { argument: `--${flag}` },
    );
  return value as T;
}

/** `--resource gpu=2`, repeatable: extended resources by name (letters, digits, _ . -), amounts >= 0. */
export function resourceFlags(values: readonly string[]): Record<string, number> {
  const resources: Record<string, number> = {};
  for (const value of values) {
    const match = /^([A-Za-z][\w.-]*)=(\d+(?:\.\d+)?)$/.exec(value);
    if (match === null)
      throw new IllegalArgumentError(
        'invalid-value',
        `--resource must be NAME=AMOUNT, like gpu=2, got ${JSON.stringify(value)}`,
        { argument: '--resource' },
      );
    if (Object.hasOwn(resources, match[1]!))
      throw new IllegalArgumentError('invalid-value', `--resource names ${match[1]} twice`, { argument: '--resource' });
    resources[match[1]!] = Number(match[2]);
  }
  return resources;
}

/** `nats://host:port` (or `tls://`), or several comma-separated (one NATS cluster's servers), as `--nats` takes it. */
export function natsUrlFlag(value: string): string {
  for (const server of value.split(',')) {
    let url: URL | undefined;
    try {
      url = new URL(server.trim());
    } catch {
      url = undefined;
    }
    if (url === undefined || !['nats:', 'tls:'].includes(url.protocol) || url.hostname === '') {
      throw new IllegalArgumentError(
        'invalid-value',
        `--nats must be a NATS server URL like nats://127.0.0.1:4222 (several: comma-separated), ` +
          `got ${JSON.stringify(value)}`,
        { argument: '--nats' },
      );
    }
  }
  return value;
}

/** `--cluster-id`: letters, digits, `_` and `-` (it names NATS subjects and buckets). */
export function clusterIdFlag(value: string): string {
  if (!/^[A-Za-z0-9][\w-]{0,63}$/.test(value))
    throw new IllegalArgumentError(
      'invalid-value',
      `--cluster-id must be 1 to 64 letters, digits, _ or -, ` +
        `starting with a letter or digit, got ${JSON.stringify(value)}`,
      { argument: '--cluster-id' },
    );
  return value;
}

/**
 * `-D key=value` (Flink's dynamic properties), repeatable: the runtime options they set. A value that reads as a
 * number is one; resolveOptions checks each (a ConfigurationError names a bad key or value).
 */
export function propertyFlags(values: readonly string[]): Record<string, string | number> {
  const properties: Record<string, string | number> = {};
  for (const value of values) {
    const at = value.indexOf('=');
    if (at <= 0)
      throw new IllegalArgumentError(
        'invalid-value',
        `-D takes key=value, e.g. -D high-availability.leader-election.lease-duration=5s, got ${JSON.stringify(value)}`,
        { argument: '-D', value },
      );
    const raw = value.slice(at + 1).trim();
    properties[value.slice(0, at).trim()] = raw !== '' && Number.isFinite(Number(raw)) ? Number(raw) : raw;
  }
  return properties;
}

/** The one JOB_ID a command takes (32 lowercase hex characters, as `slotwise list` shows it). */
export function jobIdArgument(command: string, positionals: readonly string[]): string {
  if (positionals.length !== 1)
    throw new IllegalArgumentError(
      'missing',
      `${command} takes one JOB_ID, ` +
        `got ${positionals.length === 0 ? 'none' : positionals.join(' ')} (slotwise ${command} --help)`,
      { argument: 'JOB_ID' },
    );
  const jobId = positionals[0]!;
  if (!/^[0-9a-f]{32}$/.test(jobId))
    throw new IllegalArgumentError(
      'invalid-value',
      `JOB_ID must be 32 lowercase hex characters, as slotwise list shows it, got ${JSON.stringify(jobId)}`,
      { argument: 'JOB_ID' },
    );
  return jobId;
}
