/**
 * Rate limits. By default each visitor (client address) of a site has its own token bucket, and
 * there is no site-wide cap: a site with thousands of visitors must not throttle itself. A site's
 * `rate_limit` adds an explicit site-wide cap.
 * @module
 */

/** A token bucket: `burst` requests at once, refilled at `perSecond`. */
export interface Rate {
  perSecond: number;
  burst: number;
  /**
   * How long a request may wait for its token (ms, 0 or absent: none), as nginx's `limit_req`
   * `burst` without `nodelay`: a request that finds the bucket empty but whose token comes within
   * this reserves it (the bucket goes into debt, at most `queueMs × perSecond / 1000` tokens deep)
   * and is served once it comes; later ones are refused. Request buckets only: a charge ignores it.
   */
  queueMs?: number | undefined;
}

export interface LimitDecision {
  ok: boolean;
  /** ms until one more request would be allowed (taken, or queued); 0 when `ok` */
  retryAfterMs: number;
  /** when `ok` through the queue ({@link Rate.queueMs}): ms until its reserved token comes, to wait before going on */
  delayMs?: number;
}

export interface RateLimiter {
  /**
   * Takes one request from `key`'s allowance, or, with `charge`, moves the bucket by `charge`
   * tokens whatever it holds: a positive charge may run the bucket into debt (at most `burst`
   * deep), a negative one gives tokens back (never above `burst`), and 0 only looks (`ok` when a
   * token is there). Refusal buckets use the charge; request buckets never do.
   */
  limit(key: string, rate: Rate, now: number, charge?: number): Promise<LimitDecision>;
  /**
   * Takes one request from every bucket of `asks`, or from none: when one of them refuses (its
   * token neither there nor coming within its queue), nothing is taken from the others, so a
   * request a site's cap refuses spends nothing of its visitor's own allowance, and one its
   * visitor's allowance refuses nothing of the site's. Taken: `ok`, with the longest `delayMs` of
   * the buckets that queued it; refused: the longest `retryAfterMs` of the buckets that refused it.
   */
  limitAll(asks: readonly Ask[], now: number): Promise<LimitDecision>;
}

/** A limiter a user brings to `createRelay` (`RelayDeps.limiter`): `limit` is enough ({@link withLimitAll}). */
export type OwnLimiter = Pick<RateLimiter, 'limit'> & Partial<Pick<RateLimiter, 'limitAll'>>;

/**
 * `limiter` with a `limitAll`: its own, or one taking each bucket in turn and, when one refuses,
 * giving the others back what they took (a charge of -1). Until then a request of the same
 * visitor or site may find one token less: it errs towards refusing, never towards more.
 */
export function withLimitAll(limiter: OwnLimiter): RateLimiter {
  if (limiter.limitAll !== undefined) return limiter as RateLimiter;
  const limit = limiter.limit.bind(limiter);
  return {
    limit,
    async limitAll(asks, now) {
      const decisions: LimitDecision[] = [];
      for (const { key, rate } of asks) {
        const decision = await limit(key, rate, now);
        decisions.push(decision);
        if (!decision.ok) break;
      }
      const decision = decideAll(decisions);
      if (!decision.ok) await Promise.all(decisions.slice(0, -1).map((_, index) => limit(asks[index]!.key, asks[index]!.rate, now, -1)));
      return decision;
    },
  };
}

/** One bucket a request takes from ({@link RateLimiter.limitAll}). */
export interface Ask {
  key: string;
  rate: Rate;
}

export interface Bucket {
  tokens: number;
  /** ms since epoch of the last refill */
  at: number;
}

/** ms until `tokens` refill to one whole token. */
const waitFor = (tokens: number, rate: Rate): number => (tokens >= 1 ? 0 : Math.ceil(((1 - tokens) / rate.perSecond) * 1000));

