/**
 * Who holds the leased entries of the SQL outbox (sql-outbox.ts), in rows of their own, so that an
 * entry's own row, with its item, is written once when accepted and deleted once when delivered or
 * dead, never again by a lease, a started send or a settle:
 * - `outbox_leases` (id; owner, until, lo, hi, entries): a lease's entries, a JSON list of
 *   [seq, attempts, lane, site] ({@link Entry}) whose seqs lie from `lo` to `hi`, {@link CHUNK}
 *   (a call's worth) to a row, cut in the order the deliverer's calls take them ({@link inCallOrder}).
 *   A lease writes a row per call's worth, a started send rewrites the rows its entries are in, a
 *   settle takes them out (each row deleted with its last). It is also where its entries wait (in place of `outbox_wait`,
 *   sql-ready.ts) until `until`;
 * - `outbox_lease` (seq; owner, until, attempts): one row per entry, for the rare ones: the
 *   entries of a lease that ran out (spread here when it comes due, then woken like a release, each
 *   row kept with `until` 0, so that its owner may still settle the entry while no other lease
 *   has taken it, and its started sends stay with it), those an erasure takes, and the leases of
 *   files written before (below). A row whose `until` is above 0 is where its entry waits.
 *
 * An entry with no lease keeps its attempts in its own row: 0, unless a release kept them
 * (`tried`), the only time that row is written again.
 *
 * Files written before this table kept the lease in the entry's row (`owner`, `available`,
 * `attempts`): opening one moves each lease here once (`outbox_count` 'leases' marks it done).
 * @module
 */
import { RUN } from './fair.js';
import { leasedOf, sharedStrings } from './item-text.js';
import type { Leased } from './outbox.js';
import type { LaneRead } from './sql-pick.js';
import type { Ready } from './sql-ready.js';
import type { Row, SqlPort } from './sql-port.js';

export const LEASE_SCHEMA = `
  CREATE TABLE IF NOT EXISTS outbox_lease (seq INTEGER PRIMARY KEY, owner TEXT NOT NULL, until INTEGER NOT NULL, attempts INTEGER NOT NULL);
  CREATE INDEX IF NOT EXISTS outbox_lease_until ON outbox_lease (until, seq) WHERE until > 0;
  CREATE TABLE IF NOT EXISTS outbox_leases (id INTEGER PRIMARY KEY, owner TEXT NOT NULL, until INTEGER NOT NULL, entries TEXT NOT NULL,
    lo INTEGER NOT NULL DEFAULT 0, hi INTEGER NOT NULL DEFAULT 9223372036854775807);
  CREATE INDEX IF NOT EXISTS outbox_leases_owner ON outbox_leases (owner);
  CREATE INDEX IF NOT EXISTS outbox_leases_until ON outbox_leases (until, id);
`;

/**
 * A leased entry as its lease's row keeps it: [seq, attempts, lane, site], the lane and its site's
 * number known at the lease, so that a settle counts its lanes and sites down with no row read back
 * (a row answered costs more than its delete: bench/README). Rows of single entries, and those
 * written before lanes were kept (or a lane the lease's pages did not read), give [seq, attempts]:
 * their settle looks the lane up.
 */
export type Entry = [seq: number, attempts: number, lane?: number, site?: number];
type Entries = Entry[];

/** Entries per row of a lease: a call's worth, so that a started call or its settle reads and rewrites about one row. */
export const CHUNK = 100;

/** The lowest and highest of `seqs` (not empty). */
const span = (seqs: Iterable<number>): [number, number] => {
  let lo = Number.POSITIVE_INFINITY;
  let hi = Number.NEGATIVE_INFINITY;
  for (const seq of seqs) {
    lo = Math.min(lo, seq);
    hi = Math.max(hi, seq);
  }
  return [lo, hi];
};

/** A lease's entries as rows, in the order given: [lo, hi, entries as JSON]. */
const chunks = (entries: Entries) =>
  Array.from({ length: Math.ceil(entries.length / CHUNK) }, (_, i) => {
    const part = entries.slice(i * CHUNK, (i + 1) * CHUNK);
    return [...span(part.map(([seq]) => seq)), JSON.stringify(part)] as const;
  });

