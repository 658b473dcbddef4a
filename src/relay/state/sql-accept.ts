/**
 * The SQL outbox's `accept` (sql-outbox.ts): the accepts that arrive while a transaction is
 * asked for share it, and share its statements too. One statement each for the expiry slices, the
 * dedupe of every id and the insert of every entry of all of them, the limits counted across them
 * as if each ran in turn (sql-lanes.ts `admit`). On Node the port's group commit runs the
 * transaction after the current turn of the event loop (sqlite-file.ts), so a busy relay pays for
 * a handful of statements per transaction, not per request.
 *
 * Remembered ids expire inside the database: every transaction deletes a slice of expired ones,
 * more than its accepts add, so the storage follows the window (SQLite reuses the freed pages).
 * @module
 */
import type { OutboxLimits } from '../core/outbox-limits.js';
import { itemText } from './item-text.js';
import { type Accepted, DEAD_SLICE, type OutboxItem } from './outbox.js';
import type { Lanes } from './sql-lanes.js';
import type { Ready } from './sql-ready.js';
import { CommitSyncError, digits, type SqlPort } from './sql-port.js';
import { forgetId, forgetStale, gatherIds, rememberIds, SEEN_SQL } from './sql-seen.js';

/** Expired ids deleted per transaction at least: more than its accepts add (twice as many when they add more), so the table shrinks back after a peak. */
const EXPIRY_SLICE = 1000;

export const ACCEPT_SQL = {
  // The oldest ?2 ids past their window (and any that end in the same ms as the last of them), or
  // all of them when fewer: two walks of the `until` index, as far as the slice. `(site, id) IN
  // (SELECT … LIMIT ?2)` searched the key by its first column only: each slice read every id of
  // the site (the whole window's, e.g. 50 ms for 200,000 ids) once ids began to expire.
  expire: 'DELETE FROM outbox_seen WHERE until <= coalesce((SELECT until FROM outbox_seen WHERE until <= ?1 ORDER BY until LIMIT 1 OFFSET ?2 - 1), ?1)',
  ...SEEN_SQL,
  // Each id its own site and end, [site number, id as hex, end of its window] as JSON (the import of a release before's ids: sql-upgrade.ts).
  rememberEach:
    'INSERT INTO outbox_seen (site, id, until) SELECT value ->> 0, unhex(value ->> 1), value ->> 2 FROM json_each(?1) WHERE true ON CONFLICT (site, id) DO NOTHING RETURNING site, hex(id)',
  addCount: "INSERT INTO outbox_count (name, value) VALUES ('remembered', ?1) ON CONFLICT (name) DO UPDATE SET value = value + excluded.value",
  // The ids remembered (?1) and the entries waiting (?2) move together, one statement, when entries were added.
  addCounts:
    "INSERT INTO outbox_count (name, value) VALUES ('remembered', ?1), ('pending', ?2) ON CONFLICT (name) DO UPDATE SET value = value + excluded.value",
  // What the accepts read before they write, in one statement: the counts of entries waiting and of dead letters
  // (sql-lanes.ts keeps them), and the highest seq, which the entries they add will be above (nothing else adds one
  // during the accepts: their transaction holds the file's write lock, and its other calls run before or after them).
  waiting:
    "SELECT (SELECT value FROM outbox_count WHERE name = 'pending'), (SELECT value FROM outbox_count WHERE name = 'dead'), (SELECT max(seq) FROM outbox)",
  // The entries' texts in one UTF-8 blob (?2), each cut out at its start and length with its lane: as they are, not
  // escaped again as strings inside the JSON (a string's every quote escaped, then unescaped by SQLite). Each entry's
  // place is one string of ?1 (a JSON list), its start and length 10 digits each, then its lane: cut by substr, 9.2k →
  // 6.1k libsql instructions an entry against a [start, length, lane] triple, which json_each writes back as text and
  // ->> parses again for each field.
  add: 'INSERT INTO outbox (item, lane) SELECT CAST(substr(?2, substr(value, 1, 10), substr(value, 11, 10)) AS TEXT), CAST(substr(value, 21) AS INTEGER) FROM json_each(?1)',
  expireDead: 'DELETE FROM outbox_dead WHERE seq IN (SELECT seq FROM outbox_dead WHERE failed <= ?1 LIMIT ?2)',
  cutDead: 'DELETE FROM outbox_dead WHERE seq IN (SELECT seq FROM outbox_dead ORDER BY seq LIMIT ?1)',
} as const;

const utf8 = new TextEncoder();

/**
 * Bytes of entry text one {@link ACCEPT_SQL}.add binds at most (unless one text is longer):
 * below glibc's first mmap threshold (128 KiB), and so are libsql's copies of the blob. A larger
 * buffer is a mapping of its own, and freeing it raises the process's mmap and trim thresholds
 * for good: every malloc arena then keeps that much more free memory resident (node/malloc.ts).
 */
export const ADD_BYTES = 96 * 1024;

