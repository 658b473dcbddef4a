/**
 * What a lease of the SQL outbox takes from the ready entries (sql-ready.ts `pick`): the sites
 * with something ready, the longest-waiting first, each site's lanes in turn (fair.ts), and the
 * first entries of a page of a site's lanes read in one statement, as many of each as its share of
 * the lease (a lane that takes more reads on by itself; one that takes one uses its row's first
 * entry). A site's first page is an even share of the lease; its turns read the next page only
 * when they reach the last lane read, so a lease's statements do not grow with the lanes it visits.
 *
 * Identify before track: a site with no merge in the outbox (`outbox_merges`, the usual case of
 * tracks alone) has only activities waiting, so its entries are read from the ready index alone,
 * never from the items. A site with merges reads each entry's kind and browser, and the latest
 * merge of its browser before it.
 * @module
 */
import { fill, type Lane, MERGES_PER_LEASE, RUN, takeFairMergesBounded } from './fair.js';
import { digits, type Row, type SqlPort, type SqlValue } from './sql-port.js';

/**
 * Columns of each entry read: lane, seq, and, where merges are checked, whether it is an activity, its browser, the latest
 * merge of its browser before it, and for a merge the next one after it (only then may that one be held behind it alone: `chain`).
 */
const checked = (lane: string, site: string) => `${lane}, o.seq, o.item ->> 'kind' = 'activity', o.item ->> 'browser',
  (SELECT max(m.seq) FROM outbox_merges m WHERE m.site = ${site} AND m.browser = o.item ->> 'browser' AND m.seq < o.seq),
  CASE WHEN o.item ->> 'kind' = 'activity' THEN NULL ELSE (SELECT min(m.seq) FROM outbox_merges m WHERE m.site = ${site} AND m.browser = o.item ->> 'browser' AND m.seq > o.seq) END`;
/**
 * A site's (?1) first ?2 lanes with something ready, in their turns' order (the next ?2 after lane ?4, whose since is ?3,
 * when `after`: a lease's next page of them, when its turns reach the last it read): each lane, its first ready entry
 * (`first`: the site has no merge to check and the page fills, so each lane's turns most likely take one entry, that one;
 * else NULL), its ready count and since.
 */
const lanesSql = (first: boolean, after: boolean) =>
  `SELECT n, ${first ? '(SELECT x.seq FROM outbox_ready x WHERE x.lane = outbox_lanes.n ORDER BY x.seq LIMIT 1)' : 'NULL'}, ready, since
    FROM outbox_lanes INDEXED BY outbox_lanes_ready WHERE site = ?1 AND ready > 0${after ? ' AND (since, n) > (?3, ?4)' : ''} ORDER BY since, n LIMIT ?2`;
/** The first ?2 ready entries of the lane of each row of json_each(?1) (a JSON list of lanes): each lane's own walk of the index. */
const HEADS = '(SELECT x.seq FROM outbox_ready x WHERE x.lane = json_each.value ORDER BY x.seq LIMIT ?2)';

export const PICK_SQL = {
  // By the partial indexes, named: a planner that took the site's index of every lane would read them all.
  // Each site with whether it has a merge in the outbox, and how many lanes it has with something ready.
  sites:
    'SELECT site, EXISTS (SELECT 1 FROM outbox_merges m WHERE m.site = outbox_load.site), ready FROM outbox_load INDEXED BY outbox_load_ready WHERE ready > 0 ORDER BY since, site LIMIT ?1',
  lanes: lanesSql(true, false),
  lanesAfter: lanesSql(true, true),
  lanesBare: lanesSql(false, false),
  lanesBareAfter: lanesSql(false, true),
  // One JSON list of [lane, seq] (a row answered costs libsql 0.8 µs more than its part of a text): each lane's ?2th, then those up to it.
  heads: `SELECT json_group_array(json_array(r.lane, r.seq)) FROM json_each(?1) JOIN outbox_ready r ON r.lane = json_each.value
    AND r.seq <= coalesce((SELECT x.seq FROM outbox_ready x WHERE x.lane = json_each.value ORDER BY x.seq LIMIT 1 OFFSET ?2 - 1), 9e18)`,
  headsChecked: `SELECT ${checked('json_each.value', '?3')} FROM json_each(?1) JOIN outbox o ON o.seq IN ${HEADS}`,
  // One lane's ready entries after seq ?2, when it takes more than its share.
  next: 'SELECT r.lane, r.seq FROM outbox_ready r WHERE r.lane = ?1 AND r.seq > ?2 ORDER BY r.seq LIMIT ?4',
  nextChecked: `SELECT ${checked('r.lane', '?3')} FROM outbox_ready r JOIN outbox o ON o.seq = r.seq WHERE r.lane = ?1 AND r.seq > ?2 ORDER BY r.seq LIMIT ?4`,
  // The next merge of a browser after seq ?3, when it is held (only behind the one before it): it may go in the same lease.
  nextMerge: `SELECT h.seq, o.lane FROM outbox_held h JOIN outbox o ON o.seq = h.seq
    WHERE h.seq = (SELECT min(seq) FROM outbox_merges WHERE site = ?1 AND browser = ?2 AND seq > ?3) AND h.site = ?1 AND h.browser = ?2`,
  // ?1: a JSON list of strings, each the lane in 10 digits then the seq (sql-port.ts digits).
  takeReady:
    'DELETE FROM outbox_ready WHERE (lane, seq) IN (SELECT CAST(substr(value, 1, 10) AS INTEGER), CAST(substr(value, 11) AS INTEGER) FROM json_each(?1))',
  takeHeld: 'DELETE FROM outbox_held WHERE seq IN (SELECT value FROM json_each(?1))',
  hold: 'INSERT OR IGNORE INTO outbox_held (seq, site, browser) SELECT value ->> 0, value ->> 1, value ->> 2 FROM json_each(?1)',
} as const;

