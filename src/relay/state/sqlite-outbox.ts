/**
 * The outbox and pacer in an SQLite file (libsql): accepted items, the ids remembered for the
 * dedupe window (16 bytes each, see deliver/ids.ts), dead letters, the deliverer's lock and the
 * pacer's one row. Each method is one `BEGIN IMMEDIATE` transaction, and the calls of one turn of
 * the event loop share it (group commit), so several processes on one machine may share the file.
 * WAL with `synchronous=NORMAL`, as the state store: an item is in the WAL before `accept`
 * resolves, so a killed process loses nothing it answered `accepted`.
 *
 * Remembered ids expire inside the database: every `accept` deletes a slice of expired ones, more
 * than it adds, so the file follows the window (SQLite reuses the freed pages).
 * @module
 */
import { compactId } from './ids.js';
import { toHex } from '../core/encoding.js';
import { pace, paceInterval } from './pace.js';
import type { Accepted, DeadLetter, Leased, OutboxItem, OutboxStore, Settlement } from './outbox.js';
import { groupCommit, openSqlite } from './sqlite-file.js';

/** Expired ids deleted per accept: more than an accept adds, so the table shrinks back after a peak. */
const EXPIRY_SLICE = 1000;
const LOCK = 'deliverer';
const PACER = 'platform';

export interface SqliteOutboxOptions {
  /** how long a writer waits for another process's transaction @default 5000 ms */
  busyTimeoutMs?: number;
}

const SCHEMA = `
  CREATE TABLE IF NOT EXISTS outbox_sites (n INTEGER PRIMARY KEY, site TEXT NOT NULL UNIQUE);
  CREATE TABLE IF NOT EXISTS outbox_seen (site INTEGER NOT NULL, id BLOB NOT NULL, until INTEGER NOT NULL, PRIMARY KEY (site, id)) WITHOUT ROWID;
  CREATE INDEX IF NOT EXISTS outbox_seen_until ON outbox_seen (until);
  CREATE TABLE IF NOT EXISTS outbox (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    item TEXT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    owner TEXT,
    available INTEGER NOT NULL DEFAULT 0
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
  CREATE TABLE IF NOT EXISTS outbox_count (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
`;

type Row = unknown[];

