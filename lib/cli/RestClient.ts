/**
 * The CLI's only way to the cluster: calls to the JobManager's REST API with a deadline each. A
 * refusal comes back as the RestError (or other typed error) of the server's body, with its
 * `_tag` and `reason`; a server that is not there fails fast as `unreachable` (connection refused)
 * or, when nothing answers at all, as `timed-out` at the deadline — never a hang. It sends the REST
 * API's token when it has one, and speaks https with the CA it is given.
 */
import { constants } from 'node:buffer';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { StringDecoder } from 'node:string_decoder';
import { RestError } from '../core/errors.js';

/** How long a call may take by default: also the bound on reaching a JobManager that does not answer. */
export const DEFAULT_CALL_TIMEOUT_MS = 5_000;

/** A refusal the server sent: its typed body. */
export class RestRefusal extends Error {
  constructor(
    readonly status: number,
    readonly body: {
      readonly _tag: string;
      readonly reason: string;
      readonly message: string;
      readonly details?: Record<string, unknown>;
    },
  ) {
    super(body.message);
  }

  override get name(): string {
    return this.body._tag;
  }
}

export interface RestClientOptions {
  /** The REST API's token, sent as `Authorization: Bearer` on every call (`--token-file`, SLOTWISE_REST_TOKEN). */
  readonly token?: string;
  /** PEM text of the CA(s) an https JobManager's certificate must chain to (`--ca FILE`); default the system's. */
  readonly ca?: string;
  /** PEM text of a client certificate and its key, for a JobManager that asks for one (`--cert`, `--key`). */
  readonly cert?: string;
  readonly key?: string;
}

export class RestClient {
  readonly baseUrl: string;
  readonly #token: string | undefined;
  readonly #tls: { ca?: string; cert?: string; key?: string };

