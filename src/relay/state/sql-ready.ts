/**
 * Where each entry of the SQL outbox waits (sql-outbox.ts), so that a lease reads what it takes and
 * little else, whatever the backlog holds. Each entry waiting is in exactly one place:
 * - `outbox_ready` (lane, seq): ready now and free to go, by lane then seq;
 * - `outbox_wait` (until, seq): released for later until `until`; or leased until then
 *   (`outbox_leases`, one row per lease, or `outbox_lease`, one per entry: sql-lease.ts). A lease
 *   first moves what has come due (a slice of {@link WAKE_PER_LEASE} times its size, by time): a
 *   lease that ran out is spread into rows of its entries, each kept with `until` 0 once woken;
 * - `outbox_held` (seq; site, browser): behind an earlier merge of its browser still in the outbox
 *   (identify before track; a browser's merges in order). When such a merge leaves the outbox
 *   (delivered or dead), its browser's entries up to its next merge become ready.
 *
 * Lanes (sql-lanes.ts) and sites count their ready entries and lanes (`ready`), and those with
 * some are indexed by `since`: a lease takes the longest-waiting sites and lanes that have
 * something ready now, so nobody waits behind lanes with nothing ready (released for an hour, or
 * held behind an identify), and a visitor whose tracks its delivered identify frees keeps its place.
 * @module
 */
import { type LaneRead, PICK_SQL, pickReady } from './sql-pick.js';
import { digits, type Row, type SqlPort, signed } from './sql-port.js';

/** Entries a lease moves from `outbox_wait` to ready at most, per entry it may take. */
export const WAKE_PER_LEASE = 2;

export const READY_SCHEMA = `
  CREATE TABLE IF NOT EXISTS outbox_ready (lane INTEGER NOT NULL, seq INTEGER NOT NULL, PRIMARY KEY (lane, seq)) WITHOUT ROWID;
  CREATE TABLE IF NOT EXISTS outbox_wait (until INTEGER NOT NULL, seq INTEGER NOT NULL, PRIMARY KEY (until, seq)) WITHOUT ROWID;
  CREATE TABLE IF NOT EXISTS outbox_held (seq INTEGER PRIMARY KEY, site INTEGER NOT NULL, browser TEXT NOT NULL);
  CREATE INDEX IF NOT EXISTS outbox_held_browser ON outbox_held (site, browser, seq);
  CREATE INDEX IF NOT EXISTS outbox_lanes_ready ON outbox_lanes (site, since, n) WHERE ready > 0;
  CREATE INDEX IF NOT EXISTS outbox_load_ready ON outbox_load (since, site) WHERE ready > 0;
  DROP INDEX IF EXISTS outbox_lanes_since;
  DROP INDEX IF EXISTS outbox_load_since;
`;

const IN = 'SELECT value FROM json_each(?1)';

/** The entries of `table` (the wait, or the leases) whose time has come by `where`: until, seq, `leased`, lane, site, browser, and whether an earlier merge holds it. */
const dueFrom = (table: string, leased: number, where: string) => `SELECT w.until, w.seq, ${leased}, o.lane, l.site, o.item ->> 'browser',
    EXISTS (SELECT 1 FROM outbox_merges m WHERE m.site = l.site AND m.browser = o.item ->> 'browser' AND m.seq < o.seq)
    FROM ${table} w JOIN outbox o ON o.seq = w.seq JOIN outbox_lanes l ON l.n = o.lane WHERE ${where}`;

