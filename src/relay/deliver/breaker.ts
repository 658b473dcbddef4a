/**
 * The relay-wide breaker of platform refusals. The platform shuts a key out for 15 s after 15 bad
 * requests (4xx) within 15 s, and then every visitor and every proxy caller of the relay waits.
 * Per-visitor and per-site refusal buckets (limits.ts) stop one visitor or one site; this stops
 * many at once: the relay never lets more than {@link BREAKER_LIMITS}.browser refused calls a
 * window be risked by browser traffic, counting calls still in flight as possible refusals, and
 * pauses proxy calls only at the higher `proxy` count. Browser calls that meet a closed breaker
 * wait within their request's budget and are then answered `retry` (nothing is lost).
 *
 * Calls whose entries are all *proven* (each proves its person: a verified identify, or a track
 * of a site where only verified tracks are forwarded) go on past the browser count, up to
 * `proven`: refusals drawn by anonymous items (many addresses sending what the platform refuses)
 * then do not hold signed-in visitors' events, and the count they may still risk stays under the
 * proxy's and the platform's.
 * @module
 */

export interface BreakerLimits {
  /** the platform's window for bad requests, ms @default 15000 */
  windowMs: number;
  /** browser calls pause when refusals in the window plus browser calls in flight reach this @default 8 */
  browser: number;
  /** browser calls of proven entries only pause when refusals plus browser calls in flight reach this @default 11 */
  proven: number;
  /** proxy calls pause when refusals in the window reach this @default 12 */
  proxy: number;
}

/** Well under the platform's 15: anonymous browser traffic pauses first, then proven, and the proxy keeps its headroom. */
export const BREAKER_LIMITS: BreakerLimits = { windowMs: 15_000, browser: 8, proven: 11, proxy: 12 };

/** Who a call is for: browsers (`proven`: every entry in it proves its person), or a server through the proxy. */
export type CallSource = 'browser' | 'proven' | 'proxy';

export interface Breaker {
  /** ms until a call from `from` may start; 0 when it may start now */
  waitMs(from: CallSource, now: number): number;
  /** a call starts (count it in flight) */
  start(from: CallSource): void;
  /** a call ended with `status` (0: no answer); a 4xx other than 429 counts as a refusal */
  end(from: CallSource, status: number, now: number): void;
  /** refusals counted in the window ending at `now` */
  refusals(now: number): number;
}

/** Whether the platform counts `status` towards its ban: bad requests, not "slow down". */
export const isRefusal = (status: number): boolean => status >= 400 && status < 500 && status !== 429;

export function createBreaker(limits: BreakerLimits = BREAKER_LIMITS): Breaker {
  let times: number[] = [];
  let browserInFlight = 0;
  const recent = (now: number): number => {
    if (times.length > 0 && times[0]! <= now - limits.windowMs) times = times.filter((at) => at > now - limits.windowMs);
    return times.length;
  };
  /** ms until the refusals in the window drop below `limit`; `times` is in order */
  const ageOut = (limit: number, now: number): number => Math.max(1, times[times.length - limit]! + limits.windowMs - now);
  return {
    waitMs(from, now) {
      const count = recent(now);
      if (from === 'proxy') return count < limits.proxy ? 0 : ageOut(limits.proxy, now);
      const limit = from === 'proven' ? limits.proven : limits.browser;
      if (count + browserInFlight < limit) return 0;
      // Either a call in flight ends (soon, re-checked by the waiter) or a refusal ages out.
      return count >= limit ? ageOut(limit, now) : 25;
    },
    start(from) {
      if (from !== 'proxy') browserInFlight++;
    },
    end(from, status, now) {
      if (from !== 'proxy') browserInFlight--;
      if (isRefusal(status)) times.push(now);
    },
    refusals: recent,
  };
}

const breakers = new Map<string, Breaker>();
/** The one breaker of upstream `baseUrl` (one platform key) in this process or isolate. */
export function sharedBreaker(baseUrl: string): Breaker {
  let breaker = breakers.get(baseUrl);
  if (breaker === undefined) {
    breaker = createBreaker();
    breakers.set(baseUrl, breaker);
  }
  return breaker;
}
