/**
 * The CLI's only way to the cluster: calls to the JobManager's REST API with a deadline each. A
 * refusal comes back as the RestError (or other typed error) of the server's body, with its
 * `_tag` and `reason`; a server that is not there fails fast as `unreachable` (connection refused)
 * or, when nothing answers at all, as `timed-out` at the deadline — never a hang.
 */
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

export class RestClient {
  readonly baseUrl: string;

  /**
   * `baseUrl` as `--jobmanager` gives it (checked by the caller): `http://host:port`, with or without a trailing slash.
   */
  constructor(baseUrl: string) {
    this.baseUrl = baseUrl.replace(/\/+$/, '');
  }

  get<T>(path: string, timeoutMs = DEFAULT_CALL_TIMEOUT_MS): Promise<T> {
    return this.#call<T>('GET', path, undefined, timeoutMs);
  }

  post<T>(path: string, body: unknown, timeoutMs = DEFAULT_CALL_TIMEOUT_MS): Promise<T> {
    return this.#call<T>('POST', path, body, timeoutMs);
  }

  patch<T>(path: string, timeoutMs = DEFAULT_CALL_TIMEOUT_MS): Promise<T> {
    return this.#call<T>('PATCH', path, undefined, timeoutMs);
  }

  async #call<T>(method: string, path: string, body: unknown, timeoutMs: number): Promise<T> {
    const url = `${this.baseUrl}${path}`;
    let response: Response;
    let text: string;
    try {
      response = await fetch(url, {
        method,
        signal: AbortSignal.timeout(timeoutMs),
        ...(body === undefined ? {} : { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }),
      });
      text = await response.text();
    } catch (error) {
      const name = (error as { name?: string }).name;
      if (name === 'TimeoutError' || name === 'AbortError') {
        throw new RestError(
          'timed-out',
          `the JobManager at ${this.baseUrl} did not answer ${method} ${path} within ${timeoutMs} ms`,
          { url, method, timeoutMs },
        );
      }
      const cause = (error as { cause?: { code?: string; message?: string } }).cause;
      throw new RestError(
        'unreachable',
        `cannot reach the JobManager at ${this.baseUrl}: ${cause?.code ?? cause?.message ?? (error as Error).message}`,
        { url, method, code: cause?.code },
      );
    }
    let parsed: unknown;
    try {
      parsed = text === '' ? undefined : JSON.parse(text);
    } catch {
      throw new RestError(
        'bad-response',
        `${method} ${path} at ${this.baseUrl} answered ${response.status} ` +
          `with a body that is not JSON: is this a slotwise JobManager?`,
        { url, method, status: response.status },
      );
    }
    if (response.ok) return parsed as T;
    const refusal = parsed as { _tag?: unknown; reason?: unknown; message?: unknown } | undefined;
    if (typeof refusal?._tag === 'string' && typeof refusal.message === 'string')
      throw new RestRefusal(response.status, refusal as RestRefusal['body']);
    throw new RestError(
      'bad-response',
      `${method} ${path} at ${this.baseUrl} answered ${response.status} ` +
        `without a slotwise error body: is this a slotwise JobManager?`,
      { url, method, status: response.status },
    );
  }
}
