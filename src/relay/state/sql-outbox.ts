/**
 * The outbox and pacer in SQL, for any SQLite behind a {@link SqlPort}: a file on Node (libsql,
 * `sqlite-outbox.ts`) and a Durable Object's own storage on Workers (`ctx.storage.sql`). Accepted
 * items, the ids remembered for the dedupe window (16 bytes each, see ids.ts), dead
 * letters, the deliverer's lock and the pacer's one row. Each method is one transaction of the
 * port. Nothing here imports Node: workerd runs the same statements.
 *
 * `accept` is sql-accept.ts: the accepts that arrive together share one transaction and its
 * statements, and each deletes a slice of the expired ids, so the storage follows the window.
 * An entry's row (its item) is written once when accepted and deleted once when delivered or
 * dead: who leases it, until when and its started sends are kept in its lease's row (sql-lease.ts).
 * @module
 */
import { type Erased, identifierKeyOf } from './erase.js';
import type { DeadLetter, Leased, Outbox, OutboxItem, OutboxStore, Settlement } from './outbox.js';
import { NO_LIMITS } from '../core/outbox-limits.js';
import { ACCEPT_SQL, createAccept } from './sql-accept.js';
import { createLanes, SITE_SQL } from './sql-lanes.js';
import { createLeases } from './sql-lease.js';
import { createSqlPacers, PACER_SQL } from './sql-pacer.js';
import { createReady } from './sql-ready.js';
import type { Row, SqlPort, SqlValue } from './sql-port.js';

export type { Row, SqlPort, SqlValue } from './sql-port.js';

const LOCK = 'deliverer';
/** The owner an erasure takes the entries it drops under, for the one step it drops them in. */
const ERASER = '(erase)';

export const OUTBOX_SCHEMA = `
  CREATE TABLE IF NOT EXISTS outbox_sites (n INTEGER PRIMARY KEY, site TEXT NOT NULL UNIQUE);
  CREATE TABLE IF NOT EXISTS outbox_seen (site INTEGER NOT NULL, id BLOB NOT NULL, until INTEGER NOT NULL, PRIMARY KEY (site, id)) WITHOUT ROWID;
  CREATE INDEX IF NOT EXISTS outbox_seen_until ON outbox_seen (until);
  -- owner and available: where files written before outbox_lease kept a lease (sql-lease.ts moves them once)
  CREATE TABLE IF NOT EXISTS outbox (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    item TEXT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    owner TEXT,
    available INTEGER NOT NULL DEFAULT 0,
    lane INTEGER
  );
  CREATE TABLE IF NOT EXISTS outbox_dead (
    seq INTEGER PRIMARY KEY,
    site TEXT NOT NULL,
    item TEXT NOT NULL,
    reason TEXT NOT NULL,
    status INTEGER,
    failed INTEGER NOT NULL
  );
  CREATE INDEX IF NOT EXISTS outbox_dead_site ON outbox_dead (site, seq);
  CREATE TABLE IF NOT EXISTS outbox_lock (name TEXT PRIMARY KEY, owner TEXT NOT NULL, until INTEGER NOT NULL);
  CREATE TABLE IF NOT EXISTS outbox_pacer (name TEXT PRIMARY KEY, tat REAL NOT NULL, hold INTEGER NOT NULL);
  CREATE TABLE IF NOT EXISTS outbox_pacer_calls (name TEXT PRIMARY KEY, calls TEXT NOT NULL);
  CREATE TABLE IF NOT EXISTS outbox_count (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
  CREATE TABLE IF NOT EXISTS outbox_suppressed (site TEXT NOT NULL, hash TEXT NOT NULL, until INTEGER NOT NULL, PRIMARY KEY (site, hash)) WITHOUT ROWID;
`;

