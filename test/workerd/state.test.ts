// The Durable Object store itself (SQLite inside workerd): the same promises as the memory
// store: leases, forwarded ids until expiry, capped counters, per site.
import { abortAllDurableObjects, env } from 'cloudflare:test';
import { describe, expect, it } from 'vitest';
import { createDurableStore } from '../../src/relay/workers/state.js';

const T = Date.UTC(2026, 10, 23, 9);
const scope = () => `site-${crypto.randomUUID()}`;

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
});
