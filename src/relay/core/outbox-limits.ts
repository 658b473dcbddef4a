/**
 * How much a relay's outbox may hold (`RELAY_OUTBOX_MAX…`, core/config.ts): what every store
 * enforces in `accept` (state/outbox.ts) and ingest answers when it is reached.
 * @module
 */

/**
 * How much the outbox holds. Entries waiting (ready or leased) count against their visitor, their
 * site and the whole outbox; a new id past any of the three is answered `full`. Dead letters past
 * `dead` are cut, oldest first, and counted.
 */
export interface OutboxLimits {
  /** entries one visitor (the rate-limit key: one address of one site) may have waiting */
  visitor: number;
  /** entries one site may have waiting */
  site: number;
  /** entries waiting in all */
  total: number;
  /** dead letters kept */
  dead: number;
}

/**
 * The defaults: a visitor may have 1,000 entries waiting (one second of a professional key's whole
 * budget, 10 calls of 100), a site 100,000 and the outbox 200,000 (200 s of that budget, about
 * 100 MB of Redis memory at 500 bytes an entry); 10,000 dead letters.
 */
export const DEFAULT_OUTBOX_LIMITS: OutboxLimits = { visitor: 1_000, site: 100_000, total: 200_000, dead: 10_000 };

/**
 * Seconds of the key's pace the outbox may hold for one visitor past its own limit while nothing
 * else fills it (`RELAY_OUTBOX_IDLE_SECONDS`, ingest/idle-room.ts): 5,000 entries at a professional
 * key's 10 calls of 100 a second. 0 holds every visitor to its own limit whatever waits.
 */
export const DEFAULT_IDLE_SECONDS = 5;

/**
 * What unproven items (no valid `user_hash` or identity token: anyone can send them) may take of a
 * site, so that they never crowd out its signed-in visitors (ingest/unproven.ts).
 */
export interface UnprovenLimits {
  /** the part of the site's (and the whole outbox's) limit unproven items may fill; past it they are answered `retry`, proven items still go in */
  share: number;
  /** identifies a minute, per site, that may create a person without proving it; past it they are answered `retry` */
  peoplePerMinute: number;
}

/**
 * Half the outbox; 600 new people a minute per site (10 a second: a busy shop's sign-ups, where
 * 150 networks of anonymous identifies made 41,000 in 40 s with no bound).
 */
export const DEFAULT_UNPROVEN: UnprovenLimits = { share: 0.5, peoplePerMinute: 600 };

/** The limits an accept of unproven items is held to: `share` of the site's and the outbox's. */
export function unprovenShareOf(limits: OutboxLimits, share: number): OutboxLimits {
  return { ...limits, site: Math.floor(limits.site * share), total: Math.floor(limits.total * share) };
}

/** The start of the error of an unproven identify answered `retry` because the site's budget of new people is spent. */
export const PEOPLE_BUDGET = 'people_budget';

/** No limits: what a store holds when an accept names none (tests, tools). */
export const NO_LIMITS: OutboxLimits = {
  visitor: Number.POSITIVE_INFINITY,
  site: Number.POSITIVE_INFINITY,
  total: Number.POSITIVE_INFINITY,
  dead: Number.POSITIVE_INFINITY,
};

/** The code of a 503 whose items all found the outbox full, and the start of a `retry` item's error. */
export const OUTBOX_FULL = 'outbox_full';
/**
 * The start of the error of an unproven item the outbox had no room for (its share of the site's
 * outbox, or its visitor's own limit): an `outbox_full` item too.
 */
export const UNPROVEN_FULL = `${OUTBOX_FULL}: unproven`;