/**
 * `leased` (in seq order; `lanes` theirs) as the deliverer's calls take them (deliver/batch.ts
 * `planCalls`): the activities a round of browsers at a time (every browser's first run of up to
 * `RUN`, then every one's second…), each round in seq order, merges first. A lease's rows cut in this order hold about
 * one call each, so a started call and its settle read and rewrite about one row; cut in seq order,
 * a call of a round held a few entries of every row (a lease of 1,000 from 100 browsers of ten: all
 * ten rows).
 * Only where the rows are cut depends on it: any order is correct. Each entry keeps its lane and
 * site where `sites` (the lanes the lease read) holds its lane ({@link Entry}).
 */
const inCallOrder = (leased: readonly Leased[], lanes: readonly number[], sites: ReadonlyMap<number, LaneRead>): Entries => {
  const rounds: Entries[] = [[]];
  /** Per site, per browser: its activities seen so far (no key string made per entry). */
  const seen = new Map<string, Map<string, number>>();
  for (let i = 0; i < leased.length; i++) {
    const { kind, site, browser, seq, attempts } = leased[i]!;
    const lane = lanes[i]!;
    const siteN = sites.get(lane)?.[0];
    let round = 0;
    if (kind === 'activity') {
      let browsers = seen.get(site);
      if (browsers === undefined) {
        browsers = new Map();
        seen.set(site, browsers);
      }
      const before = browsers.get(browser) ?? 0;
      browsers.set(browser, before + 1);
      round = Math.floor(before / RUN) + 1;
    }
    if (round === rounds.length) rounds.push([]);
    rounds[round]!.push(siteN === undefined ? [seq, attempts] : [seq, attempts, lane, siteN]);
  }
  return rounds.flat();
};

const IN = 'SELECT value FROM json_each(?1)';

export const LEASE_SQL = {
  // Each entry with its attempts: those of the row of a lease of it that ran out (its owner's no more once leased again), else its own.
  items: `SELECT o.seq, o.item, coalesce(l.attempts, o.attempts), l.seq, o.lane FROM outbox o LEFT JOIN outbox_lease l ON l.seq = o.seq WHERE o.seq IN (${IN})`,
  takeOver: `DELETE FROM outbox_lease WHERE seq IN (${IN})`,
  add: 'INSERT INTO outbox_leases (owner, until, lo, hi, entries) SELECT ?1, ?2, value ->> 0, value ->> 1, value ->> 2 FROM json_each(?3)',
  // Files written before rows of a lease had their seqs' range: such a row reads as spanning them all.
  hasRange: 'SELECT lo FROM outbox_leases LIMIT 0',
  addRange: [
    'ALTER TABLE outbox_leases ADD COLUMN lo INTEGER NOT NULL DEFAULT 0',
    'ALTER TABLE outbox_leases ADD COLUMN hi INTEGER NOT NULL DEFAULT 9223372036854775807',
  ],
  // A started call's rows: the owner's live leases (one that ran out may be another deliverer's by now), first the rows
  // wholly within its seqs' span ?3 to ?4 (its own, the lease cut as its calls are), then, for seqs not found there, those reaching past it.
  liveWithin: 'SELECT id, entries FROM outbox_leases WHERE owner = ?1 AND until > ?2 AND lo >= ?3 AND hi <= ?4',
  livePast: 'SELECT id, entries FROM outbox_leases WHERE owner = ?1 AND until > ?2 AND lo <= ?4 AND hi >= ?3 AND (lo < ?3 OR hi > ?4)',
  setEntries: 'UPDATE outbox_leases SET entries = ?2 WHERE id = ?1',
  // A settle takes the owner's rows (live or not) in the same two steps (seqs from ?2 to ?3), and puts back what it does
  // not settle ([id, until, lo, hi, entries] as JSON).
  endWithin: 'DELETE FROM outbox_leases WHERE owner = ?1 AND lo >= ?2 AND hi <= ?3 RETURNING id, until, entries',
  endPast: 'DELETE FROM outbox_leases WHERE owner = ?1 AND lo <= ?3 AND hi >= ?2 RETURNING id, until, entries',
  putBack:
    'INSERT INTO outbox_leases (id, owner, until, lo, hi, entries) SELECT value ->> 0, ?1, value ->> 1, value ->> 2, value ->> 3, value ->> 4 FROM json_each(?2)',
  // The rows of single entries (above).
  sending: `UPDATE outbox_lease SET attempts = attempts + 1 WHERE seq IN (${IN}) AND owner = ?2 AND until > ?3 RETURNING seq`,
  end: `DELETE FROM outbox_lease WHERE seq IN (${IN}) AND owner = ?2 RETURNING seq, until, attempts`,
  inFlight: 'SELECT entries FROM outbox_leases WHERE until > ?1',
  // Released entries whose attempts change ([seq, attempts] pairs): the only rewrite of an entry's row.
  keep: 'UPDATE outbox SET attempts = json_each.value ->> 1 FROM json_each(?1) WHERE outbox.seq = json_each.value ->> 0 AND outbox.attempts <> json_each.value ->> 1',
  // Entries not under a live lease at ?2 taken by ?3 (erase.ts's one step), wherever they wait.
  claim: `INSERT INTO outbox_lease (seq, owner, until, attempts) SELECT value, ?3, 0, 0 FROM json_each(?1) WHERE true
    ON CONFLICT (seq) DO UPDATE SET owner = excluded.owner WHERE outbox_lease.until <= ?2 RETURNING seq`,
  marker: "SELECT value FROM outbox_count WHERE name = 'leases'",
  setMarker: "INSERT INTO outbox_count (name, value) VALUES ('leases', 1) ON CONFLICT (name) DO NOTHING",
  // Files written before this table, once: each lease moves here, waiting here when it waited in outbox_wait (else it ran out and went back: until 0).
  moveAll: [
    `INSERT OR IGNORE INTO outbox_lease (seq, owner, until, attempts)
      SELECT o.seq, o.owner, CASE WHEN EXISTS (SELECT 1 FROM outbox_wait w WHERE w.until = o.available AND w.seq = o.seq) THEN o.available ELSE 0 END, o.attempts
      FROM outbox o WHERE o.owner IS NOT NULL`,
    'DELETE FROM outbox_wait WHERE (until, seq) IN (SELECT until, seq FROM outbox_lease WHERE until > 0)',
    'UPDATE outbox SET owner = NULL WHERE owner IS NOT NULL',
  ],
} as const;

