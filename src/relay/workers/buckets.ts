/**
 * A refusal bucket (core/limits.ts) as a row of a Durable Object's SQLite: what
 * `RelayState.bucket` runs for refusals.ts. A row is deleted once its bucket would be full again,
 * so storage holds only the visitors that drew refusals lately.
 * @module
 */
import type { DurableObjectStorage } from '@cloudflare/workers-types/index.ts';
import { type LimitDecision, type Rate, refill } from '../core/limits.js';

/** Rows of full buckets deleted per charge. */
const EXPIRY_SLICE = 16;

const prepared = new WeakSet<object>();

/**
 * Moves the bucket `key` of `rate` by `charge` (0: looks, writes nothing; undefined: takes one
 * token if there is one, as a request bucket does), in one step of the object's storage: what
 * `RelayState.bucket` runs.
 */
export function chargeBucket(storage: DurableObjectStorage, key: string, rate: Rate, now: number, charge: number | undefined): LimitDecision {
  const sql = storage.sql;
  if (!prepared.has(storage)) {
    sql.exec(`CREATE TABLE IF NOT EXISTS refusals (key TEXT PRIMARY KEY, tokens REAL NOT NULL, at INTEGER NOT NULL, full_at INTEGER NOT NULL);
      CREATE INDEX IF NOT EXISTS refusals_full_at ON refusals (full_at);`);
    prepared.add(storage);
  }
  return storage.transactionSync(() => {
    const row = sql.exec<{ tokens: number; at: number }>('SELECT tokens, at FROM refusals WHERE key = ?', key).toArray()[0];
    const result = refill(row, rate, now, charge);
    if (charge !== 0) {
      sql.exec('DELETE FROM refusals WHERE key IN (SELECT key FROM refusals WHERE full_at < ? ORDER BY full_at LIMIT ?)', now, EXPIRY_SLICE);
      const fullAt = result.bucket.at + Math.ceil(((rate.burst - result.bucket.tokens) / rate.perSecond) * 1000);
      sql.exec(
        'INSERT INTO refusals (key, tokens, at, full_at) VALUES (?1, ?2, ?3, ?4) ON CONFLICT(key) DO UPDATE SET tokens = ?2, at = ?3, full_at = ?4',
        key,
        result.bucket.tokens,
        result.bucket.at,
        fullAt,
      );
    }
    return { ok: result.ok, retryAfterMs: result.retryAfterMs };
  });
}
