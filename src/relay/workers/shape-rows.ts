/**
 * Known shapes as rows of a `RelayState` object's SQLite, beside the refusal buckets (buckets.ts):
 * what `RelayState.learnShapes` and `knownShapes` run for shapes.ts. A write deletes a slice of
 * expired rows, so storage holds only the shapes the platform took lately.
 * @module
 */
import type { DurableObjectStorage } from '@cloudflare/workers-types/index.ts';

/** Rows of expired shapes deleted per write. */
const EXPIRY_SLICE = 16;

const prepared = new WeakSet<object>();
function table(storage: DurableObjectStorage) {
  if (!prepared.has(storage)) {
    storage.sql.exec(`CREATE TABLE IF NOT EXISTS shapes (site TEXT NOT NULL, shape TEXT NOT NULL, until INTEGER NOT NULL, PRIMARY KEY (site, shape)) WITHOUT ROWID;
      CREATE INDEX IF NOT EXISTS shapes_until ON shapes (until);`);
    prepared.add(storage);
  }
  return storage.sql;
}

/** `RelayState.learnShapes`: `shapes` of `site` are known until `until`. */
export function storeShapes(storage: DurableObjectStorage, site: string, shapes: readonly string[], until: number, now: number): void {
  const sql = table(storage);
  storage.transactionSync(() => {
    sql.exec('DELETE FROM shapes WHERE (site, shape) IN (SELECT site, shape FROM shapes WHERE until < ? ORDER BY until LIMIT ?)', now, EXPIRY_SLICE);
    for (const shape of shapes)
      sql.exec('INSERT INTO shapes (site, shape, until) VALUES (?1, ?2, ?3) ON CONFLICT(site, shape) DO UPDATE SET until = max(until, ?3)', site, shape, until);
  });
}

/** `RelayState.knownShapes`: which of `shapes` of `site` are known at `now`, with until when. */
export function readShapes(storage: DurableObjectStorage, site: string, shapes: readonly string[], now: number): [string, number][] {
  const sql = table(storage);
  const known: [string, number][] = [];
  for (const shape of new Set(shapes)) {
    const until = sql.exec<{ until: number }>('SELECT until FROM shapes WHERE site = ? AND shape = ?', site, shape).toArray()[0]?.until ?? 0;
    if (until > now) known.push([shape, until]);
  }
  return known;
}
