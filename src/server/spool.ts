/**
 * `cdp-edge/server/spool` (Node only): a {@link Spool} in a SQLite file (node:sqlite or libsql, as
 * the relay's own state), so the items a server tracked survive the process: each is written (and
 * fsynced, `synchronous=FULL`) before it is sent, removed once the relay answered for it, and sent
 * again by the next tracker that opens the same file. Several processes may share one file: an
 * item two of them send lands once all the same (the relay remembers its id).
 *
 * @example
 * import { createServerTracker } from 'cdp-edge/server';
 * import { sqliteSpool } from 'cdp-edge/server/spool';
 * const cdp = createServerTracker({ relay, token, spool: sqliteSpool('.cdp-edge/spool.db') });
 * @module
 */
import { immediate, type SqliteDb, sqliteDriverChoice } from '../relay/state/sqlite-driver.js';
import { openSqlite } from '../relay/state/sqlite-file.js';
import type { ServerItem, Spool } from './types.js';

/** A spool in a SQLite file; `close()` closes the file. */
export type SqliteSpool = Spool & { close(): Promise<void> };

/** Opens (or creates) the spool at `file` on first use. */
export function sqliteSpool(file: string): SqliteSpool {
  let opened: Promise<SqliteDb> | undefined;
  const db = () => {
    opened ??= openSqlite(file, 5000, 'cdp-edge/server/spool', false, sqliteDriverChoice(process.env)).then((database) => {
      database.exec('CREATE TABLE IF NOT EXISTS spool (seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL UNIQUE, item TEXT NOT NULL)');
      return database;
    });
    return opened;
  };
  return {
    load: async () => ((await db()).prepare('SELECT item FROM spool ORDER BY seq').all() as [string][]).map(([item]) => JSON.parse(item) as ServerItem),
    put: async (items) => {
      const database = await db();
      const insert = database.prepare('INSERT OR IGNORE INTO spool (id, item) VALUES (?, ?)');
      immediate(database, () => {
        for (const item of items) insert.run(item.id, JSON.stringify(item));
      })();
    },
    remove: async (ids) => {
      const database = await db();
      const drop = database.prepare('DELETE FROM spool WHERE id = ?');
      immediate(database, () => {
        for (const id of ids) drop.run(id);
      })();
    },
    close: async () => {
      const open = opened;
      opened = undefined;
      if (open !== undefined) (await open).close();
    },
  };
}