const SQL = {
  hasReady: 'SELECT ready FROM outbox_lanes LIMIT 0',
  addLaneColumn: 'ALTER TABLE outbox_lanes ADD COLUMN ready INTEGER NOT NULL DEFAULT 0',
  addLoadColumn: 'ALTER TABLE outbox_load ADD COLUMN ready INTEGER NOT NULL DEFAULT 0',
  marker: "SELECT value FROM outbox_count WHERE name = 'places'",
  setMarker: "INSERT INTO outbox_count (name, value) VALUES ('places', 1) ON CONFLICT (name) DO NOTHING",
  // Storage written before the places, once: each waiting entry where it belongs at ?1, and the counts taken.
  placeAll: [
    'INSERT OR IGNORE INTO outbox_wait (until, seq) SELECT available, seq FROM outbox WHERE available > ?1',
    `INSERT OR IGNORE INTO outbox_held (seq, site, browser) SELECT o.seq, l.site, o.item ->> 'browser' FROM outbox o JOIN outbox_lanes l ON l.n = o.lane
      WHERE o.available <= ?1 AND json_valid(o.item) AND EXISTS (SELECT 1 FROM outbox_merges m WHERE m.site = l.site AND m.browser = o.item ->> 'browser' AND m.seq < o.seq)`,
    'INSERT OR IGNORE INTO outbox_ready (lane, seq) SELECT lane, seq FROM outbox o WHERE available <= ?1 AND NOT EXISTS (SELECT 1 FROM outbox_held h WHERE h.seq = o.seq)',
    'UPDATE outbox_lanes SET ready = (SELECT count(*) FROM outbox_ready r WHERE r.lane = outbox_lanes.n)',
    'UPDATE outbox_load SET ready = (SELECT count(*) FROM outbox_lanes l WHERE l.site = outbox_load.site AND l.ready > 0)',
  ],
  // Entries an accept added after seq ?1: behind a merge of their browser (checked only when one may be), else ready.
  holdAdded: `INSERT INTO outbox_held (seq, site, browser) SELECT o.seq, l.site, o.item ->> 'browser' FROM outbox o JOIN outbox_lanes l ON l.n = o.lane
    WHERE o.seq > ?1 AND EXISTS (SELECT 1 FROM outbox_merges m WHERE m.site = l.site AND m.browser = o.item ->> 'browser' AND m.seq < o.seq)`,
  readyAdded:
    'INSERT INTO outbox_ready (lane, seq) SELECT lane, seq FROM outbox o WHERE seq > ?1 AND NOT EXISTS (SELECT 1 FROM outbox_held h WHERE h.seq = o.seq) RETURNING lane',
  allReady: 'INSERT INTO outbox_ready (lane, seq) SELECT lane, seq FROM outbox WHERE seq > ?1',
  // ?1: browsers as a JSON list of strings (the site number in 10 digits, then the browser), each looked up by both columns of
  // the index (`(site, browser) IN (SELECT … FROM json_each)` searched it by site alone: every merge of the site, on each
  // accept whose browsers had none).
  hasMerge: `SELECT 1 FROM json_each(?1) JOIN outbox_merges m
    ON m.site = CAST(substr(json_each.value, 1, 10) AS INTEGER) AND m.browser = substr(json_each.value, 11) LIMIT 1`,
  // ?1 seqs: out of the ready or the held, whichever they are in.
  unready: `DELETE FROM outbox_ready WHERE (lane, seq) IN (SELECT lane, seq FROM outbox WHERE seq IN (${IN})) RETURNING lane`,
  unhold: `DELETE FROM outbox_held WHERE seq IN (${IN})`,
  // Out of the wait by seq alone: reads the whole wait (an erasure's step, which reads the whole outbox too).
  unwait: `DELETE FROM outbox_wait WHERE seq IN (${IN})`,
  wait: 'INSERT OR IGNORE INTO outbox_wait (until, seq) SELECT value ->> 0, value ->> 1 FROM json_each(?1)',
  // What has come due, released or leased, by time (the two indexes merged, each walked only as far as the slice):
  // where it goes (held when its browser has a merge before it in the outbox).
  // (2: a lease that ran out, by its id; its entries are spread first.)
  due: `${dueFrom('outbox_wait', 0, 'w.until <= ?1')} UNION ALL ${dueFrom('outbox_lease', 1, 'w.until > 0 AND w.until <= ?1')}
    UNION ALL SELECT w.until, w.id, 2, NULL, NULL, NULL, NULL FROM outbox_leases w WHERE w.until <= ?1 ORDER BY 1, 2 LIMIT ?2`,
  spreadOf: `DELETE FROM outbox_leases WHERE id IN (${IN}) RETURNING owner, until, entries`,
  spreadDue: 'DELETE FROM outbox_leases WHERE until <= ?1 RETURNING owner, until, entries',
  spreadInto: 'INSERT INTO outbox_lease (seq, owner, until, attempts) SELECT value ->> 0, value ->> 1, value ->> 2, value ->> 3 FROM json_each(?1)',
  unwaitDue: 'DELETE FROM outbox_wait WHERE (until, seq) IN (SELECT value ->> 0, value ->> 1 FROM json_each(?1))',
  // Leases that ran out: their rows stay (the owner may still settle; attempts), no longer where the entry waits.
  ranOut: `UPDATE outbox_lease SET until = 0 WHERE seq IN (${IN})`,
  hold: PICK_SQL.hold,
  ready: 'INSERT OR IGNORE INTO outbox_ready (lane, seq) SELECT value ->> 0, value ->> 1 FROM json_each(?1)',
  // Lanes' ready counts move, in one statement (?1: a JSON list of strings, each the change signed in 11 characters then the lane,
  // sql-port.ts signed): each one's site, and how many it has now. A site counts its lanes with some.
  laneReady: `UPDATE outbox_lanes SET ready = ready + CAST(substr(json_each.value, 1, 11) AS INTEGER) FROM json_each(?1)
    WHERE outbox_lanes.n = CAST(substr(json_each.value, 12) AS INTEGER) RETURNING n, site, ready`,
  // A lease's: a lane marked `b` after its number (one it took an activity from) goes behind those waiting since before ?2.
  addReady: `UPDATE outbox_lanes SET ready = ready + CAST(substr(json_each.value, 1, 11) AS INTEGER),
    since = CASE WHEN json_each.value LIKE '%b' THEN ?2 ELSE since END FROM json_each(?1)
    WHERE outbox_lanes.n = CAST(rtrim(substr(json_each.value, 12), 'b') AS INTEGER)`,
  siteReady: 'UPDATE outbox_load SET ready = ready + ?2 WHERE site = ?1',
  // The entries of browsers (?1: strings as hasMerge's) that no merge before them holds any more (up to and with each one's first merge still in the outbox).
  free: `DELETE FROM outbox_held WHERE seq IN (SELECT h.seq FROM (SELECT CAST(substr(value, 1, 10) AS INTEGER) AS site, substr(value, 11) AS browser FROM json_each(?1)) b
    JOIN outbox_held h ON h.site = b.site AND h.browser = b.browser
    AND h.seq <= coalesce((SELECT min(m.seq) FROM outbox_merges m WHERE m.site = b.site AND m.browser = b.browser), 9e18)) RETURNING seq`,
  readyFreed: `INSERT INTO outbox_ready (lane, seq) SELECT lane, seq FROM outbox WHERE seq IN (${IN}) RETURNING lane`,
} as const;

