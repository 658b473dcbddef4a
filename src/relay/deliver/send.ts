/**
 * One platform call and what its answer proves about the entries in it:
 * - `ok`: the platform answered 2xx (per-entry results are in the body);
 * - `refused`: a 4xx the entries caused (with per-entry `details` when the platform gave them);
 * - `unapplied`: nothing was applied (429, 503, 408, the key refused, the request never left): send again later;
 * - `ambiguous`: the platform may have applied it (timeout after sending, lost connection, 500/502/504).
 * The classes are those of `policy.ts`, shared with the Workers consumer.
 *
 * Only `unapplied` calls, and ambiguous calls of idempotent endpoints, may be sent again: an
 * `activities/create` that may have been applied is never repeated blindly (`Endpoint.idempotent`).
 * @module
 */
import { ENDPOINTS, type EndpointId } from '../../api/index.js';
import { parseJsonOrUndefined } from '../../api/objects.js';
import { wasNotSent } from '../../api/retry.js';
import type { Clock } from '../core/clock.js';
import { RelayHttpError } from '../core/errors.js';
import type { CallOptions, Upstream } from './caller.js';
import { outcomeKind } from './policy.js';
import { refusal } from './verdict.js';
import { readText } from './transport.js';

export type CallOutcome =
  | { kind: 'ok'; status: number; body: unknown }
  | { kind: 'refused'; status: number; message: string; details: unknown[] }
  /** `holdMs`: how long the platform asked to wait (429), else 0 */
  | { kind: 'unapplied'; status: number; message: string; holdMs: number }
  | { kind: 'ambiguous'; status: number; message: string };

/**
 * Sends `text` (JSON) to endpoint `id` once, as browser traffic (the breaker of platform refusals
 * pauses it before proxy traffic); never throws for upstream trouble.
 */
export async function callOnce(upstream: Upstream, id: EndpointId, text: string, options: Omit<CallOptions, 'from'> = {}): Promise<CallOutcome> {
  let status = 0;
  let answer: unknown;
  try {
    const reply = await upstream.call(ENDPOINTS[id], text, { ...options, from: 'browser' });
    status = reply.status;
    if (status === 429) return { kind: 'unapplied', status, message: 'the platform asked the relay to slow down', holdMs: (reply.holdSeconds ?? 1) * 1000 };
    answer = parseJsonOrUndefined(await readText(reply));
  } catch (error) {
    // Timeouts (the call was aborted) and network errors come as RelayHttpError; anything else is a bug.
    if (!(error instanceof RelayHttpError)) throw error;
    // Paused by the breaker: nothing was sent.
    if (error.code === 'upstream_paused') return { kind: 'unapplied', status: 0, message: error.message, holdMs: (error.retryAfter ?? 1) * 1000 };
    if (wasNotSent(error)) return { kind: 'unapplied', status: 0, message: 'the platform could not be reached', holdMs: 0 };
    return { kind: 'ambiguous', status: 0, message: error.code === 'upstream_timeout' ? 'the platform did not answer in time' : 'the connection was lost' };
  }
  switch (outcomeKind(status)) {
    case 'ok':
      // A 2xx whose body is not JSON cannot say what it applied.
      return answer === undefined ? { kind: 'ambiguous', status, message: 'the platform answered without a body' } : { kind: 'ok', status, body: answer };
    case 'unapplied':
      return status === 401 || status === 403
        ? { kind: 'unapplied', status, message: "the platform refused the relay's key (check CDP_API_KEY and CDP_REGION)", holdMs: 0 }
        : { kind: 'unapplied', status, message: `the platform answered ${status}`, holdMs: 0 };
    case 'refused':
      return { kind: 'refused', status, ...refusal(answer, status) };
    default:
      return { kind: 'ambiguous', status, message: `the platform answered ${status}` };
  }
}

/** What the Workers paths (the request forwarding inline, the queue consumer) need to send within a time budget. */
export interface SendContext {
  upstream: Upstream;
  clock: Clock;
  /** ms since epoch by which the caller must be done */
  deadline: number;
  random: () => number;
  /** every upstream status seen (0 = no answer), for the log */
  statuses: number[];
}

/** A call that did not get through: try again after `retryAfter` seconds; `ambiguous` when it may have been applied. */
export type Outcome =
  | { kind: 'ok'; body: unknown }
  | { kind: 'refused'; status: number; message: string; details: unknown[] }
  | { kind: 'unavailable'; status: number; message: string; retryAfter: number; ambiguous: boolean };

const MAX_ATTEMPTS = 4;
const BASE_DELAY_MS = 250;

/**
 * Sends `body` to `id` within the budget: waits out the shared 429 hold, and retries what was
 * not applied, plus ambiguous failures of idempotent endpoints only, with full jitter.
 */
export async function sendOnce(ctx: SendContext, id: EndpointId, body: Record<string, unknown> | string): Promise<Outcome> {
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  let last: Outcome = { kind: 'unavailable', status: 0, message: 'the platform was not called', retryAfter: 1, ambiguous: false };
  for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    const wait = ctx.upstream.holdMs();
    if (wait > 0) {
      if (ctx.clock.now() + wait > ctx.deadline) return { ...last, retryAfter: Math.max(1, Math.ceil(wait / 1000)) };
      await ctx.clock.sleep(wait);
    }
    const outcome = await callOnce(ctx.upstream, id, text, { waitUntil: ctx.deadline });
    ctx.statuses.push(outcome.status);
    if (outcome.kind === 'ok' || outcome.kind === 'refused') return outcome;
    const ambiguous = outcome.kind === 'ambiguous';
    const retryAfter =
      outcome.kind === 'unapplied' && outcome.holdMs > 0 ? Math.ceil(outcome.holdMs / 1000) : outcome.status === 401 || outcome.status === 403 ? 60 : 5;
    last = { kind: 'unavailable', status: outcome.status, message: outcome.message, retryAfter, ambiguous };
    if (outcome.status === 401 || outcome.status === 403) break;
    // The platform may have applied it: only a call that does the same when repeated goes again.
    if (ambiguous && !ENDPOINTS[id].idempotent) break;
    // Paused by the breaker: trying again within this request cannot help.
    if (outcome.kind === 'unapplied' && outcome.status === 0 && outcome.holdMs > 0) break;
    if (outcome.kind === 'unapplied' && outcome.holdMs > 0) continue;
    const delay = Math.round(ctx.random() * BASE_DELAY_MS * 2 ** attempt);
    if (ctx.clock.now() + delay >= ctx.deadline || attempt === MAX_ATTEMPTS - 1) break;
    await ctx.clock.sleep(delay);
  }
  return last;
}
