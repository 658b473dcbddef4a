/**
 * The in-process outbox and pacer: Maps, forgotten on restart. For tests and `createRelay`'s
 * default; a relay that must keep accepted items across restarts, or share them with other
 * processes, uses SQLite or Redis (src/relay/state/).
 * @module
 */
import { type Erased, namesPerson } from './erase.js';
import { entryShapes } from './entry-shape.js';
import { compactIdString } from './ids.js';
import { createMemoryReady, type Entry, parsed, stored, type StoredItem } from './memory-ready.js';
import { type Accepted, DEAD_SLICE, type DeadLetter, type Outbox, type OutboxItem, type Pacer } from './outbox.js';
import { NO_LIMITS } from '../core/outbox-limits.js';
import { pace, paceHold, paceLeave, type PaceState, paceInterval, sharedWindow } from './pace.js';

/** An outbox kept in this process; `looked()` counts the entries and lanes its leases have looked at (their work). */
export type MemoryOutbox = Outbox & { looked(): number };

/** Creates an outbox kept in this process. */
export function createMemoryOutbox(): MemoryOutbox {
  // The ids remembered, by site (an id's 16 bytes as a string → until): no key of site and id is made
  // and hashed for each item. Insertion order is expiry order while the window stays the same, so
  // expiry drops from each site's head.
  const remembered = new Map<string, Map<string, number>>();
  const pending = new Map<number, Entry>();
  // Sites and their visitors with entries waiting: how many (the limits), and a number in the order
  // they began waiting (the longest-waiting first). Where the entries wait is memory-ready.ts's.
  const lanes = new Map<string, { since: number; count: number; visitors: Map<string, { since: number; count: number; turn: number }> }>();
  let began = 0;
  const shapeOf = entryShapes();
  // The merges in the outbox (ready, released or leased) by browser: its activities after them wait.
  const merges = new Map<string, Set<number>>();
  // Insertion order is the order they failed: expiry and cuts drop from the head.
  const dead = new Map<number, DeadLetter>();
  let nextSeq = 1;
  let expired = 0;
  let cut = 0;
  let leader: { owner: string; until: number } | undefined;
  // The suppression list: `site\0hash` → until.
  const suppressions = new Map<string, number>();

  /** The site's remembered ids, those expired at `now` forgotten first. */
  const idsOf = (site: string, now: number) => {
    const ids = remembered.get(site) ?? remembered.set(site, new Map()).get(site)!;
    for (const [id, until] of ids) {
      if (until > now) break;
      ids.delete(id);
    }
    return ids;
  };

  const browserOf = (item: Omit<OutboxItem, 'entry'>) => `${item.site}\u0000${item.browser}`;
  // A lane's place in its site's order (its `turn`) is kept in its record here, which lives while it has entries waiting.
  const places = createMemoryReady(
    pending,
    merges,
    (entry) => lanes.get(entry.item.site)!.visitors.get(entry.item.visitor)!,
    () => began++,
  );

  /** Counts `item` as waiting under `seq`, and puts it in its place (ready, or held behind a merge), or waiting until `until`. */
  const addWaiting = (seq: number, item: StoredItem, until?: number) => {
    const { site, visitor } = item;
    const counts = lanes.get(site) ?? lanes.set(site, { since: began++, count: 0, visitors: new Map() }).get(site)!;
    const lane = counts.visitors.get(visitor) ?? counts.visitors.set(visitor, { since: began, count: 0, turn: began++ }).get(visitor)!;
    counts.count++;
    lane.count++;
    // Every field set here, once: one shape for every entry.
    const entry: Entry = { seq, item, attempts: 0, owner: undefined, availableAt: until ?? 0, place: undefined, site: counts.since, lane: lane.since };
    pending.set(seq, entry);
    if (item.kind !== 'activity') {
      const browser = browserOf(item);
      (merges.get(browser) ?? merges.set(browser, new Set()).get(browser)!).add(seq);
    }
    if (until === undefined) places.place(entry);
    else places.wait(entry, until);
  };

  /** Out of the outbox (delivered or dead): a merge no longer holds what its browser sent after it. */
  const removeWaiting = (entry: Entry) => {
    const { site, visitor } = entry.item;
    places.unplace(entry);
    pending.delete(entry.seq);
    const counts = lanes.get(site)!;
    const lane = counts.visitors.get(visitor)!;
    if (--lane.count === 0) counts.visitors.delete(visitor);
    if (--counts.count === 0) lanes.delete(site);
    // Only merges are in `merges`: an activity's browser is not looked up.
    if (entry.item.kind === 'activity') return;
    const browser = merges.get(browserOf(entry.item));
    if (browser?.delete(entry.seq)) {
      if (browser.size === 0) merges.delete(browserOf(entry.item));
      places.free(entry.item);
    }
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
    looked: () => places.looked(),
    async accept(items, now, windowMs, limits = NO_LIMITS) {
      trimDead(now, windowMs, limits.dead);
      const result: Accepted = { accepted: [], duplicate: [], full: [] };
      // A request's items are of one site: its ids are looked up once.
      let ids: Map<string, number> | undefined;
      let idsSite: string | undefined;
      for (const item of items) {
        if (item.site !== idsSite || ids === undefined) {
          idsSite = item.site;
          ids = idsOf(item.site, now);
        }
        const key = compactIdString(item.id);
        const until = ids.get(key);
        if (until !== undefined && until > now) {
          result.duplicate.push(item.id);
          continue;
        }
        const site = lanes.get(item.site);
        if (pending.size >= limits.total || (site?.count ?? 0) >= limits.site || (site?.visitors.get(item.visitor)?.count ?? 0) >= limits.visitor) {
          result.full.push(item.id);
          continue;
        }
        // An id remembered once and forgotten since is put at the tail again: expiry order.
        if (until !== undefined) ids.delete(key);
        ids.set(key, now + windowMs);
        addWaiting(nextSeq++, stored(item, shapeOf(item)));
        result.accepted.push(item.id);
      }
      return result;
    },

    async lease(owner, max, now, leaseMs) {
      return places
        .pick(max, now)
        .sort((a, b) => a.seq - b.seq)
        .map((entry) => {
          entry.owner = owner;
          places.wait(entry, now + leaseMs);
          // Its fields listed, not spread: the same shape as the SQL stores' leased entries (item-text.ts).
          const { site, id, kind, browser, visitor, accepted, text, shape } = entry.item;
          return { site, id, kind, browser, visitor, accepted, text, seq: entry.seq, attempts: entry.attempts, shape };
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
        places.wait(entry, notBefore);
      }
      for (const { seq, reason, status } of failed) {
        const entry = ours(seq);
        if (!entry) continue;
        removeWaiting(entry);
        dead.set(seq, { ...parsed(entry.item), seq, reason, ...(status === undefined ? {} : { status }), failed: now });
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
      let count = 0;
      for (const seq of seqs ?? [...dead.keys()]) {
        const letter = dead.get(seq);
        if (!letter) continue;
        dead.delete(seq);
        const { seq: _seq, reason: _reason, status: _status, failed: _failed, ...item } = letter;
        // Back in the outbox with its seq: a retried merge holds again what its browser sent after it (the lease sees to those ready).
        addWaiting(seq, stored(item, shapeOf(item)), now);
        count++;
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

    async erase(person, site, now) {
      const erased: Erased = { waiting: 0, dead: 0, inFlight: 0 };
      for (const entry of [...pending.values()]) {
        if (!namesPerson(parsed(entry.item), person, site)) continue;
        if (entry.owner !== undefined && entry.availableAt > now) erased.inFlight++;
        else {
          removeWaiting(entry);
          erased.waiting++;
        }
      }
      for (const [seq, letter] of dead) {
        if (!namesPerson(letter, person, site)) continue;
        dead.delete(seq);
        erased.dead++;
      }
      return erased;
    },

    async suppress(rows, until, now) {
      for (const [key, ends] of suppressions) if (ends <= now) suppressions.delete(key);
      for (const { site, hash } of rows) {
        const key = `${site}\u0000${hash}`;
        suppressions.set(key, Math.max(until, suppressions.get(key) ?? 0));
      }
    },

    async suppressed(now) {
      const rows = [];
      for (const [key, until] of suppressions) {
        if (until <= now) suppressions.delete(key);
        else {
          const [site, hash] = key.split('\u0000') as [string, string];
          rows.push({ site, hash });
        }
      }
      return rows;
    },

    async stats() {
      let count = 0;
      for (const site of remembered.keys()) count += idsOf(site, Date.now()).size;
      return { pending: pending.size, dead: dead.size, remembered: count, expired, cut };
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
    async hold(until, now) {
      paceHold(state, now, until);
    },
  };
}