/**
 * Texts packed for {@link ACCEPT_SQL}.add, in runs of at most {@link ADD_BYTES}: their UTF-8
 * bytes one after another, and where each begins (from 1, as substr counts) and how long it is,
 * with its lane. The texts are JSON made by JSON.stringify, which writes no lone surrogate, so
 * each encodes as it is.
 */
function* packed(added: readonly (readonly [text: string, lane: number])[]): Generator<[places: string, bytes: Uint8Array]> {
  let chars = 0;
  for (let k = 0; k < added.length; k++) chars += added[k]![0].length;
  for (let k = 0; k < added.length; ) {
    // A UTF-16 unit is at most 3 bytes of UTF-8 (a pair of them 4): what is left fits when 3× its units do.
    let bytes = new Uint8Array(Math.min(ADD_BYTES, 3 * chars));
    const places: string[] = [];
    let at = 0;
    for (; k < added.length; k++) {
      const text = added[k]![0];
      const lane = added[k]![1];
      let { read, written } = utf8.encodeInto(text, bytes.subarray(at));
      if (read < text.length) {
        // The next run begins with it; a text longer than a run begins one of 3× its units (the texts after it fill the rest).
        if (at > 0) break;
        bytes = new Uint8Array(3 * text.length);
        ({ read, written } = utf8.encodeInto(text, bytes));
      }
      places.push(`${digits(at + 1)}${digits(written)}${lane}`);
      at += written;
      chars -= read;
    }
    yield [JSON.stringify(places), bytes.subarray(0, at)];
  }
}

/** One call of `accept`, waiting for its transaction. */
export interface AcceptCall {
  items: readonly OutboxItem[];
  now: number;
  windowMs: number;
  limits: OutboxLimits;
  resolve(accepted: Accepted): void;
  reject(error: unknown): void;
}

