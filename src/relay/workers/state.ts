/**
 * The relay's state on Workers: one Durable Object per site key, with SQLite storage, holding
 * that site's forwarded ids, rate-limit bucket and monthly address-lookup count. A Durable Object is strongly consistent and
 * single-threaded, which dedupe needs; KV is eventually consistent and must not be used.
 * @module
 */
import { cappedAmount, type Claim, type RelayStore } from '../store.js';
import type { DurableObjectNamespace, DurableObjectState } from './types.js';

type Op =
  | { op: 'claim'; ids: string[]; now: number; leaseMs: number }
  | { op: 'settle'; forwarded: string[]; until: number; released: string[] }
  | { op: 'add'; name: string; amount: number; limit: number | null };

/** Expired rows deleted per claim: more than a claim adds, so the table shrinks back after a peak. */
const EXPIRY_SLICE = 200;

/** The Durable Object class (export it from the Worker; bind it as `RELAY_STATE`, SQLite migration). */
export class RelayState {
  private readonly storage: DurableObjectState['storage'];

  constructor(state: DurableObjectState, _env?: unknown) {
    this.storage = state.storage;
    this.storage.sql.exec(`CREATE TABLE IF NOT EXISTS items (id TEXT PRIMARY KEY, forwarded_until INTEGER NOT NULL DEFAULT 0, lease_until INTEGER NOT NULL DEFAULT 0);
      CREATE TABLE IF NOT EXISTS counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL);`);
  }

  async fetch(request: Request): Promise<Response> {
    const op = (await request.json()) as Op;
    return Response.json(this.storage.transactionSync(() => this.run(op)) ?? null);
  }

  private run(op: Op): unknown {
    const sql = this.storage.sql;
    switch (op.op) {
      case 'claim': {
        // Expired rows go a few at a time, so no request pays for a big sweep.
        sql.exec(
          'DELETE FROM items WHERE rowid IN (SELECT rowid FROM items WHERE forwarded_until < ? AND lease_until < ? LIMIT ?)',
          op.now,
          op.now,
          EXPIRY_SLICE,
        );
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
      case 'settle':
        for (const id of op.forwarded) {
          sql.exec(
            'INSERT INTO items (id, forwarded_until, lease_until) VALUES (?, ?, 0) ON CONFLICT(id) DO UPDATE SET forwarded_until = excluded.forwarded_until, lease_until = 0',
            id,
            op.until,
          );
        }
        for (const id of op.released) sql.exec('UPDATE items SET lease_until = 0 WHERE id = ?', id);
        return null;
      case 'add': {
        const value = sql.exec<{ value: number }>('SELECT value FROM counters WHERE name = ?', op.name).toArray()[0]?.value ?? 0;
        const added = cappedAmount(value, op.amount, op.limit ?? Number.POSITIVE_INFINITY);
        if (added > 0)
          sql.exec('INSERT INTO counters (name, value) VALUES (?, ?) ON CONFLICT(name) DO UPDATE SET value = excluded.value', op.name, value + added);
        return added;
      }
    }
  }
}

/** A {@link RelayStore} talking to the {@link RelayState} object of each site. */
export function createDurableStore(namespace: DurableObjectNamespace): RelayStore {
  const call = async <T>(site: string, op: Op): Promise<T> => {
    const stub = namespace.get(namespace.idFromName(site));
    const response = await stub.fetch('https://relay-state/', { method: 'POST', body: JSON.stringify(op) });
    if (!response.ok) throw new Error(`relay state for ${site} answered ${response.status}`);
    return (await response.json()) as T;
  };
  return {
    claim: ({ site }, ids, now, leaseMs) => call(site, { op: 'claim', ids: [...ids], now, leaseMs }),
    settle: ({ site }, { forwarded, until, released }) =>
      forwarded.length + released.length === 0 ? Promise.resolve() : call(site, { op: 'settle', forwarded: [...forwarded], until, released: [...released] }),
    // Infinity does not survive JSON: null stands for "no limit".
    add: (site, name, amount, limit) => call(site, { op: 'add', name, amount, limit: Number.isFinite(limit) ? limit : null }),
    // Each site has its own object: there is no one object to ask, and the binding itself cannot be down.
    ping: async () => {},
    stats: async () => undefined,
    close: async () => {},
  };
}
