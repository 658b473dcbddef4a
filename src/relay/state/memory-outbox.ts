/**
 * The in-process outbox and pacer: Maps, forgotten on restart. For tests and `createRelay`'s
 * default; a relay that must keep accepted items across restarts, or share them with other
 * processes, uses SQLite or Redis (src/relay/state/).
 * @module
 */
import { compactIdString } from './ids.js';
import type { Accepted, DeadLetter, Leased, Outbox, OutboxItem, Pacer } from './outbox.js';
import { pace, paceInterval } from './pace.js';

interface Entry {
  item: OutboxItem;
  attempts: number;
  /** who leased it last, while leased */
  owner?: string | undefined;
  /** ready from this time: the end of the live lease, or the `notBefore` of a release */
  availableAt: number;
}

const copyItem = (item: OutboxItem): OutboxItem => ({ ...item, entry: structuredClone(item.entry) });

/** Creates an outbox kept in this process. */
export function createMemoryOutbox(): Outbox {
  // Insertion order is expiry order while the window stays the same, so expiry drops from the head.
  const remembered = new Map<string, number>();
  const pending = new Map<number, Entry>();
  const dead = new Map<number, DeadLetter>();
  let nextSeq = 1;
  let leader: { owner: string; until: number } | undefined;

  const forget = (now: number) => {
    for (const [key, until] of remembered) {
      if (until > now) break;
      remembered.delete(key);
    }
  };

  return {
    async accept(items, now, windowMs) {
      forget(now);
      const result: Accepted = { accepted: [], duplicate: [] };
      for (const item of items) {
        const key = `${item.site}\u0000${compactIdString(item.id)}`;
        if ((remembered.get(key) ?? 0) > now) {
          result.duplicate.push(item.id);
          continue;
        }
        remembered.delete(key); // re-inserted at the tail: expiry order
        remembered.set(key, now + windowMs);
        pending.set(nextSeq++, { item: copyItem(item), attempts: 0, availableAt: 0 });
        result.accepted.push(item.id);
      }
      return result;
    },

    async lease(owner, max, now, leaseMs) {
      const leased: Leased[] = [];
      // Map order is seq order: entries are only ever added with a higher seq (a retried dead letter is re-sorted below).
      for (const [seq, entry] of pending) {
        if (leased.length >= max) break;
        if (entry.availableAt > now) continue;
        leased.push({ ...copyItem(entry.item), seq, attempts: entry.attempts });
        entry.owner = owner;
        entry.availableAt = now + leaseMs;
      }
      return leased;
    },

    async sending(owner, seqs, now) {
      const marked: number[] = [];
      for (const seq of new Set(seqs)) {
        const entry = pending.get(seq);
        if (entry?.owner !== owner || entry.availableAt <= now) continue;
        entry.attempts++;
        marked.push(seq);
      }
      return marked;
    },

    async settle(owner, { delivered, released, dead: failed }, now) {
      let skipped = 0;
      const ours = (seq: number) => {
        const entry = pending.get(seq);
        if (entry?.owner === owner) return entry;
        skipped++;
        return undefined;
      };
      for (const seq of delivered) if (ours(seq)) pending.delete(seq);
      for (const { seq, notBefore } of released) {
        const entry = ours(seq);
        if (!entry) continue;
        entry.attempts = 0;
        entry.owner = undefined;
        entry.availableAt = notBefore;
      }
      for (const { seq, reason, status } of failed) {
        const entry = ours(seq);
        if (!entry) continue;
        pending.delete(seq);
        dead.set(seq, { ...entry.item, seq, reason, ...(status === undefined ? {} : { status }), failed: now });
      }
      return { skipped };
    },

    async lead(owner, now, ttlMs) {
      if (leader && leader.owner !== owner && leader.until > now) return false;
      leader = { owner, until: now + ttlMs };
      return true;
    },

    async deadLetters(options = {}) {
      const list = [...dead.values()].filter((letter) => options.site === undefined || letter.site === options.site).sort((a, b) => a.seq - b.seq);
      return list.slice(0, options.limit ?? list.length).map((letter) => ({ ...letter, entry: structuredClone(letter.entry) }));
    },

    async retryDead(seqs, now) {
      const chosen = seqs ?? [...dead.keys()];
      let count = 0;
      for (const seq of chosen) {
        const letter = dead.get(seq);
        if (!letter) continue;
        dead.delete(seq);
        const { seq: _seq, reason: _reason, status: _status, failed: _failed, ...item } = letter;
        pending.set(seq, { item, attempts: 0, availableAt: now });
        count++;
      }
      // Back in seq order, so a retried letter goes before what was accepted after it.
      if (count > 0) {
        const sorted = [...pending].sort(([a], [b]) => a - b);
        pending.clear();
        for (const [seq, entry] of sorted) pending.set(seq, entry);
      }
      return count;
    },

    async dropDead(seqs) {
      if (seqs === undefined) {
        const count = dead.size;
        dead.clear();
        return count;
      }
      let count = 0;
      for (const seq of new Set(seqs)) if (dead.delete(seq)) count++;
      return count;
    },

    async stats() {
      forget(Date.now());
      return { pending: pending.size, dead: dead.size, remembered: remembered.size };
    },
  };
}

/** Creates a pacer kept in this process: share the one object between the process's callers. */
export function createMemoryPacer(rate: number): Pacer {
  const interval = paceInterval(rate);
  const state = { tat: 0, hold: 0 };
  return {
    async take(now, priority) {
      return pace(state, now, priority, interval);
    },
    async hold(until) {
      state.hold = Math.max(state.hold, until);
    },
  };
}
