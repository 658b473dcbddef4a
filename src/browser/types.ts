/**
 * Types of the snippet: options, queued items (the /collect contract, docs/architecture.md) and events.
 * @module
 */

/** Field values keyed by field ID (`type:namespace:name`). */
export type Fields = Record<string, unknown>;

/**
 * `granted` stores and sends; `pending` keeps events in memory only, nothing on the device, until
 * a choice; `store-only` stores on the device but never sends (what `pending` did before);
 * `denied` deletes the queue and keeps nothing.
 */
export type Consent = 'granted' | 'denied' | 'pending' | 'store-only';

import type { CollectItem, IdentifyItem, ItemStatus, RejectReason, TrackItem, UserHash } from '../api/collect.js';

/** Items as the relay receives them in `batch`: the one wire contract, src/api/collect.ts. */
export type { IdentifyItem, ItemStatus, TrackItem };
export type Item = CollectItem;

/** One queued item as kept in IndexedDB: the item, the anonymous id it was made under, its order. */
export interface Entry {
  item: Item;
  a: string;
  n: number;
}

/** Who an anonymous id turned out to be: identifying fields and the optional `user_hash`. */
export interface Who {
  p: Fields;
  h?: UserHash | undefined;
}

/** What the tracker remembers between page loads (stored under the key `meta`). */
export interface Meta {
  /** the current anonymous id */
  a: string;
  /** anonymous id -> the person who identified under it */
  m: Record<string, Who>;
  /** the relay's identity token */
  i?: string | undefined;
  /** the visitor's explicit consent choice */
  c?: Consent | undefined;
  /** the stable id of this browser's queue, sent as the envelope's `queue` (made once, never changed) */
  q?: string | undefined;
  /** first-touch campaign attribution of the visitor (`utm_source`, `gclid`, `referrer`, …) */
  t?: Record<string, string> | undefined;
  /** the relay's dedupe window in seconds, as its last answer announced it: older items are dropped (`expired`) */
  w?: number | undefined;
}

/**
 * The key-value store the tracker keeps its rows in (`meta`, `lock`, and the queue's rows of
 * entries): idb-keyval by default, a Map when IndexedDB fails. A change is a key and what becomes
 * of its row: a value, `undefined` to delete it, or a function of the stored value, read and
 * written in the same transaction (atomic across tabs).
 */
export interface Store {
  all(): Promise<[IDBValidKey, unknown][]>;
  /** Applies the changes, in order, in one transaction. */
  write(changes: [key: string, change: unknown][]): Promise<void>;
  clear(): Promise<void>;
}

/**
 * Why an item left the queue without reaching the platform: `cap`, `expired` (older than
 * `maxAge` or the relay's dedupe window, or refused by the relay as such), `reset`, `consent`,
 * `corrupt`, or the class of a rejection by the relay that names one (`unverified`: its person
 * is not proven; `invalid`, `not_allowed`, `platform`; see `RejectReason`).
 */
export type DropReason = 'cap' | 'expired' | 'reset' | 'consent' | 'corrupt' | RejectReason;

/** Payloads of `on(event, fn)`. */
export interface TrackerEvents {
  /** an item is stored in the queue (its `track`/`identify` Promise resolves) */
  queue: { item: Item };
  /** a batch is on its way to the relay (`beacon`: sent with `sendBeacon` on page exit, no answer read) */
  send: { items: Item[]; beacon: boolean };
  /** the relay answered for one item; `retry` keeps it queued */
  result: { item: Item; status: ItemStatus; error?: string | undefined; reason?: RejectReason | undefined };
  /** the relay rejected an item for good */
  reject: { item: Item; error: string };
  /** an item left the queue without reaching the platform (for `corrupt`, `item` is whatever was stored) */
  drop: { item: Item; reason: DropReason };
  /** IndexedDB failed; the queue now lives in memory for this page */
  'storage-error': unknown;
  /** a flush failed; the queue retries in `retryIn` ms */
  error: { status?: number; message: string; retryIn: number };
}

export type TrackerEvent = keyof TrackerEvents;

/** Options of `createTracker` (and of `cdp('init', …)`). */
export interface TrackerOptions {
  /** Base address of the relay, e.g. `https://t.example.com`. */
  relay: string;
  /** The site key the relay knows, e.g. `pk_live_…`. */
  key: string;
  /** Path of the relay's browser endpoint. @default '/collect' */
  path?: string;
  /** Consent until the visitor chooses. @default 'granted' */
  consent?: Consent;
  /** Treat Global Privacy Control / Do Not Track as `denied`. @default false */
  privacySignals?: boolean;
  /** Send a page view now and on every `pushState`/`replaceState`/`popstate`. @default false */
  spa?: boolean;
  /** Activity of `page()`. @default 'act:cm:page-view' */
  pageActivity?: string;
  /** Wait before sending what was tracked, in ms. @default 1000 */
  flushInterval?: number;
  /** Abort a send after this many ms. @default 10000 */
  timeout?: number;
  /** Most items kept (oldest dropped first). @default 1000 */
  maxItems?: number;
  /** Oldest item kept, in ms. @default 7 days */
  maxAge?: number;
  fetch?: typeof fetch;
  /** `false` sends nothing on page exit. @default navigator.sendBeacon */
  sendBeacon?: ((url: string, body: string) => boolean) | false;
  store?: Store;
  /** Web Locks, so that one tab flushes at a time; `false`: none (each tab flushes, the relay drops second copies). @default navigator.locks */
  locks?: LockManager | false;
  now?: () => number;
  random?: () => number;
  /**
   * Person fields that receive the visitor's first-touch attribution on `identify`, e.g.
   * `{ utm_source: 'str:cm:first-utm-source', referrer: 'str:cm:first-referrer' }`. Off by default.
   */
  firstTouchFields?: Partial<Record<AttributionKey, string>>;
}

/** Campaign parameters and click ids a page view carries, and the referrer. */
export type AttributionKey =
  | 'utm_source'
  | 'utm_medium'
  | 'utm_campaign'
  | 'utm_term'
  | 'utm_content'
  | 'gclid'
  | 'fbclid'
  | 'msclkid'
  | 'ttclid'
  | 'li_fat_id'
  | 'referrer';

/** Options of `track`. */
export interface TrackOptions {
  location?: unknown;
}

/** Options of `identify`. */
export interface IdentifyOptions {
  /**
   * Proof made by your server, for relays that verify identity: `identityHash(secret, field, value)`
   * from `cdp-edge/relay`, or one such hash per field ID. Later tracks of this person carry it too.
   */
  user_hash?: UserHash;
  tags?: string[];
  unset_tags?: string[];
  location?: unknown;
}

/** What `createTracker` returns and `window.cdp` exposes. */
export interface Tracker {
  track(activityId: string, attributes?: Fields, options?: TrackOptions): Promise<void>;
  identify(fields: Fields, options?: IdentifyOptions): Promise<void>;
  page(attributes?: Fields): Promise<void>;
  flush(): Promise<void>;
  reset(): Promise<void>;
  consent(state: Consent): Promise<void>;
  on<E extends TrackerEvent>(event: E, fn: (payload: TrackerEvents[E]) => void): () => void;
}