/**
 * Token-bucket arithmetic shared by every limiter: refill, then take one token if there is one,
 * else reserve the coming one when it comes within `rate.queueMs` (`delayMs`: how long to wait for
 * it), else refuse, saying when a request would be taken or queued again; or apply `charge` (see
 * {@link RateLimiter.limit}). The Redis script is the same arithmetic in Lua.
 */
export function refill(bucket: Bucket | undefined, rate: Rate, now: number, charge?: number): { bucket: Bucket } & LimitDecision {
  const elapsed = Math.max(0, now - (bucket?.at ?? now));
  const tokens = Math.min(rate.burst, (bucket?.tokens ?? rate.burst) + (elapsed / 1000) * rate.perSecond);
  if (charge !== undefined) {
    const after = Math.max(-rate.burst, Math.min(rate.burst, tokens - charge));
    return { bucket: { tokens: after, at: now }, ok: charge === 0 ? after >= 1 : after >= 0, retryAfterMs: waitFor(after, rate) };
  }
  if (tokens >= 1) return { bucket: { tokens: tokens - 1, at: now }, ok: true, retryAfterMs: 0 };
  const queueMs = rate.queueMs ?? 0;
  const delayMs = waitFor(tokens, rate);
  if (delayMs <= queueMs) return { bucket: { tokens: tokens - 1, at: now }, ok: true, retryAfterMs: 0, delayMs };
  return { bucket: { tokens, at: now }, ok: false, retryAfterMs: delayMs - queueMs };
}

/** The decision of a request that took from every bucket of `decisions`, or of one that took from none. */
export function decideAll(decisions: readonly LimitDecision[]): LimitDecision {
  const refused = decisions.filter((decision) => !decision.ok);
  if (refused.length > 0) return { ok: false, retryAfterMs: Math.max(...refused.map((decision) => decision.retryAfterMs)) };
  const delayMs = Math.max(0, ...decisions.map((decision) => decision.delayMs ?? 0));
  return delayMs > 0 ? { ok: true, retryAfterMs: 0, delayMs } : { ok: true, retryAfterMs: 0 };
}

/** A bucket kept by the memory limiter, with the rate it refills at (to tell when it is full again). */
interface Kept extends Bucket {
  rate: Rate;
}

/** Whether `kept` has refilled to its burst by `now`: then it is the same as no bucket at all. */
const isFull = (kept: Kept, now: number): boolean => kept.tokens + (Math.max(0, now - kept.at) / 1000) * kept.rate.perSecond >= kept.rate.burst;

/**
 * Buckets the memory limiter looks at per call, in turn, to drop those full again: more than the
 * one a call may add, so the buckets kept are those of visitors still short of tokens (with the
 * default visitor rate, a visitor's one request is forgotten after 100 ms), not every address of
 * the last 100,000.
 */
const SWEEP_STEP = 2;

/**
 * Buckets in this process (Node without Redis) or isolate (Workers without the binding), bounded
 * two ways. A bucket full again is the same as none (a key without a bucket starts full), so none
 * is kept for it: each call looks at the next {@link SWEEP_STEP} buckets in turn and drops those
 * that refilled. And at most `maxKeys` buckets (visitors short of tokens), least recently used
 * dropped first: a dropped bucket starts again full, so dropping one only ever errs towards
 * letting a request in.
 */
