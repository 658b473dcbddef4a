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
  user_hash?: string | undefined;
  location?: unknown;
}

/** An `identify` item: who the visitor is, merged into a person. */
export interface IdentifyItem {
  id: string;
  type: 'identify';
  ts: string;
  fields: Fields;
  tags?: string[] | undefined;
  unset_tags?: string[] | undefined;
  location?: unknown;
  user_hash?: string | undefined;
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
   * Every item is only ever sent under the queue that stored it, so the relay may route its
   * dedupe state by this id (Workers shards). Server callers may leave it out.
   */
  queue?: string | undefined;
}

/** What happened to one item. `accepted`, `duplicate` and `rejected` are final; `retry` keeps it. */
export type ItemStatus = 'accepted' | 'duplicate' | 'rejected' | 'retry';

export interface ItemResult {
  id: string;
  status: ItemStatus;
  /** why, for `rejected` and `retry` */
  error?: string | undefined;
}

/** The 200 answer of `POST /collect`: one result per item, in the batch's order. */
export interface CollectAnswer {
  results: ItemResult[];
  /** a signed identity token for the browser to send back as `identity` */
  identity?: string | undefined;
}
