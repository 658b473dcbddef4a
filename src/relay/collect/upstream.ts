/**
 * One call to the platform within the request's time budget. 429 → wait `try-in-seconds`
 * (one backoff shared by every request to the same upstream: never hammer); 5xx, 408 and
 * network errors → bounded retries with full jitter; other 4xx → the entries are refused.
 * @module
 */
import type { EndpointId } from '../../api/index.js';
import { HTTPError, RateLimitError, type Client } from '../../client/index.js';

/** Time, injected so tests and benchmarks can watch or skip waits. */
export interface Clock {
  now(): number;
  sleep(ms: number): Promise<void>;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
};

/** When the upstream told us to come back (ms since epoch); shared per upstream. */
export interface Backoff {
  until: number;
}

const backoffs = new Map<string, Backoff>();
/** The one backoff of upstream `baseUrl` in this process or isolate. */
export function sharedBackoff(baseUrl: string): Backoff {
  let backoff = backoffs.get(baseUrl);
  if (!backoff) backoffs.set(baseUrl, (backoff = { until: 0 }));
  return backoff;
}

export type Outcome =
  | { kind: 'ok'; body: unknown }
  /** the platform refused the call (4xx): `details` are per-entry when it gave them */
  | { kind: 'refused'; status: number; message: string; details: unknown[] }
  /** nothing got through within the budget: try again after `retryAfter` seconds */
  | { kind: 'unavailable'; status: number; message: string; retryAfter: number };

export interface SendContext {
  client: Client;
  clock: Clock;
  backoff: Backoff;
  /** ms since epoch by which the request must answer */
  deadline: number;
  random: () => number;
  /** every upstream status seen (0 = no answer), for the log */
  statuses: number[];
}

const MAX_ATTEMPTS = 4;
const BASE_DELAY_MS = 250;

/** Sends `body` to endpoint `id`; never throws for upstream trouble. */
export async function sendOnce(ctx: SendContext, id: EndpointId, body: Record<string, unknown>): Promise<Outcome> {
  let last: Outcome = { kind: 'unavailable', status: 0, message: 'the platform was not called', retryAfter: 1 };
  for (let attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
    const now = ctx.clock.now();
    const wait = ctx.backoff.until - now;
    if (wait > 0) {
      if (now + wait > ctx.deadline) {
        return { kind: 'unavailable', status: 429, message: 'the platform asked the relay to slow down', retryAfter: Math.ceil(wait / 1000) };
      }
      await ctx.clock.sleep(wait);
    }
    try {
      const result = await ctx.client.call(id, body as never);
      ctx.statuses.push(200);
      return { kind: 'ok', body: result };
    } catch (error) {
      if (error instanceof RateLimitError) {
        ctx.statuses.push(429);
        const until = ctx.clock.now() + error.tryInSeconds * 1000;
        ctx.backoff.until = Math.max(ctx.backoff.until, until);
        last = {
          kind: 'unavailable',
          status: 429,
          message: 'the platform asked the relay to slow down',
          retryAfter: Math.max(1, Math.ceil(error.tryInSeconds)),
        };
        continue;
      }
      if (error instanceof HTTPError) {
        ctx.statuses.push(error.status);
        if (error.status === 401 || error.status === 403) {
          // The key itself was refused: retrying cannot help, and the items must not be lost.
          return {
            kind: 'unavailable',
            status: error.status,
            message: "the platform refused the relay's key (check CDP_API_KEY and CDP_REGION)",
            retryAfter: 60,
          };
        }
        if (error.status < 500 && error.status !== 408) {
          return {
            kind: 'refused',
            status: error.status,
            message: /failed with \d+: (.*)$/s.exec(error.message)?.[1] ?? error.message,
            details: error.details,
          };
        }
        last = { kind: 'unavailable', status: error.status, message: `the platform answered ${error.status}`, retryAfter: 5 };
      } else {
        ctx.statuses.push(0);
        last = { kind: 'unavailable', status: 0, message: 'the platform did not answer', retryAfter: 5 };
      }
      // Full jitter: a random wait up to an exponentially growing cap, inside the budget.
      const delay = Math.round(ctx.random() * BASE_DELAY_MS * 2 ** attempt);
      if (ctx.clock.now() + delay >= ctx.deadline || attempt === MAX_ATTEMPTS - 1) break;
      await ctx.clock.sleep(delay);
    }
  }
  return last;
}
