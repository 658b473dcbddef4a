/**
 * What one platform call's outcome means for its entries, and what the relay does about a call
 * whose outcome it cannot know. Pure: the one engine decides the same way on Node and on Workers.
 *
 * - `ok`: a 2xx; the answer says, entry by entry, what the platform took.
 * - `unapplied`: the platform certainly did not apply it (429, 503, 408, its key refused, a
 *   connection never made): send again later.
 * - `ambiguous`: the request may have been applied (a timeout after sending, a connection lost
 *   mid-call, 500, 502, 504). `person/merge` is idempotent and is sent again; `activities/create`
 *   is not (a second call records the events again), so by default its entries are held as dead
 *   letters (reason `ambiguous`) for an operator to check and retry, never resent blindly.
 * - `refused`: any other 4xx; the platform will refuse it again.
 * @module
 */
import { ENDPOINTS, type EndpointId } from '../../api/index.js';
import type { AmbiguousPolicy } from '../core/config.js';

/** The one vocabulary of outcomes: the `kind` of every {@link CallOutcome}. */
export type OutcomeKind = 'ok' | 'unapplied' | 'ambiguous' | 'refused';

/** What one platform call came to (send.ts makes it, verdict.ts judges it). */
export type CallOutcome =
  | { kind: 'ok'; status: number; body: unknown }
  | { kind: 'refused'; status: number; message: string; details: unknown[] }
  /** `holdMs`: how long the platform asked to wait (429), else 0 */
  | { kind: 'unapplied'; status: number; message: string; holdMs: number /** the relay's breaker held it (nothing was sent) */; paused?: boolean }
  | { kind: 'ambiguous'; status: number; message: string };

/** The dead-letter reason of an entry held after an ambiguous call. */
export const AMBIGUOUS_REASON = 'ambiguous';

/**
 * The outcome of one call from its status (0: no answer came). `notSent` says a failure happened
 * before the request left (connection refused, unknown host, the pacer's own hold): only then is
 * a missing answer known to be unapplied.
 */
export function outcomeKind(status: number, notSent = false): OutcomeKind {
  if (status >= 200 && status < 300) return 'ok';
  if (status === 0) return notSent ? 'unapplied' : 'ambiguous';
  if (status === 429 || status === 503 || status === 408 || status === 401 || status === 403) return 'unapplied';
  if (status === 500 || status === 502 || status === 504) return 'ambiguous';
  return status >= 500 ? 'ambiguous' : 'refused';
}

/** Whether an entry of `endpoint` goes again after an ambiguous call, or is held. */
export function afterAmbiguous(endpoint: EndpointId, policy: AmbiguousPolicy): 'resend' | 'hold' {
  return ENDPOINTS[endpoint].idempotent ? 'resend' : policy;
}