export const SQL = {
  ...SITE_SQL,
  ...ACCEPT_SQL,
  ...PACER_SQL,
  // How many ids are remembered, kept as they come and go: counting a window's rows would read
  // the whole index (181 M rows for 7 days at 300 items/s) on every metrics scrape.
  count: "SELECT value FROM outbox_count WHERE name = 'remembered'",
  countAll: 'SELECT count(*) FROM outbox_seen',
  // Settle, of the entries whose lease was the owner's (sql-lease.ts): one statement for the delivered ones, none answered
  // (their lease's rows keep their lanes); those whose lanes it did not keep are looked up first.
  deliver: 'DELETE FROM outbox WHERE seq IN (SELECT value FROM json_each(?1))',
  lanesOf: 'SELECT o.seq, o.lane, l.site FROM outbox o JOIN outbox_lanes l ON l.n = o.lane WHERE o.seq IN (SELECT value FROM json_each(?1))',
  takeDead: 'DELETE FROM outbox WHERE seq = ?1 RETURNING item, lane',
  addDead: 'INSERT INTO outbox_dead (seq, site, item, reason, status, failed) VALUES (?1, ?2, ?3, ?4, ?5, ?6)',
  dead: 'SELECT seq, item, reason, status, failed FROM outbox_dead WHERE ?1 IS NULL OR site = ?1 ORDER BY seq LIMIT ?2',
  retryDead: 'DELETE FROM outbox_dead WHERE seq = ?1 RETURNING item',
  retryAllDead: 'DELETE FROM outbox_dead RETURNING seq, item',
  restore: 'INSERT INTO outbox (seq, item, available, lane) VALUES (?1, ?2, ?3, ?4)',
  dropDead: 'DELETE FROM outbox_dead WHERE seq = ?1',
  dropAllDead: 'DELETE FROM outbox_dead',
  // Erasure: the person's field of every entry (one read of the outbox, an admin's rare step), then theirs taken unless under a live lease (sql-lease.ts claim).
  named: "SELECT seq, item ->> 'site', item ->> ?1 FROM outbox",
  namedDead: 'SELECT seq, site, item ->> ?1 FROM outbox_dead',
  suppress:
    'INSERT INTO outbox_suppressed (site, hash, until) SELECT value ->> 0, value ->> 1, ?2 FROM json_each(?1) WHERE true ON CONFLICT (site, hash) DO UPDATE SET until = max(until, excluded.until)',
  unsuppress: 'DELETE FROM outbox_suppressed WHERE until <= ?1',
  suppressed: 'SELECT site, hash, until FROM outbox_suppressed',
  lead: `INSERT INTO outbox_lock (name, owner, until) VALUES ('${LOCK}', ?1, ?2) ON CONFLICT (name) DO UPDATE SET owner = excluded.owner, until = excluded.until WHERE owner = excluded.owner OR until <= ?3 RETURNING 1`,
} as const;

/**
 * The outbox and pacer over `db`: creates the tables, and counts the remembered ids of storage
 * written before the count was kept, once. `close` is the caller's (the port's owner).
 */
