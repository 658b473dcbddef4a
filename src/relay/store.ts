/**
 * The relay's state, behind one small interface so each runtime picks its own:
 * memory (+ a file on Node) or a Durable Object with SQLite storage on Workers.
 * Every method is atomic for its scope: a site key (dedupe ids, rate limit and the site's
 * monthly address-lookup count all live with the site).
 * @module
 */

/** What `begin` found for the ids of one request. */
export interface Claim {
  /** ids now leased to this request: forward them, then `commit` or `release` */
  fresh: string[];
  /** ids already forwarded (remembered until their expiry) */
  duplicate: string[];
  /** ids leased by another request still in flight: answer `retry` */
  busy: string[];
}

export interface RelayStore {
  /** Leases `ids` of `scope` for `leaseMs` unless already forwarded or leased. */
  begin(scope: string, ids: readonly string[], now: number, leaseMs: number): Promise<Claim>;
  /** Marks `ids` forwarded until `until` (ms since epoch) and drops their leases. */
  commit(scope: string, ids: readonly string[], until: number): Promise<void>;
  /** Drops leases of `ids` that were not forwarded, so a later request may try them. */
  release(scope: string, ids: readonly string[]): Promise<void>;
  /** Token bucket: takes one token; `retryAfterMs` > 0 when none was left. */
  take(scope: string, rate: { perSecond: number; burst: number }, now: number): Promise<{ ok: boolean; retryAfterMs: number }>;
  /** Adds up to `amount` to counter `name` without passing `limit`; resolves to how much was added. */
  add(scope: string, name: string, amount: number, limit: number): Promise<number>;
}

/** Counter name of the address-lookup budget for the month of `now` (UTC), e.g. `address-lookup:2026-11`. */
export const lookupCounter = (now: number): string => `address-lookup:${new Date(now).toISOString().slice(0, 7)}`;

/** Token-bucket arithmetic shared by every store: refill, then take one token if there is one. */
export function refill(
  bucket: { tokens: number; at: number } | undefined,
  rate: { perSecond: number; burst: number },
  now: number,
): { bucket: { tokens: number; at: number }; ok: boolean; retryAfterMs: number } {
  const elapsed = Math.max(0, now - (bucket?.at ?? now));
  const tokens = Math.min(rate.burst, (bucket?.tokens ?? rate.burst) + (elapsed / 1000) * rate.perSecond);
  if (tokens >= 1) return { bucket: { tokens: tokens - 1, at: now }, ok: true, retryAfterMs: 0 };
  return { bucket: { tokens, at: now }, ok: false, retryAfterMs: Math.ceil(((1 - tokens) / rate.perSecond) * 1000) };
}