  /**
   * `baseUrl` as `--jobmanager` gives it (checked by the caller): `http://host:port` or `https://…`, with or without a
   * trailing slash.
   */
  constructor(baseUrl: string, options: RestClientOptions = {}) {
    this.baseUrl = baseUrl.replace(/\/+$/, '');
    this.#token = options.token;
    this.#tls = {
      ...(options.ca === undefined ? {} : { ca: options.ca }),
      ...(options.cert === undefined ? {} : { cert: options.cert }),
      ...(options.key === undefined ? {} : { key: options.key }),
    };
  }

  get<T>(path: string, timeoutMs = DEFAULT_CALL_TIMEOUT_MS): Promise<T> {
    return this.#call<T>('GET', path, undefined, timeoutMs);
  }

  /**
   * GET of an answer that may be large (a job's result, streamed by the server): `timeoutMs` bounds the wait for the
   * answer to start and then each wait for the next piece of its body, not the whole transfer, so a large body on a
   * slow link arrives while one that stops coming still fails (`timed-out`).
   */
  getLarge<T>(path: string, timeoutMs = DEFAULT_CALL_TIMEOUT_MS): Promise<T> {
    return this.#call<T>('GET', path, undefined, timeoutMs, true);
  }

  post<T>(path: string, body: unknown, timeoutMs = DEFAULT_CALL_TIMEOUT_MS): Promise<T> {
    return this.#call<T>('POST', path, body, timeoutMs);
  }

  patch<T>(path: string, timeoutMs = DEFAULT_CALL_TIMEOUT_MS): Promise<T> {
    return this.#call<T>('PATCH', path, undefined, timeoutMs);
  }

  async #call<T>(method: string, path: string, body: unknown, timeoutMs: number, large = false): Promise<T> {
    const url = `${this.baseUrl}${path}`;
    let response: { status: number; text: string; location: string | undefined };
    try {
      const text = body === undefined ? undefined : JSON.stringify(body);
      response = await this.#send(method, url, text, timeoutMs, large);
      // A standby JobManager sends the call to the leader (307): followed with its method, body and token.
      for (let hop = 0; REDIRECTS.has(response.status) && response.location !== undefined && hop < MAX_HOPS; hop++)
        response = await this.#send(method, new URL(response.location, url).href, text, timeoutMs, large);
    } catch (error) {
      if (error === TIMED_OUT) {
        throw new RestError(
          'timed-out',
          `the JobManager at ${this.baseUrl} did not answer ${method} ${path} within ${timeoutMs} ms`,
          { url, method, timeoutMs },
        );
      }
      if (error === STALLED) {
        throw new RestError(
          'timed-out',
          `the JobManager at ${this.baseUrl} stopped sending its answer to ${method} ${path}: ` +
            `nothing came for ${timeoutMs} ms`,
          { url, method, timeoutMs },
        );
      }
      if (error === TOO_LARGE) {
        throw new RestError(
          'body-too-large',
          `${method} ${path} at ${this.baseUrl} answered more JSON than one JavaScript string holds ` +
            `(${constants.MAX_STRING_LENGTH} characters)`,
          { url, method, limit: constants.MAX_STRING_LENGTH },
        );
      }
      const { code, message } = error as NodeJS.ErrnoException;
      throw new RestError(
        'unreachable',
        `cannot reach the JobManager at ${this.baseUrl}: ${code ?? message}` +
          (code === 'ERR_TLS_CERT_ALTNAME_INVALID'
            ? ` (its certificate does not name ${new URL(this.baseUrl).hostname}: use a name it does)`
            : code !== undefined && TLS_CODES.test(code)
              ? ` (its certificate is not one this client trusts: --ca FILE names the CA that signed it)`
              : ''),
        { url, method, code },
      );
    }
    const { status, text } = response;
    let parsed: unknown;
    try {
      parsed = text === '' ? undefined : JSON.parse(text);
    } catch {
      throw new RestError(
        'bad-response',
        `${method} ${path} at ${this.baseUrl} answered ${status} ` +
          `with a body that is not JSON: is this a slotwise JobManager?`,
        { url, method, status },
      );
    }
    if (status >= 200 && status < 300) return parsed as T;
    const refusal = parsed as { _tag?: unknown; reason?: unknown; message?: unknown } | undefined;
    if (typeof refusal?._tag === 'string' && typeof refusal.message === 'string')
      throw new RestRefusal(status, refusal as RestRefusal['body']);
    throw new RestError(
      'bad-response',
      `${method} ${path} at ${this.baseUrl} answered ${status} ` +
        `without a slotwise error body: is this a slotwise JobManager?`,
      { url, method, status },
    );
  }

  /**
   * One request over node:http or node:https (fetch takes no CA of its own); TIMED_OUT past the deadline, or with
   * `large`, STALLED when the body stops coming for that long. The body is decoded as it comes (no copy of it all in
   * bytes); TOO_LARGE once it passes what one string holds.
   */
  #send(
    method: string,
    url: string,
    body: string | undefined,
    timeoutMs: number,
    large: boolean,
  ): Promise<{ status: number; text: string; location: string | undefined }> {
    const headers: Record<string, string> = {};
    if (body !== undefined) headers['content-type'] = 'application/json';
    if (this.#token !== undefined) headers['authorization'] = `Bearer ${this.#token}`;
    const https = url.startsWith('https:');
    return new Promise((resolve, reject) => {
      let answered = false;
      const timer = setTimeout(() => {
        request.destroy();
        reject(answered ? STALLED : TIMED_OUT);
      }, timeoutMs);
      const done = (error: unknown, answer?: { status: number; text: string; location: string | undefined }) => {
        clearTimeout(timer);
        if (error !== null) reject(error);
        else resolve(answer!);
      };
      const options = { method, headers, ...(https ? this.#tls : {}) };
      const request = (https ? httpsRequest : httpRequest)(url, options, (response) => {
        answered = true;
        if (large) timer.refresh();
        const decoder = new StringDecoder('utf8');
        const parts: string[] = [];
        let length = 0;
        response.on('data', (chunk: Buffer) => {
          if (large) timer.refresh();
          const part = decoder.write(chunk);
          length += part.length;
          if (length > constants.MAX_STRING_LENGTH) {
            request.destroy();
            done(TOO_LARGE);
            return;
          }
          parts.push(part);
        });
        response.on('end', () => {
          parts.push(decoder.end());
          done(null, {
            status: response.statusCode ?? 0,
            text: parts.join(''),
            location: response.headers.location,
          });
        });
        response.on('error', (error) => done(error));
      });
      request.on('error', (error) => done(error));
      request.end(body);
    });
  }
}

/** Redirects followed (a standby's to its leader), and how many in a row at most. */
const REDIRECTS: ReadonlySet<number> = new Set([307, 308]);
const MAX_HOPS = 3;
/** The deadline passed (a marker, never shown). */
const TIMED_OUT = Symbol('timed out');
/** A large answer's body stopped coming for the deadline (a marker). */
const STALLED = Symbol('stalled');
/** The body passed what one string holds (a marker). */
const TOO_LARGE = Symbol('too large');
/** What node:tls says when it does not trust a server's certificate. */
const TLS_CODES = /CERT|SELF_SIGNED|UNABLE_TO_(GET|VERIFY)/;