/** A lane as a lease read it: its site, and how many entries it had ready. */
export type LaneRead = readonly [site: number, ready: number];
type Counts = ReadonlyMap<number, number>;
type Reads = ReadonlyMap<number, LaneRead>;
/** Up to `max` seqs ready now, in turns (fair.ts), out of the ready; `count` moves the lanes' ready counts (+ or −), and moves `behind` back. */
export function pickReady(db: SqlPort, max: number, count: (byLane: Counts, before: Reads, behind: ReadonlySet<number>) => void): number[] {
  const sites = db.query(PICK_SQL.sites, max).map(([n, merges, lanes]) => ({ site: Number(n), checked: Number(merges) === 1, lanes: Number(lanes) }));
  if (sites.length === 0) return [];
  const taken = new Set<number>();
  const fromReady: string[] = []; // what it took from the ready, each its lane in 10 digits then its seq (PICK_SQL.takeReady)
  const fromHeld: number[] = [];
  const misplaced: Row[] = [];
  const moved = new Set<number>();
  const ready = new Map<number, number>();
  const behind = new Set<number>(); // the lanes it took an activity from (they go behind the others: sql-ready.ts)
  /** Each lane read: its site and ready count (the counts then move without reading them back). */
  const before = new Map<number, LaneRead>();
  let mergesTaken = 0;
  let deferred = false;

  /** The merge held only behind `seq` (its browser's next), noted in `chained` (made when there is one): it goes next, in its lane's turns. */
  const chain = (site: number, seq: number, browser: SqlValue, chained: [number, SqlValue][] | undefined) => {
    const next = db.query(PICK_SQL.nextMerge, site, browser, seq)[0];
    if (next === undefined) return chained;
    fromHeld.push(Number(next[0]));
    const list = chained ?? [];
    list.push([Number(next[0]), browser]);
    return list;
  };

  /**
   * One lane's turns: `first` its first entries read, `done` when they are all it has ready. Made
   * for each lane a lease reads (about as many as it takes from): one closure, what else it needs made on its first turn.
   */
  const laneOf = (site: number, checked: boolean, lane: number, mergesToo: boolean, first: Row[], done: boolean): Lane<number> => {
    let buffer = first;
    let after = Number(first.at(-1)?.[1] ?? 0);
    let chunk = Math.min(Math.max(RUN, first.length * 2), max);
    let laneDigits = '';
    let chained: [number, SqlValue][] | undefined;
    return () => {
      const merge = chained?.shift();
      if (merge !== undefined) {
        taken.add(merge[0]);
        mergesTaken++;
        chained = chain(site, merge[0], merge[1], chained);
        return merge[0];
      }
      for (;;) {
        if (buffer.length === 0) {
          if (done) return undefined;
          buffer = db.query(checked ? PICK_SQL.nextChecked : PICK_SQL.next, lane, after, site, chunk);
          done = buffer.length < chunk;
          if (buffer.length > 0) after = Number(buffer.at(-1)![1]);
          chunk = Math.min(chunk * 2, max);
          continue;
        }
        const row = buffer[0]!;
        const seq = Number(row[1]);
        // Read one by one, not destructured from an array made for it (an entry at a time: sql-accept.ts says why).
        const activity = !checked || Number(row[2]) === 1;
        const browser = checked ? (row[3] as SqlValue) : null;
        const before = checked ? row[4] : null;
        const later = checked ? row[5] : null;
        // Taken in the first pass (a second pass reads the lane again); a merge past the bound waits for the second.
        if (taken.has(seq) || moved.has(seq)) {
          buffer.shift();
          continue;
        }
        if (!activity && !mergesToo && mergesTaken >= MERGES_PER_LEASE) {
          deferred = true;
          return undefined;
        }
        buffer.shift();
        // Ready entries are never behind a merge, but a merge retried from the dead letters comes
        // back before entries made ready without it: such an entry goes back to be held.
        if (before !== null && before !== undefined && (activity || !taken.has(Number(before)))) {
          misplaced.push([seq, lane, site, browser]);
          moved.add(seq);
          continue;
        }
        taken.add(seq);
        if (laneDigits === '') laneDigits = digits(lane);
        fromReady.push(`${laneDigits}${seq}`);
        ready.set(lane, (ready.get(lane) ?? 0) - 1);
        if (activity) behind.add(lane);
        if (!activity) {
          mergesTaken++;
          if (later !== null && later !== undefined) chained = chain(site, seq, browser, chained);
        }
        return seq;
      }
    };
  };

  /** Per site, for the pass under way: the last lane read (since, n), or undefined before the first; whether it may have more. */
  const lastSince: number[] = [];
  const lastLane: number[] = [];
  const open: boolean[] = [];
  /** Per site, the lanes read in this pass; and of every site. */
  const read: number[] = [];
  let readAll = 0;

  /**
   * Up to `size` more of site `s`'s lanes (after those read in this pass): their numbers, ready
   * counts and rows, each with the lane's first entry when the site has no merge to check and more
   * lanes ready than the page holds (its turns then take about one entry a lane: the answer is
   * whether the rows hold them).
   */
  const lanePage = (s: number, size: number, ns: number[], cs: number[], rs: Row[]): boolean => {
    const { site, checked, lanes } = sites[s]!;
    const first = !checked && lanes - (read[s] ?? 0) >= size;
    const rows =
      open[s] === undefined
        ? db.query(first ? PICK_SQL.lanes : PICK_SQL.lanesBare, site, size)
        : db.query(first ? PICK_SQL.lanesAfter : PICK_SQL.lanesBareAfter, site, size, lastSince[s]!, lastLane[s]!);
    read[s] = (read[s] ?? 0) + rows.length;
    readAll += rows.length;
    for (let r = 0; r < rows.length; r++) {
      const row = rows[r]!;
      ns.push(Number(row[0]));
      before.set(Number(row[0]), [site, Number(row[2])]);
      const count = Math.max(1, Number(row[2]));
      cs.push(count);
      rs.push(row);
    }
    open[s] = rows.length >= size;
    if (rows.length > 0) {
      lastSince[s] = Number(rows.at(-1)![3]);
      lastLane[s] = Number(rows.at(-1)![0]);
    }
    return first;
  };

  /**
   * The first entries of the lanes `ns` of site `s`: as many of each as its turns (runs) would take
   * of `budget` by the lanes' ready counts `cs` (`fill`); the lanes that hold fewer than the most any
   * lane takes read them all, and are done once they have read as many as their count. Where each
   * lane's row `rs` holds its first entry (`first`), a lane that takes one reads nothing more; the
   * lanes that take more read theirs together (one statement). A lane that takes more than it read
   * (others held less than their counts said, or its identifies waited for the second pass) reads on alone.
   */
  const lanesFrom = (s: number, ns: number[], cs: number[], rs: Row[], first: boolean, budget: number, mergesToo: boolean): Lane<number>[] => {
    const lanes: Lane<number>[] = [];
    if (ns.length === 0) return lanes;
    const { site, checked } = sites[s]!;
    const shares = fill(cs, budget);
    let most = 1;
    for (let l = 0; l < shares.length; l++) if (shares[l]! > most) most = shares[l]!;
    // A lane's rows listed as they come, made for the lanes that have some (most read one row: their share of the lease).
    const heads = new Map<number, Row[]>();
    // The lanes whose share is more than their rows hold (none whose turns the budget does not reach) read their own.
    const reads = (l: number) => shares[l]! > (first ? 1 : 0);
    const wanted = ns.filter((_, l) => reads(l));
    if (wanted.length > 0) {
      const list = JSON.stringify(wanted);
      const rows = checked ? db.query(PICK_SQL.headsChecked, list, most, site) : (JSON.parse(String(db.query(PICK_SQL.heads, list, most)[0]![0])) as Row[]);
      for (let r = 0; r < rows.length; r++) {
        const row = rows[r]!;
        const lane = Number(row[0]);
        const list = heads.get(lane);
        if (list === undefined) heads.set(lane, [row]);
        else list.push(row);
      }
    }
    for (let l = 0; l < ns.length; l++) {
      // The others: their row's first entry, or nothing read yet (a lane reads on alone if its turns take more).
      const own = reads(l) ? (heads.get(ns[l]!) ?? []) : first && rs[l]![1] !== null ? [rs[l]!] : [];
      if (own.length > 1) own.sort((a, b) => Number(a[1]) - Number(b[1]));
      const done = reads(l) ? own.length < most || own.length >= cs[l]! : first && (own.length === 0 || own.length >= cs[l]!);
      lanes.push(laneOf(site, checked, ns[l]!, mergesToo, own, done));
    }
    return lanes;
  };

  /**
   * Each site's first lanes, as many as an even share of what the lease has left (a site with fewer
   * lends the rest to those with more: their turns read their next lanes when they reach the last
   * they hold, `more`), and their first entries: one or two statements a site.
   */
  let mergesNow = false;
  const lanesOf = (mergesToo: boolean): Lane<number>[][] => {
    mergesNow = mergesToo;
    open.length = 0;
    read.length = 0;
    readAll = 0;
    const left = Math.max(1, max - taken.size);
    const size = Math.ceil(left / sites.length);
    const numbers: number[][] = [];
    const counts: number[][] = [];
    const rows: Row[][] = [];
    const sums: number[] = [];
    const firsts: boolean[] = [];
    for (let s = 0; s < sites.length; s++) {
      const ns: number[] = [];
      const cs: number[] = [];
      const rs: Row[] = [];
      firsts.push(lanePage(s, size, ns, cs, rs));
      let sum = 0;
      for (let l = 0; l < cs.length; l++) sum += cs[l]!;
      sums.push(sum);
      numbers.push(ns);
      counts.push(cs);
      rows.push(rs);
    }
    const bySite = fill(sums, left);
    const all: Lane<number>[][] = [];
    for (let s = 0; s < sites.length; s++) all.push(lanesFrom(s, numbers[s]!, counts[s]!, rows[s]!, firsts[s]!, bySite[s]!, mergesToo));
    return all;
  };
  /**
   * A site's next page, while the pass has read fewer than twice the lease's size of lanes: a lane
   * answers nothing only when it has given all it has ready, or in the first pass when its next is
   * an identify past the bound (MERGES_PER_LEASE), and a site of new visitors, each an identify
   * first, would otherwise be read to its last lane in that pass (the second takes them).
   */
  const more = (s: number, need: number): Lane<number>[] => {
    const ns: number[] = [];
    const cs: number[] = [];
    const rs: Row[] = [];
    const room = 2 * max - readAll;
    const first = open[s] === true && room > 0 && lanePage(s, Math.min(need, room), ns, cs, rs);
    return lanesFrom(s, ns, cs, rs, first, need, mergesNow);
  };
  const seqs = takeFairMergesBounded(lanesOf, max, () => deferred, more);
  // What the lease took leaves the ready, or the held (chained merges: those the full lease did not reach stay); what was misplaced is held again.
  if (fromReady.length > 0) db.run(PICK_SQL.takeReady, JSON.stringify(fromReady));
  const unheld = fromHeld.filter((seq) => seqs.includes(seq));
  if (unheld.length > 0) db.run(PICK_SQL.takeHeld, JSON.stringify(unheld));
  if (misplaced.length > 0) {
    db.run(PICK_SQL.takeReady, JSON.stringify(misplaced.map(([seq, lane]) => `${digits(Number(lane))}${seq}`)));
    db.run(PICK_SQL.hold, JSON.stringify(misplaced.map(([seq, , site, browser]) => [seq, site, browser])));
    for (const [, lane] of misplaced) ready.set(Number(lane), (ready.get(Number(lane)) ?? 0) - 1);
  }
  count(ready, before, behind);
  return seqs;
}
