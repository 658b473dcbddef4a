/**
 * A SQL port that counts the rows its statements answer and change: what a lease or an accept
 * reads and writes, for the outbox's bounded-work cases and the lease bench.
 */
import type { SqlPort } from '../../src/relay/state/sql-port.js';

/** `port`, counting rows; `rows()` is the total so far. */
export function countingRows(port: SqlPort): { port: SqlPort; rows(): number } {
  let rows = 0;
  return {
    port: {
      ...port,
      query: (sql, ...params) => {
        const answered = port.query(sql, ...params);
        rows += answered.length;
        return answered;
      },
      run: (sql, ...params) => {
        const changed = port.run(sql, ...params);
        rows += changed;
        return changed;
      },
    },
    rows: () => rows,
  };
}