export interface Leases {
  /**
   * Leases `seqs` (taken from the ready) to `owner` until `until`: their items, in seq order, with their attempts.
   * `sites`: each lane the lease read, with its site, kept with its entries for their settle.
   */
  take(owner: string, seqs: readonly number[], until: number, sites: ReadonlyMap<number, LaneRead>): Leased[];
  /** Counts a started send on each of `seqs` under `owner`'s live lease at `now`; resolves to those, in the order given. */
  sending(owner: string, seqs: readonly number[], now: number): number[];
  /**
   * Ends `owner`'s leases of `seqs`: each entry that was owner's as its lease kept it, by seq (a seq
   * named twice, once). Those whose lease had run out are taken from where they went back (ready or held).
   */
  end(owner: string, seqs: readonly number[]): Map<number, Entry>;
  /** Released entries whose attempts are not 0 any more, or are kept: [seq, attempts] (their rows are written). */
  keep(attempts: readonly (readonly [seq: number, attempts: number])[]): void;
  /** `owner` takes those of `seqs` not under a live lease at `now` (wherever they wait); resolves to them. */
  claim(owner: string, seqs: readonly number[], now: number): number[];
}

/** The leases over `db` (the places of sql-ready.ts made already): adds their table, and moves the leases of a file written before it, once. */
export async function createLeases(db: SqlPort, ready: Ready): Promise<Leases> {
  db.exec(LEASE_SCHEMA);
  try {
    db.query(LEASE_SQL.hasRange);
  } catch {
    for (const statement of LEASE_SQL.addRange) db.exec(statement);
  }
  if (db.query(LEASE_SQL.marker).length === 0)
    await db.transaction(() => {
      if (db.query(LEASE_SQL.marker).length > 0) return;
      for (const statement of LEASE_SQL.moveAll) db.run(statement);
      db.run(LEASE_SQL.setMarker);
    });

  return {
    take(owner, seqs, until, sites) {
      if (seqs.length === 0) return [];
      const rows: Row[] = db.query(LEASE_SQL.items, JSON.stringify(seqs)).sort((a, b) => Number(a[0]) - Number(b[0]));
      const again = rows.filter((row) => row[3] !== null).map(([seq]) => Number(seq));
      if (again.length > 0) db.run(LEASE_SQL.takeOver, JSON.stringify(again));
      const share = sharedStrings();
      const leased = rows.map(([seq, item, attempts]) => leasedOf(item as string, Number(seq), Number(attempts), share));
      const lanes = rows.map((row) => Number(row[4]));
      db.run(LEASE_SQL.add, owner, until, JSON.stringify(chunks(inCallOrder(leased, lanes, sites))));
      return leased;
    },
    sending(owner, seqs, now) {
      const wanted = new Set(seqs);
      const marked = new Set<number>();
      if (wanted.size === 0) return [];
      const mark = (rows: Row[]) => {
        for (const [id, text] of rows) {
          const entries = JSON.parse(text as string) as Entries;
          const mine = entries.filter((entry) => wanted.has(entry[0]) && !marked.has(entry[0]));
          for (const entry of mine) {
            entry[1]++;
            marked.add(entry[0]);
          }
          if (mine.length > 0) db.run(LEASE_SQL.setEntries, Number(id), JSON.stringify(entries));
        }
      };
      const [lo, hi] = span(wanted);
      mark(db.query(LEASE_SQL.liveWithin, owner, now, lo, hi));
      if (marked.size < wanted.size) mark(db.query(LEASE_SQL.livePast, owner, now, lo, hi));
      const rest = [...wanted].filter((seq) => !marked.has(seq));
      if (rest.length > 0) for (const [seq] of db.query(LEASE_SQL.sending, JSON.stringify(rest), owner, now)) marked.add(Number(seq));
      return seqs.filter((seq) => marked.delete(seq));
    },
    end(owner, seqs) {
      const owned = new Map<number, Entry>();
      if (seqs.length === 0) return owned;
      const wanted = new Set(seqs);
      const kept: [number, number, number, number, string][] = [];
      const take = (rows: Row[]) => {
        for (const [id, until, text] of rows) {
          const rest: Entries = [];
          for (const entry of JSON.parse(text as string) as Entries) {
            if (wanted.has(entry[0]) && !owned.has(entry[0])) owned.set(entry[0], entry);
            else rest.push(entry);
          }
          if (rest.length > 0) kept.push([Number(id), Number(until), ...span(rest.map(([seq]) => seq)), JSON.stringify(rest)]);
        }
      };
      // Waiting under their lease (the usual settle): nowhere else to look.
      const [lo, hi] = span(wanted);
      take(db.query(LEASE_SQL.endWithin, owner, lo, hi));
      if (owned.size < wanted.size) take(db.query(LEASE_SQL.endPast, owner, lo, hi));
      if (kept.length > 0) db.run(LEASE_SQL.putBack, owner, JSON.stringify(kept));
      const rest = [...wanted].filter((seq) => !owned.has(seq));
      if (rest.length === 0) return owned;
      const rows = db.query(LEASE_SQL.end, JSON.stringify(rest), owner);
      const back = rows.filter(([, until]) => Number(until) <= 0).map(([seq]) => Number(seq));
      if (back.length > 0) ready.unplace(back);
      for (const [seq, , attempts] of rows) owned.set(Number(seq), [Number(seq), Number(attempts)]);
      return owned;
    },
    keep(attempts) {
      if (attempts.length > 0) db.run(LEASE_SQL.keep, JSON.stringify(attempts));
    },
    claim(owner, seqs, now) {
      if (seqs.length === 0) return [];
      // Leases that ran out are spread into rows of their entries (which it may take); those of live ones are in flight.
      ready.spread(now);
      const inFlight = new Set(db.query(LEASE_SQL.inFlight, now).flatMap(([text]) => (JSON.parse(text as string) as Entries).map(([seq]) => seq)));
      const free = seqs.filter((seq) => !inFlight.has(seq));
      return free.length === 0 ? [] : db.query(LEASE_SQL.claim, JSON.stringify(free), now, owner).map(([seq]) => Number(seq));
    },
  };
}
