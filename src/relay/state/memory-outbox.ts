/**
 * The in-process outbox and pacer: Maps, forgotten on restart. For tests and `createRelay`'s
 * default; a relay that must keep accepted items across restarts, or share them with other
 * processes, uses SQLite or Redis (src/relay/state/).
 * @module
 */
import { takeFair, type Lane } from './fair.js';
import { compactIdString } from './ids.js';
import { type Accepted, DEAD_SLICE, type DeadLetter, type Outbox, type OutboxItem, type Pacer } from './outbox.js';
import { NO_LIMITS } from '../core/outbox-limits.js';
import { pace, paceLeave, type PaceState, paceInterval, sharedWindow } from './pace.js';

interface Entry {
  seq: number;
  item: OutboxItem;
  attempts: number;
  /** who leased it last, while leased */
  owner?: string | undefined;
  /** ready from this time: the end of the live lease, or the `notBefore` of a release */
  availableAt: number;
}

const copyItem = (item: OutboxItem): OutboxItem => ({ ...item, entry: structuredClone(item.entry) });

/** The first `max` values of a Map, without copying the rest. */
function firstValues<V>(map: ReadonlyMap<unknown, V>, max: number): V[] {
  const values: V[] = [];
  for (const value of map.values()) {
    if (values.length >= max) break;
    values.push(value);
  }
  return values;
}