/** `accept` over `db`, its lanes and where entries wait (sql-ready.ts): each call is answered once the transaction that took it commits. */
export function createAccept(db: SqlPort, lanes: Lanes, ready: Ready): (call: AcceptCall) => void {
  /** Dead letters whose window ended, then the oldest over the limit: a slice of each, counted (in `counts` too). */
  const trimDead = (now: number, windowMs: number, limit: number, counts: { dead: number }) => {
    // No dead letters (the usual case): nothing to expire or cut, no statement.
    if (counts.dead <= 0) return;
    const expired = db.run(ACCEPT_SQL.expireDead, now - windowMs, DEAD_SLICE);
    const cut = db.run(ACCEPT_SQL.cutDead, Math.min(DEAD_SLICE, Math.max(0, counts.dead - expired - limit)));
    lanes.addCount('expired', expired);
    lanes.addCount('cut', cut);
    lanes.addCount('dead', -expired - cut);
    counts.dead -= expired + cut;
  };

  /**
   * Site numbers read in a transaction that committed: a site's row in `outbox_sites` is never
   * deleted nor numbered again, so each is read once, not in every transaction (a statement of a
   * lone accept's 15). One read or added in a transaction joins only once that commits: a rollback
   * forgets a site added, and its number may be given to another.
   */
  const known = new Map<string, number>();

  /**
   * The accepts that asked for one transaction, as if each ran in turn: one statement each for
   * the expiry slices, the dedupe and the insert of all their items, the limits counted across
   * them (sql-lanes.ts admit).
   */
  const acceptAll = (calls: readonly AcceptCall[], sites = new Map<string, number>()): Accepted[] => {
    // Indexed loops and no arrays made to be destructured: at a real site's rate (a transaction a request) this runs in
    // V8's baseline tiers for the first thousands of requests, where each `for…of`, `.entries()` and `[a, b] = [x, y]`
    // goes through the iterator protocol (bench/README.md, "What an item costs below saturation").
    let now = calls[0]!.now;
    let count = 0;
    const trims = new Map<string, { windowMs: number; dead: number }>();
    for (let c = 0; c < calls.length; c++) {
      const { windowMs, limits } = calls[c]!;
      now = Math.max(now, calls[c]!.now);
      count += calls[c]!.items.length;
      trims.set(`${windowMs}:${limits.dead}`, { windowMs, dead: limits.dead });
    }
    const [pending, dead, last] = db.query(ACCEPT_SQL.waiting)[0]!;
    const counts = { pending: Number(pending ?? 0), dead: Number(dead ?? 0) };
    for (const { windowMs, dead } of trims.values()) trimDead(now, windowMs, dead, counts);
    // More than the accepts add: the table shrinks back after a peak.
    const slice = Math.max(EXPIRY_SLICE, 2 * count);
    const expired = db.run(ACCEPT_SQL.expire, now, slice);
    let change = -expired;
    const results: Accepted[] = [];
    for (let c = 0; c < calls.length; c++) results.push({ accepted: [], duplicate: [], full: [] });
    if (count === 0) {
      if (change !== 0) db.run(ACCEPT_SQL.addCount, change);
      return results;
    }
    // The sites this run read or added (a group's failed run does not count: the caller's map starts again).
    sites.clear();
    const ids = gatherIds(calls, count, (site) => {
      let n = known.get(site);
      if (n === undefined) {
        n = lanes.site(site);
        sites.set(site, n);
      }
      return n;
    });
    // A slice short of its size forgot every id past its window: none of the batch's is left to forget.
    if (expired >= slice) change -= forgetStale(db, ids, now);
    const news = rememberIds(db, ids);
    // In the order given; an id given twice is new once, its second copy a duplicate; one past the limits is forgotten again: full.
    // The lanes of the new ids' visitors, looked up together: a visitor once for each run of its items (a request's
    // items are mostly one visitor's), not once an item.
    const visitors: [number, string][] = [];
    let k = 0;
    for (let c = 0; c < calls.length; c++) {
      const items = calls[c]!.items;
      for (let j = 0; j < items.length; j++, k++) {
        const n = ids.groups[ids.group[k]!]!.site;
        const last = visitors[visitors.length - 1];
        if (news[k]! && (last === undefined || last[0] !== n || last[1] !== items[j]!.visitor)) visitors.push([n, items[j]!.visitor]);
      }
    }
    const room = lanes.admit(now, counts.pending, visitors);
    // Each entry's text and its lane's key (its number once the lanes are written).
    const added: [string, string | number][] = [];
    let i = 0;
    let merges = false;
    // The browsers of the entries added: where one has a merge in the outbox, an entry may be held behind it.
    const browsers = new Map<string, [number, string]>();
    let lastSite = -1;
    let lastBrowser = '';
    // The lane's key of the item before, made again only when its site or visitor changes.
    let keySite = -1;
    let keyVisitor = '';
    let key = '';
    for (let c = 0; c < calls.length; c++) {
      const { items, limits } = calls[c]!;
      const result = results[c]!;
      for (let j = 0; j < items.length; j++, i++) {
        const item = items[j]!;
        const n = ids.groups[ids.group[i]!]!.site;
        if (n !== keySite || item.visitor !== keyVisitor) {
          keySite = n;
          keyVisitor = item.visitor;
          key = lanes.key(n, item.visitor);
        }
        const lane = news[i]! ? (room.take(n, item.visitor, limits, key) ? key : undefined) : null;
        if (lane === null) result.duplicate.push(item.id);
        else if (lane === undefined) {
          forgetId(db, ids, i);
          result.full.push(item.id);
        } else {
          result.accepted.push(item.id);
          added.push([itemText(item), lane]);
          merges ||= item.kind !== 'activity';
          // A request's items are mostly one browser's: its key made once.
          if (item.browser !== lastBrowser || n !== lastSite) browsers.set(`${n}\u0000${item.browser}`, [n, item.browser]);
          lastSite = n;
          lastBrowser = item.browser;
        }
      }
    }
    change += added.length;
    if (added.length === 0) {
      if (change !== 0) db.run(ACCEPT_SQL.addCount, change);
      return results;
    }
    db.run(ACCEPT_SQL.addCounts, change, added.length);
    // Where a browser of theirs has a merge in the outbox, or among these entries, an entry may be held: its lane counts it ready only once placed.
    const maybeHeld = merges || ready.hasMerge([...browsers.values()]);
    const numbers = room.write(!maybeHeld);
    for (let e = 0; e < added.length; e++) added[e]![1] = numbers.get(added[e]![1] as string)!;
    const after = Number(last ?? 0);
    for (const params of packed(added as [string, number][])) db.run(ACCEPT_SQL.add, ...params);
    if (merges) lanes.addMerges(after);
    ready.added(after, maybeHeld);
    return results;
  };

  /** Accepts waiting for the transaction that takes them all (asked for by the first of them). */
  let accepts: AcceptCall[] = [];
  return (call: AcceptCall) => {
    accepts.push(call);
    if (accepts.length > 1) return;
    let calls: AcceptCall[] | undefined;
    // Taken once: when the port runs the transaction again (its group failed), or it never began, the same calls.
    const take = () => {
      // Only the first take empties the list: later accepts may have joined the next transaction's by then.
      if (calls === undefined) {
        calls = accepts;
        accepts = [];
      }
      return calls;
    };
    const sites = new Map<string, number>();
    db.transaction(() => acceptAll(take(), sites)).then(
      (results) => {
        for (const [site, n] of sites) known.set(site, n);
        const taken = take();
        for (let index = 0; index < taken.length; index++) taken[index]!.resolve(results[index]!);
      },
      (error: unknown) => {
        // One accept that cannot be written fails alone: the others go again, each in its own
        // transaction. Not after a commit whose sync failed: it was written, a second run would answer duplicate.
        const failed = take();
        if (failed.length === 1 || error instanceof CommitSyncError) for (const each of failed) each.reject(error);
        else for (const each of failed) db.transaction(() => acceptAll([each])[0]!).then(each.resolve, each.reject);
      },
    );
  };
}