export function createMemoryLimiter(options: { maxKeys?: number } = {}): RateLimiter & { size(): number } {
  const maxKeys = options.maxKeys ?? 100_000;
  const buckets = new Map<string, Kept>();
  // Where the sweep goes on from (a Map's iterator follows deletes and later inserts); by key, each
  // bucket looked up, so no [key, bucket] pair is made for every step of every call.
  let sweeping = buckets.keys();
  const sweep = (now: number) => {
    for (let step = 0; step < SWEEP_STEP; step++) {
      const next = sweeping.next();
      if (next.done === true) {
        sweeping = buckets.keys();
        return;
      }
      if (isFull(buckets.get(next.value)!, now)) buckets.delete(next.value);
    }
  };
  /** Keeps `bucket` as `key`'s, the most recently used: delete then set, a Map keeps insertion order, so the first key is the least recently used. */
  const keep = (key: string, bucket: Bucket, rate: Rate, now: number) => {
    buckets.delete(key);
    const kept = { tokens: bucket.tokens, at: bucket.at, rate };
    if (!isFull(kept, now)) buckets.set(key, kept);
    if (buckets.size > maxKeys) buckets.delete(buckets.keys().next().value as string);
  };
  return {
    size: () => buckets.size,
    async limit(key, rate, now, charge) {
      sweep(now);
      const bucket = buckets.get(key);
      // A look (charge 0) at a key with no bucket sees a full one and changes nothing: no bucket is
      // made for it (every request looks at its visitor's refusals; few visitors ever draw one).
      if (bucket === undefined && charge === 0) return { ok: rate.burst >= 1, retryAfterMs: waitFor(rate.burst, rate) };
      const result = refill(bucket, rate, now, charge);
      keep(key, result.bucket, rate, now);
      return result.delayMs === undefined
        ? { ok: result.ok, retryAfterMs: result.retryAfterMs }
        : { ok: result.ok, retryAfterMs: result.retryAfterMs, delayMs: result.delayMs };
    },
    // Every bucket refilled and looked at, then all kept or none, in one synchronous step: no other
    // request of the process comes between.
    async limitAll(asks, now) {
      sweep(now);
      const results = asks.map(({ key, rate }) => refill(buckets.get(key), rate, now));
      const decision = decideAll(results);
      if (decision.ok) for (const [i, { key, rate }] of asks.entries()) keep(key, results[i]!.bucket, rate, now);
      return decision;
    },
  };
}

/** The limiter key of one visitor (client address) of a site. */
export const visitorKey = (site: string, ip: string): string => `visitor:${site}:${ip}`;
/**
 * The limiter key of one client address (IPv6: its network, client-ip.ts `limitAddress`) across
 * all sites, checked before a request's body is read: the site is named inside the body.
 */
export const addressKey = (address: string): string => `address:${address}`;
/**
 * What one address may send to all sites together before its body is read: twice the most
 * generous site's visitor limit (an address may visit a few sites), so the per-visitor limits
 * after parsing stay the ones a site tunes.
 */
export function addressRate(visitorRates: Iterable<Rate>): Rate {
  let perSecond = 0;
  let burst = 0;
  for (const rate of visitorRates) {
    perSecond = Math.max(perSecond, rate.perSecond);
    burst = Math.max(burst, rate.burst);
  }
  return { perSecond: 2 * perSecond || 1, burst: 2 * burst || 1 };
}
/** The limiter key of a site's own cap. */
export const siteKey = (site: string): string => `site:${site}`;

/**
 * Refusals: every entry the platform refuses (a 4xx: unknown activity, unknown attribute, bad
 * value) counts against the visitor that sent it, because the platform shuts the relay's key out
 * after 15 bad requests in 15 s. A visitor's refusal bucket holds a few; a visitor whose bucket is
 * empty is answered 429 `too_many_refusals` before anything of theirs reaches the platform.
 */
export const VISITOR_REFUSALS: Rate = { perSecond: 1 / 20, burst: 3 };
/**
 * A site's refusals across all its visitors: the site's guard. While it is empty the guard is
 * closed: items that prove no person and are of a shape the platform has not taken lately are
 * answered `retry` (kept by the browser, nothing lost); every other item, and so every signed-in
 * visitor, goes on. Many addresses drawing refusals together thus stop only traffic like theirs.
 */
export const SITE_REFUSALS: Rate = { perSecond: 1 / 5, burst: 10 };

/** The refusal bucket of a visitor key ({@link visitorKey}) or a site key ({@link siteKey}). */
export const refusalKey = (key: string): string => `refusals:${key}`;

