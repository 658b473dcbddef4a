/**
 * The relay's state on Workers: one Durable Object per site key, with SQLite storage, holding
 * that site's forwarded ids, rate-limit bucket and monthly address-lookup count. A Durable Object is strongly consistent and
 * single-threaded, which dedupe needs; KV is eventually consistent and must not be used.
 * @module
 */
import { refill, type Claim, type RelayStore } from '../store.js';
import type { DurableObjectNamespace, DurableObjectState } from './types.js';

type Op =
  | { op: 'begin'; ids: string[]; now: number; leaseMs: number }
  | { op: 'commit'; ids: string[]; until: number }
  | { op: 'release'; ids: string[] }
  | { op: 'take'; rate: { perSecond: number; burst: number }; now: number }
  | { op: 'add'; name: string; amount: number; limit: number | null };

/** The Durable Object class (export it from the Worker; bind it as `RELAY_STATE`, SQLite migration). */
export class RelayState {
  private readonly storage: DurableObjectState['storage'];

  constructor(state: DurableObjectState, _env?: unknown) {
    this.storage = state.storage;
    this.storage.sql.exec(`CREATE TABLE IF NOT EXISTS items (id TEXT PRIMARY KEY, forwarded_until INTEGER NOT NULL DEFAULT 0, lease_until INTEGER NOT NULL DEFAULT 0);
      CREATE TABLE IF NOT EXISTS buckets (name TEXT PRIMARY KEY, tokens REAL NOT NULL, at INTEGER NOT NULL);
      CREATE TABLE IF NOT EXISTS counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL);`);
  }

  async fetch(request: Request): Promise<Response> {
    const op = (await request.json()) as Op;
    return Response.json(this.storage.transactionSync(() => this.run(op)) ?? null);
  }

  private run(op: Op): unknown {
    const sql = this.storage.sql;
    switch (op.op) {
      case 'begin': {
        // Expired rows go a few at a time, so no request pays for a big sweep.
        sql.exec('DELETE FROM items WHERE rowid IN (SELECT rowid FROM items WHERE forwarded_until < ? AND lease_until < ? LIMIT 200)', op.now, op.now);
        const claim: Claim = { fresh: [], duplicate: [], busy: [] };
        for (const id of op.ids) {
          const row = sql
            .exec<{ forwarded_until: number; lease_until: number }>('SELECT forwarded_until, lease_until FROM items WHERE id = ?', id)
            .toArray()[0];
          if (row && row.forwarded_until > op.now) claim.duplicate.push(id);
          else if (row && row.lease_until > op.now) claim.busy.push(id);
          else {
            sql.exec(
              'INSERT INTO items (id, lease_until) VALUES (?, ?) ON CONFLICT(id) DO UPDATE SET lease_until = excluded.lease_until',
              id,
              op.now + op.leaseMs,
            );
            claim.fresh.push(id);
          }
        }
        return claim;
      }
      case 'commit':
        for (const id of op.ids) {
          sql.exec(
            'INSERT INTO items (id, forwarded_until, lease_until) VALUES (?, ?, 0) ON CONFLICT(id) DO UPDATE SET forwarded_until = excluded.forwarded_until, lease_until = 0',
            id,
            op.until,
          );
        }
        return null;
      case 'release':
        for (const id of op.ids) sql.exec('UPDATE items SET lease_until = 0 WHERE id = ?', id);
        return null;
      case 'take': {
        const row = sql.exec<{ tokens: number; at: number }>("SELECT tokens, at FROM buckets WHERE name = 'rate'").toArray()[0];
        const result = refill(row, op.rate, op.now);
        sql.exec(
          "INSERT INTO buckets (name, tokens, at) VALUES ('rate', ?, ?) ON CONFLICT(name) DO UPDATE SET tokens = excluded.tokens, at = excluded.at",
          result.bucket.tokens,
          result.bucket.at,
        );
        return { ok: result.ok, retryAfterMs: result.retryAfterMs };
      }
      case 'add': {
        const value = sql.exec<{ value: number }>('SELECT value FROM counters WHERE name = ?', op.name).toArray()[0]?.value ?? 0;
        const limit = op.limit ?? Infinity;
        const added = Math.max(0, Math.min(op.amount, limit - value));
        if (added > 0)
          sql.exec('INSERT INTO counters (name, value) VALUES (?, ?) ON CONFLICT(name) DO UPDATE SET value = excluded.value', op.name, value + added);
        return added;
      }
    }
  }
}

/** A {@link RelayStore} talking to the {@link RelayState} object of each scope. */
export function createDurableStore(namespace: DurableObjectNamespace): RelayStore {
  const call = async <T>(scope: string, op: Op): Promise<T> => {
    const stub = namespace.get(namespace.idFromName(scope));
    const response = await stub.fetch('https://relay-state/', { method: 'POST', body: JSON.stringify(op) });
    if (!response.ok) throw new Error(`relay state for ${scope} answered ${response.status}`);
    return (await response.json()) as T;
  };
  return {
    begin: (scope, ids, now, leaseMs) => call(scope, { op: 'begin', ids: [...ids], now, leaseMs }),
    commit: (scope, ids, until) => call(scope, { op: 'commit', ids: [...ids], until }),
    release: (scope, ids) => call(scope, { op: 'release', ids: [...ids] }),
    take: (scope, rate, now) => call(scope, { op: 'take', rate, now }),
    // Infinity does not survive JSON: null stands for "no limit".
    add: (scope, name, amount, limit) => call(scope, { op: 'add', name, amount, limit: Number.isFinite(limit) ? limit : null }),
  };
}
