/**
 * The SQL outbox's lanes (sql-outbox.ts): which entries wait for which visitor of which site, and
 * how many, so that a lease takes them in turns (state/fair.ts, over the ready entries of
 * sql-ready.ts) and the limits are read in O(1). A lane is one visitor of one site; it exists while
 * it has entries waiting (ready, leased, released or held), and so does a site's row in
 * `outbox_load`. The counts of the whole outbox (`pending`, `dead`, `expired`, `cut`) live in
 * `outbox_count` with `remembered`, so stats never count rows.
 *
 * Identify before track is a rule of the lease: `outbox_merges` holds each merge waiting in the
 * outbox (ready, released or leased) by browser, so the entries of a browser after its first merge
 * there are held (sql-ready.ts) until that merge is delivered or dead.
 * @module
 */
import type { OutboxLimits } from '../core/outbox-limits.js';
import { digits, type Row, type SqlPort, type SqlValue, signed } from './sql-port.js';

/** A site's number in `outbox_sites` (ids and lanes are per site number). */
export const SITE_SQL = {
  site: 'SELECT n FROM outbox_sites WHERE site = ?1',
  addSite: 'INSERT INTO outbox_sites (site) VALUES (?1) ON CONFLICT (site) DO NOTHING',
} as const;

export const LANES_SCHEMA = `
  CREATE TABLE IF NOT EXISTS outbox_lanes (n INTEGER PRIMARY KEY, site INTEGER NOT NULL, visitor TEXT NOT NULL, pending INTEGER NOT NULL, since INTEGER NOT NULL,
    ready INTEGER NOT NULL DEFAULT 0, UNIQUE (site, visitor));
  CREATE TABLE IF NOT EXISTS outbox_load (site INTEGER PRIMARY KEY, pending INTEGER NOT NULL, since INTEGER NOT NULL, ready INTEGER NOT NULL DEFAULT 0);
  CREATE INDEX IF NOT EXISTS outbox_dead_failed ON outbox_dead (failed);
  CREATE TABLE IF NOT EXISTS outbox_merges (seq INTEGER PRIMARY KEY, site INTEGER NOT NULL, browser TEXT NOT NULL);
  CREATE INDEX IF NOT EXISTS outbox_merges_browser ON outbox_merges (site, browser, seq);
`;

