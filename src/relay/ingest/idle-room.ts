/**
 * Room the outbox has when its key is idle: what makes a visitor's limit work-conserving. A
 * visitor may have `OutboxLimits.visitor` entries waiting (1,000 by default: one second of a
 * professional key). When nothing else waits, that cap alone would hold one heavy sender (a
 * backfill, a busy kiosk, a flood once the others stop) to one cap per browser round trip,
 * however fast the key could go. So while the whole outbox holds less than a few seconds of the
 * key's pace, a visitor past its own cap is taken up to that amount; the site's and the outbox's
 * limits (and the unproven share of them) still hold.
 * @module
 */
import { LIMITS } from '../../api/index.js';
import type { OutboxLimits } from '../core/outbox-limits.js';
import type { Accepted, Outbox, OutboxItem } from '../state/outbox.js';
import { createLastValues } from '../core/last-value.js';

/** How old the pending count the idle room reads may be on Workers, where reading it asks every outbox object. */
export const PENDING_MAX_AGE_MS = 1_000;
/** A read of the count that has not answered in this long is given up on: the next request reads again. */
const READ_GIVEN_UP_MS = 10_000;

/**
 * What the idle room reads of the outbox: its pending count, or undefined when not known yet.
 * `now` is the request's clock (ms since epoch).
 */
export type PendingCount = (now: number) => Promise<number | undefined>;

/**
 * The outbox's pending count, read again once older than `maxAgeMs` (0: on every call). On Node a
 * read is one counter; on Workers it asks every outbox object, so a flooding visitor's refused
 * requests would each cost `RELAY_SHARDS` object calls: with {@link PENDING_MAX_AGE_MS} an
 * isolate asks at most about once a second. Only one request at a time reads; the others use the
 * last count meanwhile, or undefined before the first (never the reading request's promise: in
 * workerd a promise belongs to the request that made it, and one cancelled would leave its
 * waiters hanging; core/last-value.ts). The idle room stays safe on an old count: the store takes the room in one
 * atomic step against its own counters ({@link acceptWithIdleRoom}).
 */
export function pendingCount(outbox: Outbox, maxAgeMs: number): PendingCount {
  if (!(maxAgeMs > 0)) return async () => (await outbox.stats()).pending;
  const count = createLastValues<number | undefined>({ freshMs: maxAgeMs, underWayMs: READ_GIVEN_UP_MS, initial: { value: undefined }, maxKeys: 1 });
  return async (now) => (await count.get('', now, async () => (await outbox.stats()).pending)).value;
}

/** Entries the key sends in `seconds` at `rate` full calls a second: 5,000 in the default 5 s at 10 calls/s. */
export const idleRoom = (rate: number, seconds: number): number => Math.floor(rate * LIMITS.itemsPerRequest * seconds);

/**
 * `outbox.accept` within `limits`; items found no room for past their visitor's cap are then
 * offered again while the outbox holds less than `room` entries in all (`pending`: its counters,
 * perhaps a second old; not known, no second step),
 * without the visitor's cap and with the outbox's limit lowered to `room`: each step atomic in the
 * store, so concurrent requests never take more than `room` between them. The second step only
 * runs for a request that met a limit; the items it takes come after the first step's, in order.
 */
export async function acceptWithIdleRoom(
  outbox: Outbox,
  items: readonly OutboxItem[],
  now: number,
  windowMs: number,
  limits: OutboxLimits,
  room: number,
  pending: PendingCount,
): Promise<Accepted> {
  const first = await outbox.accept(items, now, windowMs, limits);
  if (first.full.length === 0 || !(limits.visitor < room)) return first;
  const waiting = await pending(now);
  if (waiting === undefined || waiting >= Math.min(room, limits.total)) return first;
  const full = new Set(first.full);
  const again = await outbox.accept(
    items.filter((item) => full.has(item.id)),
    now,
    windowMs,
    { ...limits, visitor: Number.POSITIVE_INFINITY, total: Math.min(limits.total, room) },
  );
  return { accepted: [...first.accepted, ...again.accepted], duplicate: [...first.duplicate, ...again.duplicate], full: again.full };
}

/**
 * Seconds until `refused` more entries fit under `room` at `rate` full calls a second, with
 * `pending` waiting now: when a visitor refused past its cap finds idle room again. 1 s at least.
 */
export const roomSeconds = (pending: number, refused: number, rate: number, room: number): number =>
  Math.max(1, Math.ceil((pending + refused - room) / (rate * LIMITS.itemsPerRequest)));
