/**
 * The SQLite driver a file is opened with, behind one small interface ({@link SqliteDb}): Node's
 * own `node:sqlite` where the running Node has it with rows as arrays (Node 24, and Node 22 since
 * a backport: 22.23 has it), else libsql (an npm package with a prebuilt binary, loaded only
 * then). Both read and write the same file format, so a state file written by one opens with the
 * other.
 *
 * Why Node's own first: at `/collect` saturation it spends less CPU on the same statements than
 * libsql, about a tenth of the relay's in all (bench/README.md, "The SQLite driver"), and it runs
 * no threads of its own. `RELAY_SQLITE_DRIVER=libsql` keeps libsql (`node` asks for Node's own,
 * and fails where this Node has none).
 *
 * One driver a process: two copies of SQLite in one process do not see each other's POSIX locks
 * (and closing one's descriptor drops the other's), so every connection to a file in a process
 * must come through the same one. The relay's and the CLI's all do (the same choice each time).
 * @module
 */
import type Database from 'libsql';
import { loadOptional } from './optional.js';
import type { SqlValue } from './sql-port.js';

/** The drivers, as `RELAY_SQLITE_DRIVER` names them. */
export const SQLITE_DRIVERS = ['node', 'libsql'] as const;
export type SqliteDriverName = (typeof SQLITE_DRIVERS)[number];

/** A prepared statement; every row an array, in the order of its columns. */
export interface SqliteStatement {
  all(...params: SqlValue[]): unknown[][];
  get(...params: SqlValue[]): unknown[] | undefined;
  run(...params: SqlValue[]): { changes: number };
}

/** One connection to an SQLite file, whichever driver opened it. */
export interface SqliteDb {
  /** which driver: `node:sqlite` or `libsql` */
  readonly driver: string;
  readonly open: boolean;
  prepare(sql: string): SqliteStatement;
  /** Runs statements without parameters. */
  exec(sql: string): void;
  close(): void;
}

/** The first value of a pragma's answer, e.g. `pragma(db, 'journal_mode')`. */
export const pragma = (db: SqliteDb, text: string): unknown => db.prepare(`PRAGMA ${text}`).get()?.[0];

/** `fn` in one `BEGIN IMMEDIATE` … `COMMIT`: all of its writes or none (rolled back when it throws). */
export function immediate<A extends unknown[], T>(db: SqliteDb, fn: (...args: A) => T): (...args: A) => T {
  return (...args) => {
    db.exec('BEGIN IMMEDIATE');
    try {
      const result = fn(...args);
      db.exec('COMMIT');
      return result;
    } catch (error) {
      // A COMMIT that failed may have ended the transaction itself: then there is nothing to roll back.
      try {
        db.exec('ROLLBACK');
      } catch {}
      throw error;
    }
  };
}

/** What `RELAY_SQLITE_DRIVER` in `env` asks for, checked: undefined for the default. */
export function sqliteDriverChoice(env: Record<string, string | undefined>): SqliteDriverName | undefined {
  const given = env['RELAY_SQLITE_DRIVER']?.trim();
  if (given === undefined || given === '') return undefined;
  if ((SQLITE_DRIVERS as readonly string[]).includes(given)) return given as SqliteDriverName;
  throw new RangeError(`RELAY_SQLITE_DRIVER must be one of ${SQLITE_DRIVERS.join(', ')} (or unset), not ${JSON.stringify(given)}`);
}

/** A node:sqlite statement: its `changes` a number, as no statement reads big integers (`setReadBigInts`). */
interface NodeStatement extends SqliteStatement {
  setReturnArrays(enabled: boolean): void;
}
interface NodeSqlite {
  DatabaseSync: new (path: string) => { isOpen: boolean; prepare(sql: string): NodeStatement; exec(sql: string): void; close(): void };
  StatementSync: { prototype: object };
}

/**
 * `node:sqlite` when this Node has it with rows as arrays (`setReturnArrays`), else undefined.
 * Node calls it experimental and warns so once a process: that one warning is not passed on, as
 * the relay chose it knowingly and its tests hold it to what the relay needs of it.
 */
function nodeSqlite(): NodeSqlite | undefined {
  const builtin = (process as { getBuiltinModule?: (id: string) => unknown }).getBuiltinModule;
  if (builtin === undefined) return undefined;
  const emitWarning = process.emitWarning;
  process.emitWarning = ((warning: string | Error, ...rest: unknown[]) => {
    const text = typeof warning === 'string' ? warning : warning.message;
    if (/^SQLite is an experimental feature/.test(text)) return;
    (emitWarning as (...args: unknown[]) => void).call(process, warning, ...rest);
  }) as typeof process.emitWarning;
  try {
    const sqlite = builtin('node:sqlite') as NodeSqlite | undefined;
    return sqlite !== undefined && 'setReturnArrays' in sqlite.StatementSync.prototype ? sqlite : undefined;
  } catch {
    return undefined; // an older Node 22 without --experimental-sqlite
  } finally {
    process.emitWarning = emitWarning;
  }
}

function fromNode(sqlite: NodeSqlite, path: string): SqliteDb {
  const db = new sqlite.DatabaseSync(path);
  return {
    driver: 'node:sqlite',
    get open() {
      return db.isOpen;
    },
    prepare(sql) {
      // The statement itself, with no wrapper between the outbox's calls and the driver's.
      const statement = db.prepare(sql);
      statement.setReturnArrays(true);
      return statement;
    },
    exec: (sql) => db.exec(sql),
    close: () => db.close(),
  };
}

/** A libsql connection as a {@link SqliteDb} (tests open one of their own). */
export function fromLibsql(db: Database.Database): SqliteDb {
  return {
    driver: 'libsql',
    get open() {
      return db.open;
    },
    prepare(sql) {
      const statement = db.prepare(sql);
      // Only a statement that answers rows can be raw; raw, its rows are arrays.
      if (statement.reader) statement.raw();
      return statement as unknown as SqliteStatement;
    },
    exec: (sql) => void db.exec(sql),
    close: () => db.close(),
  };
}

/**
 * Opens (or creates) `path` with the driver chosen, by default Node's own where it has one (the
 * caller reads `RELAY_SQLITE_DRIVER` from its own variables: {@link sqliteDriverChoice});
 * `neededBy` names what needs libsql when it is missing.
 */
export async function openDriver(path: string, neededBy: string, choice?: SqliteDriverName): Promise<SqliteDb> {
  if (choice !== 'libsql') {
    const sqlite = nodeSqlite();
    if (sqlite !== undefined) return fromNode(sqlite, path);
    if (choice === 'node')
      throw new Error(`RELAY_SQLITE_DRIVER=node: this Node (${process.version}) has no node:sqlite with rows as arrays (Node 24 and the latest Node 22 have)`);
  }
  const { default: Sqlite } = await loadOptional<{ default: typeof Database }>('libsql', neededBy);
  return fromLibsql(new Sqlite(path));
}
