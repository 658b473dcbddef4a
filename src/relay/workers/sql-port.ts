/**
 * The {@link SqlPort} of a Durable Object's SQLite storage (`ctx.storage.sql`): the outbox's
 * statements run there as they run in a file on Node (state/sql-outbox.ts).
 * @module
 */
import type { DurableObjectStorage } from '@cloudflare/workers-types/index.ts';
import type { Row, SqlPort } from '../state/sql-outbox.js';

/**
 * A statement's parameters as Cloudflare documents bound values (string, number, null, ArrayBuffer):
 * a `Uint8Array` (the accept's texts, sql-accept.ts) goes as the ArrayBuffer of its bytes.
 */
const bindable = (params: readonly unknown[]): unknown[] =>
  params.map((param) => (param instanceof Uint8Array ? param.buffer.slice(param.byteOffset, param.byteOffset + param.byteLength) : param));

/** The port, and the rows its statements have read since it was made (what Cloudflare bills, and what shows a lease's work). */
export function durableSqlPort(storage: DurableObjectStorage): SqlPort & { rowsRead(): number } {
  const { sql } = storage;
  let rowsRead = 0;
  return {
    rowsRead: () => rowsRead,
    exec: (script) => void sql.exec(script).toArray(),
    query: (statement, ...params) => {
      const cursor = sql.exec(statement, ...bindable(params));
      const rows = [...cursor.raw()] as Row[];
      rowsRead += cursor.rowsRead;
      return rows;
    },
    run: (statement, ...params) => {
      const cursor = sql.exec(statement, ...bindable(params));
      cursor.toArray();
      rowsRead += cursor.rowsRead;
      // `rowsWritten` also counts index rows; changes() is SQLite's own count of the rows changed.
      return Number([...sql.exec('SELECT changes()').raw()][0]![0]);
    },
    // One object runs one call at a time; transactionSync makes the call's writes all or none.
    transaction: (fn) => {
      try {
        return Promise.resolve(storage.transactionSync(fn));
      } catch (error) {
        return Promise.reject(error);
      }
    },
  };
}
