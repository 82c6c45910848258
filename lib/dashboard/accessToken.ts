/**
 * The dashboard's door, by the inspector relay's rule (inspectRelay.ts): a random token new at every
 * start, shown only in the URL the cluster gives; every request must carry it (`?token=` — an
 * EventSource cannot send headers — or `Authorization: Bearer <token>`, as a Prometheus scraper
 * would), compared in constant time. Bound to a loopback address, only requests naming that host
 * are served (DNS rebinding), and a request from a page of another origin is refused. A JobManager's
 * REST server may fix the token by configuration instead (`rest.token`, SLOTWISE_REST_TOKEN), so a
 * Prometheus scrape configuration survives a restart; it then asks it of every route (RestServer.ts).
 */
import { randomBytes, timingSafeEqual } from 'node:crypto';

/** What a configured token may be: 16 to 512 token characters (RFC 6750's b64token), so it fits a header and a URL. */
export const ACCESS_TOKEN = /^[A-Za-z0-9._~+/=-]{16,512}$/;
export const ACCESS_TOKEN_RULE =
  '16 to 512 letters, digits or - . _ ~ + / = (a random one: 32 bytes in hex or base64url)';

export function createAccessToken(): string {
  return randomBytes(18).toString('base64url');
}

export interface AccessRequest {
  readonly url: string;
  readonly headers: Readonly<Record<string, string | string[] | undefined>>;
  /** The port the request came in on (the `Host` header must name it). */
  readonly localPort: number | undefined;
}

export interface AccessRule {
  /** null: no token asked (the server around the plugin does its own authentication). */
  readonly token: string | null;
  /** Only requests naming a loopback host (`localhost`, `127.0.0.1`, `[::1]`) and this server's port. */
  readonly loopbackOnly: boolean;
}

const LOOPBACK = ['127.0.0.1', 'localhost', '::1', '[::1]'];

/** Whether a server bound to `host` is reachable from this machine only. */
export function isLoopback(host: string): boolean {
  return LOOPBACK.includes(host);
}

/** Why a request is refused (status and text), or null when it may pass. */
export function refusal(
  request: AccessRequest,
  rule: AccessRule,
): { readonly status: number; readonly text: string } | null {
  const host = header(request.headers['host']);
  if (
    rule.loopbackOnly &&
    !['localhost', '127.0.0.1', '[::1]'].some((name) => host === `${name}:${request.localPort}`)
  ) {
    return { status: 403, text: 'Forbidden: this dashboard answers to localhost only' };
  }
  const origin = header(request.headers['origin']);
  if (origin !== '' && origin !== `http://${host}` && origin !== `https://${host}`)
    return { status: 403, text: 'Forbidden: a page of another origin' };
  if (rule.token === null) return null;
  const given = givenToken(request);
  if (given === null) return { status: 400, text: 'Bad Request' };
  if (!tokenMatches(given, rule.token)) {
    return {
      status: 403,
      text: "Forbidden: open the dashboard's URL with its token, as the cluster gave it (cluster.dashboardUrl)",
    };
  }
  return null;
}

/**
 * The token a request carries: `Authorization: Bearer <token>`, else `?token=` (an EventSource cannot send headers);
 * '' when it carries none, null when its URL does not parse.
 */
export function givenToken(request: Pick<AccessRequest, 'url' | 'headers'>): string | null {
  const authorization = header(request.headers['authorization']);
  if (/^bearer /i.test(authorization)) return authorization.slice('Bearer '.length).trim();
  try {
    return new URL(request.url, 'http://localhost').searchParams.get('token') ?? '';
  } catch {
    return null;
  }
}

/** Whether `given` is `token`, compared in constant time (its length aside). */
export function tokenMatches(given: string, token: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(token);
  return a.length === b.length && timingSafeEqual(a, b);
}

function header(value: string | string[] | undefined): string {
  return Array.isArray(value) ? (value[0] ?? '') : (value ?? '');
}
