/**
 * The deliverer's lead: one deliverer of a deployment sends at a time. The lock (`Outbox.lead`)
 * lasts `ttlMs` and is renewed while the leader runs; before each call the leader also makes sure
 * the lock outlasts that call — its timeout and a margin — so a standby can take the lead only once
 * every call of the old leader has been answered or cut off, even when the old leader died with
 * calls in flight. A leader that cannot renew (another holds the lock, the store failed) starts no
 * further call.
 * @module
 */
import type { Clock } from '../core/clock.js';
import type { Outbox } from '../state/outbox.js';
import { describe } from './report.js';

export interface Lead {
  readonly owner: string;
  /** Takes or renews the lock; true while this process leads. Cheap when renewed recently. */
  keep(): Promise<boolean>;
  /** Makes the lock last until at least `until` (ms since epoch); false when the lead is another's or the store failed. */
  cover(until: number): Promise<boolean>;
  /** Hands the lock on at once (after every call has been answered). */
  release(): Promise<void>;
}

export function createLead(options: { outbox: Outbox; owner: string; clock: Clock; ttlMs: number; log: (line: Record<string, unknown>) => void }): Lead {
  const { outbox, owner, clock, ttlMs, log } = options;
  /** the lock is surely ours until then (the time asked before the store's answer, plus the ttl) */
  let heldUntil = 0;
  let renewAt = 0;

  /** Asks for the lock until `now + ttl`, never shortening a term a call relies on. */
  async function take(ttl: number): Promise<boolean> {
    const now = clock.now();
    const term = Math.max(ttl, heldUntil - now);
    try {
      if (await outbox.lead(owner, now, term)) {
        heldUntil = now + term;
        renewAt = now + ttlMs / 3;
        return true;
      }
    } catch (error) {
      log({ level: 'error', error: 'lead_failed', cause: describe(error) });
    }
    heldUntil = 0;
    renewAt = 0;
    return false;
  }

  return {
    owner,
    async keep() {
      const now = clock.now();
      // Renewed recently, or held longer than a renewal would make it (a call's cover did): no
      // write. A renewal keeps the term a call relies on, and the next call's cover would write
      // again for its own (two writes where one does); no other owner can take it before then.
      if (heldUntil > 0 && (now < renewAt || heldUntil - now > ttlMs)) return true;
      return await take(ttlMs);
    },
    async cover(until) {
      const now = clock.now();
      if (heldUntil >= until && now < renewAt) return true;
      return await take(until - now + ttlMs / 3);
    },
    async release() {
      if (heldUntil === 0) return;
      heldUntil = 0;
      await outbox.lead(owner, clock.now(), 1).catch(() => false);
    },
  };
}
