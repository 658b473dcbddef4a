/**
 * The SQL outbox's memory of the ids it accepted (`outbox_seen`: a site's number, the id's 16
 * bytes, the end of its window), as its accept (sql-accept.ts) writes it: a transaction's ids
 * handed to SQLite as the bytes they are remembered by (ids.ts), one blob, no hex made for SQLite to
 * read back; and, when every id is new (the usual case), no row answered for each.
 * @module
 */
import { toHex } from '../core/encoding.js';
import { writeCompactId } from './ids.js';
import type { SqlPort } from './sql-port.js';

export const SEEN_SQL = {
  // Each takes the ids of one site (?1) that end together (?2) as a blob of their 16 bytes one
  // after another (?3), each cut out by substr at its start in ?4 (a JSON list, the same string
  // for every run of as many ids). As a JSON list of hex strings for unhex(), libsql ran as many VM
  // steps and 0.8k more instructions an id, and the JavaScript made a string an id (bench/README).
  // The batch's ids whose window has passed, forgotten before they are remembered again (only when
  // the expiry slice may have left some). Each looked up by its whole key: a walk of every id past
  // its window, matched against the batch, cost their number times the batch's (8 s for 160 ids
  // beside 30,000 expired, which a slow accept let grow), and `(site, id) IN (SELECT … FROM
  // json_each)` searches the key by its first column only: every id of the site.
  forgetStale: 'DELETE FROM outbox_seen WHERE site = ?1 AND id IN (SELECT substr(?3, value, 16) FROM json_each(?4)) AND until <= ?2',
  // Every id new: inserted without a row answered for each (`RETURNING hex(id)` cost libsql about
  // 4k instructions and 15 VM steps an id, and the JavaScript a row and a string). An id
  // remembered before, or given twice, fails the statement on the key, which SQLite undoes alone
  // (the transaction goes on): then each accept's ids go again, and rememberNew inserts the new
  // ones of those that fail again, a RETURNING row each (rememberIds).
  remember: 'INSERT INTO outbox_seen (site, id, until) SELECT ?1, substr(?3, value, 16), ?2 FROM json_each(?4)',
  rememberNew:
    'INSERT INTO outbox_seen (site, id, until) SELECT ?1, substr(?3, value, 16), ?2 FROM json_each(?4) WHERE true ON CONFLICT (site, id) DO NOTHING RETURNING hex(id)',
  // One id (?2: its 16 bytes) forgotten again: its item was past the limits.
  unremember: 'DELETE FROM outbox_seen WHERE site = ?1 AND id = ?2',
} as const;

/**
 * The ids of a transaction's accepts: those of one site that end together are a group, each id's
 * 16 bytes one after another in one blob, the groups one after another; within a group, each
 * accept's ids are a run. By item, in their order: its group and run (indexes of `groups` and
 * `runs`) and where its id's bytes start in the blob.
 */
export interface Ids {
  group: number[];
  run: number[];
  at: number[];
  bytes: Uint8Array;
  groups: Group[];
  runs: Run[];
}

/** One group of {@link Ids}: its site number, the end of its ids' window, where its bytes begin, how many ids it holds, and its runs (indexes of `runs`). */
interface Group {
  site: number;
  until: number;
  from: number;
  count: number;
  runs: number[];
}

/** One accept's ids in a group: which accept, its group, where its bytes begin (first from its group's start, in ids), how many. */
interface Run {
  call: number;
  group: number;
  from: number;
  count: number;
}

/** How much later than its own the end of an id's window may be, to share the end of its transaction's latest call. */
const SHARED_END_MS = 1000;

/** What {@link gatherIds} reads of an accept: its items' sites and ids, when it came and how long its ids are remembered. */
interface IdsOf {
  items: readonly { site: string; id: string }[];
  now: number;
  windowMs: number;
}

/** `[1,17,33,…]`: where each of `count` ids starts in a blob of them (from 1, as substr counts), kept for the counts met. */
const STARTS = new Map<number, string>();
const startsOf = (count: number): string => {
  let starts = STARTS.get(count);
  if (starts === undefined) {
    starts = '[1';
    for (let k = 1; k < count; k++) starts += `,${16 * k + 1}`;
    starts += ']';
    // The counts met are a few (a request's items, a group of them); past 256 the list starts again.
    if (STARTS.size >= 256) STARTS.clear();
    STARTS.set(count, starts);
  }
  return starts;
};

/** SQLite refusing a row on a key (libsql's error and a Durable Object's both carry its message). */
const onKey = (error: unknown): boolean => error instanceof Error && error.message.includes('UNIQUE constraint failed');

