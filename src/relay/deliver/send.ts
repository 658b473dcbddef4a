/**
 * One call to the platform within the request's time budget. 429 → wait `try-in-seconds`
 * (one backoff shared by every request to the same upstream: never hammer); 5xx, 408 and
 * network errors → bounded retries with full jitter; other 4xx → the entries are refused.
 * @module
 */
import { ENDPOINTS, type EndpointId } from '../../api/index.js';
import { isRecord, parseJsonOrUndefined } from '../../api/objects.js';
import { RelayHttpError } from '../errors.js';
import type { Upstream } from './caller.js';
import { readText } from './transport.js';
import type { Coalescer } from '../collect/coalesce.js';

export { sharedBackoff, type Backoff } from './caller.js';

/** Time, injected so tests and benchmarks can watch or skip waits. */
export interface Clock {
  now(): number;
  sleep(ms: number): Promise<void>;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
};

export type Outcome =
  | { kind: 'ok'; body: unknown }
  /** the platform refused the call (4xx): `details` are per-entry when it gave them */
  | { kind: 'refused'; status: number; message: string; details: unknown[] }
  /** nothing got through within the budget: try again after `retryAfter` seconds */
  | { kind: 'unavailable'; status: number; message: string; retryAfter: number };

export interface SendContext {
  /** the relay's one caller of the platform (it holds the shared 429 backoff) */
  upstream: Upstream;
  clock: Clock;
  /** ms since epoch by which the request must answer */
  deadline: number;
  random: () => number;
  /** every upstream status seen (0 = no answer), for the log */
  statuses: number[];
  /** joins the activities/create calls of concurrent requests (the Node entry); each request calls alone without it */
  coalesce?: Coalescer | undefined;
}

const MAX_ATTEMPTS = 4;
const BASE_DELAY_MS = 250;

/** The message and per-entry details of an error body: the platform's `{error, details}` or a relay's `{error: {message, details}}`. */
export function refusal(body: unknown, status: number): { message: string; details: unknown[] } {
  if (!isRecord(body)) return { message: typeof body === 'string' && body !== '' ? body.slice(0, 200) : `HTTP ${status}`, details: [] };
  const error = body['error'];
  if (isRecord(error)) return { message: String(error['message'] ?? 'error'), details: Array.isArray(error['details']) ? error['details'] : [] };
  return { message: typeof error === 'string' ? error : `HTTP ${status}`, details: Array.isArray(body['details']) ? body['details'] : [] };
}

const slowDown = (seconds: number): Outcome => ({
  kind: 'unavailable',
  status: 429,
  message: 'the platform asked the relay to slow down',
  retryAfter: Math.max(1, Math.ceil(seconds)),
});

/** Sends `body` (serialised once, here, unless given as JSON text) to endpoint `id`; never throws for upstream trouble. */
export async function sendOnce(ctx: SendContext, id: EndpointId, body: Record<string, unknown> | string): Promise<Outcome> {
  const endpoint = ENDPOINTS[id];
  const text = typeof body === 'string' ? body : JSON.stringify(body);
  let last: Outcome = { kind: 'unavailable', status: 0, message: 'the platform was not called', retryAfter: 1 };
  for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    const wait = ctx.upstream.holdMs();
    if (wait > 0) {
      if (ctx.clock.now() + wait > ctx.deadline) return slowDown(wait / 1000);
      await ctx.clock.sleep(wait);
    }
    let status = 0;
    let answer: unknown;
    try {
      const reply = await ctx.upstream.call(endpoint, text, { from: 'browser', waitUntil: ctx.deadline });
      status = reply.status;
      answer = parseJsonOrUndefined(await readText(reply));
      if (status >= 200 && status < 300 && answer === undefined) status = 0; // an answer that is not JSON: as if none came
    } catch (error) {
      // Timeouts (the call was aborted) and network errors come as RelayHttpError; anything else is a bug.
      if (!(error instanceof RelayHttpError)) throw error;
      // Paused by the breaker: nothing was sent, and trying again within this request cannot help.
      if (error.code === 'upstream_paused') return { kind: 'unavailable', status: 503, message: error.message, retryAfter: error.retryAfter ?? 1 };
    }
    ctx.statuses.push(status);
    if (status >= 200 && status < 300) return { kind: 'ok', body: answer };
    if (status === 429) {
      last = slowDown(ctx.upstream.holdMs() / 1000);
      continue;
    }
    if (status === 401 || status === 403) {
      // The key itself was refused: retrying cannot help, and the items must not be lost.
      return { kind: 'unavailable', status, message: "the platform refused the relay's key (check CDP_API_KEY and CDP_REGION)", retryAfter: 60 };
    }
    if (status !== 0 && status < 500 && status !== 408) return { kind: 'refused', status, ...refusal(answer, status) };
    last =
      status === 0
        ? { kind: 'unavailable', status: 0, message: 'the platform did not answer', retryAfter: 5 }
        : { kind: 'unavailable', status, message: `the platform answered ${status}`, retryAfter: 5 };
    // Full jitter: a random wait up to an exponentially growing cap, inside the budget.
    const delay = Math.round(ctx.random() * BASE_DELAY_MS * 2 ** attempt);
    if (ctx.clock.now() + delay >= ctx.deadline || attempt === MAX_ATTEMPTS - 1) break;
    await ctx.clock.sleep(delay);
  }
  return last;
}