/** Opens (or creates) the outbox tables in the file at `path` (the relay's state file). */
export async function createSqliteOutbox(path: string, options: SqliteOutboxOptions = {}): Promise<OutboxStore> {
  const db = await openSqlite(path, options.busyTimeoutMs ?? 5000, 'the SQLite outbox (RELAY_STATE_FILE)');
  db.exec(SCHEMA);

  const sql = {
    site: db.prepare('SELECT n FROM outbox_sites WHERE site = ?').raw(),
    addSite: db.prepare('INSERT INTO outbox_sites (site) VALUES (?) ON CONFLICT (site) DO NOTHING'),
    expire: db.prepare('DELETE FROM outbox_seen WHERE (site, id) IN (SELECT site, id FROM outbox_seen WHERE until <= ? LIMIT ?)'),
    // Inserted, or taken over from an expired row: a RETURNING row says the id is new.
    // One statement each per call, whatever the number of ids: [site number, id as hex] pairs go in
    // as JSON. First the batch's ids whose window has passed are forgotten, then the ids not
    // remembered are inserted: a RETURNING row says the id is new.
    // Driven by the `until` index (only ids past their window, which the sweep keeps few), then
    // matched against the batch: `(site, id) IN (SELECT … FROM json_each)` used only the key's first
    // column, reading every id of the site on every accept (2.4 ms at 30,000 ids, and growing).
    forgetStale: db.prepare(
      'DELETE FROM outbox_seen WHERE until <= ?2 AND EXISTS (SELECT 1 FROM json_each(?1) WHERE value ->> 0 = outbox_seen.site AND unhex(value ->> 1) = outbox_seen.id)',
    ),
    remember: db
      .prepare(
        'INSERT INTO outbox_seen (site, id, until) SELECT value ->> 0, unhex(value ->> 1), ?2 FROM json_each(?1) WHERE true ON CONFLICT (site, id) DO NOTHING RETURNING site, hex(id)',
      )
      .raw(),
    // How many ids are remembered, kept as they come and go: counting a window's rows would read
    // the whole index (181 M rows for 7 days at 300 items/s) on every metrics scrape.
    count: db.prepare("SELECT value FROM outbox_count WHERE name = 'remembered'").raw(),
    countAll: db.prepare('SELECT count(*) FROM outbox_seen').raw(),
    addCount: db.prepare("INSERT INTO outbox_count (name, value) VALUES ('remembered', ?1) ON CONFLICT (name) DO UPDATE SET value = value + excluded.value"),
    add: db.prepare('INSERT INTO outbox (item) SELECT value FROM json_each(?)'),
    lease: db
      .prepare(
        'UPDATE outbox SET owner = ?1, available = ?2 WHERE seq IN (SELECT seq FROM outbox WHERE available <= ?3 ORDER BY seq LIMIT ?4) RETURNING seq, item, attempts',
      )
      .raw(),
    // Only the owner's live leases: one that ran out may be another deliverer's by now.
    sending: db
      .prepare('UPDATE outbox SET attempts = attempts + 1 WHERE seq IN (SELECT value FROM json_each(?1)) AND owner = ?2 AND available > ?3 RETURNING seq')
      .raw(),
    deliver: db.prepare('DELETE FROM outbox WHERE seq = ? AND owner = ?'),
    release: db.prepare('UPDATE outbox SET attempts = 0, owner = NULL, available = ?3 WHERE seq = ?1 AND owner = ?2'),
    takeDead: db.prepare('DELETE FROM outbox WHERE seq = ? AND owner = ? RETURNING item').raw(),
    addDead: db.prepare('INSERT INTO outbox_dead (seq, site, item, reason, status, failed) VALUES (?, ?, ?, ?, ?, ?)'),
    dead: db.prepare('SELECT seq, item, reason, status, failed FROM outbox_dead WHERE ?1 IS NULL OR site = ?1 ORDER BY seq LIMIT ?2').raw(),
    retryDead: db.prepare('DELETE FROM outbox_dead WHERE seq = ? RETURNING item').raw(),
    retryAllDead: db.prepare('DELETE FROM outbox_dead RETURNING seq, item').raw(),
    restore: db.prepare('INSERT INTO outbox (seq, item, available) VALUES (?, ?, ?)'),
    dropDead: db.prepare('DELETE FROM outbox_dead WHERE seq = ?'),
    dropAllDead: db.prepare('DELETE FROM outbox_dead'),
    lead: db
      .prepare(
        `INSERT INTO outbox_lock (name, owner, until) VALUES ('${LOCK}', ?1, ?2) ON CONFLICT (name) DO UPDATE SET owner = excluded.owner, until = excluded.until WHERE owner = excluded.owner OR until <= ?3 RETURNING 1`,
      )
      .raw(),
    pacer: db.prepare(`SELECT tat, hold FROM outbox_pacer WHERE name = '${PACER}'`).raw(),
    setPacer: db.prepare(
      `INSERT INTO outbox_pacer (name, tat, hold) VALUES ('${PACER}', ?1, ?2) ON CONFLICT (name) DO UPDATE SET tat = excluded.tat, hold = excluded.hold`,
    ),
    stats: db
      .prepare("SELECT (SELECT count(*) FROM outbox), (SELECT count(*) FROM outbox_dead), (SELECT value FROM outbox_count WHERE name = 'remembered')")
      .raw(),
  };

  /** The site's number in `outbox_sites`, added the first time (inside the caller's transaction: never cached, a rollback forgets it). */
  const siteNumber = (site: string): number => {
    sql.addSite.run(site);
    return Number((sql.site.get(site) as Row)[0]);
  };

  // A file written before the count was kept: counted once, here.
  if (sql.count.get() === undefined) db.transaction(() => sql.count.get() ?? sql.addCount.run(Number((sql.countAll.get() as Row)[0]))).immediate();

  const acceptIn = (items: readonly OutboxItem[], now: number, windowMs: number): Accepted => {
    let change = -sql.expire.run(now, EXPIRY_SLICE).changes;
    const result: Accepted = { accepted: [], duplicate: [] };
    if (items.length === 0) {
      if (change !== 0) sql.addCount.run(change);
      return result;
    }
    const sites = new Map<string, number>();
    const pairs = items.map((item): [number, string] => {
      const n = sites.get(item.site) ?? siteNumber(item.site);
      sites.set(item.site, n);
      return [n, toHex(compactId(item.id)).toUpperCase()]; // upper case: what SQLite's hex() answers
    });
    const keys = pairs.map(([n, hex]) => `${n}:${hex}`);
    const json = JSON.stringify(pairs);
    change -= sql.forgetStale.run(json, now).changes;
    const fresh = new Set((sql.remember.all(json, now + windowMs) as Row[]).map(([n, hex]) => `${n}:${hex}`));
    change += fresh.size;
    if (change !== 0) sql.addCount.run(change);
    // In the order given; an id given twice is new once, its second copy a duplicate.
    const added: string[] = [];
    items.forEach((item, i) => {
      if (fresh.delete(keys[i]!)) {
        result.accepted.push(item.id);
        added.push(JSON.stringify(item));
      } else result.duplicate.push(item.id);
    });
    if (added.length > 0) sql.add.run(JSON.stringify(added));
    return result;
  };

  const leaseIn = (owner: string, max: number, now: number, leaseMs: number): Leased[] =>
    (sql.lease.all(owner, now + leaseMs, now, max) as Row[])
      .map(([seq, item, attempts]) => ({ ...(JSON.parse(item as string) as OutboxItem), seq: Number(seq), attempts: Number(attempts) }))
      .sort((a, b) => a.seq - b.seq);

  const sendingIn = (owner: string, seqs: readonly number[], now: number): number[] => {
    const marked = new Set((sql.sending.all(JSON.stringify([...new Set(seqs)]), owner, now) as Row[]).map(([seq]) => Number(seq)));
    return seqs.filter((seq) => marked.delete(seq));
  };

  const settleIn = (owner: string, { delivered, released, dead }: Settlement, now: number) => {
    let skipped = 0;
    for (const seq of delivered) if (sql.deliver.run(seq, owner).changes === 0) skipped++;
    for (const { seq, notBefore } of released) if (sql.release.run(seq, owner, notBefore).changes === 0) skipped++;
    for (const { seq, reason, status } of dead) {
      const row = sql.takeDead.get(seq, owner) as Row | undefined;
      if (row === undefined) {
        skipped++;
        continue;
      }
      const item = row[0] as string;
      sql.addDead.run(seq, (JSON.parse(item) as OutboxItem).site, item, reason, status ?? null, now);
    }
    return { skipped };
  };

  const retryIn = (seqs: readonly number[] | undefined, now: number): number => {
    const rows =
      seqs === undefined
        ? (sql.retryAllDead.all() as Row[])
        : [...new Set(seqs)].flatMap((seq) => (sql.retryDead.all(seq) as Row[]).map((row) => [seq, row[0]]));
    for (const [seq, item] of rows) sql.restore.run(seq, item, now);
    return rows.length;
  };

  const dropIn = (seqs: readonly number[] | undefined): number => {
    if (seqs === undefined) return sql.dropAllDead.run().changes;
    let count = 0;
    for (const seq of new Set(seqs)) count += sql.dropDead.run(seq).changes;
    return count;
  };

  const group = groupCommit(db);

  return {
    outbox: {
      accept: (items, now, windowMs) => group(() => acceptIn(items, now, windowMs)),
      lease: (owner, max, now, leaseMs) => group(() => leaseIn(owner, max, now, leaseMs)),
      sending: (owner, seqs, now) => group(() => sendingIn(owner, seqs, now)),
      settle: (owner, settlement, now) => group(() => settleIn(owner, settlement, now)),
      lead: (owner, now, ttlMs) => group(() => sql.lead.get(owner, now + ttlMs, now) !== undefined),
      async deadLetters(options = {}) {
        return (sql.dead.all(options.site ?? null, options.limit ?? -1) as Row[]).map(
          ([seq, item, reason, status, failed]): DeadLetter => ({
            ...(JSON.parse(item as string) as OutboxItem),
            seq: Number(seq),
            reason: reason as string,
            ...(status === null ? {} : { status: Number(status) }),
            failed: Number(failed),
          }),
        );
      },
      retryDead: (seqs, now) => group(() => retryIn(seqs, now)),
      dropDead: (seqs) => group(() => dropIn(seqs)),
      async stats() {
        const [pending, dead, remembered] = (sql.stats.get() as Row).map((value) => Number(value ?? 0)) as [number, number, number];
        return { pending, dead, remembered };
      },
    },
    pacer(rate) {
      const interval = paceInterval(rate);
      return {
        take: (now, priority) =>
          group(() => {
            const [tat, hold] = (sql.pacer.get() as Row | undefined) ?? [0, 0];
            const state = { tat: Number(tat), hold: Number(hold) };
            const wait = pace(state, now, priority, interval);
            if (wait === 0) sql.setPacer.run(state.tat, state.hold);
            return wait;
          }),
        hold: (until) =>
          group(() => {
            const [tat, hold] = (sql.pacer.get() as Row | undefined) ?? [0, 0];
            if (until > Number(hold)) sql.setPacer.run(Number(tat), until);
          }),
      };
    },
    async close() {
      if (db.open) db.close();
    },
  };
}
