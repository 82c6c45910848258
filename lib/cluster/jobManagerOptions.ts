/**
 * Checks of startJobManager's options shared with startTaskManager's: unknown keys refused
 * (`checkOptionKeys`), and the JobManager's REST server — where it listens and who may call it —
 * checked before anything connects (`checkRestOptions`).
 */
import { IllegalArgumentError } from '../core/errors.js';
import { checkListenAddress, checkRestAccess, type RestTlsOptions } from '../rest/RestServer.js';

export interface JobManagerRestOptions {
  readonly port?: number;
  readonly address?: string;
  /**
   * A bearer token every route asks for, the dashboard's and /metrics too, the same at every start
   * (`SLOTWISE_REST_TOKEN`, `--rest-token-file`). Default: none (the API open on loopback; the
   * dashboard behind a token new at every start). Needed beyond loopback, unless `tls.clientCaFile`.
   */
  readonly token?: string;
  /** Serve https: `{ certFile, keyFile, clientCaFile? }` (RestServer.ts). */
  readonly tls?: RestTlsOptions;
}

const REST_KEYS = ['port', 'address', 'token', 'tls'];

export function checkRestOptions(rest: unknown): JobManagerRestOptions & { port: number; address: string } {
  checkOptionKeys(rest, REST_KEYS, 'startJobManager options.rest');
  const { port = 8081, address = '127.0.0.1', token, tls } = rest as JobManagerRestOptions;
  checkListenAddress(address, port, 'options.rest', 'options.rest.');
  // Who may call it, before anything connects (startRestServer checks again when it starts).
  checkRestAccess({ address, token, tls }, 'options.rest', 'options.rest.');
  return { port, address, ...(token === undefined ? {} : { token }), ...(tls === undefined ? {} : { tls }) };
}

export function checkOptionKeys(options: unknown, known: readonly string[], where: string): void {
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    throw new IllegalArgumentError(
      'invalid-type',
      `${where} takes an options object, ` +
        `got ${options === null ? 'null' : Array.isArray(options) ? 'an array' : typeof options}`,
      { argument: 'options' },
    );
  }
  const unknown = Object.keys(options).find((key) => !known.includes(key));
  if (unknown !== undefined)
    throw new IllegalArgumentError('unknown-key', `${where}: unknown option '${unknown}'; known: ${known.join(', ')}`, {
      argument: `options.${unknown}`,
    });
}
