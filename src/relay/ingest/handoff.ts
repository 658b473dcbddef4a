/**
 * The hand-off: how ingest makes accepted items durable before it answers. On Node the outbox
 * takes them in one atomic step (and remembers their ids for the window); the deliverer sends
 * them later. Workers hand them to the outbox objects the same way (src/relay/workers/outbox.ts),
 * or to a queue in front of them (src/relay/workers/handoff.ts).
 * @module
 */
import type { ItemResult } from '../../api/collect.js';
import { LIMITS } from '../../api/index.js';
import type { SiteConfig } from '../core/sites.js';
import { DEFAULT_IDLE_SECONDS, OUTBOX_FULL, type OutboxLimits, UNPROVEN_FULL, unprovenShareOf } from '../core/outbox-limits.js';
import type { EntryKind, Outbox } from '../state/outbox.js';
import { acceptWithIdleRoom, idleRoom, pendingCount, roomSeconds } from './idle-room.js';

/** One checked item, as the platform entry it will be sent as. */
export interface Prepared {
  /** its place in the batch */
  index: number;
  id: string;
  kind: EntryKind;
  entry: Record<string, unknown>;
  /** its visitor proved who they are (a valid `user_hash` or identity token, a server token): ingest/unproven.ts */
  proven: boolean;
}

export interface HandoffInput {
  site: SiteConfig;
  items: readonly Prepared[];
  /** the sending browser (the envelope's queue id, else the visitor): identifies go before its tracks */
  browser: string;
  /** the visitor's rate-limit key, charged when the platform refuses an item */
  visitor: string;
  /** the envelope's queue id, as sent (the Workers store routes its shards by it) */
  queue: string | undefined;
  /** ms since epoch when the request arrived */
  now: number;
  /** the request body's size: an upper bound of what the items weigh */
  bytes: number;
}

export interface HandoffResult {
  /** a result per item id: `accepted`, `duplicate`, `rejected` (with its reason) or `retry` */
  results: Map<string, ItemResult>;
  /** seconds the browser should wait before sending the `retry` items again */
  retryAfter?: number;
  /** the error code of the 503 when nothing got through @default 'upstream_unavailable' */
  code?: string;
  /** something went wrong that the browser need not know (logged) */
  warning?: string;
}

export type Handoff = (input: HandoffInput) => Promise<HandoffResult>;

/**
 * Margin on top of the window that ids are remembered: an item's age is judged on the relay's
 * clock after correcting the browser's, which may still be off by the two minutes left
 * uncorrected, so a resend at the very end of the window is still caught.
 */
export const REMEMBER_MARGIN_MS = 10 * 60_000;

/**
 * Seconds a browser waits before sending items the outbox had no room for, when the platform's
 * pace is not known: about what the deliverer needs to take a visitor's share of a full outbox at
 * a professional key's pace.
 */
export const FULL_RETRY_AFTER_S = 5;
/** The longest Retry-After for items the outbox had no room for, however long its backlog. */
export const FULL_RETRY_AFTER_MAX_S = 60;

/**
 * Seconds until the `pending` entries waiting now will have gone at `rate` full calls a second:
 * when a browser told `retry` finds room again. When one visitor alone fills the outbox (a
 * backfill, a busy kiosk, a flood), that is when its own entries have gone, so it gets the key's
 * whole pace instead of a share every few seconds; with others waiting it is later, and no sooner
 * than it could be taken. 1 s at least, {@link FULL_RETRY_AFTER_MAX_S} at most.
 */
export function drainSeconds(pending: number, rate: number): number {
  return Math.min(FULL_RETRY_AFTER_MAX_S, Math.max(1, Math.ceil(pending / (rate * LIMITS.itemsPerRequest))));
}

/** What an item the outbox had no room for is answered (`retry`), as the metrics count it (ops/metrics.ts). */
const NO_ROOM = `${OUTBOX_FULL}: the relay holds as much as it may for this visitor or site; retry later`;
/** The same for an unproven item past its share ({@link outboxHandoff}'s `unprovenShare`). */
const NO_UNPROVEN_ROOM = `${UNPROVEN_FULL} items fill their share of the relay's outbox for this site (the rest is kept for signed-in visitors), or this visitor's; retry later`;