const SQL = {
  lane: 'INSERT INTO outbox_lanes (site, visitor, pending, since) VALUES (?1, ?2, 0, ?3) ON CONFLICT (site, visitor) DO UPDATE SET since = since RETURNING n, pending',
  // The lanes there are of visitors (a JSON list of strings: the site number in 10 digits, then the visitor), in one statement
  // (each looked up by the key; nothing written).
  lanesOf: `SELECT l.site, l.visitor, l.n, l.pending FROM json_each(?1) JOIN outbox_lanes l
    ON l.site = CAST(substr(json_each.value, 1, 10) AS INTEGER) AND l.visitor = substr(json_each.value, 11)`,
  laneOf: 'SELECT n, pending FROM outbox_lanes WHERE site = ?1 AND visitor = ?2',
  // The accepts' entries counted in their lanes, a JSON list of strings (?1: the site, the entries and the ready among them in 10
  // digits each, then the visitor): a new lane written once, with its counts.
  addAccepted: `INSERT INTO outbox_lanes (site, visitor, pending, since, ready)
    SELECT CAST(substr(value, 1, 10) AS INTEGER), substr(value, 31), CAST(substr(value, 11, 10) AS INTEGER), ?2, CAST(substr(value, 21, 10) AS INTEGER) FROM json_each(?1) WHERE true
    ON CONFLICT (site, visitor) DO UPDATE SET pending = pending + excluded.pending, ready = ready + excluded.ready RETURNING n, site, visitor, pending, ready`,
  sitePending: 'SELECT pending FROM outbox_load WHERE site = ?1',
  // Entries began (+) or stopped (−) waiting in lanes (?1: a JSON list of strings, each the change signed in 11 characters, then
  // the lane; sql-port.ts signed), in three statements whatever their number, none answering a row a lane (a row answered
  // costs more than the lane's write: bench/README): first each site's count, read through its lanes (a row a site)…
  loadOf: `INSERT INTO outbox_load (site, pending, since, ready)
    SELECT l.site, sum(CAST(substr(json_each.value, 1, 11) AS INTEGER)), ?2, 0 FROM json_each(?1) JOIN outbox_lanes l ON l.n = CAST(substr(json_each.value, 12) AS INTEGER)
    GROUP BY l.site ON CONFLICT (site) DO UPDATE SET pending = pending + excluded.pending RETURNING site, pending`,
  // …then the lanes it leaves with nothing deleted (not counted down first)…
  dropEmptied: `DELETE FROM outbox_lanes WHERE n IN (SELECT l.n FROM json_each(?1) JOIN outbox_lanes l ON l.n = CAST(substr(json_each.value, 12) AS INTEGER)
    WHERE l.pending + CAST(substr(json_each.value, 1, 11) AS INTEGER) <= 0)`,
  // …and the others' counts moved.
  addLanes: `UPDATE outbox_lanes SET pending = pending + CAST(substr(json_each.value, 1, 11) AS INTEGER) FROM json_each(?1)
    WHERE outbox_lanes.n = CAST(substr(json_each.value, 12) AS INTEGER)`,
  // Lanes (JSON list of n) left with nothing waiting.
  dropLanes: 'DELETE FROM outbox_lanes WHERE n IN (SELECT value FROM json_each(?1)) AND pending <= 0',
  addLoad: `INSERT INTO outbox_load (site, pending, since, ready) VALUES (?1, ?2, ?3, ?4) ON CONFLICT (site)
    DO UPDATE SET pending = pending + excluded.pending, ready = ready + excluded.ready RETURNING pending`,
  dropLoad: 'DELETE FROM outbox_load WHERE site = ?1 AND pending <= 0',
  count: 'SELECT value FROM outbox_count WHERE name = ?1',
  addCount: 'INSERT INTO outbox_count (name, value) VALUES (?1, ?2) ON CONFLICT (name) DO UPDATE SET value = value + excluded.value',
  // The merges of entries added after seq ?1 (an accept's), or of every entry (once, for storage written before the table).
  addMerges: `INSERT OR IGNORE INTO outbox_merges (seq, site, browser) SELECT o.seq, l.site, o.item ->> 'browser' FROM outbox o JOIN outbox_lanes l ON l.n = o.lane
    WHERE o.seq > ?1 AND CASE WHEN json_valid(o.item) THEN o.item ->> 'kind' <> 'activity' ELSE 0 END`,
  addMerge: 'INSERT OR IGNORE INTO outbox_merges (seq, site, browser) VALUES (?1, ?2, ?3)',
  dropMerges: 'DELETE FROM outbox_merges WHERE seq IN (SELECT value FROM json_each(?1)) RETURNING site, browser',
  // The merges between seqs ?1 and ?2, at most ?3: one walk of the table for the entries a settle drops, not a probe per entry.
  mergesWithin: 'SELECT seq FROM outbox_merges WHERE seq BETWEEN ?1 AND ?2 LIMIT ?3',
  // Files written before lanes: the column, then each waiting entry's lane, once.
  hasLane: 'SELECT lane FROM outbox LIMIT 0',
  addColumn: 'ALTER TABLE outbox ADD COLUMN lane INTEGER',
  // The outbox's index by lane, which files written before kept: no statement reads it (a lease
  // reads outbox_ready), and it was one more B-tree written for each entry accepted and delivered.
  dropLaneIndex: 'DROP INDEX IF EXISTS outbox_lane',
  unlaned: "SELECT seq, item ->> 'site', item ->> 'visitor' FROM outbox WHERE lane IS NULL",
  setLane: 'UPDATE outbox SET lane = ?2 WHERE seq = ?1',
  setCount: 'INSERT INTO outbox_count (name, value) VALUES (?1, ?2) ON CONFLICT (name) DO UPDATE SET value = excluded.value',
  countRows: 'SELECT (SELECT count(*) FROM outbox), (SELECT count(*) FROM outbox_dead)',
} as const;

