/**
 * The relay's state in an embedded SQLite file (libsql, loaded only when used): the default on
 * Node. WAL mode, one transaction per claim or settle, expiry inside the database (a small slice
 * of expired rows goes with every claim), so the file's size follows the dedupe window and a
 * restart opens the file without reading it. Several processes on one machine may share the file.
 *
 * Durability: with WAL and `synchronous=NORMAL` a committed transaction is in the WAL file before
 * the call returns, so a killed process (SIGKILL, a crash) loses nothing it acknowledged; only a
 * power cut may lose the last transactions, and a lost mark can only make an item go twice, never
 * lose it.
 * @module
 */
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import type Database from 'libsql';
import { cappedAmount, type Claim, type RelayStore } from '../store.js';
import { loadOptional } from './optional.js';

/** Expired rows deleted per claim: more than a claim adds, so the table shrinks back after a peak. */
const EXPIRY_SLICE = 500;

export interface SqliteStoreOptions {
  /** how long a writer waits for another process's transaction @default 5000 ms */
  busyTimeoutMs?: number;
}

/** The first column of a raw row (libsql's `pluck` does not pluck). */
const first = (row: unknown): unknown => (Array.isArray(row) ? row[0] : undefined);

/** Opens (or creates) the state file at `path`. */
export async function createSqliteStore(path: string, options: SqliteStoreOptions = {}): Promise<RelayStore> {
  const { default: Sqlite } = await loadOptional<{ default: typeof Database }>('libsql', 'the SQLite state store (RELAY_STATE_FILE)');
  if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
  const db = new Sqlite(path);
  db.pragma(`busy_timeout = ${options.busyTimeoutMs ?? 5000}`);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
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
    // Inserted, or taken over from an expired row: the RETURNING row says the lease is ours.
    lease: db
      .prepare(
        'INSERT INTO items (site, id, forwarded, until) VALUES (?, ?, 0, ?) ON CONFLICT (site, id) DO UPDATE SET forwarded = 0, until = excluded.until WHERE items.until <= ? RETURNING id',
      )
      .raw(),
    forwardedOf: db.prepare('SELECT forwarded FROM items WHERE site = ? AND id = ?').raw(),
    mark: db.prepare(
      'INSERT INTO items (site, id, forwarded, until) VALUES (?, ?, 1, ?) ON CONFLICT (site, id) DO UPDATE SET forwarded = 1, until = excluded.until',
    ),
    release: db.prepare('DELETE FROM items WHERE site = ? AND id = ? AND forwarded = 0'),
    counter: db.prepare('SELECT value FROM counters WHERE site = ? AND name = ?').raw(),
    setCounter: db.prepare('INSERT INTO counters (site, name, value) VALUES (?, ?, ?) ON CONFLICT (site, name) DO UPDATE SET value = excluded.value'),
    stats: db.prepare('SELECT count(*), coalesce(sum(forwarded = 0), 0) FROM items WHERE until > ?').raw(),
  };

  // IMMEDIATE: take the write lock at the start, so two processes never lease the same id.
  const claim = db.transaction((site: string, ids: readonly string[], now: number, leaseMs: number): Claim => {
    statements.expire.run(now, EXPIRY_SLICE);
    const result: Claim = { fresh: [], duplicate: [], busy: [] };
    for (const id of ids) {
      if (statements.lease.get(site, id, now + leaseMs, now) !== undefined) result.fresh.push(id);
      else if (first(statements.forwardedOf.get(site, id)) === 1) result.duplicate.push(id);
      else result.busy.push(id);
    }
    return result;
  }).immediate;

  const settle = db.transaction((site: string, forwarded: readonly string[], until: number, released: readonly string[]) => {
    for (const id of forwarded) statements.mark.run(site, id, until);
    for (const id of released) statements.release.run(site, id);
  }).immediate;

  const add = db.transaction((site: string, name: string, amount: number, limit: number): number => {
    const value = Number(first(statements.counter.get(site, name)) ?? 0);
    const added = cappedAmount(value, amount, limit);
    if (added > 0) statements.setCounter.run(site, name, value + added);
    return added;
  }).immediate;

  return {
    async claim({ site }, ids, now, leaseMs) {
      return claim(site, ids, now, leaseMs);
    },
    async settle({ site }, { forwarded, until, released }) {
      if (forwarded.length + released.length > 0) settle(site, forwarded, until, released);
    },
    async add(site, name, amount, limit) {
      return add(site, name, amount, limit);
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