/** `items` cut where `proven` changes: runs of consecutive items, in order. */
function runs(items: readonly Prepared[], proven: (item: Prepared) => boolean): { proven: boolean; items: Prepared[] }[] {
  const out: { proven: boolean; items: Prepared[] }[] = [];
  for (const item of items) {
    const last = out.at(-1);
    if (last !== undefined && last.proven === proven(item)) last.items.push(item);
    else out.push({ proven: proven(item), items: [item] });
  }
  return out;
}

/**
 * Hands items to `outbox` (one atomic step, within `limits`; unproven items within `unprovenShare`
 * of the site's and the outbox's limits, ingest/unproven.ts); `accepted(count)` wakes the deliverer.
 * With a `rate`, a visitor past its cap is still taken while the outbox holds less than `idleSeconds`
 * of that pace (idle-room.ts: fairness that is work-conserving). Items that found no room are
 * answered `retry`, with a Retry-After of when what waits will have gone at `rate` platform calls a
 * second ({@link drainSeconds}), or sooner when they will fit in the idle room ({@link FULL_RETRY_AFTER_S} without a rate).
 * Both read the outbox's pending count, at most `pendingMaxAgeMs` old (idle-room.ts `pendingCount`).
 */
export function outboxHandoff(
  outbox: Outbox,
  windowMs: number,
  limits: OutboxLimits,
  accepted?: (count: number) => void,
  unprovenShare = 1,
  rate?: number,
  idleSeconds = DEFAULT_IDLE_SECONDS,
  pendingMaxAgeMs = 0,
): Handoff {
  const pending = pendingCount(outbox, pendingMaxAgeMs);
  return async ({ site, items, browser, visitor, now }) => {
    // An unknown address ('') is not one visitor: only the site's and the outbox's limits hold.
    const all = visitor === '' ? { ...limits, visitor: Number.POSITIVE_INFINITY } : limits;
    // While the outbox holds less than a few seconds of the key's pace, a visitor past its cap is taken still (idle-room.ts).
    const room = rate === undefined ? 0 : idleRoom(rate, idleSeconds);
    const results = new Map<string, ItemResult>();
    let taken = 0;
    let full = 0;
    // Proven and unproven items in runs, in order (a browser's items keep their order), each run in one step.
    for (const run of runs(items, (item) => item.proven || unprovenShare >= 1)) {
      const answer = await acceptWithIdleRoom(
        outbox,
        run.items.map((item) => ({ site: site.key, id: item.id, kind: item.kind, entry: item.entry, browser, visitor, accepted: now })),
        now,
        windowMs + REMEMBER_MARGIN_MS,
        run.proven ? all : unprovenShareOf(all, unprovenShare),
        room,
        pending,
      );
      for (const id of answer.accepted) results.set(id, { id, status: 'accepted' });
      for (const id of answer.duplicate) results.set(id, { id, status: 'duplicate' });
      // Neither stored nor remembered: the browser keeps them and sends them again after Retry-After.
      for (const id of answer.full) results.set(id, { id, status: 'retry', error: run.proven ? NO_ROOM : NO_UNPROVEN_ROOM });
      taken += answer.accepted.length;
      full += answer.full.length;
    }
    if (taken > 0) accepted?.(taken);
    if (full === 0) return { results };
    // When what waits now will have gone at the key's pace (counters: the same cost whatever the backlog).
    // With idle room, as soon as enough have gone that these fit under it (idle-room.ts `roomSeconds`).
    // Not known yet (an isolate's first read under way): as if the idle room were full.
    const waiting = rate === undefined ? 0 : ((await pending(now)) ?? room);
    const retryAfter =
      rate === undefined
        ? FULL_RETRY_AFTER_S
        : all.visitor < room
          ? Math.min(drainSeconds(waiting, rate), roomSeconds(waiting, full, rate, room))
          : drainSeconds(waiting, rate);
    return { results, retryAfter, code: OUTBOX_FULL };
  };
}
