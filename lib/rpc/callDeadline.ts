/**
 * When a gateway call gives up (pure; GatewayCaller applies it). A deadline measures a silent
 * peer, not our own queue:
 *
 * - the clock of a call starts when its frame has left (`sentAt`: the transport's send of its batch
 *   returned), not when it was queued behind our own batch;
 * - the call fails once the peer has sent nothing at all for `timeoutMs` since then: any frame
 *   from the peer after the call left (`lastHeardAt`: an answer to another call, a call of its
 *   own) shows it alive and restarts that wait — as Flink's heartbeats tell a busy TaskExecutor
 *   from a dead one, where its ask timeout alone cannot;
 * - and in any case `maxWaitMs` after it left: a peer that answers every other call but never this
 *   one still fails it.
 */

export interface CallDeadlineInput {
  /** When the call's frame left, on the caller's clock. */
  readonly sentAt: number;
  /** When the last frame from the peer was delivered (-Infinity: never). */
  readonly lastHeardAt: number;
  readonly now: number;
  readonly timeoutMs: number;
  readonly maxWaitMs: number;
}

export type CallDeadlineVerdict =
  /** Keep waiting; judge again at `until`. */
  | { readonly kind: 'wait'; readonly until: number }
  /**
   * The peer sent nothing for `timeoutMs`; `heardSinceSent`: it did send something after the call left, before falling
   * silent.
   */
  | { readonly kind: 'silent'; readonly heardSinceSent: boolean }
  /** `maxWaitMs` passed although the peer kept sending. */
  | { readonly kind: 'max-wait' };

export function judgeCallDeadline({
  sentAt,
  lastHeardAt,
  now,
  timeoutMs,
  maxWaitMs,
}: CallDeadlineInput): CallDeadlineVerdict {
  const heardSinceSent = lastHeardAt > sentAt;
  const silentUntil = (heardSinceSent ? lastHeardAt : sentAt) + timeoutMs;
  if (now >= silentUntil) return { kind: 'silent', heardSinceSent };
  const bound = sentAt + maxWaitMs;
  if (now >= bound) return { kind: 'max-wait' };
  return { kind: 'wait', until: Math.min(silentUntil, bound) };
}
