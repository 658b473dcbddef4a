// The Durable Object store itself (SQLite inside workerd): the same promises as the memory
// store: leases, forwarded ids until expiry, capped counters, per site.
import { abortAllDurableObjects, env, runDurableObjectAlarm, runInDurableObject } from 'cloudflare:test';
import { describe, expect, it } from 'vitest';
import { countersName, createDurableStore, DEFAULT_SHARDS, shardName } from '../../src/relay/workers/state.js';

const T = Date.UTC(2026, 10, 23, 9);
const scope = () => `site-${crypto.randomUUID()}`;

interface Usage {
  calls: number;
  rows: number;
  sweepAt: number | null;
}
/** The shard objects of `site`, each with what it holds. */
function shards(site: string) {
  const namespace = env['RELAY_STATE'] as { idFromName(name: string): unknown; get(id: unknown): { usage(): Promise<Usage> } };
  return Promise.all(
    Array.from({ length: DEFAULT_SHARDS }, async (_, n) => {
      const stub = namespace.get(namespace.idFromName(shardName(site, n)));
      return { stub, usage: await stub.usage() };
    }),
  );
}

describe('the RelayState Durable Object', () => {
  const store = createDurableStore(env['RELAY_STATE']);

  it('leases fresh ids, reports forwarded ones as duplicates and leased ones as busy, and forgets both when they expire', async () => {
    const site = { site: scope() };
    expect(await store.claim(site, ['a', 'b'], T, 1000)).toEqual({ fresh: ['a', 'b'], duplicate: [], busy: [] });
    expect(await store.claim(site, ['a', 'c'], T, 1000)).toEqual({ fresh: ['c'], duplicate: [], busy: ['a'] });
    await store.settle(site, { forwarded: ['a'], until: T + 60_000, released: ['b'] });
    expect(await store.claim(site, ['a', 'b'], T + 10, 1000)).toEqual({ fresh: ['b'], duplicate: ['a'], busy: [] });
    expect((await store.claim({ site: scope() }, ['a'], T, 1000)).fresh).toEqual(['a']);
    expect((await store.claim(site, ['a', 'c'], T + 60_001, 1000)).fresh).toEqual(['a', 'c']);
  });

  it('keeps forwarded ids and counters when the object restarts', async () => {
    const site = scope();
    await store.settle({ site }, { forwarded: ['kept'], until: T + 3600_000, released: [] });
    expect(await store.add(site, 'address-lookup:2026-11', 2, 3)).toBe(2);
    await abortAllDurableObjects();
    expect((await store.claim({ site }, ['kept'], T, 1000)).duplicate).toEqual(['kept']);
    expect(await store.add(site, 'address-lookup:2026-11', 2, 3)).toBe(1);
    expect(await store.add(site, 'address-lookup:2026-11', 1, Infinity)).toBe(1);
  });

  it('deletes expired ids by alarm in an object no claim visits any more, and keeps the live ones', async () => {
    const site = scope();
    const now = Date.now();
    // One shard, so the three ids share an object.
    const single = createDurableStore(env['RELAY_STATE'], 1);
    await single.settle({ site }, { forwarded: ['short-1', 'short-2'], until: now + 50, released: [] });
    await single.settle({ site }, { forwarded: ['long'], until: now + 86_400_000, released: [] });
    const [shard, ...others] = (await shards(site)).sort((a, b) => b.usage.rows - a.usage.rows);
    expect(others.every((other) => other.usage.rows === 0)).toBe(true);
    expect(shard!.usage.rows).toBe(3);
    // A sweep is due within the hour (not only when the longest id expires a day later).
    expect(shard!.usage.sweepAt).toBeGreaterThan(now);
    expect(shard!.usage.sweepAt).toBeLessThanOrEqual(Date.now() + 3600_000);

    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(await runDurableObjectAlarm(shard!.stub)).toBe(true);
    const after = await shard!.stub.usage();
    expect(after.rows).toBe(1);
    // The next sweep waits for the id left: it expires in a day.
    expect(after.sweepAt).toBe(now + 86_400_000);
    expect((await single.claim({ site }, ['short-1', 'long'], Date.now(), 1000)).duplicate).toEqual(['long']);
  });

  it('upgrading from the single object per site: its address-lookup count stays, its old tables go', async () => {
    const site = scope();
    const namespace = env['RELAY_STATE'] as { idFromName(name: string): unknown; get(id: unknown): unknown };
    const legacy = () => namespace.get(namespace.idFromName(countersName(site)));
    // What the object of the version before the shards left in its storage (named by the site key).
    await runInDurableObject(legacy(), (_, state) => {
      state.storage.sql.exec(`CREATE TABLE items (id TEXT PRIMARY KEY, forwarded_until INTEGER NOT NULL DEFAULT 0, lease_until INTEGER NOT NULL DEFAULT 0);
        CREATE TABLE buckets (name TEXT PRIMARY KEY, tokens REAL NOT NULL, at INTEGER NOT NULL);
        INSERT INTO items VALUES ('old-id', ${T + 3600_000}, 0);
        INSERT INTO counters (name, value) VALUES ('address-lookup:2026-11', 7);`);
    });
    await abortAllDurableObjects();
    expect(await store.add(site, 'address-lookup:2026-11', 5, 10)).toBe(3);
    const tables = await runInDurableObject(legacy(), (_, state) =>
      state.storage.sql
        .exec<{ name: string }>("SELECT name FROM sqlite_master WHERE type = 'table' AND name IN ('items', 'buckets')")
        .toArray()
        .map((row) => row.name),
    );
    expect(tables).toEqual([]);
  });
});