export interface Lanes {
  /** The site's number in `outbox_sites`, added the first time (inside the caller's transaction: never cached, a rollback forgets it). */
  site(site: string): number;
  /** The lane of `visitor` at site number `site` (created empty), and how many entries it has waiting. */
  lane(site: number, visitor: string, now: number): { n: number; pending: number };
  /** A counter of `outbox_count`. */
  count(name: 'pending' | 'dead' | 'expired' | 'cut'): number;
  addCount(name: 'pending' | 'dead' | 'expired' | 'cut', change: number): void;
  /**
   * Entries began (+) or stopped (−) waiting, by lane (0: looked up only), none of them ready (a
   * settle's, a retry's, which its caller places): the lanes', sites' and outbox's counts follow.
   * `sites`: each lane's site, when the caller knows them all (a settle's, from its lease's rows):
   * the sites' counts then move by site, not read through every lane.
   */
  change(byLane: ReadonlyMap<number, number>, now: number, sites?: ReadonlyMap<number, number>): void;
  /**
   * The room for the accepts of one transaction, with `pending` entries in the outbox before them: `take` answers
   * whether an entry fits under `limits` (and counts it), or false when its visitor, its site or the outbox is full,
   * counting what was taken before it (`key`: the lane's {@link Lanes.key}, when the caller has made it). `visitors`:
   * the lanes `take` will ask for, looked up together in one statement (nothing written). `write` then counts what was
   * taken in its lanes, one statement for all (a new lane is written once, with its counts; one given nothing is never
   * made), and its sites' counts (not the outbox's); `ready`: all of them are ready now (else none is counted ready:
   * sql-ready.ts counts those it places so). It resolves to the lanes' numbers, by `key`.
   */
  admit(
    now: number,
    pending: number,
    visitors?: Iterable<readonly [site: number, visitor: string]>,
  ): { take(site: number, visitor: string, limits: OutboxLimits, key?: string): boolean; write(ready: boolean): Map<string, number> };
  /** A lane's key in {@link Lanes.admit}'s `write`. */
  key(site: number, visitor: string): string;
  /** Counts the merges among the entries added after seq `after` (the outbox's highest before them) as waiting in the outbox. */
  addMerges(after: number): void;
  /** Counts one merge back in the outbox (a dead letter retried). */
  addMerge(seq: number, site: number, browser: string): void;
  /** These entries left the outbox (delivered or dead): those that were merges no longer hold their browser's activities. Resolves to those browsers. */
  dropMerges(seqs: readonly number[]): [site: number, browser: string][];
}

const laneKey = (site: number, visitor: string) => `${site}:${visitor}`;