/** ms until `rate`'s bucket at `key` holds a token again, 0 when it does; looks, takes nothing. */
async function waitOf(limiter: RateLimiter, key: string, rate: Rate, now: number): Promise<number> {
  const decision = await limiter.limit(refusalKey(key), rate, now, 0);
  return decision.ok ? 0 : Math.max(1, decision.retryAfterMs);
}

/** The gate before a visitor's items go to the platform: ms until the visitor's refusal bucket holds a token again, else 0. */
export const refusalWait = (limiter: RateLimiter, visitor: string, now: number): Promise<number> => waitOf(limiter, visitor, VISITOR_REFUSALS, now);

/** The site's guard: ms until it opens again, 0 while it is open (see {@link SITE_REFUSALS}). */
export const siteGuardWait = (limiter: RateLimiter, site: string, now: number): Promise<number> => waitOf(limiter, siteKey(site), SITE_REFUSALS, now);

/**
 * Charges refusals the deliverer met after the items were accepted: each entry's visitor once per
 * entry (`''`: no known visitor), and the site once when the platform refused the call as a whole
 * (the platform's ban counts refused requests, and one call carries many visitors' entries).
 */
export async function chargeDelivered(
  limiter: RateLimiter,
  entries: readonly { site: string; visitor: string }[],
  wholeCall: boolean,
  now: number,
): Promise<void> {
  const counts = new Map<string, number>();
  for (const { visitor } of entries) if (visitor !== '') counts.set(visitor, (counts.get(visitor) ?? 0) + 1);
  const sites = new Set(entries.map((entry) => entry.site));
  await Promise.all([
    ...[...counts].map(([visitor, count]) => limiter.limit(refusalKey(visitor), VISITOR_REFUSALS, now, count)),
    ...(wholeCall ? [...sites].map((site) => limiter.limit(refusalKey(siteKey(site)), SITE_REFUSALS, now, 1)) : []),
  ]);
}

/** The Workers Rate Limiting binding (`[[ratelimits]]` in wrangler.toml). */
export interface RateLimitBinding {
  limit(options: { key: string }): Promise<{ success: boolean }>;
}

/**
 * Visitors limited by the Workers Rate Limiting binding: its `limit` per `period` (wrangler.toml)
 * replaces the site's `visitor_rate_limit`, and no Durable Object is called. The binding answers
 * only yes or no, so nothing waits for a token here (`Rate.queueMs` is not kept). A site's own cap
 * (`rate_limit`) is kept by `fallback`, per isolate.
 */
export function createBindingLimiter(binding: RateLimitBinding, periodSeconds: number, fallback: RateLimiter = createMemoryLimiter()): RateLimiter {
  const inBinding = (key: string) => key.startsWith('visitor:');
  const ask = async (key: string): Promise<LimitDecision> => {
    const { success } = await binding.limit({ key });
    return { ok: success, retryAfterMs: success ? 0 : periodSeconds * 1000 };
  };
  return {
    async limit(key, rate, now, charge) {
      // The binding only takes: refusal buckets (charged, looked at) stay with the fallback.
      if (!inBinding(key) || charge !== undefined) return fallback.limit(key, rate, now, charge);
      return ask(key);
    },
    // The binding takes what it is asked and gives nothing back, so it is asked last, only once the
    // fallback's buckets have taken: a request they refuse costs the visitor nothing, and one the
    // binding refuses gets back what they took.
    async limitAll(asks, now) {
      const held = asks.filter((entry) => !inBinding(entry.key));
      const taken = await fallback.limitAll(held, now);
      const visitors = asks.filter((entry) => inBinding(entry.key));
      if (!taken.ok || visitors.length === 0) return taken;
      const decision = decideAll([taken, ...(await Promise.all(visitors.map((entry) => ask(entry.key))))]);
      if (!decision.ok) await Promise.all(held.map(({ key, rate }) => fallback.limit(key, rate, now, -1)));
      return decision;
    },
  };
}
