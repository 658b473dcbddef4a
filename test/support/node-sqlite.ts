/**
 * Whether this Node has node:sqlite answering rows as arrays: then the relay opens its SQLite files
 * with it by default (src/relay/state/sqlite-driver.ts), else with libsql. Looked at here apart from
 * the relay's own check, so a test can hold the relay to it.
 */
export const hasNodeSqlite: boolean = (() => {
  try {
    const sqlite = process.getBuiltinModule?.('node:sqlite') as { StatementSync?: { prototype: { setReturnArrays?: unknown } } } | undefined;
    return typeof sqlite?.StatementSync?.prototype.setReturnArrays === 'function';
  } catch {
    return false;
  }
})();

/** The driver's name as the relay prints it (`state: SQLite … via <driver>`). */
export const defaultSqliteDriver = hasNodeSqlite ? 'node:sqlite' : 'libsql';
