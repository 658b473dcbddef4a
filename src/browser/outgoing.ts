/**
 * What may be sent now: the stored items, with the person of held tracks filled in once known,
 * identifies first (a person must exist before their activities arrive), then oldest first, in
 * batches that fit a request.
 * @module
 */
import { resolveItem } from './meta.js';
import type { Queue } from './queue.js';
import { batches, MAX_BATCH_BYTES } from './send.js';
import type { DropReason, Entry, Item, Meta, Who } from './types.js';
import { utf8Bytes } from './validate.js';

// Room for the envelope and an identity token beside the items.
const BATCH_ROOM = MAX_BATCH_BYTES - 2048;

/** Bytes the person adds to a held track once known (`"person":…,"user_hash":…`). */
export const personBytes = (who: Who) => utf8Bytes(JSON.stringify(who)) + 24;

/**
 * What of `queue` may go, as `sendable(meta, startedAt, dropping)`: the batches that may go at
 * `startedAt`. Items whose write has not begun are left for later; with `dropping`, items that
 * must never go (older than `maxAge` or the relay's window, orphaned by a reset) are dropped.
 */
export const createOutgoing =
  (queue: Queue, maxAge: number, drop: (entries: Entry[], reason: DropReason) => void) =>
  (meta: Meta, startedAt: number, dropping?: boolean): Item[][] => {
    const ready: [Item, number][] = [];
    // Older than `maxAge`, or than the relay's window: it could not be told from one delivered.
    const oldest = Math.min(maxAge, meta.w! * 1000 || maxAge);
    for (const { entry, bytes, row } of queue.held.values()) {
      if (!row) continue;
      const item = resolveItem(entry, meta);
      const reason = startedAt - Date.parse(entry.item.ts) > oldest ? 'expired' : item === null && 'reset';
      if (reason) dropping && drop([entry], reason);
      else if (item) ready.push([item, item === entry.item ? bytes : bytes + personBytes(meta.m[entry.a]!)]);
    }
    return batches(
      ready.sort(([x], [y]) => +(x.type === 'track') - +(y.type === 'track')),
      BATCH_ROOM,
    );
  };