export interface Ready {
  /** Places the entries an accept added after seq `after` (merges counted). `maybeHeld`: a browser of theirs has
   * a merge in the outbox, so their lanes were counted with none ready (Lanes.admit): those placed ready are counted here. */
  added(after: number, maybeHeld: boolean): void;
  /** Whether one of these browsers has a merge in the outbox. */
  hasMerge(browsers: readonly (readonly [site: number, browser: string])[]): boolean;
  /** Takes entries out of the ready or the held, whichever they are in (before they are settled). */
  unplace(seqs: readonly number[]): void;
  /** Takes entries out of the wait (released for later) by seq: reads the whole wait (for an erasure). */
  unwait(seqs: readonly number[]): void;
  /** These entries wait until the time given (released, or retried from the dead letters; a leased one waits in its lease). */
  wait(entries: readonly (readonly [until: number, seq: number])[]): void;
  /** Merges of these browsers left the outbox: the entries they held up to the next merge become ready. */
  free(browsers: readonly (readonly [site: number, browser: string])[]): void;
  /**
   * Up to `max` seqs ready at `now`, in turns by site, then lane (fair.ts), taken out of the ready (the caller leases
   * them); and each lane read, with its site.
   */
  pick(max: number, now: number): { seqs: number[]; lanes: ReadonlyMap<number, LaneRead> };
  /** Spreads every lease that ran out by `now` into rows of its entries (sql-lease.ts), each still waiting until the lease's end. */
  spread(now: number): void;
}