/** Creates an outbox kept in this process. */
export function createMemoryOutbox(): Outbox {
  // Insertion order is expiry order while the window stays the same, so expiry drops from the head.
  const remembered = new Map<string, number>();
  const pending = new Map<number, Entry>();
  // Waiting entries by site, then visitor, then seq. Map order is the order sites and visitors
  // began waiting (one that empties is deleted and comes back at the end): the longest-waiting first.
  const lanes = new Map<string, Map<string, Map<number, Entry>>>();
  const siteCount = new Map<string, number>();
  // The merges in the outbox (ready, released or leased) by browser: its activities after them wait.
  const merges = new Map<string, Set<number>>();
  // Insertion order is the order they failed: expiry and cuts drop from the head.
  const dead = new Map<number, DeadLetter>();
  let nextSeq = 1;
  let expired = 0;
  let cut = 0;
  let leader: { owner: string; until: number } | undefined;

  const forget = (now: number) => {
    for (const [key, until] of remembered) {
      if (until > now) break;
      remembered.delete(key);
    }
  };

  const laneOf = (item: OutboxItem) => lanes.get(item.site)?.get(item.visitor);
  const browserOf = (item: OutboxItem) => `${item.site}\u0000${item.browser}`;
  /**
   * Whether `entry` waits for an earlier merge of its browser still in the outbox: an activity for
   * any (identify before track), a merge for one not `taken` in the same lease (merges in order).
   */
  const waitsForMerge = (entry: Entry, taken: ReadonlySet<number>) => {
    for (const seq of merges.get(browserOf(entry.item)) ?? []) if (seq < entry.seq && (entry.item.kind === 'activity' || !taken.has(seq))) return true;
    return false;
  };

  const addWaiting = (entry: Entry) => {
    const { site, visitor } = entry.item;
    const visitors = lanes.get(site) ?? lanes.set(site, new Map()).get(site)!;
    const lane = visitors.get(visitor) ?? visitors.set(visitor, new Map()).get(visitor)!;
    lane.set(entry.seq, entry);
    pending.set(entry.seq, entry);
    siteCount.set(site, (siteCount.get(site) ?? 0) + 1);
    if (entry.item.kind !== 'activity') {
      const browser = browserOf(entry.item);
      (merges.get(browser) ?? merges.set(browser, new Set()).get(browser)!).add(entry.seq);
    }
  };

  const removeWaiting = (entry: Entry) => {
    const { site, visitor } = entry.item;
    pending.delete(entry.seq);
    const visitors = lanes.get(site);
    const lane = visitors?.get(visitor);
    lane?.delete(entry.seq);
    if (lane?.size === 0) visitors!.delete(visitor);
    if (visitors?.size === 0) lanes.delete(site);
    const count = (siteCount.get(site) ?? 1) - 1;
    if (count > 0) siteCount.set(site, count);
    else siteCount.delete(site);
    const browser = merges.get(browserOf(entry.item));
    if (browser?.delete(entry.seq) && browser.size === 0) merges.delete(browserOf(entry.item));
  };

  const trimDead = (now: number, windowMs: number, limit: number) => {
    let work = 0;
    for (const [seq, letter] of dead) {
      if (work >= DEAD_SLICE || letter.failed + windowMs > now) break;
      dead.delete(seq);
      expired++;
      work++;
    }
    for (const seq of dead.keys()) {
      if (work >= 2 * DEAD_SLICE || dead.size <= limit) break;
      dead.delete(seq);
      cut++;
      work++;
    }
  };

  return {
    async accept(items, now, windowMs, limits = NO_LIMITS) {
      forget(now);
      trimDead(now, windowMs, limits.dead);
      const result: Accepted = { accepted: [], duplicate: [], full: [] };
      for (const item of items) {
        const key = `${item.site}\u0000${compactIdString(item.id)}`;
        if ((remembered.get(key) ?? 0) > now) {
          result.duplicate.push(item.id);
          continue;
        }
        if (pending.size >= limits.total || (siteCount.get(item.site) ?? 0) >= limits.site || (laneOf(item)?.size ?? 0) >= limits.visitor) {
          result.full.push(item.id);
          continue;
        }
        remembered.delete(key); // re-inserted at the tail: expiry order
        remembered.set(key, now + windowMs);
        addWaiting({ seq: nextSeq++, item: copyItem(item), attempts: 0, availableAt: 0 });
        result.accepted.push(item.id);
      }
      return result;
    },

    async lease(owner, max, now, leaseMs) {
      const taken = new Set<number>();
      const next = (lane: Map<number, Entry>): Lane<Entry> => {
        const entries = lane.values();
        return () => {
          for (let step = entries.next(); !step.done; step = entries.next()) {
            if (step.value.availableAt > now || waitsForMerge(step.value, taken)) continue;
            taken.add(step.value.seq);
            return step.value;
          }
          return undefined;
        };
      };
      const sites = firstValues(lanes, max).map((visitors) => firstValues(visitors, max).map(next));
      return takeFair(sites, max)
        .sort((a, b) => a.seq - b.seq)
        .map((entry) => {
          entry.owner = owner;
          entry.availableAt = now + leaseMs;
          return { ...copyItem(entry.item), seq: entry.seq, attempts: entry.attempts };
        });
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
      for (const seq of delivered) {
        const entry = ours(seq);
        if (entry) removeWaiting(entry);
      }
      for (const { seq, notBefore, tried } of released) {
        const entry = ours(seq);
        if (!entry) continue;
        if (!tried) entry.attempts = 0;
        entry.owner = undefined;
        entry.availableAt = notBefore;
      }
      for (const { seq, reason, status } of failed) {
        const entry = ours(seq);
        if (!entry) continue;
        removeWaiting(entry);
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
      const touched = new Set<Map<number, Entry>>();
      let count = 0;
      for (const seq of chosen) {
        const letter = dead.get(seq);
        if (!letter) continue;
        dead.delete(seq);
        const { seq: _seq, reason: _reason, status: _status, failed: _failed, ...item } = letter;
        addWaiting({ seq, item, attempts: 0, availableAt: now });
        touched.add(laneOf(item)!);
        count++;
      }
      // Back in seq order, so a retried letter goes before what its visitor sent after it.
      for (const lane of touched) {
        const sorted = [...lane].sort(([a], [b]) => a - b);
        lane.clear();
        for (const [seq, entry] of sorted) lane.set(seq, entry);
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
      return { pending: pending.size, dead: dead.size, remembered: remembered.size, expired, cut };
    },
  };
}

/** Creates a pacer kept in this process: share the one object between the process's callers. */
export function createMemoryPacer(rate: number, catchUpMs = 0): Pacer {
  const interval = paceInterval(rate);
  const window = sharedWindow(rate);
  const state: PaceState = { tat: 0, hold: 0 };
  return {
    async take(now, priority) {
      return pace(state, now, priority, interval, catchUpMs, window);
    },
    async leave(now, inMs, again) {
      return paceLeave(state, now, inMs, window, again);
    },
    async hold(until) {
      state.hold = Math.max(state.hold, until);
    },
  };
}