/** The ids of `calls` (`count` items in all) in their groups, each id's bytes written into the blob at its place; `siteNumber` numbers a site. */
export function gatherIds(calls: readonly IdsOf[], count: number, siteNumber: (site: string) => number): Ids {
  const sites = new Map<string, number>();
  const groups: Group[] = [];
  /** The groups' indexes by site number, then by end. */
  const bySite = new Map<number, Map<number, number>>();
  const runs: Run[] = [];
  const group: number[] = [];
  const run: number[] = [];
  // First each item's place in its group, then (once the groups' sizes are known) in the blob.
  const at: number[] = [];
  let latest = calls[0]!.now;
  for (let c = 1; c < calls.length; c++) latest = Math.max(latest, calls[c]!.now);
  let g = -1;
  for (let c = 0; c < calls.length; c++) {
    const { items, now, windowMs } = calls[c]!;
    // The calls that came within SHARED_END_MS of the latest remember their ids until its end, a little longer than
    // their own: one statement a site, not one for each millisecond its requests came in.
    const until = (latest - now <= SHARED_END_MS ? latest : now) + windowMs;
    for (let j = 0; j < items.length; j++) {
      const site = items[j]!.site;
      let n = sites.get(site);
      if (n === undefined) {
        n = siteNumber(site);
        sites.set(site, n);
      }
      // A request's items are mostly one site's, and a transaction's end together: mostly the group of the item before.
      if (g < 0 || groups[g]!.site !== n || groups[g]!.until !== until) {
        let ends = bySite.get(n);
        if (ends === undefined) {
          ends = new Map();
          bySite.set(n, ends);
        }
        g = ends.get(until) ?? -1;
        if (g < 0) {
          g = groups.length;
          groups.push({ site: n, until, from: 0, count: 0, runs: [] });
          ends.set(until, g);
        }
      }
      const its = groups[g]!;
      let r = its.runs[its.runs.length - 1];
      if (r === undefined || runs[r]!.call !== c) {
        r = runs.length;
        runs.push({ call: c, group: g, from: its.count, count: 0 });
        its.runs.push(r);
      }
      runs[r]!.count++;
      group.push(g);
      run.push(r);
      at.push(its.count++);
    }
  }
  let from = 0;
  for (let r = 0; r < groups.length; r++) {
    groups[r]!.from = from;
    from += 16 * groups[r]!.count;
  }
  // Each run's start in the blob, in bytes.
  for (let r = 0; r < runs.length; r++) runs[r]!.from = groups[runs[r]!.group]!.from + 16 * runs[r]!.from;
  const bytes = new Uint8Array(16 * count);
  let k = 0;
  for (let c = 0; c < calls.length; c++) {
    const items = calls[c]!.items;
    for (let j = 0; j < items.length; j++, k++) {
      at[k] = groups[group[k]!]!.from + 16 * at[k]!;
      writeCompactId(items[j]!.id, bytes, at[k]!);
    }
  }
  return { group, run, at, bytes, groups, runs };
}

/** Forgets the ids of `ids` whose window ended by `now` (remembered before and not yet expired): how many. */
export function forgetStale(db: SqlPort, ids: Ids, now: number): number {
  let forgotten = 0;
  for (let g = 0; g < ids.groups.length; g++) {
    const { site, from, count } = ids.groups[g]!;
    forgotten += db.run(SEEN_SQL.forgetStale, site, now, ids.bytes.subarray(from, from + 16 * count), startsOf(count));
  }
  return forgotten;
}

/**
 * Remembers the ids not remembered yet, a statement a group: whether each item's id is new, in
 * their order (the first copy of an id given twice; the second is a duplicate of it). A group
 * whose insert fails on the key (an id remembered before, or given twice) goes again a statement
 * an accept: only the runs that fail again are asked which of their ids are new, so a request sent
 * again does not cost its transaction's other requests a row each.
 */
export function rememberIds(db: SqlPort, ids: Ids): boolean[] {
  const { groups, runs, bytes } = ids;
  /** Whether each group's ids went in at once (all new: the usual case). */
  const inserted: boolean[] = [];
  /** By run, when its group did not: its new ids' hex, or none when every id of it is new. */
  const fresh: (Set<string> | undefined)[] = [];
  for (let g = 0; g < groups.length; g++) {
    const { site, until, from, count, runs: its } = groups[g]!;
    const all = insertNew(db, site, until, bytes.subarray(from, from + 16 * count), count, its.length === 1);
    inserted.push(all === undefined);
    if (all === undefined) continue;
    if (its.length === 1) {
      fresh[its[0]!] = all;
      continue;
    }
    for (let k = 0; k < its.length; k++) {
      const r = runs[its[k]!]!;
      fresh[its[k]!] = insertNew(db, site, until, bytes.subarray(r.from, r.from + 16 * r.count), r.count, true);
    }
  }
  const news: boolean[] = [];
  for (let i = 0; i < ids.at.length; i++) {
    const added = inserted[ids.group[i]!] ? undefined : fresh[ids.run[i]!];
    news.push(added === undefined || added.delete(toHex(bytes.subarray(ids.at[i]!, ids.at[i]! + 16)).toUpperCase()));
  }
  return news;
}

/**
 * Inserts `count` ids of one site and end (`blob`): none when every one was new, else (when
 * `ask`) the hex of those that were, inserted by a second statement; without `ask`, nothing was
 * inserted and an empty set says so.
 */
function insertNew(db: SqlPort, site: number, until: number, blob: Uint8Array, count: number, ask: boolean): Set<string> | undefined {
  try {
    db.run(SEEN_SQL.remember, site, until, blob, startsOf(count));
    return undefined;
  } catch (error) {
    if (!onKey(error)) throw error;
  }
  const added = new Set<string>();
  if (!ask) return added;
  const rows = db.query(SEEN_SQL.rememberNew, site, until, blob, startsOf(count));
  for (let r = 0; r < rows.length; r++) added.add(rows[r]![0] as string);
  return added;
}

/** Forgets item `i`'s id again (it was past the limits). */
export function forgetId(db: SqlPort, ids: Ids, i: number): void {
  db.run(SEEN_SQL.unremember, ids.groups[ids.group[i]!]!.site, ids.bytes.subarray(ids.at[i]!, ids.at[i]! + 16));
}
