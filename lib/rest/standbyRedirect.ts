/**
 * A standby JobManager's REST server (issue: clients follow the leader): the API's routes answer
 * `307 Temporary Redirect` to the same path on the leader's REST URL (a client that follows redirects
 * — fetch, curl -L, `slotwise` — reaches the leader with its method and body), or `503` with
 * `Retry-After` while nobody leads or the leader has no REST server. The dashboard and `/metrics`
 * stay served here (they show this JobManager).
 */
import type { FastifyInstance } from 'fastify';
import { RestError } from '../core/errors.js';
import { ROUTES } from './restRoutes.js';

/** Who leads, as a standby knows it: `null` from the function while this JobManager leads. */
export type StandbyState = () => {
  readonly leader: { readonly holder: { readonly restUrl: string | null; readonly host: string } } | null;
} | null;

/** Seconds a client waits before asking a standby again while nobody leads. */
const RETRY_AFTER_S = 1;

export function registerStandbyRedirect(app: FastifyInstance, standby: StandbyState): void {
  const api = new Set(Object.keys(ROUTES));
  app.addHook('preHandler', async (request, reply) => {
    const pattern = request.routeOptions.url;
    if (pattern === undefined || !api.has(pattern)) return;
    const state = standby();
    if (state === null) return;
    const leaderUrl = state.leader?.holder.restUrl ?? null;
    if (leaderUrl !== null) {
      void reply.code(307).header('location', new URL(request.url, leaderUrl).href);
      return reply.send();
    }
    void reply.header('retry-after', String(RETRY_AFTER_S));
    throw new RestError(
      'not-leader',
      state.leader === null
        ? 'this JobManager stands by and nobody leads the cluster right now: ask again in a moment'
        : `this JobManager stands by; the leader (on ${state.leader.holder.host}) serves no REST API`,
      { status: 503 },
    );
  });
}
