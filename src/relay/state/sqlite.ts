/**
 * The relay's state in an embedded SQLite file (sqlite-driver.ts: node:sqlite or libsql): the
 * default on Node. WAL mode; the claims and settles that arrive together share one transaction
 * (group commit, sqlite-file.ts), each a single statement over its ids; expiry inside the database
 * (a small slice of expired rows goes with every transaction), so the file's size follows the
 * dedupe window and a restart opens the file without reading it. Several processes on one machine
 * may share the file.
 *
 * Durability: with WAL and `synchronous=FULL` a committed transaction is fsynced in the WAL file
 * before the call returns, so neither a killed process nor a power cut loses what it acknowledged.
 * @module
 */
import { cappedAmount, type Claim, type RelayStore } from './store.js';
import type { SqliteDriverName } from './sqlite-driver.js';
import { groupCommit, openSqlite } from './sqlite-file.js';

/** Expired rows deleted per claim: more than a claim adds, so the table shrinks back after a peak. */
const EXPIRY_SLICE = 500;

export interface SqliteStoreOptions {
  /** how long a writer waits for another process's transaction @default 5000 ms */
  busyTimeoutMs?: number;
  /** the SQLite driver (sqlite-driver.ts) @default env RELAY_SQLITE_DRIVER, else Node's own where it has one */
  driver?: SqliteDriverName | undefined;
}

/** The first column of a row. */
const first = (row: unknown): unknown => (Array.isArray(row) ? row[0] : undefined);

/** Opens (or creates) the state file at `path`. */
export async function createSqliteStore(path: string, options: SqliteStoreOptions = {}): Promise<RelayStore> {
  const db = await openSqlite(path, options.busyTimeoutMs ?? 5000, 'the SQLite state store (RELAY_STATE_FILE)', false, options.driver);
  db.exec(`
    CREATE TABLE IF NOT EXISTS items (
      site TEXT NOT NULL,
      id TEXT NOT NULL,
      forwarded INTEGER NOT NULL,
      until INTEGER NOT NULL,
      PRIMARY KEY (site, id)
    ) WITHOUT ROWID;
    CREATE INDEX IF NOT EXISTS items_until ON items (until);
    CREATE TABLE IF NOT EXISTS counters (site TEXT NOT NULL, name TEXT NOT NULL, value INTEGER NOT NULL, PRIMARY KEY (site, name)) WITHOUT ROWID;
  `);

  const statements = {
    expire: db.prepare('DELETE FROM items WHERE (site, id) IN (SELECT site, id FROM items WHERE until <= ? LIMIT ?)'),
    // One statement per call, whatever the number of ids: they go in as a JSON array (json_each).
    // Inserted, or taken over from an expired row: a RETURNING row says the lease is ours.
    lease: db.prepare(
      'INSERT INTO items (site, id, forwarded, until) SELECT ?1, value, 0, ?2 FROM json_each(?3) WHERE true ON CONFLICT (site, id) DO UPDATE SET forwarded = 0, until = excluded.until WHERE items.until <= ?4 RETURNING id',
    ),
    forwardedOf: db.prepare('SELECT id, forwarded FROM items WHERE site = ?1 AND id IN (SELECT value FROM json_each(?2))'),
    mark: db.prepare(
      'INSERT INTO items (site, id, forwarded, until) SELECT ?1, value, 1, ?2 FROM json_each(?3) WHERE true ON CONFLICT (site, id) DO UPDATE SET forwarded = 1, until = excluded.until',
    ),
    release: db.prepare('DELETE FROM items WHERE site = ?1 AND forwarded = 0 AND id IN (SELECT value FROM json_each(?2))'),
    counter: db.prepare('SELECT value FROM counters WHERE site = ? AND name = ?'),
    setCounter: db.prepare('INSERT INTO counters (site, name, value) VALUES (?, ?, ?) ON CONFLICT (site, name) DO UPDATE SET value = excluded.value'),
    stats: db.prepare('SELECT count(*), coalesce(sum(forwarded = 0), 0) FROM items WHERE until > ?'),
  };

  const claimIn = (site: string, ids: readonly string[], now: number, leaseMs: number): Claim => {
    const result: Claim = { fresh: [], duplicate: [], busy: [] };
    const leased = new Set((statements.lease.all(site, now + leaseMs, JSON.stringify(ids), now) as unknown[]).map(first));
    const rest = ids.filter((id) => !leased.has(id));
    const forwarded = new Set(
      rest.length === 0
        ? []
        : (statements.forwardedOf.all(site, JSON.stringify(rest)) as [string, number][]).filter(([, isForwarded]) => isForwarded === 1).map(([id]) => id),
    );
    // In the order given; an id given twice is leased once, its second copy answered busy.
    for (const id of ids) {
      if (leased.delete(id)) result.fresh.push(id);
      else if (forwarded.has(id)) result.duplicate.push(id);
      else result.busy.push(id);
    }
    return result;
  };

  const settleIn = (site: string, forwarded: readonly string[], until: number, released: readonly string[]) => {
    if (forwarded.length) statements.mark.run(site, until, JSON.stringify(forwarded));
    if (released.length) statements.release.run(site, JSON.stringify(released));
  };

  const addIn = (site: string, name: string, amount: number, limit: number): number => {
    const value = Number(first(statements.counter.get(site, name)) ?? 0);
    const added = cappedAmount(value, amount, limit);
    if (added > 0) statements.setCounter.run(site, name, value + added);
    return added;
  };

  const group = groupCommit(db, () => statements.expire.run(Date.now(), EXPIRY_SLICE));

  return {
    claim({ site }, ids, now, leaseMs) {
      return group(() => claimIn(site, ids, now, leaseMs));
    },
    async settle({ site }, { forwarded, until, released }) {
      if (forwarded.length + released.length > 0) await group(() => settleIn(site, forwarded, until, released));
    },
    add(site, name, amount, limit) {
      return group(() => addIn(site, name, amount, limit));
    },
    async ping() {
      db.prepare('SELECT 1').get();
    },
    async stats() {
      const [total, leased] = statements.stats.get(Date.now()) as [number, number];
      return { remembered: Number(total) - Number(leased), leased: Number(leased) };
    },
    async close() {
      if (db.open) db.close();
    },
  };
}
