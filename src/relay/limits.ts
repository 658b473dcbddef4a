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
}

export interface LimitDecision {
  ok: boolean;
  /** ms until one more request would be allowed; 0 when `ok` */
  retryAfterMs: number;
}

export interface RateLimiter {
  /** Takes one request from `key`'s allowance. */
  limit(key: string, rate: Rate, now: number): Promise<LimitDecision>;
}

export interface Bucket {
  tokens: number;
  /** ms since epoch of the last refill */
  at: number;
}

/** Token-bucket arithmetic shared by every limiter: refill, then take one token if there is one. */
export function refill(bucket: Bucket | undefined, rate: Rate, now: number): { bucket: Bucket } & LimitDecision {
  const elapsed = Math.max(0, now - (bucket?.at ?? now));
  const tokens = Math.min(rate.burst, (bucket?.tokens ?? rate.burst) + (elapsed / 1000) * rate.perSecond);
  if (tokens >= 1) return { bucket: { tokens: tokens - 1, at: now }, ok: true, retryAfterMs: 0 };
  return { bucket: { tokens, at: now }, ok: false, retryAfterMs: Math.ceil(((1 - tokens) / rate.perSecond) * 1000) };
}

/**
 * Buckets in this process (Node without Redis) or isolate (Workers without the binding), bounded:
 * at most `maxKeys` buckets, least recently used dropped first. A dropped bucket starts again full,
 * so dropping one only ever errs towards letting a request in.
 */
export function createMemoryLimiter(options: { maxKeys?: number } = {}): RateLimiter & { size(): number } {
  const maxKeys = options.maxKeys ?? 100_000;
  const buckets = new Map<string, Bucket>();
  return {
    size: () => buckets.size,
    async limit(key, rate, now) {
      const result = refill(buckets.get(key), rate, now);
      // Delete then set: a Map keeps insertion order, so the first key is the least recently used.
      buckets.delete(key);
      buckets.set(key, result.bucket);
      if (buckets.size > maxKeys) buckets.delete(buckets.keys().next().value as string);
      return { ok: result.ok, retryAfterMs: result.retryAfterMs };
    },
  };
}

/** The limiter key of one visitor (client address) of a site. */
export const visitorKey = (site: string, ip: string): string => `visitor:${site}:${ip}`;
/** The limiter key of a site's own cap. */
export const siteKey = (site: string): string => `site:${site}`;

/** The Workers Rate Limiting binding (`[[ratelimits]]` in wrangler.toml). */
export interface RateLimitBinding {
  limit(options: { key: string }): Promise<{ success: boolean }>;
}

/**
 * Visitors limited by the Workers Rate Limiting binding: its `limit` per `period` (wrangler.toml)
 * replaces the site's `visitor_rate_limit`, and no Durable Object is called. A site's own cap
 * (`rate_limit`) is kept by `fallback`, per isolate.
 */
export function createBindingLimiter(binding: RateLimitBinding, periodSeconds: number, fallback: RateLimiter = createMemoryLimiter()): RateLimiter {
  return {
    async limit(key, rate, now) {
      if (!key.startsWith('visitor:')) return fallback.limit(key, rate, now);
      const { success } = await binding.limit({ key });
      return { ok: success, retryAfterMs: success ? 0 : periodSeconds * 1000 };
    },
  };
}
