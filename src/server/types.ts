/**
 * What `cdp-edge/server` takes and answers: the tracker's options, the calls' inputs, an item's
 * final outcome, and the spool a tracker may keep its items in.
 * @module
 */
import type { CollectItem, RejectReason } from '../api/collect.js';
import type { Fields } from '../api/types.js';

/** An item the tracker holds until the relay has it: its wire form (`src/api/collect.ts`). */
export type ServerItem = CollectItem;

/**
 * Where a tracker keeps its items until the relay has them, beyond the life of its process: each
 * item is put before it is sent and removed once final. `cdp-edge/server/spool` gives a SQLite
 * file on Node; the default is none (the items live in the tracker's memory only).
 */
export interface Spool {
  /** the items not yet final, oldest first (read once, when a tracker starts) */
  load(): Promise<ServerItem[]>;
  put(items: readonly ServerItem[]): Promise<void>;
  remove(ids: readonly string[]): Promise<void>;
}

export interface ServerTrackerOptions {
  /** the relay's base address, e.g. `https://t.example.com` (the door is its `/server/collect`) */
  relay: string;
  /** a relay token with the `collect` scope (`cdp-edge token create --name shop --scopes collect`) */
  token: string;
  /** @default globalThis.fetch */
  fetch?: typeof fetch;
  /** keep items here too until they are final, so a process that ends or dies loses none @default none */
  spool?: Spool;
  /** items per request (the relay takes at most 100) @default 100 */
  batchSize?: number;
  /** first wait after a failed try, in ms; doubled per failure in a row, with jitter @default 250 */
  minBackoffMs?: number;
  /** longest wait between tries, in ms (a relay's `Retry-After` may ask for more) @default 5000 */
  maxBackoffMs?: number;
  /** how long one request may take before it is abandoned and tried again, in ms @default 10 000 */
  timeoutMs?: number;
  /** told of each failed try (the relay unreachable, a 503, a misconfigured token); the items are kept and tried again */
  onError?: (error: ServerTrackerError) => void;
}

/** Common to `track` and `identify`. */
export interface ServerItemOptions {
  /**
   * The item's stable id, 1 to 128 characters: an order id, a webhook's event id. The relay lands
   * one id once within its window (7 days by default), however many times and from however many
   * instances it is sent. One id names one item: give the paid and the shipped event of one order
   * two ids. @default a new UUID (then only this tracker's own retries are told apart)
   */
  id?: string;
  /** when it happened @default now */
  ts?: Date | string;
  /** the item's location; `source_ip` may carry the visitor's address (the relay adds none: the connection is yours) */
  location?: Record<string, unknown>;
}

export interface ServerTrack extends ServerItemOptions {
  /** the activity, e.g. `act:cm:order-paid` */
  activity_id: string;
  /** who did it: identifying fields, e.g. `{ 'str::email': 'ann@example.com' }` */
  person: Fields;
  attributes?: Fields;
}

export interface ServerIdentify extends ServerItemOptions {
  /** the person's fields, with at least one identifier (`str::email`, `str::ei`) */
  fields: Fields;
  tags?: string[];
  unset_tags?: string[];
}

/**
 * What became of an item: `accepted` (the relay holds it durably and will deliver it once),
 * `duplicate` (it had it already) or `rejected` (it never will, `reason` and `error` say why).
 */
export interface ServerResult {
  id: string;
  status: 'accepted' | 'duplicate' | 'rejected';
  reason?: RejectReason | undefined;
  error?: string | undefined;
}

/** A failed try (told to `onError`), or a `flush` that ran out of time (`pending` items not yet final). */
export class ServerTrackerError extends Error {
  override name = 'ServerTrackerError' as const;
  /** the relay's answer status, when it answered */
  readonly status: number | undefined;
  /** items not yet final when it was made */
  readonly pending: number;
  constructor(message: string, options: { status?: number | undefined; pending: number; cause?: unknown }) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.status = options.status;
    this.pending = options.pending;
  }
}