export async function createSqlOutbox(db: SqlPort): Promise<Omit<OutboxStore, 'close'>> {
  db.exec(OUTBOX_SCHEMA);
  const one = (sql: string, ...params: SqlValue[]): Row | undefined => db.query(sql, ...params)[0];

  // Storage written before the count was kept: counted once, here.
  if (one(SQL.count) === undefined) await db.transaction(() => one(SQL.count) ?? db.run(SQL.addCount, Number(one(SQL.countAll)![0])));
  const lanes = await createLanes(db);
  const ready = await createReady(db);
  const accept = createAccept(db, lanes, ready);
  const leases = await createLeases(db, ready);

  const leaseIn = (owner: string, max: number, now: number, leaseMs: number): Leased[] => {
    const { seqs, lanes } = ready.pick(max, now);
    return leases.take(owner, seqs, now + leaseMs, lanes);
  };

  const settleIn = (owner: string, { delivered, released, dead }: Settlement, now: number) => {
    const gone = new Map<number, number>();
    /** Each lane's site, as the lease's rows kept them. */
    const sites = new Map<number, number>();
    const left: number[] = [];
    // The entries whose lease was owner's, as it kept them: each is settled at its first mention; any other is skipped.
    // (The delivered alone, as they are, when nothing is released or dead: the usual settle.)
    const owned = leases.end(
      owner,
      released.length === 0 && dead.length === 0 ? delivered : [...delivered, ...released.map(({ seq }) => seq), ...dead.map(({ seq }) => seq)],
    );
    // What the released had, read after `mine` takes them from `owned`: a copy only when some are released.
    const attempts = released.length === 0 ? owned : new Map(owned);
    const mine = ({ seq }: { seq: number }) => owned.delete(seq);
    const leave = (seq: number, lane: number, site: number | undefined) => {
      gone.set(lane, (gone.get(lane) ?? 0) - 1);
      if (site !== undefined) sites.set(lane, site);
      left.push(seq);
    };
    // An entry at a time, in baseline code at a real site's rate: no object made per seq to ask, no row destructured (sql-accept.ts).
    const delivering: number[] = [];
    const unknown: number[] = [];
    for (let i = 0; i < delivered.length; i++) {
      const entry = owned.get(delivered[i]!);
      if (entry === undefined) continue;
      owned.delete(entry[0]);
      if (entry[2] === undefined) unknown.push(entry[0]);
      else {
        delivering.push(entry[0]);
        leave(entry[0], entry[2], entry[3]);
      }
    }
    // Rows of single entries, and of leases written before lanes were kept: their lanes looked up (those gone, skipped).
    const found = unknown.length === 0 ? [] : db.query(SQL.lanesOf, JSON.stringify(unknown));
    for (let i = 0; i < found.length; i++) {
      delivering.push(Number(found[i]![0]));
      leave(Number(found[i]![0]), Number(found[i]![1]), Number(found[i]![2]));
    }
    let skipped = delivered.length - delivering.length;
    // Each entry under a lease has its row until its settle: one missing is a fault, and nothing of this transaction is written.
    const deleted = delivering.length === 0 ? 0 : db.run(SQL.deliver, JSON.stringify(delivering));
    if (deleted !== delivering.length) throw new Error(`outbox: ${delivering.length - deleted} of ${delivering.length} leased entries are missing`);
    // Waiting until notBefore: a lease makes them ready once it has come (sql-ready.ts). Their
    // attempts go back to 0, or are kept when `tried`: written only where they are not 0.
    const back = released.filter(mine);
    skipped += released.length - back.length;
    ready.wait(back.map(({ seq, notBefore }) => [notBefore, seq] as const));
    leases.keep(back.flatMap(({ seq, tried }) => (attempts.get(seq)![1] > 0 ? [[seq, tried ? attempts.get(seq)![1] : 0] as const] : [])));
    for (const { seq, reason, status } of dead) {
      const site = owned.get(seq)?.[3];
      const row = mine({ seq }) ? one(SQL.takeDead, seq) : undefined;
      if (row === undefined) {
        skipped++;
        continue;
      }
      const item = row[0] as string;
      leave(seq, Number(row[1]), site);
      db.run(SQL.addDead, seq, (JSON.parse(item) as OutboxItem).site, item, reason, status ?? null, now);
      lanes.addCount('dead', 1);
    }
    ready.free(lanes.dropMerges(left));
    lanes.change(gone, now, sites);
    return { skipped };
  };

  const retryIn = (seqs: readonly number[] | undefined, now: number): number => {
    const rows =
      seqs === undefined ? db.query(SQL.retryAllDead) : [...new Set(seqs)].flatMap((seq) => db.query(SQL.retryDead, seq).map((row) => [seq, row[0]]));
    const back = new Map<number, number>();
    for (const [seq, item] of rows) {
      const { site, visitor, kind, browser } = JSON.parse(item as string) as OutboxItem;
      const siteN = lanes.site(site);
      const { n } = lanes.lane(siteN, visitor, now);
      db.run(SQL.restore, seq as number, item as string, now, n);
      if (kind !== 'activity') lanes.addMerge(Number(seq), siteN, browser);
      back.set(n, (back.get(n) ?? 0) + 1);
    }
    ready.wait(rows.map(([seq]) => [now, Number(seq)] as const));
    lanes.addCount('dead', -rows.length);
    lanes.change(back, now);
    return rows.length;
  };

  const dropIn = (seqs: readonly number[] | undefined): number => {
    let count = 0;
    if (seqs === undefined) count = db.run(SQL.dropAllDead);
    else for (const seq of new Set(seqs)) count += db.run(SQL.dropDead, seq);
    lanes.addCount('dead', -count);
    return count;
  };

  const eraseIn = (person: { field: string; key: string }, site: string | undefined, now: number): Erased => {
    const path = `$.entry.fields.${JSON.stringify(person.field)}`;
    const theirs = (rowSite: unknown, value: unknown) => (site === undefined || rowSite === site) && identifierKeyOf(person.field, value) === person.key;
    const waiting = db.query(SQL.named, path).filter(([, rowSite, value]) => theirs(rowSite, value));
    // Those under a live lease stay (claim's condition): counted in flight. Those released for later leave the wait here.
    const claimed = leases.claim(
      ERASER,
      waiting.map(([seq]) => Number(seq)),
      now,
    );
    ready.unwait(claimed);
    if (claimed.length > 0) settleIn(ERASER, { delivered: claimed, released: [], dead: [] }, now);
    const dead = db.query(SQL.namedDead, path).filter(([, rowSite, value]) => theirs(rowSite, value));
    const dropped = dead.length === 0 ? 0 : dropIn(dead.map(([seq]) => Number(seq)));
    return { waiting: claimed.length, dead: dropped, inFlight: waiting.length - claimed.length };
  };

  const outbox: Outbox = {
    accept: (items, now, windowMs, limits = NO_LIMITS) => new Promise((resolve, reject) => accept({ items, now, windowMs, limits, resolve, reject })),
    lease: (owner, max, now, leaseMs) => db.transaction(() => leaseIn(owner, max, now, leaseMs)),
    sending: (owner, seqs, now) => db.transaction(() => leases.sending(owner, seqs, now)),
    settle: (owner, settlement, now) => db.transaction(() => settleIn(owner, settlement, now)),
    lead: (owner, now, ttlMs) => db.transaction(() => one(SQL.lead, owner, now + ttlMs, now) !== undefined),
    async deadLetters(options = {}) {
      return db.query(SQL.dead, options.site ?? null, options.limit ?? -1).map(
        ([seq, item, reason, status, failed]): DeadLetter => ({
          ...(JSON.parse(item as string) as OutboxItem),
          seq: Number(seq),
          reason: reason as string,
          ...(status === null ? {} : { status: Number(status) }),
          failed: Number(failed),
        }),
      );
    },
    retryDead: (seqs, now) => db.transaction(() => retryIn(seqs, now)),
    dropDead: (seqs) => db.transaction(() => dropIn(seqs)),
    erase: (person, site, now) => db.transaction(() => eraseIn(person, site, now)),
    suppress: (rows, until, now) =>
      db.transaction(() => {
        db.run(SQL.unsuppress, now);
        if (rows.length > 0) db.run(SQL.suppress, JSON.stringify(rows.map(({ site, hash }) => [site, hash])), until);
      }),
    // A row that has ended is deleted when it is first read so (a write only then, not on every read).
    async suppressed(now) {
      const rows = db.query(SQL.suppressed);
      if (rows.some(([, , until]) => Number(until) <= now)) await db.transaction(() => db.run(SQL.unsuppress, now));
      return rows.filter(([, , until]) => Number(until) > now).map(([site, hash]) => ({ site: String(site), hash: String(hash) }));
    },
    async stats() {
      return {
        pending: lanes.count('pending'),
        dead: lanes.count('dead'),
        remembered: Number(one(SQL.count)?.[0] ?? 0),
        expired: lanes.count('expired'),
        cut: lanes.count('cut'),
      };
    },
  };
  return { outbox, pacer: createSqlPacers(db, leases, outbox) };
}
