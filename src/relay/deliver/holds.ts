/**
 * Partial calls held back in a backlog (lease-run.ts): a call that is not full waits for the next
 * lease, where it fills, but none of its entries waits so more than {@link HOLD_MS} in all. Kept
 * by the deliverer across leases and rounds: when each held entry was first held back.
 * @module
 */
import type { Leased } from '../state/outbox.js';

/** The longest an entry is held back to fill a call: then its call goes as it is. */
export const HOLD_MS = 2_000;
/** An entry held this long ago and not seen since went in a call, or to another deliverer: forgotten. */
const FORGET_MS = 10 * HOLD_MS;

export interface Holds {
  /** Whether the call of `entries` may wait for the next lease at `now` (and counts it as waiting); false once one of them has waited {@link HOLD_MS}. */
  mayHold(entries: readonly Leased[], now: number): boolean;
}

export function createHolds(): Holds {
  /** per entry (its seq): when it was first held back */
  const since = new Map<number, number>();
  return {
    mayHold(entries, now) {
      for (const [seq, at] of since) if (at <= now - FORGET_MS) since.delete(seq);
      if (entries.some((entry) => (since.get(entry.seq) ?? now) <= now - HOLD_MS)) {
        for (const entry of entries) since.delete(entry.seq);
        return false;
      }
      for (const entry of entries) if (!since.has(entry.seq)) since.set(entry.seq, now);
      return true;
    },
  };
}
