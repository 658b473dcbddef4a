/**
 * Upgrading from the release before accept-then-deliver: it remembered forwarded ids in the state
 * store's `items` table (site, id as sent, forwarded, until), which nothing reads any more. Opening
 * the outbox moves every forwarded id still inside its window into the outbox's memory of ids
 * (`outbox_seen`, 16 bytes each), so a resend after the upgrade is answered `duplicate`; the rest
 * of the old table (expired ids, leases of requests that never finished) is deleted. Ids imported
 * from a 0.1 JSON-lines file land in `items` too (state/node.ts), and move the same way.
 *
 * In chunks of one transaction each, so processes opening the file together move each row once.
 * @module
 */
import { compactIdHex } from './ids.js';
import { SQL, type Row, type SqlPort } from './sql-outbox.js';

const CHUNK = 5000;
const TAKE = `DELETE FROM items WHERE (site, id) IN (SELECT site, id FROM items LIMIT ${CHUNK}) RETURNING site, id, forwarded, until`;
// A copy of a moved id that the outbox remembers for a window already ended ([site number, id as hex, end] as JSON, ?1;
// now, ?2): forgotten first, so that the id is remembered with its forwarded window, not kept as the ended one.
const FORGET_ENDED = 'DELETE FROM outbox_seen WHERE (site, id) IN (SELECT value ->> 0, unhex(value ->> 1) FROM json_each(?1)) AND until <= ?2';

/** Moves the old `items` table's live forwarded ids into the outbox's memory; resolves to how many it moved. */
export async function importPreviousIds(db: SqlPort, now: number): Promise<number> {
  if (db.query("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'items'").length === 0) return 0;
  let moved = 0;
  for (;;) {
    const taken = await db.transaction(() => {
      const rows = db.query(TAKE) as [string, string, number, number][];
      // [site number, id as hex, end of its window]: one statement each to forget and remember them all.
      const pairs: [number, string, number][] = [];
      const sites = new Map<string, number>();
      for (const [site, id, forwarded, until] of rows) {
        if (Number(forwarded) !== 1 || Number(until) <= now) continue;
        let n = sites.get(site);
        if (n === undefined) {
          db.run(SQL.addSite, site);
          n = Number((db.query(SQL.site, site)[0] as Row)[0]);
          sites.set(site, n);
        }
        pairs.push([n, compactIdHex(id), Number(until)]);
      }
      let change = 0;
      if (pairs.length > 0) {
        const json = JSON.stringify(pairs);
        change -= db.run(FORGET_ENDED, json, now);
        change += db.query(SQL.rememberEach, json).length;
      }
      if (change !== 0) db.run(SQL.addCount, change);
      moved += change;
      return rows.length;
    });
    if (taken < CHUNK) return moved;
  }
}