/** The places over `db` (the lanes' tables made already): adds their tables, and puts the entries of storage written before them in place, once. */
export async function createReady(db: SqlPort): Promise<Ready> {
  db.exec(READY_SCHEMA.split(';').slice(0, 4).join(';'));
  try {
    db.query(SQL.hasReady);
  } catch {
    db.exec(SQL.addLaneColumn);
    db.exec(SQL.addLoadColumn);
  }
  db.exec(READY_SCHEMA);
  if (db.query(SQL.marker).length === 0)
    await db.transaction(() => {
      if (db.query(SQL.marker).length > 0) return;
      const now = Date.now();
      for (const statement of SQL.placeAll) db.run(statement, ...(statement.includes('?1') ? [now] : []));
      db.run(SQL.setMarker);
    });

  /**
   * Ready counts by lane move (+ or −), and the sites' counts of lanes with some. `before`: each
   * lane's site and count as read in this transaction (a lease's pages, sql-pick.ts), so that no
   * lane's row is answered back (a row answered costs more than the lane's write: bench/README).
   */
  const count = (byLane: ReadonlyMap<number, number>, before?: ReadonlyMap<number, LaneRead>, behind?: ReadonlySet<number>, now = 0) => {
    const bySite = new Map<number, number>();
    const moves: string[] = [];
    // forEach, not for…of: no [lane, delta] pair made for each lane (a lease moves hundreds).
    byLane.forEach((delta, lane) => {
      if (delta !== 0) moves.push(`${signed(delta)}${lane}${behind?.has(lane) === true ? 'b' : ''}`);
    });
    if (moves.length === 0) return;
    /** A lane's count is now `ready`, moved by `delta`: its site has one lane with some more, or fewer. */
    const moved = (site: number, ready: number, delta: number) => {
      const change = ready > 0 && ready - delta <= 0 ? 1 : ready <= 0 && ready - delta > 0 ? -1 : 0;
      bySite.set(site, (bySite.get(site) ?? 0) + change);
    };
    if (before === undefined) {
      const rows = db.query(SQL.laneReady, JSON.stringify(moves));
      for (let i = 0; i < rows.length; i++) moved(Number(rows[i]![1]), Number(rows[i]![2]), byLane.get(Number(rows[i]![0]))!);
    } else {
      db.run(SQL.addReady, JSON.stringify(moves), now);
      byLane.forEach((delta, lane) => {
        const known = before.get(lane)!;
        if (delta !== 0) moved(known[0], known[1] + delta, delta);
      });
    }
    bySite.forEach((change, site) => {
      if (change !== 0) db.run(SQL.siteReady, site, change);
    });
  };
  /**
   * The lanes in column `at` of `rows` (as the port returns them, never an empty list: an empty array is of another
   * elements kind than a full one, and code optimised on one deoptimised at the other), each counted `sign` times.
   */
  const tally = (rows: readonly Row[], at: number, sign: number, into = new Map<number, number>()) => {
    for (let i = 0; i < rows.length; i++) {
      const lane = Number(rows[i]![at]);
      into.set(lane, (into.get(lane) ?? 0) + sign);
    }
    return into;
  };

  /** The rows of leases taken out of `outbox_leases`, as rows of their entries. */
  const spreadRows = (rows: Row[]) => {
    const entries = rows.flatMap(([owner, until, text]) =>
      (JSON.parse(text as string) as [number, number][]).map(([seq, attempts]) => [seq, owner, until, attempts]),
    );
    if (entries.length > 0) db.run(SQL.spreadInto, JSON.stringify(entries));
  };

  /** Moves up to `limit` entries whose wait has ended to their place. */
  const wake = (now: number, limit: number) => {
    let due = db.query(SQL.due, now, limit);
    const ranOut = due.filter((row) => Number(row[2]) === 2);
    if (ranOut.length > 0) {
      spreadRows(db.query(SQL.spreadOf, JSON.stringify(ranOut.map(([, id]) => id))));
      due = db.query(SQL.due, now, limit).filter((row) => Number(row[2]) !== 2);
    }
    if (due.length === 0) return;
    const released = due.filter((row) => Number(row[2]) !== 1);
    const lapsed = due.filter((row) => Number(row[2]) === 1);
    if (released.length > 0) db.run(SQL.unwaitDue, JSON.stringify(released.map(([until, seq]) => [until, seq])));
    if (lapsed.length > 0) db.run(SQL.ranOut, JSON.stringify(lapsed.map(([, seq]) => seq)));
    const held = due.filter((row) => Number(row[6]) === 1);
    const ready = due.filter((row) => Number(row[6]) !== 1);
    if (held.length > 0) db.run(SQL.hold, JSON.stringify(held.map(([, seq, , , site, browser]) => [seq, site, browser])));
    if (ready.length > 0) {
      db.run(SQL.ready, JSON.stringify(ready.map(([, seq, , lane]) => [lane, seq])));
      count(tally(ready, 3, 1));
    }
  };

  return {
    added(after, maybeHeld) {
      // The usual case: nothing is held, so every entry is ready (and counted so already) and no row needs reading back.
      if (!maybeHeld) {
        db.run(SQL.allReady, after);
        return;
      }
      db.run(SQL.holdAdded, after);
      const placed = db.query(SQL.readyAdded, after);
      if (placed.length > 0) count(tally(placed, 0, 1));
    },
    hasMerge: (browsers) =>
      browsers.length > 0 && db.query(SQL.hasMerge, JSON.stringify(browsers.map(([site, browser]) => `${digits(site)}${browser}`))).length > 0,
    unplace(seqs) {
      if (seqs.length === 0) return;
      const unique = [...new Set(seqs)];
      const json = JSON.stringify(unique);
      // Each entry is in one place: when all are found held, none is ready.
      if (db.run(SQL.unhold, json) === unique.length) return;
      const lanes = db.query(SQL.unready, json);
      if (lanes.length > 0) count(tally(lanes, 0, -1));
    },
    unwait(seqs) {
      if (seqs.length > 0) db.run(SQL.unwait, JSON.stringify([...new Set(seqs)]));
    },
    wait(entries) {
      if (entries.length > 0) db.run(SQL.wait, JSON.stringify(entries));
    },
    free(browsers) {
      if (browsers.length === 0) return;
      const unique = [...new Set(browsers.map(([site, browser]) => `${digits(site)}${browser}`))];
      const freed = db.query(SQL.free, JSON.stringify(unique)).map(([seq]) => Number(seq));
      if (freed.length === 0) return;
      const placed = db.query(SQL.readyFreed, JSON.stringify(freed));
      if (placed.length > 0) count(tally(placed, 0, 1));
    },
    spread: (now) => spreadRows(db.query(SQL.spreadDue, now)),
    pick(max, now) {
      wake(now, WAKE_PER_LEASE * max);
      let lanes: ReadonlyMap<number, LaneRead> = new Map();
      const seqs = pickReady(db, max, (byLane, before, behind) => {
        lanes = before;
        // fair.ts RUN: a lane that kept its place would take a run of every lease while those behind it waited. One
        // that gave only its identify keeps it (its tracks wait for that; a deliverer holding it back to fill a call
        // releases it to the next lease).
        count(byLane, before, behind, now);
      });
      return { seqs, lanes };
    },
  };
}
