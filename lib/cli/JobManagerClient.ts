/**
 * The CLI's client of a cluster that may have several JobManagers (`--jobmanager URL1,URL2`, or
 * SLOTWISE_JOBMANAGER the same way): each call goes to the JobManager that answered last, and to the
 * next one in turn when that one cannot be reached — a leader that died is left for a standby, which
 * leads within the lease duration; a standby that is reached redirects the call to the leader (307,
 * followed). A POST that timed out is not sent again elsewhere (it may have been taken).
 */
import { RestError } from '../core/errors.js';
import { DEFAULT_CALL_TIMEOUT_MS, RestClient, type RestClientOptions } from './RestClient.js';

export class JobManagerClient {
  readonly #clients: readonly RestClient[];
  #current = 0;

  /** `urls`: each JobManager's REST URL as `jobManagerUrls` checked them (at least one); `options` for each. */
  constructor(urls: readonly string[], options: RestClientOptions = {}) {
    this.#clients = urls.map((url) => new RestClient(url, options));
  }

  /** The URL of the JobManager that answered last (the first given, before any call). */
  get baseUrl(): string {
    return this.#clients[this.#current]!.baseUrl;
  }

  get<T>(path: string, timeoutMs = DEFAULT_CALL_TIMEOUT_MS): Promise<T> {
    return this.#call((client) => client.get<T>(path, timeoutMs), true);
  }

  /** A GET whose answer may be large: `timeoutMs` bounds its start and each pause of its body (RestClient.getLarge). */
  getLarge<T>(path: string, timeoutMs = DEFAULT_CALL_TIMEOUT_MS): Promise<T> {
    return this.#call((client) => client.getLarge<T>(path, timeoutMs), true);
  }

  post<T>(path: string, body: unknown, timeoutMs = DEFAULT_CALL_TIMEOUT_MS): Promise<T> {
    return this.#call((client) => client.post<T>(path, body, timeoutMs), false);
  }

  patch<T>(path: string, timeoutMs = DEFAULT_CALL_TIMEOUT_MS): Promise<T> {
    return this.#call((client) => client.patch<T>(path, timeoutMs), false);
  }

  async #call<T>(call: (client: RestClient) => Promise<T>, idempotent: boolean): Promise<T> {
    const tried: string[] = [];
    for (let step = 0; step < this.#clients.length; step++) {
      const index = (this.#current + step) % this.#clients.length;
      const client = this.#clients[index]!;
      try {
        const answer = await call(client);
        this.#current = index;
        return answer;
      } catch (error) {
        const away = error instanceof RestError && (error.reason === 'unreachable' || error.reason === 'timed-out');
        if (!away || (!idempotent && error.reason === 'timed-out') || this.#clients.length === 1) throw error;
        tried.push(error.message);
      }
    }
    throw new RestError('unreachable', `no JobManager answered: ${tried.join('; ')}`, {
      urls: this.#clients.map((client) => client.baseUrl),
    });
  }
}
