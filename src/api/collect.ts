/**
 * The wire contract of the relay's browser endpoint, `POST /collect`: the envelope the snippet
 * sends, the items in its batch, and the answer. The snippet imports these as types and
 * constants only; the relay checks bodies against them.
 * @module
 */

import type { Fields } from './types.js';

/** Limits of one `/collect` request. */
export const COLLECT_LIMITS = {
  /** items in one batch */
  items: 100,
  /** bytes of one request body (512 KB) */
  bodyBytes: 512 * 1024,
  /** what the snippet puts in one batch: what `sendBeacon` can carry (64 kB) */
  beaconBytes: 64 * 1024,
  /** characters of an item id */
  idChars: 128,
  /** characters of the queue id in the envelope */
  queueChars: 64,
} as const;

/**
 * The relay's door for servers: the same batch without `key`, sent with `Authorization: Bearer`
 * and a relay token with the `collect` scope (`cdp-edge/server` sends it). Its items need no proof:
 * the token's server vouches for the people it names.
 */
export const SERVER_COLLECT_PATH = '/server/collect';

/** A `track` item: one activity of one person. */
export interface TrackItem {
  id: string;
  type: 'track';
  /** when it happened, ISO 8601 on the browser's clock */
  ts: string;
  activity_id: string;
  attributes?: Fields | undefined;
  /** identifying fields of the person (filled once they identify) */
  person?: Fields | undefined;
  /** proof of the person's identifiers, as on an identify ({@link UserHash}) */
  user_hash?: UserHash | undefined;
  location?: unknown;
}

/**
 * Proof that the site's server vouches for an identifier: the hex HMAC-SHA256, under the relay's
 * identity secret, of the field ID and its value (see the relay's identity docs). One string
 * proves whichever of the item's identifiers it matches; an object gives one hash per field ID.
 */
export type UserHash = string | Readonly<Record<string, string>>;

/** An `identify` item: who the visitor is, merged into a person. */
export interface IdentifyItem {
  id: string;
  type: 'identify';
  ts: string;
  fields: Fields;
  tags?: string[] | undefined;
  unset_tags?: string[] | undefined;
  location?: unknown;
  user_hash?: UserHash | undefined;
}

export type CollectItem = TrackItem | IdentifyItem;

/** The body of `POST /collect` (sent as `text/plain` JSON so no CORS preflight is needed). */
export interface CollectEnvelope {
  /** the site's public key */
  key: string;
  /** the browser's clock when it sent, ISO 8601: the relay corrects event times by the difference */
  sent_at?: string | undefined;
  batch: CollectItem[];
  /** the identity token of an earlier answer */
  identity?: string | undefined;
  /**
   * The stable id of the browser's queue (one per browser profile and site, kept in IndexedDB).
   * The relay orders a browser's identifies before its tracks by it; dedupe holds per site whatever
   * it says. Server callers may leave it out.
   */
  queue?: string | undefined;
}

/** What happened to one item. `accepted`, `duplicate` and `rejected` are final; `retry` keeps it. */
export type ItemStatus = 'accepted' | 'duplicate' | 'rejected' | 'retry';

/**
 * Why an item was rejected, for code to act on (`error` is for people):
 * - `invalid`: the item breaks the contract or the platform's schema;
 * - `not_allowed`: the site does not allow this activity, field or attribute;
 * - `unverified`: its person is not proven (no valid `user_hash` or identity token) yet;
 * - `expired`: older than the relay's dedupe window (`window` in the answer), so it could
 *   not be told apart from one already delivered;
 * - `platform`: the platform refused it;
 * - `suppressed`: it names a person erased at the relay (`cdp-edge erase`), whose items are
 *   neither stored nor sent while the erasure's suppression lasts.
 */
export type RejectReason = 'invalid' | 'not_allowed' | 'unverified' | 'expired' | 'platform' | 'suppressed';
export const REJECT_REASONS: readonly RejectReason[] = ['invalid', 'not_allowed', 'unverified', 'expired', 'platform', 'suppressed'];

export interface ItemResult {
  id: string;
  status: ItemStatus;
  /** why, for `rejected` and `retry` */
  error?: string | undefined;
  /** the class of a rejection */
  reason?: RejectReason | undefined;
}

/** The 200 answer of `POST /collect`: one result per item, in the batch's order. */
export interface CollectAnswer {
  results: ItemResult[];
  /** a signed identity token for the browser to send back as `identity` */
  identity?: string | undefined;
  /**
   * The relay's dedupe window in seconds: it remembers an accepted id this long. A client never
   * sends an item whose `ts` is older than this (it drops it, reason `expired`), and the relay
   * refuses one.
   */
  window?: number | undefined;
}