/** The lanes over `db`: creates their tables, and gives storage written before them its lanes and counts, once. */
export async function createLanes(db: SqlPort): Promise<Lanes> {
  db.exec(LANES_SCHEMA);
  const one = (sql: string, ...params: SqlValue[]): Row | undefined => db.query(sql, ...params)[0];
  // Read first: a site is numbered once, then only read (one statement, not two).
  const site = (key: string) => {
    const known = one(SITE_SQL.site, key);
    if (known !== undefined) return Number(known[0]);
    db.run(SITE_SQL.addSite, key);
    return Number(one(SITE_SQL.site, key)![0]);
  };
  const lane = (siteN: number, visitor: string, now: number) => {
    const [n, pending] = one(SQL.lane, siteN, visitor, now)!;
    return { n: Number(n), pending: Number(pending) };
  };
  const addCount = (name: string, change: number) => void (change !== 0 && db.run(SQL.addCount, name, change));
  /** The sites' counts move (entries, and lanes with something ready), and the outbox's (`total`). */
  const load = (bySite: ReadonlyMap<number, { delta: number; ready: number }>, total: number, now: number) => {
    for (const [siteN, { delta, ready }] of bySite) if (Number(one(SQL.addLoad, siteN, delta, now, ready)![0]) <= 0) db.run(SQL.dropLoad, siteN);
    addCount('pending', total);
  };
  const change = (byLane: ReadonlyMap<number, number>, now: number, sites?: ReadonlyMap<number, number>) => {
    let total = 0;
    // A lane looked up but given nothing (its items were full) is not kept empty.
    const empty: number[] = [];
    const moves: string[] = [];
    /** The moves by site, while every lane's site is known. */
    let bySite = sites === undefined ? undefined : new Map<number, { delta: number; ready: number }>();
    byLane.forEach((delta, n) => {
      if (delta === 0) empty.push(n);
      else {
        moves.push(`${signed(delta)}${n}`);
        total += delta;
        const site = sites?.get(n);
        if (site === undefined) bySite = undefined;
        else {
          const moved = bySite?.get(site);
          if (moved === undefined) bySite?.set(site, { delta, ready: 0 });
          else moved.delta += delta;
        }
      }
    });
    if (moves.length > 0) {
      const json = JSON.stringify(moves);
      // The sites' counts first, while every lane moved is there to name its site: a row a site
      // either way, but read through its lanes only when the caller did not know them.
      if (bySite !== undefined) load(bySite, 0, now);
      else for (const [site, pending] of db.query(SQL.loadOf, json, now)) if (Number(pending) <= 0) db.run(SQL.dropLoad, site as number);
      let found = db.run(SQL.dropEmptied, json);
      if (found < moves.length) found += db.run(SQL.addLanes, json);
      // Each lane moved exists while it has entries waiting: one missing is a fault, and nothing of this transaction is written.
      if (found !== moves.length) throw new Error(`outbox lanes: ${moves.length - found} of ${moves.length} lanes counted are missing`);
      addCount('pending', total);
    }
    if (empty.length > 0) db.run(SQL.dropLanes, JSON.stringify(empty));
  };

  try {
    db.query(SQL.hasLane);
  } catch {
    db.run(SQL.addColumn);
  }
  db.exec(SQL.dropLaneIndex);
  // Storage written before the counts were kept: each waiting entry gets its lane, and the counts are taken, once.
  if (one(SQL.count, 'pending') === undefined) {
    await db.transaction(() => {
      if (one(SQL.count, 'pending') !== undefined) return;
      const byLane = new Map<number, number>();
      for (const [seq, key, visitor] of db.query(SQL.unlaned)) {
        const { n } = lane(site(String(key)), String(visitor ?? ''), 0);
        db.run(SQL.setLane, Number(seq), n);
        byLane.set(n, (byLane.get(n) ?? 0) + 1);
      }
      change(byLane, 0);
      const [pending, dead] = one(SQL.countRows)!;
      db.run(SQL.setCount, 'pending', Number(pending));
      db.run(SQL.setCount, 'dead', Number(dead));
    });
  }
  // Storage written before merges were kept by browser: its waiting merges, once.
  if (one(SQL.count, 'merges') === undefined) {
    await db.transaction(() => {
      db.run(SQL.addMerges, 0);
      db.run(SQL.setCount, 'merges', 1);
    });
  }
  function countOf(name: string): number {
    return Number(one(SQL.count, name)?.[0] ?? 0);
  }

  return {
    site,
    lane,
    count: countOf,
    addCount,
    change,
    admit(now, pending, visitors = []) {
      // Waiting entries: in the store, plus those taken by this transaction's accepts.
      const total = { pending };
      const sites = new Map<number, { pending: number }>();
      // Each lane taken from, by key: [site, visitor, entries taken], and how many it had.
      const lanes = new Map<string, { site: number; visitor: string; pending: number; taken: number }>();
      const wanted = new Map<string, string>();
      for (const pair of visitors) wanted.set(laneKey(pair[0], pair[1]), `${digits(pair[0])}${pair[1]}`);
      const rows = wanted.size > 0 ? db.query(SQL.lanesOf, JSON.stringify([...wanted.values()])) : undefined;
      for (let i = 0; rows !== undefined && i < rows.length; i++) {
        const siteN = Number(rows[i]![0]);
        lanes.set(laneKey(siteN, String(rows[i]![1])), { site: siteN, visitor: String(rows[i]![1]), pending: Number(rows[i]![3]), taken: 0 });
      }
      const take = (siteN: number, visitor: string, limits: OutboxLimits, key = laneKey(siteN, visitor)) => {
        let found = lanes.get(key);
        if (found === undefined) {
          // Not looked up with the others (or no lane yet): read alone.
          const pending = wanted.has(key) ? 0 : Number(one(SQL.laneOf, siteN, visitor)?.[1] ?? 0);
          found = { site: siteN, visitor, pending, taken: 0 };
          lanes.set(key, found);
        }
        let site = sites.get(siteN);
        if (site === undefined) {
          site = { pending: Number(one(SQL.sitePending, siteN)?.[0] ?? 0) };
          sites.set(siteN, site);
        }
        if (total.pending >= limits.total || site.pending >= limits.site || found.pending >= limits.visitor) return false;
        total.pending++;
        site.pending++;
        found.pending++;
        found.taken++;
        return true;
      };
      const write = (ready: boolean) => {
        const numbers = new Map<string, number>();
        const taken: string[] = [];
        for (const lane of lanes.values())
          if (lane.taken > 0) taken.push(`${digits(lane.site)}${digits(lane.taken)}${digits(ready ? lane.taken : 0)}${lane.visitor}`);
        if (taken.length === 0) return numbers;
        const rows = db.query(SQL.addAccepted, JSON.stringify(taken), now);
        const bySite = new Map<number, { delta: number; ready: number }>();
        for (let i = 0; i < rows.length; i++) {
          const siteN = Number(rows[i]![1]);
          const key = laneKey(siteN, String(rows[i]![2]));
          const delta = lanes.get(key)!.taken;
          numbers.set(key, Number(rows[i]![0]));
          const site = bySite.get(siteN) ?? { delta: 0, ready: 0 };
          // The site counts its lanes with something ready: this one, when it had none before.
          bySite.set(siteN, { delta: site.delta + delta, ready: site.ready + (ready && Number(rows[i]![4]) === delta ? 1 : 0) });
        }
        // The outbox's count of entries is the caller's to move (with its other counts, one statement).
        load(bySite, 0, now);
        return numbers;
      };
      return { take, write };
    },
    key: laneKey,
    addMerges: (after) => void db.run(SQL.addMerges, after),
    addMerge: (seq, siteN, browser) => void db.run(SQL.addMerge, seq, siteN, browser),
    dropMerges(seqs) {
      if (seqs.length === 0) return [];
      // The merges among them are looked for once, between the lowest and the highest (tracks alone: none there, nothing
      // more run); when fewer merges lie there than entries leave, only those are dropped, else each entry is looked up.
      // (A loop, not Math.min(...seqs): an erasure's settle may drop more entries than a call takes arguments.)
      let low = seqs[0]!;
      let high = low;
      for (const seq of seqs) {
        low = Math.min(low, seq);
        high = Math.max(high, seq);
      }
      const within = db.query(SQL.mergesWithin, low, high, seqs.length);
      if (within.length === 0) return [];
      const leaving = new Set(seqs);
      const merges = within.length < seqs.length ? within.map(([seq]) => Number(seq)).filter((seq) => leaving.has(seq)) : seqs;
      if (merges.length === 0) return [];
      return db.query(SQL.dropMerges, JSON.stringify(merges)).map(([site, browser]): [number, string] => [Number(site), String(browser)]);
    },
  };
}
