/**
 * The outbox and pacer in an SQLite file (node:sqlite or libsql, sqlite-driver.ts): the SQL of
 * `sql-outbox.ts` over a file. Each method is one `BEGIN IMMEDIATE` transaction, and the calls
 * that arrive together share it (group commit), so several processes on one machine may share the
 * file. WAL with `synchronous=NORMAL`, and the WAL fdatasynced off the event loop after each
 * commit, before any of its calls resolves (sqlite-file.ts, sqlite-wal.ts): neither a killed
 * process nor a power cut loses what it answered `accepted`, and HTTP is served while the disk
 * syncs. Opening it moves the previous release's remembered ids into the outbox (sql-upgrade.ts).
 * @module
 */
import type { OutboxStore } from './outbox.js';
import type { SqliteDb, SqliteDriverName, SqliteStatement } from './sqlite-driver.js';
import { durabilityOf, groupCommit, openSqlite, sqliteCounts } from './sqlite-file.js';
import { walSync } from './sqlite-wal.js';
import { createSqlOutbox, type Row, type SqlPort } from './sql-outbox.js';
import { importPreviousIds } from './sql-upgrade.js';

export interface SqliteOutboxOptions {
  /** how long a writer waits for another process's transaction @default 5000 ms */
  busyTimeoutMs?: number;
  /**
   * how a commit's WAL reaches the disk before its calls are answered, given the fdatasync: tests
   * wrap it to watch or fail it @default the fdatasync itself
   */
  sync?: (fdatasync: () => Promise<void>) => Promise<void>;
  /** the SQLite driver (sqlite-driver.ts) @default env RELAY_SQLITE_DRIVER, else Node's own where it has one */
  driver?: SqliteDriverName | undefined;
}

/**
 * The {@link SqlPort} of an SQLite connection: statements prepared once, transactions grouped (group
 * commit), each group's calls answered after `sync` when given (a connection with `synchronous=NORMAL`).
 */
export function sqlitePort(db: SqliteDb, sync?: () => Promise<void>): SqlPort {
  const statements = new Map<string, SqliteStatement>();
  const prepared = (sql: string) => {
    let statement = statements.get(sql);
    if (statement === undefined) {
      statement = db.prepare(sql);
      statements.set(sql, statement);
    }
    return statement;
  };
  return {
    exec: (script) => db.exec(script),
    query: (sql, ...params) => {
      const rows = prepared(sql).all(...params) as Row[];
      sqliteCounts.statements++;
      sqliteCounts.rows += rows.length;
      return rows;
    },
    run: (sql, ...params) => {
      const changes = prepared(sql).run(...params).changes;
      sqliteCounts.statements++;
      sqliteCounts.rows += changes;
      return changes;
    },
    transaction: groupCommit(db, undefined, sync),
  };
}

/** Opens (or creates) the outbox tables in the file at `path` (the relay's state file). */
export async function createSqliteOutbox(path: string, options: SqliteOutboxOptions = {}): Promise<OutboxStore> {
  const db = await openSqlite(path, options.busyTimeoutMs ?? 5000, 'the SQLite outbox (RELAY_STATE_FILE)', true, options.driver);
  // The connection stays open until after the sync's close: the -wal file is never replaced under it.
  const wal = path === ':memory:' ? undefined : walSync(path, { held: true });
  const wrap = options.sync;
  const sync = wal === undefined ? undefined : wrap === undefined ? wal.sync : () => wrap(wal.sync);
  const port = sqlitePort(db, sync);
  let store: Awaited<ReturnType<typeof createSqlOutbox>>;
  try {
    store = await createSqlOutbox(port);
    await importPreviousIds(port, Date.now());
  } catch (error) {
    db.close();
    await wal?.close();
    throw error;
  }
  return {
    ...store,
    durability: durabilityOf(db, sync !== undefined),
    driver: db.driver,
    async close() {
      if (db.open) db.close();
      await wal?.close();
    },
  };
}
