/**
 * The relay's state on Workers: Durable Objects with SQLite storage, called over RPC. A site's
 * dedupe ids are spread over `RELAY_SHARDS` shard objects, so no object sees all of a site's
 * traffic. A browser's request goes to the shard of its queue id (every item is only ever sent
 * under the queue that stored it: retries, beacons, other tabs and identify/reset all meet the
 * same shard), which makes one `/collect` one claim and one settle, on one object. A request
 * without a queue id (a server's) goes to the shards of its item ids, in parallel. The
 * address-lookup budget is a counter of its own object per site, exact across the world.
 *
 * Durable Objects are strongly consistent and single-threaded, which dedupe needs; KV is eventually
 * consistent and must not be used.
 * @module
 */
import type { DurableObjectNamespace, DurableObjectState } from '@cloudflare/workers-types/index.ts';
import { DurableObject } from 'cloudflare:workers';
import { cappedAmount, type Claim, type DedupeScope, type RelayStore } from '../store.js';

/** Expired rows deleted per claim: more than a claim adds, so the table shrinks back after a peak. */
const EXPIRY_SLICE = 200;

/** Shards per site when RELAY_SHARDS is not set (see docs/scaling.md for the arithmetic). */
export const DEFAULT_SHARDS = 16;

/** The Durable Object class (export it from the Worker; bind it as `RELAY_STATE` with an SQLite migration). */
export class RelayState extends DurableObject {
  private readonly storage: DurableObjectState['storage'];
  /** calls served since this instance started (not persisted): lets a test or an operator see the spread */
  private calls = 0;

  constructor(state: DurableObjectState, env: unknown) {
    super(state as never, env as never);
    this.storage = state.storage;
    this.storage.sql.exec(`CREATE TABLE IF NOT EXISTS items (id TEXT PRIMARY KEY, forwarded_until INTEGER NOT NULL DEFAULT 0, lease_until INTEGER NOT NULL DEFAULT 0);
      CREATE TABLE IF NOT EXISTS counters (name TEXT PRIMARY KEY, value INTEGER NOT NULL);`);
  }

  /** Leases `ids` for `leaseMs` unless forwarded or leased already. */
  claim(ids: string[], now: number, leaseMs: number): Claim {
    this.calls++;
    const sql = this.storage.sql;
    return this.storage.transactionSync(() => {
      // Expired rows go a few at a time, so no request pays for a big sweep.
      sql.exec('DELETE FROM items WHERE rowid IN (SELECT rowid FROM items WHERE forwarded_until < ? AND lease_until < ? LIMIT ?)', now, now, EXPIRY_SLICE);
      const claim: Claim = { fresh: [], duplicate: [], busy: [] };
      for (const id of ids) {
        const row = sql.exec<{ forwarded_until: number; lease_until: number }>('SELECT forwarded_until, lease_until FROM items WHERE id = ?', id).toArray()[0];
        if (row && row.forwarded_until > now) claim.duplicate.push(id);
        else if (row && row.lease_until > now) claim.busy.push(id);
        else {
          sql.exec('INSERT INTO items (id, lease_until) VALUES (?, ?) ON CONFLICT(id) DO UPDATE SET lease_until = excluded.lease_until', id, now + leaseMs);
          claim.fresh.push(id);
        }
      }
      return claim;
    });
  }

  /** Marks `forwarded` until `until` and drops the leases of `released`. */
  settle(forwarded: string[], until: number, released: string[]): void {
    this.calls++;
    const sql = this.storage.sql;
    this.storage.transactionSync(() => {
      for (const id of forwarded) {
        sql.exec(
          'INSERT INTO items (id, forwarded_until, lease_until) VALUES (?, ?, 0) ON CONFLICT(id) DO UPDATE SET forwarded_until = excluded.forwarded_until, lease_until = 0',
          id,
          until,
        );
      }
      for (const id of released) sql.exec('UPDATE items SET lease_until = 0 WHERE id = ? AND forwarded_until = 0', id);
    });
  }

  /** Adds up to `amount` to counter `name` without passing `limit` (`null`: no limit). */
  add(name: string, amount: number, limit: number | null): number {
    this.calls++;
    const sql = this.storage.sql;
    return this.storage.transactionSync(() => {
      const value = sql.exec<{ value: number }>('SELECT value FROM counters WHERE name = ?', name).toArray()[0]?.value ?? 0;
      const added = cappedAmount(value, amount, limit ?? Number.POSITIVE_INFINITY);
      if (added > 0) sql.exec('INSERT INTO counters (name, value) VALUES (?, ?) ON CONFLICT(name) DO UPDATE SET value = excluded.value', name, value + added);
      return added;
    });
  }

  /** Calls served by this instance, and the ids it holds now. Not counted as a call. */
  usage(): { calls: number; rows: number } {
    const rows = this.storage.sql.exec<{ n: number }>('SELECT count(*) AS n FROM items').toArray()[0]?.n ?? 0;
    return { calls: this.calls, rows };
  }
}

/** FNV-1a: a fast, stable 32-bit hash, so the same queue or id always meets the same shard. */
function hash(text: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
  return h >>> 0;
}

/** The object name of a site's shard `n`, and of its counters. */
export const shardName = (site: string, shard: number): string => `${site}#${shard}`;
export const countersName = (site: string): string => `${site}#counters`;

/** Which shard each id of `scope` lives in: the queue's shard for all, else each id's own. */
function byShard(scope: DedupeScope, ids: readonly string[], shards: number): Map<number, string[]> {
  const groups = new Map<number, string[]>();
  if (scope.queue !== undefined) {
    if (ids.length > 0) groups.set(hash(scope.queue) % shards, [...ids]);
    return groups;
  }
  for (const id of ids) {
    const shard = hash(id) % shards;
    groups.set(shard, [...(groups.get(shard) ?? []), id]);
  }
  return groups;
}

/** A {@link RelayStore} over the sharded {@link RelayState} objects. */
export function createDurableStore(namespace: DurableObjectNamespace<RelayState>, shards = DEFAULT_SHARDS): RelayStore {
  const object = (name: string) => namespace.get(namespace.idFromName(name));
  return {
    async claim(scope, ids, now, leaseMs) {
      const claims = await Promise.all(
        [...byShard(scope, ids, shards)].map(([shard, part]) => object(shardName(scope.site, shard)).claim(part, now, leaseMs) as Promise<Claim>),
      );
      return { fresh: claims.flatMap((c) => c.fresh), duplicate: claims.flatMap((c) => c.duplicate), busy: claims.flatMap((c) => c.busy) };
    },
    async settle(scope, { forwarded, until, released }) {
      const marked = byShard(scope, forwarded, shards);
      const freed = byShard(scope, released, shards);
      await Promise.all(
        [...new Set([...marked.keys(), ...freed.keys()])].map((shard) =>
          object(shardName(scope.site, shard)).settle(marked.get(shard) ?? [], until, freed.get(shard) ?? []),
        ),
      );
    },
    // Infinity does not survive RPC as a limit: null stands for "no limit".
    add: async (site, name, amount, limit) => (await object(countersName(site)).add(name, amount, Number.isFinite(limit) ? limit : null)) as number,
    // Each shard is its own object: there is no one object to ask, and the binding itself cannot be down.
    ping: async () => {},
    stats: async () => undefined,
    close: async () => {},
  };
}
