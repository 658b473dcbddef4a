/**
 * The relay's state behind one small interface, so each runtime picks its own: memory (tests),
 * SQLite or Redis on Node, Durable Objects on Workers. Each call is one round trip to the store
 * (one transaction, one script, one object call), whatever the size of the batch.
 * @module
 */

/**
 * Whose ids: ids are unique per site, and every store remembers them per site. `queue` is the
 * envelope's browser-queue id (src/api/collect.ts), passed along for the record: no store routes
 * by it, so an id sent under two queues is still one id.
 */
export interface DedupeScope {
  site: string;
  queue?: string | undefined;
}

/** What `claim` found for the ids of one request. */
export interface Claim {
  /** ids now leased to this request: forward them, then `settle` */
  fresh: string[];
  /** ids already forwarded (remembered until their expiry) */
  duplicate: string[];
  /** ids leased by another request still in flight: answer `retry` */
  busy: string[];
}

/** The end of a request's leases. */
export interface Settlement {
  /** ids the platform (or the queue) took: remembered as forwarded until `until`, their leases dropped */
  forwarded: readonly string[];
  /** ms since epoch on the caller's clock (Redis keeps the time left until then, on its own clock) */
  until: number;
  /** ids leased but not forwarded: their leases are dropped so a later request may try them */
  released: readonly string[];
}

export interface StoreStats {
  /** ids remembered as forwarded */
  remembered: number;
  /** leases in force */
  leased: number;
}

export interface RelayStore {
  /** Leases `ids` for `leaseMs` unless already forwarded (duplicate) or leased by another request (busy). */
  claim(scope: DedupeScope, ids: readonly string[], now: number, leaseMs: number): Promise<Claim>;
  /** Marks forwarded ids and releases the rest, in one call. */
  settle(scope: DedupeScope, settlement: Settlement): Promise<void>;
  /** Adds up to `amount` to counter `name` of `site` without passing `limit`; resolves to how much was added. */
  add(site: string, name: string, amount: number, limit: number): Promise<number>;
  /** Resolves when the store answers; rejects with the cause otherwise (readiness). */
  ping(): Promise<void>;
  /** Gauges; undefined where counting costs too much. */
  stats(): Promise<StoreStats | undefined>;
  /** Releases connections and files. */
  close(): Promise<void>;
}

/** Counter name of the address-lookup budget for the month of `now` (UTC), e.g. `address-lookup:2026-11`. */
export const lookupCounter = (now: number): string => `address-lookup:${new Date(now).toISOString().slice(0, 7)}`;

/** How much of `amount` fits under `limit` when `value` is already counted. */
export const cappedAmount = (value: number, amount: number, limit: number): number => Math.max(0, Math.min(amount, limit - value));
