/**
 * Identify before track, across leases and rounds: a browser whose identify (merge) was not
 * delivered — released for later after a 503 or a 429, or never sent because the platform asked
 * to wait — has its tracks wait until that merge is delivered or refused for good, in this lease
 * or any later one. The driver keeps one {@link Waits} across its rounds. A wait lapses on its own
 * `until` (the merge's next chance plus a lease), so a merge delivered by another deliverer after
 * a takeover holds its browser's tracks back a little longer at most, never sends them early.
 * @module
 */
import type { Leased } from '../state/outbox.js';

export interface Waits {
  /** `merge` was not delivered and may go again from `notBefore`: its browser's tracks wait until it is settled, at most until `until`. */
  hold(merge: Leased, notBefore: number, until: number): void;
  /** `merge` was delivered or refused for good: its browser's tracks may go (once no other merge of it waits). */
  done(merge: Leased): void;
  /** When the tracks of `entry`'s browser may go next (ms since epoch); 0 when they may go now. */
  waitFor(entry: Pick<Leased, 'site' | 'browser'>, now: number): number;
}

const browserOf = (entry: Pick<Leased, 'site' | 'browser'>) => `${entry.site}\u0000${entry.browser}`;
const keyParts = (key: string) => {
  const [site = '', browser = ''] = key.split('\u0000');
  return { site, browser };
};
/** A track whose merge may go again already waits this long at least: the merge goes first. */
const RECHECK_MS = 500;
/** Browsers waiting past which lapsed waits are swept. */
const SWEEP_AT = 10_000;

export function createWaits(): Waits {
  /** per browser: the seqs of its merges not delivered, each with when it may go again and when the wait lapses */
  const waiting = new Map<string, Map<number, { notBefore: number; until: number }>>();
  const waits: Waits = {
    hold(merge, notBefore, until) {
      // Lapsed waits of browsers never seen again go now and then.
      if (waiting.size > SWEEP_AT) for (const key of [...waiting.keys()]) waits.waitFor(keyParts(key), notBefore);
      const key = browserOf(merge);
      const merges = waiting.get(key) ?? waiting.set(key, new Map()).get(key)!;
      merges.set(merge.seq, { notBefore, until });
    },
    done(merge) {
      const key = browserOf(merge);
      const merges = waiting.get(key);
      merges?.delete(merge.seq);
      if (merges?.size === 0) waiting.delete(key);
    },
    waitFor(entry, now) {
      const key = browserOf(entry);
      const merges = waiting.get(key);
      if (merges === undefined) return 0;
      let next = 0;
      for (const [seq, wait] of merges) {
        if (wait.until <= now) merges.delete(seq);
        else next = Math.max(next, wait.notBefore, now + RECHECK_MS);
      }
      if (merges.size === 0) waiting.delete(key);
      return next;
    },
  };
  return waits;
}
